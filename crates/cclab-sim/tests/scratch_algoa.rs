mod common;
use common::*;

fn series(r: &cclab_sim::RunResult, flow: usize, key: &str) -> Vec<(f64, f64)> {
    let s = &r.flow_series;
    let t = &s.columns["t"];
    let fl = &s.columns["flow"];
    let v = &s.columns[key];
    (0..s.rows).filter(|&i| fl[i] as usize == flow).map(|i| (t[i], v[i])).collect()
}

#[test]
fn fast_full() {
    let rate = 100e6;
    let flows = [0.05, 0.10, 0.15].iter().enumerate().map(|(i, &rtt)| {
        let mut f = flow("fast", rtt, i as u32);
        f.params = param(&[("alpha", 20.0)]);
        f
    }).collect();
    let mut spec = dumbbell(rate, 500, "droptail", flows, 100.0, 1);
    spec.measure = [0.0, 100.0];
    let r = run(&spec);
    eprintln!("whole run: max queue {} drops {}", r.links[0].max_queue_pkts, r.links[0].drops);
    spec.measure = [50.0, 100.0];
    let r = run(&spec);
    let rates: Vec<f64> = r.flows.iter().map(|f| f.goodput_bps).collect();
    eprintln!("50-100: q {:.2} jain {:.5} rates {:?} util {}", r.links[0].mean_queue_pkts, jain(&rates), rates, r.links[0].utilization);
    eprintln!("cols {:?}", r.flow_series.columns.keys().collect::<Vec<_>>());
    for fl in 0..3 {
        let c = series(&r, fl, "cwnd");
        let q = series(&r, fl, "q");
        let tw = series(&r, fl, "target_w");
        for i in (0..c.len()).step_by(50) { eprint!("[{:.0}s w{:.0} tw{:.0} q{:.2}ms] ", c[i].0, c[i].1, tw[i].1, q[i].1*1e3); }
        eprintln!();
    }
}

fn slope(ps: &[f64], ys: &[f64]) -> f64 {
    let x: Vec<f64> = ps.iter().map(|p| p.ln()).collect();
    let y: Vec<f64> = ys.iter().map(|v| v.ln()).collect();
    let n = x.len() as f64;
    let mx = x.iter().sum::<f64>() / n;
    let my = y.iter().sum::<f64>() / n;
    let sxy: f64 = x.iter().zip(&y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let sxx: f64 = x.iter().map(|a| (a - mx) * (a - mx)).sum();
    sxy / sxx
}

#[test]
fn binomial_law() {
    let ps = [0.001, 0.002, 0.005, 0.01];
    for cc in ["binomial", "sqrt", "iiad"] {
        let mut lam = vec![];
        for &p in &ps {
            let mut fl = flow(cc, 0.05, 0);
            fl.params = param(&[("initial_ssthresh", 16.0)]);
            let mut spec = dumbbell(100e6, 2000, "droptail", vec![fl], 300.0, 7);
            spec.links[0].loss = p;
            spec.measure = [20.0, 300.0];
            let r = run(&spec);
            let f = &r.flows[0];
            let b = cclab_cc::algorithms::binomial::Binomial::new(match cc { "binomial" => "binomial", "sqrt" => "sqrt", _ => "iiad" }, 1.0, &Default::default()).unwrap().params();
            let e = b.loss_exponent();
            let theory = (b.alpha / b.beta).powf(e) / (0.05 * p.powf(e)) * 1448.0 * 8.0;
            eprint!("theory {:.3} ratio {:.3} | ", theory / 1e6, f.goodput_bps / theory);
            eprintln!("{cc} p {p} goodput {:.3} Mbit/s cwnd {:.1} to {} fr {} drops {} loss_rate {:.5}", f.goodput_bps/1e6, f.mean_cwnd_pkts, f.timeouts, f.fast_recoveries, r.links[0].drops, r.links[0].loss_rate);
            lam.push(f.goodput_bps);
        }
        eprintln!("{cc}: exponent {:.4}", -slope(&ps, &lam));
    }
}

fn l5(cc: &str, dur: f64, m0: f64, gap: f64, params: &[(&str, f64)]) -> cclab_sim::RunResult {
    l5x(cc, dur, m0, gap, params, 0.2, 1)
}
fn l5x(cc: &str, dur: f64, m0: f64, gap: f64, params: &[(&str, f64)], min_rto: f64, seed: u64) -> cclab_sim::RunResult {
    let rtts = [0.02, 0.1, 0.16, 0.2, 0.4];
    let flows = rtts.iter().enumerate().map(|(i, &rtt)| {
        let mut f = flow(cc, rtt, i as u32);
        f.start = cclab_sim::spec::StartSpec::At(gap * i as f64);
        f.params = param(params);
        f.transport.min_rto = min_rto;
        f
    }).collect();
    let mut spec = dumbbell(100e6, bdp_pkts(100e6, 0.4), "droptail", flows, dur, seed);
    spec.measure = [m0, dur];
    let r = run(&spec);
    let rates: Vec<f64> = r.flows.iter().map(|f| f.goodput_bps).collect();
    eprintln!("{cc} {params:?}: jain {:.4} util {:.3} q {:.0} rates {:?} wall {:.2}", jain(&rates), r.links[0].utilization, r.links[0].mean_queue_pkts, rates.iter().map(|x| (x/1e5).round()/10.0).collect::<Vec<_>>(), r.wall_s);
    for f in &r.flows { eprint!("[to {} fr {} cw {:.0}] ", f.timeouts, f.fast_recoveries, f.mean_cwnd_pkts); }
    eprintln!("\nwarnings {:?}", r.warnings);
    r
}

#[test]
fn libra_l5() {
    let r = l5("libra", 200.0, 100.0, 10.0, &[]);
    for fl in 0..5 {
        let a = series(&r, fl, "alpha");
        let p = series(&r, fl, "P");
        let c = series(&r, fl, "C_est");
        let w = series(&r, fl, "cwnd");
        for i in (0..a.len()).step_by(200) { eprint!("[{:.0}s a{:.1} P{:.2} C{:.1} w{:.0}] ", a[i].0, a[i].1, p[i].1, c[i].1, w[i].1); }
        eprintln!();
    }
    l5("newreno", 200.0, 100.0, 10.0, &[]);
}

fn lseries(r: &cclab_sim::RunResult, link: usize, key: &str) -> Vec<(f64, f64)> {
    let s = &r.link_series;
    let t = &s.columns["t"];
    let fl = &s.columns["link"];
    let v = &s.columns[key];
    (0..s.rows).filter(|&i| fl[i] as usize == link).map(|i| (t[i], v[i])).collect()
}

#[test]
fn libra_l5_detail() {
    let r = l5("libra", 200.0, 100.0, 10.0, &[]);
    let q = lseries(&r, 0, "queue_pkts");
    let d = lseries(&r, 0, "drops");
    let to: Vec<_> = (0..5).map(|f| series(&r, f, "timeouts")).collect();
    let cw: Vec<_> = (0..5).map(|f| series(&r, f, "cwnd")).collect();
    let sr: Vec<_> = (0..5).map(|f| series(&r, f, "srtt")).collect();
    for i in (0..q.len()).step_by(5) {
        if q[i].0 < 40.0 || q[i].0 > 120.0 { continue; }
        eprint!("{:.1}s q{:.0} d{:.0} |", q[i].0, q[i].1, d[i].1);
        for f in 0..5 { eprint!(" w{:.0} to{:.0} s{:.0}", cw[f][i].1, to[f][i].1, sr[f][i].1*1e3); }
        eprintln!();
    }
}

#[test]
fn libra_rto() {
    for m in [0.2, 1.0] {
        eprintln!("min_rto {m}");
        l5x("libra", 200.0, 100.0, 10.0, &[], m, 1);
        l5x("newreno", 200.0, 100.0, 10.0, &[], m, 1);
    }
}

#[test]
fn libra_long() {
    for seed in [1, 2] {
        l5x("libra", 1000.0, 200.0, 10.0, &[], 0.2, seed);
        l5x("newreno", 1000.0, 200.0, 10.0, &[], 0.2, seed);
    }
}

#[test]
fn libra_trace() {
    let rtts = [0.02, 0.1, 0.16, 0.2, 0.4];
    let flows = rtts.iter().enumerate().map(|(i, &rtt)| {
        let mut f = flow("libra", rtt, i as u32);
        f.start = cclab_sim::spec::StartSpec::At(10.0 * i as f64);
        f
    }).collect();
    let mut spec = dumbbell(100e6, bdp_pkts(100e6, 0.4), "droptail", flows, 130.0, 1);
    spec.trace_packets = true;
    let r = run(&spec);
    let to = series(&r, 0, "timeouts");
    let cw = series(&r, 0, "cwnd");
    let mut events = vec![];
    for i in 1..to.len() { if to[i].1 > to[i-1].1 && to[i].0 > 60.0 { events.push(to[i].0); } }
    eprintln!("timeouts of flow 0 after 60 s at {events:?}");
    let te = events[0];
    for i in 0..cw.len() { if (cw[i].0 - te).abs() < 1.2 { eprint!("[{:.1} w{:.0}]", cw[i].0, cw[i].1); } }
    eprintln!();
    let mut seen = std::collections::HashMap::new();
    for rec in &r.trace {
        if rec.flow != 0 || rec.pkt != 0 || rec.link != 0 { continue; }
        if rec.t < te - 1.5 || rec.t > te + 0.3 { continue; }
        let c = seen.entry(rec.seq).or_insert(0);
        if rec.kind == 0 { *c += 1; if *c >= 100 { eprintln!("{:.4} retx enq seq {}", rec.t, rec.seq); } }
        if rec.kind == 1 { eprintln!("{:.4} DROP seq {} (enq count {})", rec.t, rec.seq, c); *c = 100; }
    }
}
