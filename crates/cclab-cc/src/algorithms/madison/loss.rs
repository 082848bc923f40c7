//! The loss-event rate p of §4.3 (2b)/(2c): lost *packets* counted per loss episode (DECISION 11),
//! and rule (c)'s decay, the paper's or per event (DECISION 15).

use std::collections::BTreeMap;

use crate::cc::flags;

/// §4.3 (2b): the loss-event rate after a loss event of `lost` packets, `sent` packets after the
/// previous one: (lost + 1)/(sent + 1/p).
pub fn loss_rate_after_event(p: f64, lost: u64, sent: u64) -> f64 {
    (lost as f64 + 1.0) / (sent as f64 + 1.0 / p)
}

/// The applied loss event of an episode: what p was before it and how many packets had been sent
/// since the event before, so it can be re-applied when more of its lost packets are found.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Applied {
    p_before: f64,
    sent: u64,
    lost: u64,
}

/// Rule (2c)'s decay of p when no loss has been seen for long (`loss_decay`, DECISION 15).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossDecay {
    /// The paper: q > 10/p ⇒ p = 1/q.
    Paper,
    /// Counting events of L packets (L = the last applied event's lost packets): q > 10·L/p ⇒ p = L/q.
    PerEvent,
}

/// §4.3 (2b)/(2c) counting lost *packets* (DECISION 11). A packet is deemed lost when the transport
/// retransmits it (SACK loss marks, lost retransmissions, NewReno partial ACKs, the RTO's go-back) and
/// un-deemed when the ACK of its *original* transmission arrives after the retransmission was sent
/// (the echoed flags lack RETX: the retransmission was spurious, RFC 3522 Eifel detection). A loss
/// *event* (the transport's loss signal, or an RTO) opens an episode; it is applied at the next probe ACK
/// with the packets lost in its episode so far; packets of the episode found lost (or spurious) later
/// re-apply the same event, p = (L + 1)/(q + 1/p_before), at the next probe ACK.
#[derive(Clone, Debug)]
pub struct LossEstimator {
    p: f64,
    decay: LossDecay,
    /// Packets lost in the last applied event (its final count; 1 before any): L of `PerEvent`.
    event_lost: u64,
    /// Packets sent since the last loss event was applied (q of rule (c)).
    pub sent_since_loss: u64,
    episode: u64,
    /// Packets deemed lost in the current episode (before the first event: carried into it).
    lost: u64,
    /// A loss event signalled, not yet applied.
    pending: bool,
    /// The current episode's applied event (None before the first, and after rule (c)).
    applied: Option<Applied>,
    /// The previous episode's applied event and its final lost count, when that differs from what was
    /// applied (late finds between its application and the next event): re-applied first.
    revise_prev: Option<(Applied, u64)>,
    /// Retransmitted sequence numbers → episode, until their ACK.
    retx: BTreeMap<u64, u64>,
}

/// Retransmitted sequence numbers remembered for spurious-retransmission detection (an ACK lost on the
/// reverse path would otherwise leave its entry for ever).
const RETX_MEMORY: usize = 1 << 16;

impl LossEstimator {
    pub fn new(p: f64) -> Self {
        Self::with_decay(p, LossDecay::Paper)
    }
    pub fn with_decay(p: f64, decay: LossDecay) -> Self {
        LossEstimator {
            p,
            decay,
            event_lost: 1,
            sent_since_loss: 0,
            episode: 0,
            lost: 0,
            pending: false,
            applied: None,
            revise_prev: None,
            retx: BTreeMap::new(),
        }
    }
    pub fn p(&self) -> f64 {
        self.p
    }
    /// Packets deemed lost in the current episode.
    pub fn episode_lost(&self) -> u64 {
        self.lost
    }
    pub fn pending(&self) -> bool {
        self.pending
    }
    /// Start-up ends: p = p_init (the episode counts are kept).
    pub(super) fn reset_p(&mut self, p: f64) {
        self.p = p;
        self.applied = None;
        self.revise_prev = None;
    }
    /// Every transmission.
    pub fn on_send(&mut self, seq: u64, retransmit: bool) {
        self.sent_since_loss += 1;
        if retransmit {
            self.lost += 1;
            self.retx.insert(seq, self.episode);
            if self.retx.len() > RETX_MEMORY {
                self.retx.pop_first();
            }
        }
    }
    /// Every ACK: `seq` and `fl` are the sequence number and echoed flags of the packet that triggered it.
    pub fn on_ack(&mut self, seq: u64, fl: u8) {
        if let Some(ep) = self.retx.remove(&seq) {
            if fl & flags::RETX == 0 && ep == self.episode {
                // The original arrived: the retransmission was not needed, the packet was not lost.
                self.lost = self.lost.saturating_sub(1);
            }
        }
    }
    /// A loss event (the transport's loss signal or an RTO). Several before the next probe ACK are one.
    pub fn on_event(&mut self) {
        if self.pending {
            return;
        }
        let carried = match self.applied.take() {
            Some(a) => {
                let fin = self.lost.max(1);
                if fin != a.lost {
                    self.revise_prev = Some((a, fin));
                }
                0
            }
            None => self.lost, // losses found before any event (or after rule (c)) belong to this one
        };
        self.episode += 1;
        self.lost = carried;
        self.pending = true;
    }
    /// Rules (b) and (c) at a probe ACK; true when p changed.
    pub fn on_probe_ack(&mut self) -> bool {
        if self.pending {
            if let Some((a, fin)) = self.revise_prev.take() {
                self.p = loss_rate_after_event(a.p_before, fin, a.sent);
            }
            let a = Applied {
                p_before: self.p,
                sent: self.sent_since_loss,
                lost: self.lost.max(1),
            };
            self.p = loss_rate_after_event(a.p_before, a.lost, a.sent);
            self.applied = Some(a);
            self.event_lost = a.lost;
            self.pending = false;
            self.sent_since_loss = 0;
            return true;
        }
        if let Some(a) = self.applied.as_mut() {
            let l = self.lost.max(1);
            if l != a.lost {
                a.lost = l;
                self.event_lost = l;
                self.p = loss_rate_after_event(a.p_before, l, a.sent);
                return true;
            }
        }
        let q = self.sent_since_loss as f64;
        let l = match self.decay {
            LossDecay::Paper => 1.0,
            LossDecay::PerEvent => self.event_lost as f64,
        };
        if q > 10.0 * l / self.p {
            self.p = l / q;
            // The event is long past: later finds (rare) wait for the next event.
            self.applied = None;
            self.lost = 0;
            return true;
        }
        false
    }
}
