//! The sender's log of its recent transmissions, against which every ACK's echo is checked.
//!
//! An ACK echoes the packet that triggered it: its timestamp (`ts_echo`), sequence number, flags and
//! payload size. Timestamps are strictly increasing per transmission (the sender stamps a burst 1 ns
//! apart), so a timestamp names one transmission, and an honest ACK always names one the sender made.
//! An ACK naming none — a timestamp never sent, or one whose other echoed fields are not that
//! transmission's — is not from our receiver, and is dropped whole before it can touch the scoreboard,
//! the RTT estimator, recovery or the algorithm. A blind attacker (one that cannot read the flow's
//! data packets) must guess a nanosecond timestamp of a packet still in the log together with its
//! sequence number; docs/real-datapath.md ("What a hostile packet can and cannot do") gives the odds.
//!
//! What stays in the log, so that no honest echo is ever missing:
//! * every transmission of a packet still outstanding (`seq ≥ snd_una`), however old: a packet held
//!   back in the network keeps the cumulative ACK below it, so its record is needed until it is
//!   acknowledged;
//! * transmissions of acknowledged packets until they are older than the newest verified echo by more
//!   than one smoothed RTT. Only a duplicate (a spurious retransmission, or an original overtaken by
//!   its retransmission) can still be echoed then. On the FIFO paths of the simulator and the emulator
//!   echoes arrive in send order and none is ever older than the newest one; on a reordering path an
//!   echo older than that allowance is dropped like a lost ACK (later ACKs carry the same cumulative
//!   information).
//!
//! Pruning is from the front (records are in send order), so the log holds about the transmissions
//! since the oldest outstanding packet left: a window's worth, plus retransmissions.

use crate::rate::TxSnapshot;
use crate::segment::{AckSegment, DataSegment};
use cclab_cc::time::Nanos;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug)]
struct TxRecord {
    ts: Nanos,
    seq: u64,
    payload: u32,
    flags: u8,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct TxLog {
    /// In send order, so by strictly increasing `ts`.
    records: VecDeque<TxRecord>,
    /// The delivery state each transmission left with, for the rate sample its ACK gives (`rate`),
    /// parallel to `records` when the algorithm asks for rate samples, empty otherwise (kept apart so
    /// that a sender without them carries no extra bytes per record).
    snaps: VecDeque<TxSnapshot>,
    /// Records dropped from the front so far: `records[i]` is transmission number `popped + i`.
    popped: u64,
    /// Transmission number of the last echo found: on a FIFO path the next one is a few records on,
    /// so the search starts there (a binary search is the fallback).
    hint: u64,
    /// The newest timestamp a verified ACK echoed.
    newest_echo: Nanos,
}

impl TxLog {
    /// `seg` left, with the delivery state `snap` if rate samples are kept.
    pub(crate) fn on_send(&mut self, seg: &DataSegment, snap: Option<TxSnapshot>) {
        debug_assert!(self.records.back().is_none_or(|r| r.ts < seg.ts));
        self.records.push_back(TxRecord {
            ts: seg.ts,
            seq: seg.seq,
            payload: seg.payload,
            flags: seg.flags,
        });
        if let Some(snap) = snap {
            self.snaps.push_back(snap);
        }
    }

    /// The ACK echoes a transmission in the log (with that transmission's timestamp, seq, flags and
    /// size; otherwise it is not from our receiver). Returns the transmission's delivery state, which
    /// is the default one when rate samples are not kept.
    pub(crate) fn echoed(&mut self, ack: &AckSegment) -> Option<TxSnapshot> {
        let i = self.find(ack.ts_echo)?;
        self.hint = self.popped + i as u64;
        let r = &self.records[i];
        (r.seq == ack.acked_seq && r.flags == ack.acked_flags && r.payload == ack.acked_bytes)
            .then(|| self.snaps.get(i).copied().unwrap_or_default())
    }

    /// The index of the record with timestamp `ts`.
    fn find(&self, ts: Nanos) -> Option<usize> {
        const SCAN: usize = 8;
        // From the record after the last echo found: on a FIFO path each ACK echoes a newer
        // transmission, and the rarer repeat of the same one is found by the binary search.
        let from = self.hint.saturating_sub(self.popped) as usize + 1;
        for i in from..(from + SCAN).min(self.records.len()) {
            let r = self.records[i].ts;
            if r == ts {
                return Some(i);
            }
            if r > ts {
                break;
            }
        }
        self.records.binary_search_by_key(&ts, |r| r.ts).ok()
    }

    /// A verified ACK echoed `ts_echo`; `snd_una` is the cumulative point after it. Drops the records
    /// no honest ACK can still name (module doc).
    pub(crate) fn on_verified_echo(&mut self, ts_echo: Nanos, snd_una: u64, allowance: Nanos) {
        self.newest_echo = self.newest_echo.max(ts_echo);
        let horizon = self.newest_echo.saturating_sub(allowance);
        while let Some(r) = self.records.front() {
            if r.seq >= snd_una || r.ts >= horizon {
                break;
            }
            self.records.pop_front();
            self.snaps.pop_front();
            self.popped += 1;
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.records.len()
    }

    /// Bytes the log holds (its allocations): it grows by one record per transmission while the
    /// oldest outstanding packet is not acknowledged, which a driver's memory budget must count.
    pub(crate) fn bytes(&self) -> usize {
        self.records.capacity() * std::mem::size_of::<TxRecord>()
            + self.snaps.capacity() * std::mem::size_of::<TxSnapshot>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(ts: Nanos, seq: u64) -> DataSegment {
        DataSegment {
            seq,
            ts,
            payload: 100,
            flags: 1,
            ..Default::default()
        }
    }

    fn echo(d: &DataSegment) -> AckSegment {
        AckSegment::echoing(d, 0)
    }

    #[test]
    fn only_echoes_of_logged_transmissions_are_known() {
        let mut log = TxLog::default();
        let segs: Vec<_> = (0..5).map(|k| sent(100 + k, k)).collect();
        for d in &segs {
            log.on_send(d, None);
        }
        assert!(segs.iter().all(|d| log.echoed(&echo(d)).is_some()));
        let good = echo(&segs[2]);
        for bad in [
            AckSegment {
                ts_echo: 99,
                ..good
            },
            AckSegment {
                ts_echo: 105,
                ..good
            },
            AckSegment {
                ts_echo: u64::MAX,
                ..good
            },
            AckSegment {
                acked_seq: 3,
                ..good
            },
            AckSegment {
                acked_flags: 0,
                ..good
            },
            AckSegment {
                acked_bytes: 99,
                ..good
            },
        ] {
            assert!(log.echoed(&bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn outstanding_packets_stay_acknowledged_ones_age_out() {
        let mut log = TxLog::default();
        // seq 0 left at 100 and is still outstanding; 1..4 left at 200.. and were acknowledged.
        log.on_send(&sent(100, 0), None);
        for k in 1..5 {
            log.on_send(&sent(200 + k, k), None);
        }
        log.on_verified_echo(10_000, 0, 50);
        assert_eq!(log.len(), 5, "seq 0 is outstanding: nothing behind it goes");
        log.on_verified_echo(10_000, 5, 50);
        assert_eq!(log.len(), 0);
        log.on_send(&sent(20_000, 5), None);
        log.on_send(&sent(20_001, 6), None);
        log.on_verified_echo(20_001, 7, 50);
        assert_eq!(log.len(), 2, "within the allowance of the newest echo");
        assert!(log.echoed(&echo(&sent(20_000, 5))).is_some());
    }
}
