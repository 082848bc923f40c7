//! What a window reduction needs to be undone when it proves spurious (`[transport] undo`), as Linux
//! keeps it (`undo_marker`, `undo_retrans`, `retrans_stamp`, `prior_cwnd`, `prior_ssthresh`).
//!
//! A reduction (fast recovery entered from the open state, or a first RTO) records the algorithm's
//! window and threshold before it and `snd_una` then. Every retransmission after it is remembered by
//! sequence number, and the send time of the first one is kept. The reduction was spurious, and is
//! undone through `CongestionControl::undo_cwnd`, when either:
//! * every one of its retransmissions has come back D-SACKed (RFC 2883, RFC 3708): the receiver had the
//!   data already, so nothing was lost; or
//! * an ACK that advances `snd_una` echoes a transmission sent before the first retransmission (Eifel,
//!   RFC 3522): the hole was filled by the original, which was only late.
//!
//! A D-SACK counts only against a retransmission of this episode, once per retransmission: a
//! duplicate the network made (`duplicate` on a link) of a packet never resent proves nothing.
//!
//! The sender (`crates/cclab-transport/src/sender_recovery.rs`) decides when to test (on each ACK that
//! advances `snd_una`, on each D-SACK, at the end of a recovery, and F-RTO's test after an RTO) and how
//! to respond.

use cclab_cc::time::Nanos;
use std::collections::BTreeMap;

/// The first RTO of a series under `rto_undo` alone (without `undo`): when it fired and the
/// algorithm's window and threshold before it (Eifel detection only).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RtoUndo {
    pub(crate) at: Nanos,
    pub(crate) cwnd: f64,
    pub(crate) ssthresh: f64,
}

/// Which reduction may be undone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UndoKind {
    /// A fast recovery.
    Fast,
    /// A retransmission timeout (or an RTO that fired during a fast recovery: then the window and
    /// threshold are the ones from before that recovery, as in Linux).
    Timeout,
}

#[derive(Clone, Debug)]
pub(crate) struct Undo {
    pub(crate) kind: UndoKind,
    /// `snd_una` at the reduction: D-SACKs of data below it belong to an earlier episode.
    marker: u64,
    pub(crate) prior_cwnd: f64,
    pub(crate) prior_ssthresh: f64,
    /// Retransmissions of this episode not yet D-SACKed: sequence number → copies.
    pending: BTreeMap<u64, u32>,
    retransmitted: u64,
    first_retx_ts: Option<Nanos>,
}

impl Undo {
    pub(crate) fn new(kind: UndoKind, snd_una: u64, cwnd: f64, ssthresh: f64) -> Undo {
        Undo {
            kind,
            marker: snd_una,
            prior_cwnd: cwnd,
            prior_ssthresh: ssthresh,
            pending: BTreeMap::new(),
            retransmitted: 0,
            first_retx_ts: None,
        }
    }

    /// `seq` was resent at `ts`.
    pub(crate) fn on_retransmit(&mut self, seq: u64, ts: Nanos) {
        *self.pending.entry(seq).or_insert(0) += 1;
        self.retransmitted += 1;
        self.first_retx_ts.get_or_insert(ts);
    }

    /// The receiver reports `[start, end)` received more than once; returns how many of this episode's
    /// retransmissions that shows needless.
    pub(crate) fn on_dsack(&mut self, start: u64, end: u64) -> u64 {
        let from = start.max(self.marker);
        if from >= end {
            return 0;
        }
        let seqs: Vec<u64> = self.pending.range(from..end).map(|(&s, _)| s).collect();
        for s in &seqs {
            if let Some(n) = self.pending.get_mut(s) {
                *n -= 1;
                if *n == 0 {
                    self.pending.remove(s);
                }
            }
        }
        seqs.len() as u64
    }

    /// Linux's `undo_retrans == 0`: something was resent, and every copy resent came back D-SACKed.
    pub(crate) fn all_dsacked(&self) -> bool {
        self.retransmitted > 0 && self.pending.is_empty()
    }

    /// Linux's `tcp_packet_delayed`: the echoed transmission left before the first retransmission.
    pub(crate) fn echo_predates_retransmission(&self, ts_echo: Nanos) -> bool {
        self.first_retx_ts.is_some_and(|t| ts_echo < t)
    }

    /// `snd_una` when the reduction happened.
    pub(crate) fn marker(&self) -> u64 {
        self.marker
    }

    /// Bytes held (one map entry per retransmitted packet of the episode, roughly).
    pub(crate) fn bytes(&self) -> usize {
        self.pending.len() * 4 * std::mem::size_of::<u64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_retransmission_must_be_dsacked_once() {
        let mut u = Undo::new(UndoKind::Fast, 10, 20.0, 15.0);
        assert!(!u.all_dsacked(), "nothing resent yet: no undo");
        u.on_retransmit(12, 1_000);
        u.on_retransmit(14, 1_001);
        u.on_retransmit(14, 5_000);
        assert_eq!(u.on_dsack(5, 9), 0, "before the marker: another episode");
        assert_eq!(
            u.on_dsack(13, 14),
            0,
            "13 was never resent (a network duplicate)"
        );
        assert_eq!(u.on_dsack(12, 15), 2);
        assert!(!u.all_dsacked(), "14 went twice, one copy is unaccounted");
        assert_eq!(u.on_dsack(14, 15), 1);
        assert!(u.all_dsacked());
    }

    #[test]
    fn an_echo_older_than_the_first_retransmission_shows_the_original_arrived() {
        let mut u = Undo::new(UndoKind::Fast, 0, 20.0, 15.0);
        assert!(
            !u.echo_predates_retransmission(0),
            "no retransmission, no stamp"
        );
        u.on_retransmit(3, 1_000);
        u.on_retransmit(4, 2_000);
        assert!(u.echo_predates_retransmission(999));
        assert!(
            !u.echo_predates_retransmission(1_000),
            "the retransmission itself"
        );
        assert!(!u.echo_predates_retransmission(1_500));
        assert!(!u.all_dsacked());
    }
}
