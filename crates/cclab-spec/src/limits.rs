//! The run spec's bounds, defined once. [`RunSpec::validate`](crate::RunSpec::validate) enforces the
//! ones a resolved spec can show; the Python front door reads all of them (`cclab._native.limits()`)
//! and checks them on the scenario file, where its messages can quote what the user wrote.

/// Most time-series rows a run may record, samples × (flows + links) with
/// samples = ⌊duration / sample_interval⌋ + 1: beyond this a run needs gigabytes of memory.
pub const MAX_SERIES_ROWS: u64 = 10_000_000;

/// Most flows one `[[flows]]` table may expand to (its `count`). Front door only: a resolved spec
/// has flows, not counts.
pub const MAX_FLOW_COUNT: u64 = 100_000;

/// Largest `delayed_ack` (an ACK every N in-order data packets); the smallest is 1.
pub const MAX_DELAYED_ACK: u32 = 64;

/// Seeds are below 2^63 (they fit a signed 64-bit integer, as JSON readers and Parquet store them).
pub const SEED_LIMIT: u64 = 1 << 63;

/// Every limit by the name Python uses.
pub const ALL: &[(&str, u64)] = &[
    ("max_series_rows", MAX_SERIES_ROWS),
    ("max_flow_count", MAX_FLOW_COUNT),
    ("max_delayed_ack", MAX_DELAYED_ACK as u64),
    ("seed_limit", SEED_LIMIT),
];

/// The time-series rows a run records (see [`MAX_SERIES_ROWS`]), as the front door counts them.
pub fn series_rows(duration: f64, sample_interval: f64, flows: usize, links: usize) -> f64 {
    ((duration / sample_interval).floor() + 1.0) * (flows + links) as f64
}
