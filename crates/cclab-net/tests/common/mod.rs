//! Shared by the real-datapath integration tests.

/// One BDP of `rate` and a round trip of two `owd` one-way delays, in 1500-byte packets (rounded up).
pub fn bdp_pkts(rate: f64, owd: f64) -> u32 {
    (rate * 2.0 * owd / 8.0 / 1500.0).ceil() as u32
}

/// A one-flow dumbbell run spec (JSON, as `cclab.net` writes it): `rate` both ways, `owd` one-way delay
/// per link, `buf` packets of drop-tail buffer, ACK every packet, SACK, min RTO 200 ms.
pub fn spec_json(
    cc: &str,
    rate: f64,
    owd: f64,
    buf: u32,
    duration: f64,
    measure: [f64; 2],
) -> String {
    format!(
        r#"{{"name":"t","seed":1,"duration":{duration},"sample_interval":0.1,"measure":[{m0},{m1}],
        "links":[{{"rate_bps":{rate},"delay":{owd},"buffer_pkts":{buf},"buffer_bytes":null,"queue":"droptail"}},
                 {{"rate_bps":{rate},"delay":{owd},"buffer_pkts":{buf},"buffer_bytes":null,"queue":"droptail"}}],
        "flows":[{{"group":0,"cc":"{cc}","path":[0],"ack_path":[1],"extra_delay_fwd":0,"extra_delay_rev":0,
          "rtt":{rtt},"start":0.0,"stop":null,"size":null,
          "transport":{{"mss":1448,"packet_size":1500,"initial_cwnd":10,"delayed_ack":1,"delack_timeout":0.2,
                        "min_rto":0.2,"sack":true}}}}]}}"#,
        m0 = measure[0],
        m1 = measure[1],
        rtt = 2.0 * owd,
    )
}

/// The smallest RTT sample of a flow's series (samples of 0 mean "none yet").
pub fn min_rtt(f: &cclab_net::run::FlowResult) -> f64 {
    f.series
        .min_rtt
        .iter()
        .copied()
        .filter(|x| *x > 0.0)
        .fold(f64::INFINITY, f64::min)
}
