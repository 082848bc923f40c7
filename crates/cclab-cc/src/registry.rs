//! Names → algorithm and queue-discipline constructors. This is the only place that knows every
//! algorithm; scenario validation (Python) asks it whether a name and its parameters are valid.

use crate::algorithms::reno::{Recovery, Reno};
use crate::aqm::droptail::DropTail;
use crate::aqm::{BufferLimit, QueueDiscipline};
use crate::cc::CongestionControl;
use crate::params::{ParamError, Params};

/// What an algorithm may know about its endpoint when it is created.
#[derive(Clone, Debug)]
pub struct SenderEnv {
    /// Payload bytes per full packet.
    pub mss: u32,
    /// On-the-wire bytes of a full data packet (MSS + headers).
    pub packet_size: u32,
    /// Initial window in packets.
    pub initial_cwnd: f64,
    /// This flow's random seed (Madison's exponential probe spacing). Drivers derive it with
    /// [`flow_seed`] from the run's seed and the flow's index, so the simulator and the real datapath
    /// give a flow the same random draws and adding a flow never changes another flow's draws.
    pub seed: u64,
}

/// The seed of flow `flow` (its index in the run spec) in a run seeded with `run_seed`: the first draw
/// of the flow's [`Stream::FlowSeed`](crate::rng::Stream::FlowSeed) stream.
pub fn flow_seed(run_seed: u64, flow: u64) -> u64 {
    use rand::Rng;
    crate::rng::Stream::FlowSeed.rng(run_seed, flow).gen()
}

/// A sender algorithm and the loss recovery the transport should run with it.
pub struct BuiltSender {
    pub cc: Box<dyn CongestionControl>,
    /// `None`: use the scenario's `transport.sack` setting (SACK recovery if on, NewReno if off).
    pub recovery: Option<Recovery>,
}

/// The loss recovery algorithm `name` asks the transport for ([`BuiltSender::recovery`]) without
/// building it: a receiver needs it too (SACK recovery implies SACK blocks) and has no algorithm.
pub fn sender_recovery(name: &str) -> Option<Recovery> {
    match name {
        "reno" => Some(Recovery::Reno),
        "sack" => Some(Recovery::Sack),
        _ => None,
    }
}

/// Every sender name accepted in a scenario's `cc` field.
pub const SENDER_NAMES: &[&str] = &[
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
];

/// Builds a sender by name. Unknown names and parameters are errors naming the field.
pub fn build_sender(
    name: &str,
    params: &Params,
    env: &SenderEnv,
) -> Result<BuiltSender, ParamError> {
    let (cc, recovery): (Box<dyn CongestionControl>, Option<Recovery>) = match name {
        "newreno" => (
            Box::new(Reno::new("newreno", env.initial_cwnd, params)?),
            None,
        ),
        "reno" => (
            Box::new(Reno::new("reno", env.initial_cwnd, params)?),
            Some(Recovery::Reno),
        ),
        "sack" => (
            Box::new(Reno::new("sack", env.initial_cwnd, params)?),
            Some(Recovery::Sack),
        ),
        "fast" => (
            Box::new(crate::algorithms::fast::Fast::new(
                env.initial_cwnd,
                env.packet_size,
                params,
            )?),
            None,
        ),
        "binomial" => (
            Box::new(crate::algorithms::binomial::Binomial::new(
                "binomial",
                env.initial_cwnd,
                params,
            )?),
            None,
        ),
        "iiad" => (
            Box::new(crate::algorithms::binomial::Binomial::new(
                "iiad",
                env.initial_cwnd,
                params,
            )?),
            None,
        ),
        "sqrt" => (
            Box::new(crate::algorithms::binomial::Binomial::new(
                "sqrt",
                env.initial_cwnd,
                params,
            )?),
            None,
        ),
        "libra" => (
            Box::new(crate::algorithms::libra::Libra::new(
                env.initial_cwnd,
                env.packet_size.saturating_sub(env.mss),
                params,
            )?),
            None,
        ),
        "highspeed" => (
            Box::new(crate::algorithms::highspeed::HighSpeed::new(
                env.initial_cwnd,
                params,
            )?),
            None,
        ),
        "scalable" => (
            Box::new(crate::algorithms::scalable::Scalable::new(
                env.initial_cwnd,
                params,
            )?),
            None,
        ),
        "vegas" => (
            Box::new(crate::algorithms::vegas::Vegas::new(
                env.initial_cwnd,
                params,
            )?),
            None,
        ),
        "cubic" => (
            Box::new(crate::algorithms::cubic::Cubic::new(
                env.initial_cwnd,
                params,
            )?),
            None,
        ),
        "maxnet" => (
            Box::new(crate::algorithms::maxnet::MaxNet::new(
                env.initial_cwnd,
                env.packet_size,
                params,
            )?),
            None,
        ),
        "bic" => (
            Box::new(crate::algorithms::bic::Bic::new(env.initial_cwnd, params)?),
            None,
        ),
        "hybla" => (
            Box::new(crate::algorithms::hybla::Hybla::new(
                env.initial_cwnd,
                params,
            )?),
            None,
        ),
        "westwood" => (
            Box::new(crate::algorithms::westwood::Westwood::new(
                env.initial_cwnd,
                env.mss,
                params,
            )?),
            None,
        ),
        "africa" => (
            Box::new(crate::algorithms::africa::Africa::new(
                env.initial_cwnd,
                params,
            )?),
            None,
        ),
        "madison" => (
            Box::new(crate::algorithms::madison::Madison::new(env, params)?),
            None,
        ),
        _ => {
            return Err(ParamError {
                field: "cc".into(),
                message: format!(
                    "unknown algorithm {name:?}; allowed: {}",
                    SENDER_NAMES.join(", ")
                ),
            })
        }
    };
    debug_assert_eq!(recovery, sender_recovery(name));
    Ok(BuiltSender { cc, recovery })
}

/// What a queue discipline may know about its link.
#[derive(Clone, Debug)]
pub struct LinkEnv {
    pub rate_bps: f64,
    pub limit: BufferLimit,
    /// On-the-wire bytes of a full data packet (RED's "typical packet" for idle-time decay).
    pub packet_size: u32,
}

/// Every queue name accepted in a link's `queue` field.
pub const QUEUE_NAMES: &[&str] = &["droptail", "red", "maxnet"];

pub fn build_queue(
    kind: &str,
    params: &Params,
    env: &LinkEnv,
) -> Result<Box<dyn QueueDiscipline>, ParamError> {
    match kind {
        "droptail" => {
            crate::params::ParamReader::new("droptail", params).finish()?;
            Ok(Box::new(DropTail::new(env.limit)))
        }
        "red" => Ok(Box::new(crate::aqm::red::Red::new(
            params,
            env.limit,
            env.rate_bps,
            env.packet_size,
        )?)),
        "maxnet" => {
            let cfg = crate::aqm::maxnet::MaxNetRouterConfig::from_params(env.rate_bps, params)?;
            Ok(Box::new(crate::aqm::maxnet::MaxNetRouter::new(
                cfg, env.limit,
            )))
        }
        _ => Err(ParamError {
            field: "queue".into(),
            message: format!(
                "unknown queue {kind:?}; allowed: {}",
                QUEUE_NAMES.join(", ")
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sender_recovery_is_what_build_sender_gives() {
        let env = SenderEnv {
            mss: 1448,
            packet_size: 1500,
            initial_cwnd: 10.0,
            seed: 1,
        };
        for name in SENDER_NAMES {
            let built = build_sender(name, &Params::default(), &env).unwrap();
            assert_eq!(built.recovery, sender_recovery(name), "{name}");
        }
        assert_eq!(sender_recovery("no such algorithm"), None);
    }
}
