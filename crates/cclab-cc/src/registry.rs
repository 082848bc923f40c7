//! Names → algorithm and queue-discipline constructors: two tables of (name, builder), each builder of
//! one signature. This is the only place that knows every algorithm; scenario validation (Python) asks
//! it whether a name and its parameters are valid. The accepted names ([`SENDER_NAMES`],
//! [`QUEUE_NAMES`]) are read from the tables, so a new algorithm is one file plus one row in
//! [`SENDERS`].
//!
//! Nothing here is imported by an algorithm: what algorithms take at creation ([`SenderEnv`],
//! [`LinkEnv`]) lives in [`crate::env`] and is re-exported here for the drivers.

use crate::algorithms::africa::Africa;
use crate::algorithms::bbr::Bbr;
use crate::algorithms::bbr3::Bbr3;
use crate::algorithms::bic::Bic;
use crate::algorithms::binomial::Binomial;
use crate::algorithms::copa::Copa;
use crate::algorithms::cubic::Cubic;
use crate::algorithms::dctcp::Dctcp;
use crate::algorithms::fast::Fast;
use crate::algorithms::highspeed::HighSpeed;
use crate::algorithms::htcp::Htcp;
use crate::algorithms::hybla::Hybla;
use crate::algorithms::illinois::Illinois;
use crate::algorithms::ledbat::Ledbat;
use crate::algorithms::libra::Libra;
use crate::algorithms::lp::Lp;
use crate::algorithms::madison::Madison;
use crate::algorithms::maxnet::MaxNet;
use crate::algorithms::reno::Reno;
use crate::algorithms::scalable::Scalable;
use crate::algorithms::vegas::Vegas;
use crate::algorithms::veno::Veno;
use crate::algorithms::westwood::Westwood;
use crate::algorithms::yeah::Yeah;
use crate::aqm::codel::CoDel;
use crate::aqm::droptail::DropTail;
use crate::aqm::fq::Fq;
use crate::aqm::fq_codel::FqCoDel;
use crate::aqm::maxnet::{MaxNetRouter, MaxNetRouterConfig};
use crate::aqm::pie::Pie;
use crate::aqm::red::Red;
use crate::aqm::QueueDiscipline;
use crate::cc::{CongestionControl, Recovery};
use crate::params::{ParamError, Params};

pub use crate::env::{flow_seed, LinkEnv, SenderEnv};

/// A sender algorithm and the loss recovery the transport should run with it.
pub struct BuiltSender {
    pub cc: Box<dyn CongestionControl>,
    /// `None`: use the scenario's `transport.sack` setting (SACK recovery if on, NewReno if off).
    pub recovery: Option<Recovery>,
}

/// The loss recovery algorithm `name` asks the transport for ([`BuiltSender::recovery`]) at its
/// default parameters: a receiver needs it too (SACK recovery implies SACK blocks) and has no
/// algorithm. Read off the table by building the algorithm once, so it can never disagree with
/// [`build_sender`]; `None` for unknown names too.
pub fn sender_recovery(name: &str) -> Option<Recovery> {
    let env = SenderEnv::default();
    build_sender(name, &Params::default(), &env).ok()?.recovery
}

/// Builds one sender algorithm from a flow's `params` and its endpoint. Errors name the field.
pub type SenderBuilder = fn(&Params, &SenderEnv) -> Result<BuiltSender, ParamError>;

/// Builds one queue discipline from a link's `params` and the link. Errors name the field.
pub type QueueBuilder = fn(&Params, &LinkEnv) -> Result<Box<dyn QueueDiscipline>, ParamError>;

/// A sender that leaves loss recovery to the scenario's `transport.sack` setting.
fn sender(cc: impl CongestionControl + 'static) -> Result<BuiltSender, ParamError> {
    sender_with(cc, None)
}

fn sender_with(
    cc: impl CongestionControl + 'static,
    recovery: Option<Recovery>,
) -> Result<BuiltSender, ParamError> {
    Ok(BuiltSender {
        cc: Box::new(cc),
        recovery,
    })
}

/// Every sender algorithm, in the order [`SENDER_NAMES`] lists them (error messages, `cclab
/// algorithms`).
pub const SENDERS: &[(&str, SenderBuilder)] = &[
    ("newreno", |p, e| {
        sender(Reno::new("newreno", e.initial_cwnd, p)?.with_hystart(e.hystart))
    }),
    ("reno", |p, e| {
        sender_with(
            Reno::new("reno", e.initial_cwnd, p)?.with_hystart(e.hystart),
            Some(Recovery::Reno),
        )
    }),
    ("sack", |p, e| {
        sender_with(
            Reno::new("sack", e.initial_cwnd, p)?.with_hystart(e.hystart),
            Some(Recovery::Sack),
        )
    }),
    ("fast", |p, e| {
        sender(Fast::new(e.initial_cwnd, e.packet_size, p)?)
    }),
    ("binomial", |p, e| {
        sender(Binomial::new("binomial", e.initial_cwnd, p)?)
    }),
    ("iiad", |p, e| {
        sender(Binomial::new("iiad", e.initial_cwnd, p)?)
    }),
    ("sqrt", |p, e| {
        sender(Binomial::new("sqrt", e.initial_cwnd, p)?)
    }),
    ("libra", |p, e| {
        sender(Libra::new(
            e.initial_cwnd,
            e.packet_size.saturating_sub(e.mss),
            p,
        )?)
    }),
    ("maxnet", |p, e| {
        sender(MaxNet::new(e.initial_cwnd, e.packet_size, p)?)
    }),
    ("cubic", |p, e| {
        sender(Cubic::new(e.initial_cwnd, p)?.with_hystart(e.hystart))
    }),
    ("vegas", |p, e| sender(Vegas::new(e.initial_cwnd, p)?)),
    ("highspeed", |p, e| {
        sender(HighSpeed::new(e.initial_cwnd, p)?)
    }),
    ("scalable", |p, e| sender(Scalable::new(e.initial_cwnd, p)?)),
    ("bic", |p, e| sender(Bic::new(e.initial_cwnd, p)?)),
    ("hybla", |p, e| sender(Hybla::new(e.initial_cwnd, p)?)),
    ("westwood", |p, e| {
        sender(Westwood::new(e.initial_cwnd, e.mss, p)?)
    }),
    ("africa", |p, e| sender(Africa::new(e.initial_cwnd, p)?)),
    ("madison", |p, e| sender(Madison::new(e, p)?)),
    ("veno", |p, e| sender(Veno::new(e.initial_cwnd, p)?)),
    ("illinois", |p, e| sender(Illinois::new(e.initial_cwnd, p)?)),
    ("ledbat", |p, e| sender(Ledbat::new(e.initial_cwnd, p)?)),
    ("htcp", |p, e| sender(Htcp::new(e.initial_cwnd, p)?)),
    ("yeah", |p, e| sender(Yeah::new(e.initial_cwnd, p)?)),
    ("lp", |p, e| sender(Lp::new(e.initial_cwnd, p)?)),
    ("dctcp", |p, e| sender(Dctcp::new(e.initial_cwnd, p)?)),
    ("bbr", |p, e| sender(Bbr::new(e, p)?)),
    ("bbr3", |p, e| sender(Bbr3::new(e, p)?)),
    ("copa", |p, e| sender(Copa::new(e, p)?)),
];

/// Every queue discipline, in the order [`QUEUE_NAMES`] lists them.
pub const QUEUES: &[(&str, QueueBuilder)] = &[
    ("droptail", |p, e| {
        Ok(Box::new(DropTail::from_params(p, e.limit)?))
    }),
    ("red", |p, e| {
        Ok(Box::new(Red::new(p, e.limit, e.rate_bps, e.packet_size)?))
    }),
    ("maxnet", |p, e| {
        let cfg = MaxNetRouterConfig::from_params(e.rate_bps, p)?;
        Ok(Box::new(MaxNetRouter::new(cfg, e.limit)))
    }),
    ("codel", |p, e| {
        Ok(Box::new(CoDel::new(p, e.limit, e.packet_size)?))
    }),
    ("pie", |p, e| {
        Ok(Box::new(Pie::new(p, e.limit, e.packet_size)?))
    }),
    ("fq_codel", |p, e| {
        Ok(Box::new(FqCoDel::new(p, e.limit, e.packet_size)?))
    }),
    ("fq", |p, e| {
        Ok(Box::new(Fq::new(p, e.limit, e.packet_size)?))
    }),
];

/// The first column of a table, at compile time.
const fn names<T, const N: usize>(table: &[(&'static str, T)]) -> [&'static str; N] {
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = table[i].0;
        i += 1;
    }
    out
}

/// Every sender name accepted in a scenario's `cc` field (the first column of [`SENDERS`]).
pub const SENDER_NAMES: &[&str] = &names::<_, { SENDERS.len() }>(SENDERS);

/// Every queue name accepted in a link's `queue` field (the first column of [`QUEUES`]).
pub const QUEUE_NAMES: &[&str] = &names::<_, { QUEUES.len() }>(QUEUES);

/// Builds a sender by name. Unknown names and parameters are errors naming the field.
pub fn build_sender(
    name: &str,
    params: &Params,
    env: &SenderEnv,
) -> Result<BuiltSender, ParamError> {
    let Some((_, build)) = SENDERS.iter().find(|(n, _)| *n == name) else {
        return Err(ParamError {
            field: "cc".into(),
            message: format!(
                "unknown algorithm {name:?}; allowed: {}",
                SENDER_NAMES.join(", ")
            ),
        });
    };
    build(params, env)
}

/// Builds a queue discipline by name. Unknown names and parameters are errors naming the field.
pub fn build_queue(
    kind: &str,
    params: &Params,
    env: &LinkEnv,
) -> Result<Box<dyn QueueDiscipline>, ParamError> {
    let Some((_, build)) = QUEUES.iter().find(|(n, _)| *n == kind) else {
        return Err(ParamError {
            field: "queue".into(),
            message: format!(
                "unknown queue {kind:?}; allowed: {}",
                QUEUE_NAMES.join(", ")
            ),
        });
    };
    build(params, env)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aqm::BufferLimit;
    use crate::params::ParamValue;

    fn sender_env() -> SenderEnv {
        SenderEnv::default()
    }

    fn link_env() -> LinkEnv {
        LinkEnv {
            rate_bps: 400e6,
            limit: BufferLimit {
                pkts: Some(100),
                bytes: None,
            },
            packet_size: 1500,
        }
    }

    #[test]
    fn names_are_the_tables_first_column_unique_and_in_order() {
        assert_eq!(
            SENDER_NAMES,
            [
                "newreno",
                "reno",
                "sack",
                "fast",
                "binomial",
                "iiad",
                "sqrt",
                "libra",
                "maxnet",
                "cubic",
                "vegas",
                "highspeed",
                "scalable",
                "bic",
                "hybla",
                "westwood",
                "africa",
                "madison",
                "veno",
                "illinois",
                "ledbat",
                "htcp",
                "yeah",
                "lp",
                "dctcp",
                "bbr",
                "bbr3",
                "copa",
            ]
        );
        assert_eq!(
            QUEUE_NAMES,
            ["droptail", "red", "maxnet", "codel", "pie", "fq_codel", "fq"]
        );
        for names in [SENDER_NAMES, QUEUE_NAMES] {
            let mut sorted = names.to_vec();
            sorted.sort();
            sorted.dedup();
            assert_eq!(sorted.len(), names.len(), "duplicate name in {names:?}");
        }
    }

    #[test]
    fn every_row_builds_under_its_own_name_with_default_params() {
        for &name in SENDER_NAMES {
            let b = build_sender(name, &Params::new(), &sender_env()).unwrap();
            assert_eq!(b.cc.name(), name);
        }
        for &kind in QUEUE_NAMES {
            let q = build_queue(kind, &Params::new(), &link_env()).unwrap();
            assert_eq!(q.name(), kind);
        }
        let recovery = |n| {
            build_sender(n, &Params::new(), &sender_env())
                .unwrap()
                .recovery
        };
        assert_eq!(recovery("reno"), Some(Recovery::Reno));
        assert_eq!(recovery("sack"), Some(Recovery::Sack));
        assert_eq!(recovery("newreno"), None);
    }

    #[test]
    fn every_parameter_with_a_unit_is_read_by_its_owner_and_takes_a_string() {
        // The unit table (params.rs) names parameters by their owner; a row whose owner does not read
        // that parameter would silently stop applying. Each must be read (never "unknown parameter")
        // and parsed from a string with a unit (an in-range value builds; an error is a range error).
        for (owner, name, unit) in crate::params::units() {
            let text = match unit {
                crate::params::Unit::Seconds => "50ms",
                crate::params::Unit::Mbps => "100Mbps",
                crate::params::Unit::Bytes => "3000B",
            };
            let mut p = Params::new();
            p.insert((*name).into(), ParamValue::Str(text.into()));
            let mut results = Vec::new();
            if SENDER_NAMES.contains(owner) {
                results.push(build_sender(owner, &p, &sender_env()).err());
            }
            if QUEUE_NAMES.contains(owner) {
                results.push(build_queue(owner, &p, &link_env()).err());
            }
            assert!(
                !results.is_empty(),
                "{owner} is neither an algorithm nor a queue"
            );
            for e in results.into_iter().flatten() {
                assert!(
                    e.message.starts_with("must be between") || e.message.starts_with("must be >"),
                    "{owner}.{name} = {text:?}: {}",
                    e.message
                );
            }
        }
    }

    #[test]
    fn unknown_names_and_params_name_the_field() {
        let e = build_sender("cubc", &Params::new(), &sender_env())
            .err()
            .unwrap();
        assert_eq!(e.field, "cc");
        assert_eq!(
            e.message,
            format!(
                "unknown algorithm \"cubc\"; allowed: {}",
                SENDER_NAMES.join(", ")
            )
        );
        let e = build_queue("fifo", &Params::new(), &link_env())
            .err()
            .unwrap();
        assert_eq!(e.field, "queue");
        assert_eq!(
            e.message,
            "unknown queue \"fifo\"; allowed: droptail, red, maxnet, codel, pie, fq_codel, fq"
        );
        let mut p = Params::new();
        p.insert("limit".into(), ParamValue::Num(1.0));
        let e = build_queue("droptail", &p, &link_env()).err().unwrap();
        assert_eq!(e.field, "limit");
        assert_eq!(
            e.message,
            "unknown parameter for droptail; allowed: mark_threshold"
        );
    }

    #[test]
    fn maxnet_sender_row() {
        let b = build_sender("maxnet", &Params::new(), &sender_env()).unwrap();
        assert_eq!((b.cc.name(), b.cc.cwnd()), ("maxnet", 1.0));
        let mut out = Vec::new();
        b.cc.state(&mut out);
        let keys: Vec<_> = out.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, ["price", "xi", "mode", "price_wnd", "qs_rate"]);
    }

    #[test]
    fn maxnet_queue_row() {
        let env = link_env();
        let q = build_queue("maxnet", &Params::new(), &env).unwrap();
        assert_eq!(q.name(), "maxnet");
        let mut out = Vec::new();
        q.state(&mut out);
        // p_min(400 Mbit/s) = 0.736590 (docs/algorithms/maxnet.md, eq. 11), the initial price
        assert!((out[0].1 - 0.736590).abs() < 5e-7, "{out:?}");
        let mut p = Params::new();
        p.insert("T".into(), ParamValue::Num(-1.0));
        assert_eq!(build_queue("maxnet", &p, &env).err().unwrap().field, "T");
    }

    #[test]
    fn sender_recovery_is_what_build_sender_gives() {
        let env = SenderEnv {
            seed: 1,
            ..SenderEnv::default()
        };
        for name in SENDER_NAMES {
            let built = build_sender(name, &Params::default(), &env).unwrap();
            assert_eq!(built.recovery, sender_recovery(name), "{name}");
        }
        assert_eq!(sender_recovery("no such algorithm"), None);
    }
}
