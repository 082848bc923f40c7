//! What a run returns: per-flow and per-link statistics over the measurement window (exact, from
//! counter snapshots at the window edges), columnar time series, conservation counters, warnings.

use cclab_transport::stats::WindowSummary;
use serde::Serialize;
use std::collections::BTreeMap;

/// Named f64 columns of equal length. Keys that a row does not have are NaN.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Series {
    pub rows: usize,
    pub columns: BTreeMap<String, Vec<f64>>,
}

impl Series {
    /// Starts a new row; values set afterwards with [`Series::set`] land in it.
    pub fn new_row(&mut self) {
        self.rows += 1;
        for c in self.columns.values_mut() {
            c.push(f64::NAN);
        }
    }

    /// Sets `key` in the current row (creating the column, NaN-filled, on first use).
    pub fn set(&mut self, key: &str, v: f64) {
        let rows = self.rows;
        let col = match self.columns.get_mut(key) {
            Some(c) => c,
            None => self
                .columns
                .entry(key.to_string())
                .or_insert_with(|| vec![f64::NAN; rows]),
        };
        if let Some(last) = col.last_mut() {
            *last = v;
        }
    }
}

/// Builds a [`Series`] row by row without a string-keyed map lookup per value (sampling 1000 flows
/// every 0.1 s sets 15 M values per 100 s; with a `BTreeMap<String, _>` lookup each, sampling cost as
/// much as the packets). Fixed columns are addressed by index; algorithm state keys (`&'static str`)
/// are resolved once per distinct key through a cache keyed by the string's address.
#[derive(Default)]
pub(crate) struct SeriesBuilder {
    rows: usize,
    names: Vec<String>,
    cols: Vec<Vec<f64>>,
    /// (address, length) of a `&'static str` key → column.
    cache: Vec<(usize, usize, usize)>,
}

impl SeriesBuilder {
    /// A builder whose first columns are `fixed`, in order (set them with [`SeriesBuilder::set_at`]).
    pub(crate) fn with_columns(fixed: &[&str]) -> SeriesBuilder {
        SeriesBuilder {
            names: fixed.iter().map(|n| n.to_string()).collect(),
            cols: vec![Vec::new(); fixed.len()],
            ..Default::default()
        }
    }

    /// Rows so far.
    pub(crate) fn rows(&self) -> usize {
        self.rows
    }

    /// Starts a new row, NaN in every column until set.
    #[inline]
    pub(crate) fn new_row(&mut self) {
        self.rows += 1;
        for c in &mut self.cols {
            c.push(f64::NAN);
        }
    }

    /// Sets column `col` in the current row.
    #[inline]
    pub(crate) fn set_at(&mut self, col: usize, v: f64) {
        if let Some(last) = self.cols[col].last_mut() {
            *last = v;
        }
    }

    /// Sets `key` in the current row, creating the column (NaN-filled) on first use.
    pub(crate) fn set(&mut self, key: &'static str, v: f64) {
        let id = (key.as_ptr() as usize, key.len());
        let col = match self.cache.iter().find(|c| (c.0, c.1) == id) {
            Some(c) => c.2,
            None => {
                let col = match self.names.iter().position(|n| n == key) {
                    Some(k) => k,
                    None => {
                        self.names.push(key.to_string());
                        self.cols.push(vec![f64::NAN; self.rows]);
                        self.cols.len() - 1
                    }
                };
                self.cache.push((id.0, id.1, col));
                col
            }
        };
        self.set_at(col, v);
    }

    pub(crate) fn column(&self, col: usize) -> &[f64] {
        &self.cols[col]
    }

    pub(crate) fn finish(self) -> Series {
        Series {
            rows: self.rows,
            columns: self.names.into_iter().zip(self.cols).collect(),
        }
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct FlowResult {
    pub id: u32,
    pub group: u32,
    pub cc: String,
    /// Configured round-trip propagation delay, seconds.
    pub rtt: f64,
    /// Start time actually used (after drawing a random start), seconds.
    pub start: f64,
    /// Completion time of a finite flow (all data acknowledged), seconds.
    pub finish: Option<f64>,
    /// Application bytes delivered in order in the window × 8 / window length.
    pub goodput_bps: f64,
    /// Wire bits sent in the window (retransmissions included) / window length.
    pub throughput_bps: f64,
    pub mean_cwnd_pkts: f64,
    /// Mean of the RTT samples taken in the window, seconds (NaN if none).
    pub mean_rtt: f64,
    pub min_rtt: f64,
    pub retransmits: u64,
    pub timeouts: u64,
    pub fast_recoveries: u64,
    pub delivered_bytes: u64,
    pub sent_pkts: u64,
    pub received_pkts: u64,
    /// Data packets of this flow dropped in the network (queue or random loss), whole run.
    pub dropped_pkts: u64,
    /// Window statistics: RTT and one-way-delay percentiles, jitter, loss and retransmission rates
    /// (`cclab_transport::stats`), serialised as fields of the flow. The golden test clears them: they
    /// are added observations, and the recorded digests pin the rest of the result.
    #[serde(flatten)]
    pub stats: Option<WindowSummary>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct LinkResult {
    pub id: u32,
    pub rate_bps: f64,
    pub utilization: f64,
    /// Queue drops (buffer full or AQM) in the window.
    pub drops: u64,
    pub marks: u64,
    /// Random (Bernoulli / scheduled) losses in the window.
    pub random_losses: u64,
    pub mean_queue_pkts: f64,
    pub max_queue_pkts: u64,
    pub mean_queue_delay_s: f64,
    pub p95_queue_delay_s: f64,
    /// Packets that arrived at the link in the window (before loss/queue decisions).
    pub arrivals: u64,
    /// Data packets transmitted over the whole run.
    pub data_pkts_tx: u64,
    /// Drop probability over the window: (drops + random losses) / arrivals.
    pub loss_rate: f64,
}

/// Packet accounting over the whole run: injected = delivered + dropped + in_network.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Conservation {
    pub injected: u64,
    pub delivered: u64,
    pub dropped: u64,
    pub in_network: u64,
}

impl Conservation {
    pub fn holds(&self) -> bool {
        self.injected == self.delivered + self.dropped + self.in_network
    }
}

/// What happened to a packet in a [`TraceRecord`], serialised as its code (the integers are the
/// trace's format: `summary`/parquet readers see numbers). A packet marked by a queue discipline
/// (ECN CE) is recorded as its enqueue only: there is no mark record, and code 3 (documented as
/// "mark" before it was ever emitted) is left unused so the other codes keep their values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum TraceKind {
    /// Accepted into a link's queue (possibly CE-marked).
    Enqueue = 0,
    /// Dropped by the queue (buffer full or AQM).
    Drop = 1,
    /// Lost at random on arrival at a link (Bernoulli or scheduled loss).
    Loss = 2,
    /// Delivered to its host (receiver, sender for an ACK, sink for cross traffic); `link` is -1.
    Deliver = 4,
}

/// What a packet is: the simulator's packet kind and a [`TraceRecord`]'s `pkt` code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PacketKind {
    Data = 0,
    Ack = 1,
    Cross = 2,
}

macro_rules! serialize_as_code {
    ($t:ty) => {
        impl Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_u8(*self as u8)
            }
        }
    };
}
serialize_as_code!(TraceKind);
serialize_as_code!(PacketKind);

/// One record of the optional per-packet trace (what [`Trace::push`] takes and [`Trace::get`] gives).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TraceRecord {
    pub t: f64,
    pub kind: TraceKind,
    /// The link, or -1 for a delivery.
    pub link: i32,
    /// The flow index, or −1 − source index for cross traffic.
    pub flow: i32,
    /// Data: the segment's sequence number; ACK: its cumulative ACK; cross traffic: 0.
    pub seq: u64,
    pub pkt: PacketKind,
}

/// The optional per-packet trace, one column per [`TraceRecord`] field: 26 bytes a record and no object per
/// record, so the Python binding hands the columns over as NumPy arrays (a 30 s run at 100 Mbit/s records
/// ~1 M packets). `kind` and `pkt` hold the codes of [`TraceKind`] and [`PacketKind`].
///
/// It serialises as the list of records it replaced (`[{"t":…,"kind":…,"link":…,"flow":…,"seq":…,
/// "pkt":…}, …]`, byte for byte), so the golden digests (tests/golden.rs) hash the same bytes as before.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    pub t: Vec<f64>,
    pub kind: Vec<u8>,
    pub link: Vec<i32>,
    pub flow: Vec<i32>,
    pub seq: Vec<u64>,
    pub pkt: Vec<u8>,
}

impl Trace {
    pub fn push(&mut self, r: TraceRecord) {
        self.t.push(r.t);
        self.kind.push(r.kind as u8);
        self.link.push(r.link);
        self.flow.push(r.flow);
        self.seq.push(r.seq);
        self.pkt.push(r.pkt as u8);
    }

    pub fn len(&self) -> usize {
        self.t.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t.is_empty()
    }

    /// Record `i`, or None past the end.
    pub fn get(&self, i: usize) -> Option<TraceRecord> {
        let kind = match *self.kind.get(i)? {
            0 => TraceKind::Enqueue,
            1 => TraceKind::Drop,
            2 => TraceKind::Loss,
            _ => TraceKind::Deliver,
        };
        let pkt = match self.pkt[i] {
            0 => PacketKind::Data,
            1 => PacketKind::Ack,
            _ => PacketKind::Cross,
        };
        Some(TraceRecord {
            t: self.t[i],
            kind,
            link: self.link[i],
            flow: self.flow[i],
            seq: self.seq[i],
            pkt,
        })
    }
}

impl Serialize for Trace {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(Some(self.len()))?;
        for i in 0..self.len() {
            seq.serialize_element(&self.get(i).expect("index below len"))?;
        }
        seq.end()
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct RunResult {
    pub name: String,
    pub seed: u64,
    pub measure: [f64; 2],
    pub flows: Vec<FlowResult>,
    pub links: Vec<LinkResult>,
    /// Rows: one per (sample time, flow): t, flow, cwnd, ssthresh, pacing_bps, srtt, min_rtt,
    /// in_flight, delivered_bytes, sent_bytes, retransmits, timeouts, + each algorithm's state keys.
    pub flow_series: Series,
    /// Rows: one per (sample time, link): t, link, queue_pkts, queue_bytes, drops, marks,
    /// random_losses, tx_bytes, arrivals, + the queue discipline's state keys.
    pub link_series: Series,
    pub conservation: Conservation,
    pub events: u64,
    /// Data packets that crossed the most loaded link.
    pub packets: u64,
    /// Wall time of the event loop alone, seconds.
    pub wall_s: f64,
    pub warnings: Vec<String>,
    pub trace: Trace,
    /// True if the run was aborted by the progress callback.
    pub aborted: bool,
    /// The window statistics of each algorithm's flows pooled (percentiles over all their samples),
    /// and of all flows pooled.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub stats_by_cc: BTreeMap<String, WindowSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stats_total: Option<WindowSummary>,
    /// One summary per `transfers` traffic source (its transfers are aggregated, never listed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub transfers: Vec<TransferResult>,
    /// Set if the run stopped because it went over its budget (events or packets in memory; the spec's
    /// `limits`): what was exceeded, as an error naming `limits.max_events` / `limits.max_memory`.
    /// [`crate::run`] turns it into its error.
    #[serde(skip)]
    pub over_budget: Option<crate::SpecError>,
    /// Set (and serialised) if the run stopped at its budget: where, why and what it held then. The
    /// rest of the result covers the run up to that time (the window is cut there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<crate::sim::Stopped>,
}

impl RunResult {
    /// The fingerprint that `tests/golden/digests.txt` records (FNV-1a, 64 bit, of the result as JSON):
    /// every field of the model's output except `wall_s`, which measures the machine, and what was added
    /// after the digests were first recorded (the window statistics, checked by `tests/window_stats.rs`,
    /// and the link series' `departures` and `sojourn_sum_s`). Here rather than in the test so that the
    /// Python module can be held to the same digests (`tests/test_golden_module.py`): the module users
    /// run is built with other flags (LTO, a profile) than the tests' binaries, and must give the same
    /// results bit for bit.
    pub fn golden_digest(&self) -> String {
        let mut r = self.clone();
        r.wall_s = 0.0;
        for f in &mut r.flows {
            f.stats = None;
        }
        r.stats_by_cc.clear();
        r.stats_total = None;
        for c in ["departures", "sojourn_sum_s"] {
            r.link_series.columns.remove(c);
        }
        let json = serde_json::to_string(&r).expect("a run result serialises");
        // FNV-1a: enough to tell two results apart, and no dependency.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in json.as_bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        format!("{h:016x}")
    }
}

pub use cclab_cc::cross::FctSummary;

/// A `transfers` source's outcome.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TransferResult {
    /// Index of the source in the spec's `traffic`.
    pub traffic: usize,
    pub cc: String,
    /// Transfers started over the whole run, finished, still running at the end.
    pub arrivals: u64,
    pub completed: u64,
    pub unfinished: u64,
    /// Payload bytes of the finished transfers.
    pub completed_bytes: u64,
    /// Most transfers running at once.
    pub peak_active: u64,
    /// Transfers that arrived inside the measurement window (finished or not).
    pub window_arrivals: u64,
    /// FCT over every finished window transfer, then by size bucket.
    pub fct: FctSummary,
    pub fct_by_size: Vec<FctSummary>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_columns_serialise_as_the_records_they_replaced() {
        let recs = [
            TraceRecord {
                t: 0.25,
                kind: TraceKind::Enqueue,
                link: 0,
                flow: 3,
                seq: u64::MAX,
                pkt: PacketKind::Data,
            },
            TraceRecord {
                t: 1e-9,
                kind: TraceKind::Deliver,
                link: -1,
                flow: -2,
                seq: 0,
                pkt: PacketKind::Cross,
            },
            TraceRecord {
                t: 7.0,
                kind: TraceKind::Loss,
                link: 2,
                flow: 1,
                seq: 41,
                pkt: PacketKind::Ack,
            },
        ];
        let mut tr = Trace::default();
        for r in recs {
            tr.push(r);
        }
        assert_eq!(tr.len(), 3);
        assert_eq!(tr.kind, [0, 4, 2]);
        assert_eq!(tr.pkt, [0, 2, 1]);
        assert_eq!(tr.get(2), Some(recs[2]));
        assert_eq!(tr.get(3), None);
        let json = serde_json::to_string(&tr).unwrap();
        assert_eq!(json, serde_json::to_string(&recs.to_vec()).unwrap());
        assert!(json.starts_with(
            r#"[{"t":0.25,"kind":0,"link":0,"flow":3,"seq":18446744073709551615,"pkt":0},"#
        ));
        assert_eq!(serde_json::to_string(&Trace::default()).unwrap(), "[]");
    }
}
