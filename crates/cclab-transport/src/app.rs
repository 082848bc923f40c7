//! The application's data as the sender sees it: an endless flow, or a finite one of a given size in
//! packets of one MSS (the last may be shorter); either may be stopped, after which nothing new leaves.

#[derive(Clone, Debug)]
pub(crate) struct AppData {
    mss: u32,
    /// Total packets of a finite flow and the payload of its last packet.
    total_pkts: Option<u64>,
    last_payload: u32,
    stopped: bool,
}

impl AppData {
    pub(crate) fn new(mss: u32, size_bytes: Option<u64>) -> AppData {
        let (total_pkts, last_payload) = match size_bytes {
            None => (None, mss),
            Some(0) => (Some(0), mss),
            Some(b) => {
                let m = mss.max(1) as u64;
                let n = b.div_ceil(m);
                (Some(n), (b - (n - 1) * m) as u32)
            }
        };
        AppData {
            mss,
            total_pkts,
            last_payload,
            stopped: false,
        }
    }

    pub(crate) fn stop(&mut self) {
        self.stopped = true;
    }

    /// Packet `snd_nxt` (the next new one) exists.
    pub(crate) fn has_more(&self, snd_nxt: u64) -> bool {
        !self.stopped && self.total_pkts.is_none_or(|n| snd_nxt < n)
    }

    pub(crate) fn payload_of(&self, seq: u64) -> u32 {
        match self.total_pkts {
            Some(n) if seq + 1 == n => self.last_payload,
            _ => self.mss,
        }
    }

    /// Payload bytes of packets `[from, to)`.
    pub(crate) fn payload_bytes(&self, from: u64, to: u64) -> u64 {
        let mss = self.mss as u64;
        let mut bytes = (to - from) * mss;
        if let Some(n) = self.total_pkts {
            if to == n && n > 0 {
                bytes = bytes - mss + self.last_payload as u64;
            }
        }
        bytes
    }

    /// All data of a finite (or stopped) flow has been acknowledged.
    pub(crate) fn is_finished(&self, snd_una: u64, snd_nxt: u64) -> bool {
        let end = match self.total_pkts {
            Some(n) => n,
            None if self.stopped => snd_nxt,
            None => return false,
        };
        snd_una >= end && (self.stopped || snd_nxt >= end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finite_flow_ends_with_a_short_packet() {
        let a = AppData::new(1000, Some(2500));
        assert_eq!((a.payload_of(1), a.payload_of(2)), (1000, 500));
        assert_eq!(a.payload_bytes(0, 3), 2500);
        assert_eq!(a.payload_bytes(0, 2), 2000);
        assert!(a.has_more(2) && !a.has_more(3));
        assert!(!a.is_finished(2, 3) && a.is_finished(3, 3));
    }
}
