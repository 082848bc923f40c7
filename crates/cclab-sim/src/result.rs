//! What a run returns: per-flow and per-link statistics over the measurement window (exact, from
//! counter snapshots at the window edges), columnar time series, conservation counters, warnings.

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

/// One record of the optional per-packet trace.
#[derive(Clone, Copy, Debug, Serialize)]
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
    pub trace: Vec<TraceRecord>,
    /// True if the run was aborted by the progress callback.
    pub aborted: bool,
    /// Set if the run stopped because it went over its budget (events or packets in memory; the spec's
    /// `limits`): what was exceeded, as an error naming `limits.max_events` / `limits.max_memory`.
    /// [`crate::run`] turns it into its error.
    #[serde(skip)]
    pub over_budget: Option<crate::SpecError>,
}
