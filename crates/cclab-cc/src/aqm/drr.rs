//! Deficit round robin over per-flow sub-queues with a new-flows and an old-flows list: the scheduler
//! FQ-CoDel (RFC 8290 §4.2) and Linux `fq` share.
//!
//! A sub-queue that gets a packet while inactive (in neither list) joins the tail of the *new* list
//! with `initial` credit: a flow that has just started, or that sends sparsely (a VoIP stream, a DNS
//! query, the first packets of a connection), is served before the backlogged flows, which sit in the
//! *old* list. Serving a sub-queue spends its credit by the bytes sent; a sub-queue out of credit gets
//! `quantum` more and moves to the old list's tail. A sub-queue found empty when its turn comes leaves
//! the lists if it was old; if it was new it goes to the old list first (when the old list is not
//! empty), so that a flow cannot stay "new" by emptying its queue every round (RFC 8290 §4.2).
//!
//! The scheduler only keeps counts: the packets are the driver's (one FIFO per sub-queue).

use std::collections::VecDeque;

/// Which list a sub-queue is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum List {
    None,
    New,
    Old,
}

pub struct Drr {
    quantum: i64,
    initial: i64,
    credit: Vec<i64>,
    pkts: Vec<u32>,
    bytes: Vec<u64>,
    list: Vec<List>,
    new: VecDeque<usize>,
    old: VecDeque<usize>,
}

impl Drr {
    /// `n` sub-queues; a sub-queue joining the new list gets `initial` bytes of credit, and `quantum`
    /// more each time it runs out.
    pub fn new(n: usize, quantum: u32, initial: u32) -> Drr {
        Drr {
            quantum: quantum as i64,
            initial: initial as i64,
            credit: vec![0; n],
            pkts: vec![0; n],
            bytes: vec![0; n],
            list: vec![List::None; n],
            new: VecDeque::new(),
            old: VecDeque::new(),
        }
    }

    /// A packet of `bytes` joined sub-queue `q`.
    pub fn push(&mut self, q: usize, bytes: u32) {
        self.pkts[q] += 1;
        self.bytes[q] += bytes as u64;
        if self.list[q] == List::None {
            self.list[q] = List::New;
            self.credit[q] = self.initial;
            self.new.push_back(q);
        }
    }

    /// A packet of `bytes` left sub-queue `q` (sent or dropped): the counts only, no credit.
    pub fn remove(&mut self, q: usize, bytes: u32) {
        self.pkts[q] -= 1;
        self.bytes[q] -= bytes as u64;
    }

    /// Sub-queue `q` sent a packet of `bytes`: spend its credit.
    pub fn charge(&mut self, q: usize, bytes: u32) {
        self.credit[q] -= bytes as i64;
    }

    /// The sub-queue to serve next, or `None` if every sub-queue is empty.
    pub fn next_queue(&mut self) -> Option<usize> {
        loop {
            let (q, from_new) = match self.new.front() {
                Some(&q) => (q, true),
                None => (*self.old.front()?, false),
            };
            if self.credit[q] <= 0 {
                self.credit[q] += self.quantum;
                self.pop(from_new);
                self.list[q] = List::Old;
                self.old.push_back(q);
                continue;
            }
            if self.pkts[q] == 0 {
                self.pop(from_new);
                if from_new && !self.old.is_empty() {
                    self.list[q] = List::Old;
                    self.old.push_back(q);
                } else {
                    self.list[q] = List::None;
                }
                continue;
            }
            return Some(q);
        }
    }

    fn pop(&mut self, from_new: bool) {
        if from_new {
            self.new.pop_front();
        } else {
            self.old.pop_front();
        }
    }

    pub fn pkts(&self, q: usize) -> u32 {
        self.pkts[q]
    }

    pub fn bytes(&self, q: usize) -> u64 {
        self.bytes[q]
    }

    /// The listed sub-queue holding the most bytes (ties: the lowest index), if any holds some. Only
    /// listed sub-queues can hold packets, so the scan is over the active flows, not all sub-queues.
    pub fn fattest(&self) -> Option<usize> {
        self.new
            .iter()
            .chain(self.old.iter())
            .copied()
            .filter(|&q| self.bytes[q] > 0)
            .max_by_key(|&q| (self.bytes[q], std::cmp::Reverse(q)))
    }

    /// The most packets one sub-queue holds (0 if all are empty).
    pub fn max_pkts(&self) -> u32 {
        self.new
            .iter()
            .chain(self.old.iter())
            .map(|&q| self.pkts[q])
            .max()
            .unwrap_or(0)
    }

    /// Sub-queues holding packets.
    pub fn backlogged(&self) -> usize {
        self.new
            .iter()
            .chain(self.old.iter())
            .filter(|&&q| self.pkts[q] > 0)
            .count()
    }

    /// Sub-queues in the new list.
    pub fn new_flows(&self) -> usize {
        self.new.len()
    }
}

/// A well-mixed 64-bit hash (splitmix64's finaliser): flow keys that differ in one bit land in
/// unrelated buckets.
pub fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Serves `n` packets of 1500 B and returns the sub-queues served in order.
    fn serve(d: &mut Drr, n: usize) -> Vec<usize> {
        (0..n)
            .map(|_| {
                let q = d.next_queue().unwrap();
                d.remove(q, 1500);
                d.charge(q, 1500);
                q
            })
            .collect()
    }

    #[test]
    fn backlogged_flows_share_by_quantum() {
        // Two backlogged flows, quantum one packet: strict alternation.
        let mut d = Drr::new(4, 1500, 1500);
        for _ in 0..10 {
            d.push(1, 1500);
            d.push(2, 1500);
        }
        assert_eq!(serve(&mut d, 6), [1, 2, 1, 2, 1, 2]);
    }

    #[test]
    fn a_sparse_flow_goes_before_the_backlog() {
        // Flow 1 is backlogged and old; a packet of flow 3 arriving now is served next.
        let mut d = Drr::new(4, 1500, 1500);
        for _ in 0..10 {
            d.push(1, 1500);
        }
        serve(&mut d, 3);
        d.push(3, 1500);
        assert_eq!(serve(&mut d, 2), [3, 1]);
        assert_eq!(d.backlogged(), 1);
    }

    #[test]
    fn byte_credit_not_packet_count() {
        // Quantum 3000 B: a flow of 1500 B packets sends two per round against one of 3000 B packets.
        let mut d = Drr::new(2, 3000, 3000);
        for _ in 0..20 {
            d.push(0, 1500);
            d.push(1, 3000);
        }
        let mut sent = [0u64; 2];
        for _ in 0..30 {
            let q = d.next_queue().unwrap();
            let b = if q == 0 { 1500 } else { 3000 };
            d.remove(q, b);
            d.charge(q, b);
            sent[q] += b as u64;
        }
        assert!((sent[0] as i64 - sent[1] as i64).abs() <= 3000, "{sent:?}");
    }

    #[test]
    fn fattest_is_by_bytes() {
        let mut d = Drr::new(8, 1500, 1500);
        d.push(5, 1500);
        d.push(6, 1000);
        d.push(6, 1000);
        assert_eq!(d.fattest(), Some(6));
        assert_eq!(d.max_pkts(), 2);
        assert_eq!(Drr::new(2, 1, 1).fattest(), None);
    }
}
