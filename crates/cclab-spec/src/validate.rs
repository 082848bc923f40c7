//! What any driver needs of a spec before building from it. The Python front door has checked the
//! scenario file already (with messages that quote the user's units); this is the check of the
//! resolved spec itself, so a spec written by hand or by another tool is rejected the same way.
//! Building errors (an unknown algorithm, its parameters) are the drivers': they need the registry.

use crate::limits::{
    self, MAX_BUFFER_BYTES, MAX_BUFFER_PKTS, MAX_DELAYED_ACK, MAX_FLOWS, MAX_FLOW_SIZE,
    MAX_INITIAL_CWND, MAX_PACKET_SIZE, MAX_RATE_BPS, MAX_RTO_NS, MAX_SCHEDULED_DELAY_NS,
    MAX_SERIES_ROWS, MAX_SHAPE, MAX_TIME_NS, MAX_TRACE_LINES, MAX_TRACE_MS, MAX_WINDOW_PKTS,
    MIN_PACKET_SIZE, MIN_RATE_BPS, SEED_LIMIT,
};
use crate::spec::{FlowSpec, RunSpec, StartSpec};
use crate::SpecError;

fn err(field: impl Into<String>, message: impl Into<String>) -> SpecError {
    SpecError::new(field, message)
}

/// Longest time, seconds ([`MAX_TIME_NS`]).
const MAX_TIME_S: f64 = MAX_TIME_NS as f64 / 1e9;

/// Every link index in `path` names one of `links` links.
fn check_path(path: &[usize], field: &str, links: usize) -> Result<(), SpecError> {
    for (k, &l) in path.iter().enumerate() {
        if l >= links {
            return Err(err(
                format!("{field}[{k}]"),
                format!("link {l} does not exist ({links} links)"),
            ));
        }
    }
    Ok(())
}

/// A time (seconds) in [0, `max`] (NaN and infinities are not).
fn check_time(t: f64, field: impl Into<String>, max: f64) -> Result<(), SpecError> {
    if !(0.0..=max).contains(&t) {
        return Err(err(
            field,
            format!("must be a time in [0, {max} s], got {t}"),
        ));
    }
    Ok(())
}

/// A link's delay schedule: times in [0, `MAX_TIME_S`] strictly increasing, delays in [0, the
/// scheduled-delay limit] and, on a jittered link, at least the jitter (the delay cannot go below 0).
fn check_delay_schedule(l: &crate::spec::LinkSpec, i: usize) -> Result<(), SpecError> {
    let max_d = MAX_SCHEDULED_DELAY_NS as f64 / 1e9;
    let mut prev = -1.0;
    for (k, &(t, d)) in l.delay_schedule.iter().enumerate() {
        let field = format!("links[{i}].delay_schedule[{k}]");
        if !(0.0..=MAX_TIME_S).contains(&t) || t <= prev {
            return Err(err(
                field,
                format!("times must be in [0, {MAX_TIME_S} s] and strictly increasing, got {t}"),
            ));
        }
        if !(l.jitter..=max_d).contains(&d) {
            return Err(err(
                field,
                format!(
                    "the delay must be in [{} s (the link's jitter), {max_d} s], got {d}",
                    l.jitter
                ),
            ));
        }
        prev = t;
    }
    Ok(())
}

/// A rate (bit/s) in [[`MIN_RATE_BPS`], [`MAX_RATE_BPS`]].
fn check_rate(r: f64, field: impl Into<String>) -> Result<(), SpecError> {
    if !(MIN_RATE_BPS as f64..=MAX_RATE_BPS as f64).contains(&r) {
        return Err(err(
            field,
            format!("must be in [{MIN_RATE_BPS}, {MAX_RATE_BPS}] bit/s, got {r}"),
        ));
    }
    Ok(())
}

/// A packet size (bytes) in [[`MIN_PACKET_SIZE`], [`MAX_PACKET_SIZE`]].
fn check_packet_size(ps: u32, field: impl Into<String>) -> Result<(), SpecError> {
    if !(MIN_PACKET_SIZE..=MAX_PACKET_SIZE).contains(&(ps as u64)) {
        return Err(err(
            field,
            format!("must be in [{MIN_PACKET_SIZE}, {MAX_PACKET_SIZE}] bytes, got {ps}"),
        ));
    }
    Ok(())
}

impl RunSpec {
    /// Checks the spec; the first problem found is the error, naming its field. Order: run times,
    /// seed, links, flows, cross traffic, the time-series size, then the budget
    /// ([`crate::estimate::estimate`] against the spec's `limits`).
    pub fn validate(&self) -> Result<(), SpecError> {
        if !(self.duration > 0.0 && self.duration <= MAX_TIME_S) {
            return Err(err(
                "duration",
                format!("must be > 0 and <= {MAX_TIME_S} s, got {}", self.duration),
            ));
        }
        // NaN is rejected too.
        if !(self.sample_interval > 0.0 && self.sample_interval <= MAX_TIME_S) {
            return Err(err(
                "sample_interval",
                format!("must be > 0, got {}", self.sample_interval),
            ));
        }
        let [m0, m1] = self.measure;
        if !(0.0 <= m0 && m0 < m1 && m1 <= self.duration + 1e-9) {
            return Err(err(
                "measure",
                format!("must satisfy 0 <= start < end <= duration, got [{m0}, {m1}]"),
            ));
        }
        if self.seed >= SEED_LIMIT {
            return Err(err("seed", format!("must be < 2^63, got {}", self.seed)));
        }
        for (i, l) in self.links.iter().enumerate() {
            if !(l.rate_bps > 0.0 && l.rate_bps.is_finite()) {
                return Err(err(
                    format!("links[{i}].rate_bps"),
                    format!("must be > 0, got {}", l.rate_bps),
                ));
            }
            check_rate(l.rate_bps, format!("links[{i}].rate_bps"))?;
            if l.delay.is_nan() || l.delay < 0.0 {
                return Err(err(
                    format!("links[{i}].delay"),
                    format!("must be >= 0, got {}", l.delay),
                ));
            }
            check_time(l.delay, format!("links[{i}].delay"), MAX_TIME_S)?;
            if l.buffer_pkts == Some(0) || l.buffer_bytes == Some(0) {
                return Err(err(format!("links[{i}].buffer"), "must be > 0"));
            }
            if l.buffer_pkts.is_some_and(|p| p as u64 > MAX_BUFFER_PKTS)
                || l.buffer_bytes.is_some_and(|b| b > MAX_BUFFER_BYTES)
            {
                return Err(err(
                    format!("links[{i}].buffer"),
                    format!(
                        "must be at most {MAX_BUFFER_PKTS} packets and {MAX_BUFFER_BYTES} bytes"
                    ),
                ));
            }
            if !(0.0..=1.0).contains(&l.loss) {
                return Err(err(
                    format!("links[{i}].loss"),
                    format!("must be in [0, 1], got {}", l.loss),
                ));
            }
            if !(0.0..=l.delay).contains(&l.jitter) {
                return Err(err(
                    format!("links[{i}].jitter"),
                    format!(
                        "must be in [0, the link's delay {} s] (the delay cannot go below 0), got {}",
                        l.delay, l.jitter
                    ),
                ));
            }
            if !["", "uniform", "normal"].contains(&l.jitter_dist.as_str()) {
                return Err(err(
                    format!("links[{i}].jitter_dist"),
                    format!("must be \"uniform\" or \"normal\", got {:?}", l.jitter_dist),
                ));
            }
            for (name, p) in [("reorder", l.reorder), ("duplicate", l.duplicate)] {
                if !(0.0..=1.0).contains(&p) {
                    return Err(err(
                        format!("links[{i}].{name}"),
                        format!("must be in [0, 1], got {p}"),
                    ));
                }
            }
            if l.trace_ms.len() as u64 > MAX_TRACE_LINES {
                return Err(err(
                    format!("links[{i}].trace_ms"),
                    format!(
                        "at most {MAX_TRACE_LINES} opportunities, got {}",
                        l.trace_ms.len()
                    ),
                ));
            }
            let mut prev = 0.0;
            for (k, &t) in l.trace_ms.iter().enumerate() {
                if !(t.is_finite() && t >= prev && t <= MAX_TRACE_MS as f64) {
                    return Err(err(
                        format!("links[{i}].trace_ms[{k}]"),
                        format!(
                            "times must be finite, non-decreasing and in [0, {MAX_TRACE_MS}] ms, got {t}"
                        ),
                    ));
                }
                prev = t;
            }
            if l.trace_ms.last().is_some_and(|&t| t <= 0.0) {
                return Err(err(
                    format!("links[{i}].trace_ms"),
                    "the last time (the period) must be > 0 ms".to_string(),
                ));
            }
            for (k, &(t, p)) in l.loss_schedule.iter().enumerate() {
                if !(0.0..=1.0).contains(&p) || !(0.0..=MAX_TIME_S).contains(&t) {
                    return Err(err(
                        format!("links[{i}].loss_schedule[{k}]"),
                        format!("needs t in [0, {MAX_TIME_S} s] and p in [0, 1]"),
                    ));
                }
            }
            check_delay_schedule(l, i)?;
        }
        let nl = self.links.len();
        if self.flows.len() as u64 > MAX_FLOWS {
            return Err(err(
                "flows",
                format!("at most {MAX_FLOWS} flows, got {}", self.flows.len()),
            ));
        }
        for (i, f) in self.flows.iter().enumerate() {
            check_flow(f, &format!("flows[{i}]"), nl)?;
        }
        for (i, t) in self.traffic.iter().enumerate() {
            check_path(&t.path, &format!("traffic[{i}].path"), nl)?;
            let field = format!("traffic[{i}]");
            if !(t.rate_bps > 0.0 && t.rate_bps.is_finite()) {
                return Err(err(field, format!("rate must be > 0, got {}", t.rate_bps)));
            }
            if t.packet_size == 0 {
                return Err(err(field, "packet_size must be > 0"));
            }
            check_rate(t.rate_bps, format!("traffic[{i}].rate_bps"))?;
            check_packet_size(t.packet_size, format!("traffic[{i}].packet_size"))?;
            check_time(t.start, format!("traffic[{i}].start"), MAX_TIME_S)?;
            if let Some(s) = t.stop {
                check_time(s, format!("traffic[{i}].stop"), MAX_TIME_S)?;
            }
            for (name, m) in [("mean_on", t.mean_on), ("mean_off", t.mean_off)] {
                if let Some(m) = m {
                    if !(m > 0.0 && m <= MAX_TIME_S) {
                        return Err(err(
                            format!("traffic[{i}].{name}"),
                            format!("must be a time in (0, {MAX_TIME_S} s], got {m}"),
                        ));
                    }
                }
            }
            match t.kind.as_str() {
                "cbr" | "poisson" => {}
                "transfers" => {
                    let Some(f) = t.flow.as_deref() else {
                        return Err(err(
                            format!("traffic[{i}].flow"),
                            "a transfers source needs its flow template",
                        ));
                    };
                    check_flow(f, &format!("traffic[{i}]"), nl)?;
                    match t.mean_size {
                        Some(m) if m >= 1.0 && m <= MAX_FLOW_SIZE as f64 => {}
                        m => {
                            return Err(err(
                                format!("traffic[{i}].mean_size"),
                                format!("must be in [1, {MAX_FLOW_SIZE}] bytes, got {m:?}"),
                            ))
                        }
                    }
                    if let Some(shape) = t
                        .shape
                        .filter(|&s| s.is_nan() || s <= 1.0 || s > MAX_SHAPE as f64)
                    {
                        return Err(err(
                            format!("traffic[{i}].shape"),
                            format!(
                                "must be in (1, {MAX_SHAPE}] (a finite mean size), got {shape}"
                            ),
                        ));
                    }
                }
                "onoff" => {
                    if let Some(shape) = t.shape.filter(|&s| s <= 1.0) {
                        return Err(err(
                            field,
                            format!("shape must be > 1 (finite mean), got {shape}"),
                        ));
                    }
                    if let Some(shape) = t.shape.filter(|&s| s.is_nan() || s > MAX_SHAPE as f64) {
                        return Err(err(
                            field,
                            format!("shape must be <= {MAX_SHAPE}, got {shape}"),
                        ));
                    }
                }
                k => {
                    return Err(err(
                        field,
                        format!("kind must be one of cbr, poisson, onoff, transfers; got {k:?}"),
                    ))
                }
            }
        }
        let rows = limits::series_rows(
            self.duration,
            self.sample_interval,
            self.flows.len(),
            self.links.len(),
        );
        if rows > MAX_SERIES_ROWS as f64 {
            return Err(err(
                "sample_interval",
                format!(
                    "{} s would record {rows} time-series rows (samples × (flows + links)); at \
                     most {MAX_SERIES_ROWS}: use a coarser sample_interval",
                    self.sample_interval
                ),
            ));
        }
        self.check_budget()
    }

    /// The run's estimate ([`crate::estimate::estimate`]) within its budget (the spec's `limits`, default
    /// [`Budget::default`](crate::limits::Budget::default)).
    pub fn check_budget(&self) -> Result<(), SpecError> {
        let budget = self.limits.unwrap_or_default();
        let e = crate::estimate::estimate(self);
        // NaN never passes.
        if e.memory.is_nan() || e.memory > budget.max_memory as f64 {
            return Err(err(
                "limits.max_memory",
                format!(
                    "the run needs an estimated {} of memory ({}), over the budget of {}: \
                     raise it ([limits] max_memory) or make the run smaller",
                    limits::show_bytes(e.memory),
                    e.memory_breakdown(),
                    limits::show_bytes(budget.max_memory as f64)
                ),
            ));
        }
        if e.events.is_nan() || e.events > budget.max_events as f64 {
            return Err(err(
                "limits.max_events",
                format!(
                    "the run needs an estimated {} events ({} packet transmissions), over the \
                     budget of {}: raise it ([limits] max_events) or make the run smaller",
                    limits::show_count(e.events),
                    limits::show_count(e.packets),
                    limits::show_count(budget.max_events as f64)
                ),
            ));
        }
        Ok(())
    }
}

/// One flow's checks (a `[[flows]]` entry, or the template of a `transfers` source) under field `p`.
fn check_flow(f: &FlowSpec, p: &str, nl: usize) -> Result<(), SpecError> {
    check_path(&f.path, &format!("{p}.path"), nl)?;
    check_path(&f.ack_path, &format!("{p}.ack_path"), nl)?;
    for (name, t) in [
        ("extra_delay_fwd", f.extra_delay_fwd),
        ("extra_delay_rev", f.extra_delay_rev),
        ("rtt", f.rtt),
    ] {
        check_time(t, format!("{p}.{name}"), MAX_TIME_S)?;
    }
    match f.start {
        StartSpec::At(s) => check_time(s, format!("{p}.start"), MAX_TIME_S)?,
        StartSpec::Uniform([lo, hi]) => {
            check_time(lo, format!("{p}.start"), MAX_TIME_S)?;
            check_time(hi, format!("{p}.start"), MAX_TIME_S)?;
            if lo > hi {
                return Err(err(
                    format!("{p}.start"),
                    format!("[lo, hi] needs lo <= hi, got [{lo}, {hi}]"),
                ));
            }
        }
    }
    if let Some(s) = f.stop {
        check_time(s, format!("{p}.stop"), MAX_TIME_S)?;
    }
    if f.size.is_some_and(|b| b > MAX_FLOW_SIZE) {
        return Err(err(
            format!("{p}.size"),
            format!("must be at most {MAX_FLOW_SIZE} bytes"),
        ));
    }
    let t = &f.transport;
    if t.mss == 0 || t.packet_size <= t.mss {
        return Err(err(format!("{p}.transport"), "needs 0 < mss < packet_size"));
    }
    check_packet_size(t.packet_size, format!("{p}.transport.packet_size"))?;
    if !(1..=MAX_DELAYED_ACK).contains(&t.delayed_ack) {
        return Err(err(
            format!("{p}.transport.delayed_ack"),
            format!("must be in [1, {MAX_DELAYED_ACK}], got {}", t.delayed_ack),
        ));
    }
    if !(t.initial_cwnd > 0.0 && t.initial_cwnd <= MAX_INITIAL_CWND as f64) {
        return Err(err(
            format!("{p}.transport.initial_cwnd"),
            format!(
                "must be in (0, {MAX_INITIAL_CWND}] packets, got {}",
                t.initial_cwnd
            ),
        ));
    }
    check_time(
        t.delack_timeout,
        format!("{p}.transport.delack_timeout"),
        MAX_TIME_S,
    )?;
    check_time(
        t.min_rto,
        format!("{p}.transport.min_rto"),
        MAX_RTO_NS as f64 / 1e9,
    )?;
    if let Some(w) = t.max_window {
        if !(1..=MAX_WINDOW_PKTS).contains(&(w as u64)) {
            return Err(err(
                format!("{p}.transport.max_window"),
                format!("must be in [1, {MAX_WINDOW_PKTS}] packets, got {w}"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::spec::*;
    use crate::SpecError;

    fn spec() -> RunSpec {
        let link = LinkSpec {
            rate_bps: 10e6,
            delay: 0.01,
            buffer_pkts: Some(100),
            buffer_bytes: None,
            queue: "droptail".into(),
            queue_params: Default::default(),
            loss: 0.0,
            loss_schedule: vec![],
            delay_schedule: vec![],
            loss_data_only: true,
            trace_ms: vec![],
            jitter: 0.0,
            jitter_dist: String::new(),
            jitter_reorder: false,
            reorder: 0.0,
            duplicate: 0.0,
        };
        RunSpec {
            name: "t".into(),
            seed: 1,
            duration: 10.0,
            sample_interval: 0.1,
            measure: [0.0, 10.0],
            links: vec![link.clone(), link],
            flows: vec![FlowSpec {
                group: 0,
                cc: "newreno".into(),
                params: Default::default(),
                path: vec![0],
                ack_path: vec![1],
                extra_delay_fwd: 0.0,
                extra_delay_rev: 0.0,
                rtt: 0.02,
                start: StartSpec::At(0.0),
                stop: None,
                size: None,
                transport: TransportSpec::default(),
            }],
            traffic: vec![],
            trace_packets: false,
            limits: None,
        }
    }

    fn field(s: &RunSpec) -> String {
        s.validate().unwrap_err().field
    }

    #[test]
    fn a_valid_spec_passes() {
        assert_eq!(spec().validate(), Ok(()));
    }

    #[test]
    fn each_problem_names_its_field() {
        let mut s = spec();
        s.duration = f64::NAN;
        assert_eq!(field(&s), "duration");
        let mut s = spec();
        s.measure = [5.0, 4.0];
        assert_eq!(field(&s), "measure");
        let mut s = spec();
        s.links[1].loss_schedule = vec![(1.0, 1.5)];
        assert_eq!(field(&s), "links[1].loss_schedule[0]");
        // a repeated time (entry 1), a negative time, a negative delay, over the limit, not a number
        for (bad, k) in [
            (vec![(1.0, 0.1), (1.0, 0.2)], 1),
            (vec![(-1.0, 0.1)], 0),
            (vec![(0.0, -0.1)], 0),
            (vec![(0.0, 61.0)], 0),
            (vec![(0.0, f64::NAN)], 0),
        ] {
            let mut s = spec();
            s.links[0].delay_schedule = bad;
            assert_eq!(field(&s), format!("links[0].delay_schedule[{k}]"));
        }
        let mut s = spec();
        s.flows[0].ack_path = vec![1, 2];
        assert_eq!(
            s.validate(),
            Err(SpecError::new(
                "flows[0].ack_path[1]",
                "link 2 does not exist (2 links)"
            ))
        );
        let mut s = spec();
        s.flows[0].transport.mss = 1500;
        assert_eq!(field(&s), "flows[0].transport");
        let mut s = spec();
        s.flows[0].transport.delayed_ack = 65;
        assert_eq!(field(&s), "flows[0].transport.delayed_ack");
        let mut s = spec();
        s.seed = 1 << 63;
        assert_eq!(field(&s), "seed");
    }

    #[test]
    fn cross_traffic_is_checked() {
        let mut s = spec();
        s.traffic.push(TrafficSpec {
            kind: "onoff".into(),
            rate_bps: 1e6,
            packet_size: 1000,
            start: 0.0,
            stop: None,
            path: vec![0],
            mean_on: None,
            mean_off: None,
            shape: Some(1.0),
            mean_size: None,
            flow: None,
        });
        assert_eq!(
            s.validate().unwrap_err().message,
            "shape must be > 1 (finite mean), got 1"
        );
        s.traffic[0].shape = None;
        assert_eq!(s.validate(), Ok(()));
        s.traffic[0].kind = "burst".into();
        assert_eq!(field(&s), "traffic[0]");
        s.traffic[0].path = vec![7];
        assert_eq!(field(&s), "traffic[0].path[0]");
    }

    #[test]
    fn times_rates_and_windows_are_bounded() {
        // Each of these used to reach the engine: a panic (min_rto > max_rto in the RTT estimator's
        // clamp), a wrapped clock (huge delays, tiny rates) or a near-endless first burst.
        let mut s = spec();
        s.flows[0].transport.min_rto = 100.0;
        assert_eq!(field(&s), "flows[0].transport.min_rto");
        let mut s = spec();
        s.links[0].rate_bps = 1e-6;
        assert_eq!(field(&s), "links[0].rate_bps");
        let mut s = spec();
        s.links[0].delay = 1e12;
        assert_eq!(field(&s), "links[0].delay");
        let mut s = spec();
        s.flows[0].extra_delay_fwd = f64::INFINITY;
        assert_eq!(field(&s), "flows[0].extra_delay_fwd");
        let mut s = spec();
        s.flows[0].start = StartSpec::Uniform([f64::NAN, 1.0]);
        assert_eq!(field(&s), "flows[0].start");
        let mut s = spec();
        s.flows[0].transport.initial_cwnd = 1e10;
        assert_eq!(field(&s), "flows[0].transport.initial_cwnd");
        let mut s = spec();
        s.flows[0].transport.max_window = Some(u32::MAX);
        assert_eq!(field(&s), "flows[0].transport.max_window");
        let mut s = spec();
        s.duration = 1e300;
        assert_eq!(field(&s), "duration");
        let mut s = spec();
        s.links[0].buffer_pkts = Some(u32::MAX);
        assert_eq!(field(&s), "links[0].buffer");
    }

    #[test]
    fn the_budget_holds_and_can_be_raised() {
        use crate::estimate::estimate;
        use crate::limits::Budget;
        // 1-byte-scale cross traffic is refused by size; at the smallest size and the highest rate
        // for long enough, by events.
        let mut s = spec();
        s.duration = 1000.0;
        s.measure = [0.0, 1000.0];
        s.sample_interval = 10.0;
        s.links[0].rate_bps = 1e13;
        // (with a delay, the packets on its wire alone would need 30 GB)
        s.links[0].delay = 0.0;
        s.traffic.push(TrafficSpec {
            kind: "cbr".into(),
            rate_bps: 1e13,
            packet_size: 64,
            start: 0.0,
            stop: None,
            path: vec![0],
            mean_on: None,
            mean_off: None,
            shape: None,
            mean_size: None,
            flow: None,
        });
        assert_eq!(field(&s), "limits.max_events");
        s.limits = Some(Budget {
            max_memory: u64::MAX,
            max_events: u64::MAX,
        });
        assert_eq!(s.validate(), Ok(()));
        // Many flows: refused by memory, the message gives the estimate and the budget.
        let mut s = spec();
        s.flows = vec![s.flows[0].clone(); 1_000_000];
        s.sample_interval = 10.0;
        let e = s.validate().unwrap_err();
        assert_eq!(e.field, "limits.max_memory");
        assert!(
            e.message.contains("over the budget of 4.0 GiB"),
            "{}",
            e.message
        );
        assert!(estimate(&s).memory > 4e9);
        // The small spec is far inside.
        let e = estimate(&spec());
        assert!(e.memory < 64e6 && e.events < 1e7, "{e:?}");
    }

    #[test]
    fn the_series_limit_holds() {
        let mut s = spec();
        // (10 / 1e-6 + 1) samples × 3 rows: far over the limit
        s.sample_interval = 1e-6;
        assert_eq!(field(&s), "sample_interval");
    }
}
