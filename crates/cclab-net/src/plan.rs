//! The run's port plan: flow `i` listens on port [`BASE_PORT`]` + i` at host B, in both modes (in loopback
//! mode the relay delivers to the receiver's real socket but keys the flow by this port). The port keys
//! the emulator's per-flow access delays. Below `run`, so the emulator, the relay and the endpoints can
//! use it without importing `run`. Host addresses are [`crate::hosts`]'s.

/// The first flow's port.
pub const BASE_PORT: u16 = 40000;

/// The port of flow `i` (a run has at most 64 flows on the real datapath, so this never wraps).
pub fn flow_port(i: usize) -> u16 {
    BASE_PORT + i as u16
}
