//! Our UDP transport endpoint: drives `cclab_transport::{Sender, Receiver}` with the OS monotonic clock
//! and non-blocking UDP sockets, encoding segments with [`crate::wire`].
//!
//! Status: the transport's `Sender`/`Receiver` state machines are not in `cclab-transport` yet (only
//! the segment and config types are). Until they are, flows of our algorithms are validated (name and
//! parameters, through `cclab_cc::registry::build_sender`) but refused at run time with
//! [`EndpointError::TransportMissing`]; kernel TCP flows run.

use std::io;
use std::net::SocketAddr;

use cclab_cc::registry::{build_sender, SenderEnv};

use crate::hosts::Dumbbell;
use crate::spec::FlowSpec;

/// Our header on the wire: IPv4 (20) + UDP (8) + cclab data header (32). A flow's payload per packet is
/// `packet_size − WIRE_OVERHEAD`, so its IP packets are exactly `packet_size` bytes, as the simulator
/// counts them.
pub const WIRE_OVERHEAD: u32 = 20 + 8 + crate::wire::DATA_HEADER_LEN as u32;

#[derive(Debug)]
pub enum EndpointError {
    TransportMissing,
}

impl std::fmt::Display for EndpointError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EndpointError::TransportMissing => f.write_str(
                "cclab_transport::Sender/Receiver are not available in this build; only kernel:<cc> flows can run",
            ),
        }
    }
}

/// Validates a flow of our transport: known algorithm, valid parameters, a packet size that fits our
/// header. The error text starts with the field name (`cc`, `params.<name>`, `transport.packet_size`).
pub fn check_sender(name: &str, f: &FlowSpec) -> Result<(), String> {
    if f.transport.packet_size <= WIRE_OVERHEAD || f.transport.packet_size > crate::hosts::MTU as u32 {
        return Err(format!(
            "transport.packet_size: must be in ({WIRE_OVERHEAD}, {}] on the real datapath, got {}",
            crate::hosts::MTU,
            f.transport.packet_size
        ));
    }
    let env = SenderEnv {
        mss: f.transport.packet_size - WIRE_OVERHEAD,
        packet_size: f.transport.packet_size,
        initial_cwnd: f.transport.initial_cwnd,
    };
    build_sender(name, &f.params, &env).map(|_| ()).map_err(|e| e.to_string())
}

pub struct ReceiverSetup;
pub struct SenderSetup;

impl ReceiverSetup {
    pub fn bind(_hosts: &Dumbbell, _f: &FlowSpec, _port: u16) -> io::Result<ReceiverSetup> {
        Err(io::Error::new(io::ErrorKind::Unsupported, EndpointError::TransportMissing.to_string()))
    }
    pub fn run(self, _clock: &crate::sys::Clock, _stop: &std::sync::atomic::AtomicBool, _p: &crate::run::FlowProbe) -> io::Result<()> {
        Err(io::Error::new(io::ErrorKind::Unsupported, EndpointError::TransportMissing.to_string()))
    }
}

impl SenderSetup {
    pub fn bind(_hosts: &Dumbbell, _f: &FlowSpec, _cc: &str, _dst: SocketAddr, _flow_id: u32) -> io::Result<SenderSetup> {
        Err(io::Error::new(io::ErrorKind::Unsupported, EndpointError::TransportMissing.to_string()))
    }
    pub fn run(
        self,
        _clock: &crate::sys::Clock,
        _start: cclab_cc::time::Nanos,
        _stop_at: cclab_cc::time::Nanos,
        _stop: &std::sync::atomic::AtomicBool,
        _p: &crate::run::FlowProbe,
    ) -> io::Result<()> {
        Err(io::Error::new(io::ErrorKind::Unsupported, EndpointError::TransportMissing.to_string()))
    }
}
