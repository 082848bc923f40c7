//! Proportional Rate Reduction (RFC 6937), the window rule Linux runs during fast recovery
//! (`tcp_cwnd_reduction`), as a transport switch (`[transport] prr`).
//!
//! Without it, the sender keeps the pipe at the reduced window (RFC 6675): after a loss halves the
//! window, nothing is sent until half a window of ACKs has drained the pipe, then one packet per ACK;
//! and when many packets are lost the pipe falls far below the window and the sender refills it at
//! once, a line-rate burst. PRR spreads the reduction over the whole round trip instead: while the
//! pipe is above ssthresh, the packets sent track the packets delivered in the ratio
//! ssthresh / RecoverFS (about one packet per two ACKs for a halving); once it is below, it grows back
//! no faster than slow start (PRR-SSRB: at most one packet more than was delivered per ACK).

#[derive(Clone, Debug, Default)]
pub(crate) struct Prr {
    active: bool,
    /// FlightSize when recovery began (snd.nxt − snd.una).
    recover_fs: u64,
    /// Packets delivered (cumulatively ACKed or SACKed) and sent since recovery began.
    delivered: u64,
    out: u64,
    /// Packets the latest ACK allows to send.
    sndcnt: u64,
}

impl Prr {
    /// Fast recovery starts with `recover_fs` packets outstanding.
    pub(crate) fn start(&mut self, recover_fs: u64) {
        *self = Prr {
            active: true,
            recover_fs: recover_fs.max(1),
            ..Prr::default()
        };
    }

    pub(crate) fn stop(&mut self) {
        self.active = false;
        self.sndcnt = 0;
    }

    pub(crate) fn is_active(&self) -> bool {
        self.active
    }

    /// An ACK in recovery delivered `delivered` packets and left `pipe` in the network; `ssthresh` is
    /// the window recovery reduces to (the algorithm's window). Sets how many packets may leave now.
    pub(crate) fn on_ack(&mut self, delivered: u64, pipe: u64, ssthresh: f64) {
        self.delivered += delivered;
        let ss = ssthresh.max(1.0);
        self.sndcnt = if pipe as f64 > ss {
            // The proportional part: sent / delivered = ssthresh / RecoverFS.
            let due = (self.delivered as f64 * ss / self.recover_fs as f64).ceil() as u64;
            due.saturating_sub(self.out)
        } else {
            // The slow-start reduction bound: catch up to ssthresh, at most one packet more than
            // delivered.
            let limit = self.delivered.saturating_sub(self.out).max(delivered) + 1;
            ((ss - pipe as f64).floor().max(0.0) as u64).min(limit)
        };
    }

    pub(crate) fn may_send(&self) -> bool {
        self.sndcnt > 0
    }

    /// A packet left (new data or a retransmission).
    pub(crate) fn on_send(&mut self) {
        self.out += 1;
        self.sndcnt = self.sndcnt.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6937 §4's example shape: 20 packets outstanding, one lost, ssthresh 10. Each ACK delivers
    /// one packet; PRR sends one packet per two ACKs from the first ACK on, and by the end of the
    /// round has sent ssthresh − 1 + 1 packets (the pipe lands at ssthresh).
    #[test]
    fn halving_sends_one_packet_per_two_acks() {
        let mut p = Prr::default();
        p.start(20);
        let mut pipe = 19u64; // 20 outstanding, 1 lost
        let mut sent = Vec::new();
        for _ in 0..19 {
            pipe -= 1;
            p.on_ack(1, pipe, 10.0);
            let mut n = 0;
            while p.may_send() {
                p.on_send();
                pipe += 1;
                n += 1;
            }
            sent.push(n);
        }
        // ceil(k·10/20) − out: 1, 0, 1, 0, … (the first ACK sends at once, the fast retransmit's slot).
        assert_eq!(&sent[..6], &[1, 0, 1, 0, 1, 0]);
        assert_eq!(sent.iter().sum::<u64>(), 10);
        assert_eq!(pipe, 10);
    }

    /// Heavy loss: the pipe is far below ssthresh; PRR-SSRB grows it by at most delivered + 1 per ACK
    /// (slow start), where the pipe rule would send the whole gap at once.
    #[test]
    fn below_ssthresh_it_grows_no_faster_than_slow_start() {
        let mut p = Prr::default();
        p.start(40);
        p.on_ack(1, 2, 20.0);
        let mut n = 0;
        while p.may_send() {
            p.on_send();
            n += 1;
        }
        assert_eq!(n, 2, "delivered 1 + 1, not the 18-packet gap");
    }
}
