//! What a sender algorithm or a queue discipline may know about its endpoint or link when it is
//! created. Part of the contract, next to [`crate::cc`] and [`crate::aqm`]: algorithms take these, the
//! drivers (simulator, real datapath) fill them, and [`crate::registry`] passes them through.

use crate::aqm::BufferLimit;

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
    /// `[transport] hystart`: the Reno family and CUBIC leave slow start by HyStart++ (RFC 9406).
    pub hystart: bool,
}

impl Default for SenderEnv {
    /// The scenario file's `[transport]` defaults (1448-byte MSS in 1500-byte packets, initial window
    /// 10, HyStart++ off) and seed 0.
    fn default() -> Self {
        SenderEnv {
            mss: 1448,
            packet_size: 1500,
            initial_cwnd: 10.0,
            seed: 0,
            hystart: false,
        }
    }
}

/// The seed of flow `flow` (its index in the run spec) in a run seeded with `run_seed`: the first draw
/// of the flow's [`Stream::FlowSeed`](crate::rng::Stream::FlowSeed) stream.
pub fn flow_seed(run_seed: u64, flow: u64) -> u64 {
    use rand::Rng;
    crate::rng::Stream::FlowSeed.rng(run_seed, flow).gen()
}

/// What a queue discipline may know about its link.
#[derive(Clone, Debug)]
pub struct LinkEnv {
    pub rate_bps: f64,
    pub limit: BufferLimit,
    /// On-the-wire bytes of a full data packet (RED's "typical packet" for idle-time decay).
    pub packet_size: u32,
}
