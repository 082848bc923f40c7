//! A flow's transport settings, resolved once for both drivers. The simulator and the real datapath
//! differ only in how a packet's bytes split into header and payload (the simulator's packets are
//! `mss` payload + `packet_size − mss` header; the datapath's headers are IPv4 + UDP + ours), so they
//! pass those two numbers and get everything else from here.
//!
//! The rule: loss recovery is the algorithm's own when it asks for one (`reno`, `sack`; see
//! `cclab_cc::registry::sender_recovery`), else SACK recovery with `transport.sack` and NewReno
//! without; the receiver generates SACK blocks when `transport.sack` is on *or* the sender runs SACK
//! recovery (an algorithm that needs SACK blocks gets them: `cc = "sack"` with `sack = false` still
//! runs RFC 6675).

use crate::spec::{FlowSpec, LossDetectionKind, ReceiverKind, TransportSpec};
use cclab_cc::cc::Recovery;
use cclab_cc::registry;
use cclab_cc::time::from_secs;
use cclab_transport::LossDetection;
use cclab_transport::{delack, Config, ReceiverProfile};

impl TransportSpec {
    /// The transport's settings for packets of `mss` payload and `header_bytes` header, with the
    /// loss recovery `recovery_override` the algorithm asks for (None: decided by `sack`).
    pub fn config(
        &self,
        header_bytes: u32,
        mss: u32,
        recovery_override: Option<Recovery>,
    ) -> Config {
        let recovery = recovery_override.unwrap_or(if self.sack {
            Recovery::Sack
        } else {
            Recovery::NewReno
        });
        // The Linux receiver's own count and timer stand in for delayed_ack and delack_timeout, here
        // as well as in the receiver: the sender's probe timeout allows for the delayed ACK it expects.
        let (receiver, delayed_ack, delack_timeout) = match self.receiver {
            ReceiverKind::PerPacket => (
                ReceiverProfile::PerPacket,
                self.delayed_ack.max(1),
                from_secs(self.delack_timeout),
            ),
            ReceiverKind::Linux => (
                ReceiverProfile::Linux,
                delack::LINUX_DELACK_SEGMENTS,
                delack::LINUX_ATO,
            ),
        };
        Config {
            mss,
            header_bytes,
            initial_cwnd: self.initial_cwnd,
            delayed_ack,
            delack_timeout,
            receiver,
            dsack: self.dsack,
            min_rto: from_secs(self.min_rto),
            // RunSpec::validate keeps min_rto <= the maximum RTO; should a spec that skipped it get
            // here, the maximum follows the minimum rather than the RTT estimator's clamp panicking.
            max_rto: Config::default().max_rto.max(from_secs(self.min_rto)),
            sack: self.sack || recovery == Recovery::Sack,
            recovery,
            max_window: self
                .max_window
                .unwrap_or(Config::default().max_window)
                .max(1),
            prr: self.prr,
            rto_undo: self.rto_undo,
            cwnd_validation: self.cwnd_validation,
            tlp: self.tlp,
            loss_detection: match self.loss_detection {
                LossDetectionKind::Dupack => LossDetection::DupAck,
                LossDetectionKind::Rack => LossDetection::Rack,
            },
            undo: self.undo,
            ..Config::default()
        }
    }
}

impl FlowSpec {
    /// The loss recovery this flow's algorithm asks for (by its `cc` name; None for kernel TCP and
    /// for algorithms that leave it to `transport.sack`).
    pub fn recovery_override(&self) -> Option<Recovery> {
        registry::sender_recovery(&self.cc)
    }

    /// This flow's transport settings (sender's and receiver's alike) for packets of `mss` payload
    /// and `header_bytes` header.
    pub fn transport_config(&self, header_bytes: u32, mss: u32) -> Config {
        self.transport
            .config(header_bytes, mss, self.recovery_override())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sack_recovery_implies_sack_blocks() {
        let mut t = TransportSpec {
            sack: false,
            ..TransportSpec::default()
        };
        let c = t.config(52, 1448, Some(Recovery::Sack));
        assert!(c.sack);
        assert_eq!(c.recovery, Recovery::Sack);
        let c = t.config(52, 1448, None);
        assert!(!c.sack);
        assert_eq!(c.recovery, Recovery::NewReno);
        let c = t.config(52, 1448, Some(Recovery::Reno));
        assert!(!c.sack);
        t.sack = true;
        let c = t.config(52, 1448, Some(Recovery::Reno));
        assert!(c.sack);
        assert_eq!(c.recovery, Recovery::Reno);
        let c = t.config(52, 1448, None);
        assert_eq!((c.sack, c.recovery), (true, Recovery::Sack));
    }

    #[test]
    fn spec_values_carry_over() {
        let t = TransportSpec {
            initial_cwnd: 4.0,
            delayed_ack: 0,
            delack_timeout: 0.04,
            min_rto: 1.0,
            max_window: Some(0),
            prr: true,
            rto_undo: true,
            ..TransportSpec::default()
        };
        let c = t.config(60, 1440, None);
        assert!(c.prr && c.rto_undo);
        assert_eq!((c.mss, c.header_bytes, c.initial_cwnd), (1440, 60, 4.0));
        assert_eq!((c.delayed_ack, c.max_window), (1, 1));
        assert_eq!((c.delack_timeout, c.min_rto), (40_000_000, 1_000_000_000));
        let d = TransportSpec::default().config(52, 1448, None);
        assert_eq!(d.max_window, Config::default().max_window);
        assert_eq!(d.dupthresh, Config::default().dupthresh);
        assert_eq!((d.loss_detection, d.undo), (LossDetection::DupAck, false));
        let r = TransportSpec {
            loss_detection: LossDetectionKind::Rack,
            undo: true,
            ..TransportSpec::default()
        }
        .config(52, 1448, None);
        assert_eq!((r.loss_detection, r.undo), (LossDetection::Rack, true));
        assert_eq!((d.receiver, d.dsack), (ReceiverProfile::PerPacket, false));
        let l = TransportSpec {
            receiver: ReceiverKind::Linux,
            dsack: true,
            ..TransportSpec::default()
        }
        .config(52, 1448, None);
        assert_eq!((l.receiver, l.dsack), (ReceiverProfile::Linux, true));
        assert_eq!((l.delayed_ack, l.delack_timeout), (2, 40_000_000));
    }
}
