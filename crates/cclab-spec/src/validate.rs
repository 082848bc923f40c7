//! What any driver needs of a spec before building from it. The Python front door has checked the
//! scenario file already (with messages that quote the user's units); this is the check of the
//! resolved spec itself, so a spec written by hand or by another tool is rejected the same way.
//! Building errors (an unknown algorithm, its parameters) are the drivers': they need the registry.

use crate::limits::{self, MAX_DELAYED_ACK, MAX_SERIES_ROWS, SEED_LIMIT};
use crate::spec::RunSpec;
use crate::SpecError;

fn err(field: impl Into<String>, message: impl Into<String>) -> SpecError {
    SpecError::new(field, message)
}

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

impl RunSpec {
    /// Checks the spec; the first problem found is the error, naming its field. Order: run times,
    /// seed, links, flows, cross traffic, then the time-series size.
    pub fn validate(&self) -> Result<(), SpecError> {
        if !(self.duration > 0.0 && self.duration.is_finite()) {
            return Err(err(
                "duration",
                format!("must be > 0, got {}", self.duration),
            ));
        }
        // NaN is rejected too.
        if self.sample_interval.is_nan() || self.sample_interval <= 0.0 {
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
            if l.delay.is_nan() || l.delay < 0.0 {
                return Err(err(
                    format!("links[{i}].delay"),
                    format!("must be >= 0, got {}", l.delay),
                ));
            }
            if l.buffer_pkts == Some(0) || l.buffer_bytes == Some(0) {
                return Err(err(format!("links[{i}].buffer"), "must be > 0"));
            }
            if !(0.0..=1.0).contains(&l.loss) {
                return Err(err(
                    format!("links[{i}].loss"),
                    format!("must be in [0, 1], got {}", l.loss),
                ));
            }
            for (k, &(t, p)) in l.loss_schedule.iter().enumerate() {
                if !(0.0..=1.0).contains(&p) || t < 0.0 {
                    return Err(err(
                        format!("links[{i}].loss_schedule[{k}]"),
                        "needs t >= 0 and p in [0, 1]",
                    ));
                }
            }
        }
        let nl = self.links.len();
        for (i, f) in self.flows.iter().enumerate() {
            check_path(&f.path, &format!("flows[{i}].path"), nl)?;
            check_path(&f.ack_path, &format!("flows[{i}].ack_path"), nl)?;
            let t = &f.transport;
            if t.mss == 0 || t.packet_size <= t.mss {
                return Err(err(
                    format!("flows[{i}].transport"),
                    "needs 0 < mss < packet_size",
                ));
            }
            if !(1..=MAX_DELAYED_ACK).contains(&t.delayed_ack) {
                return Err(err(
                    format!("flows[{i}].transport.delayed_ack"),
                    format!("must be in [1, {MAX_DELAYED_ACK}], got {}", t.delayed_ack),
                ));
            }
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
            match t.kind.as_str() {
                "cbr" | "poisson" => {}
                "onoff" => {
                    if let Some(shape) = t.shape.filter(|&s| s <= 1.0) {
                        return Err(err(
                            field,
                            format!("shape must be > 1 (finite mean), got {shape}"),
                        ));
                    }
                }
                k => {
                    return Err(err(
                        field,
                        format!("kind must be one of cbr, poisson, onoff; got {k:?}"),
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
        Ok(())
    }
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
            loss_data_only: true,
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
    fn the_series_limit_holds() {
        let mut s = spec();
        // (10 / 1e-6 + 1) samples × 3 rows: far over the limit
        s.sample_interval = 1e-6;
        assert_eq!(field(&s), "sample_interval");
    }
}
