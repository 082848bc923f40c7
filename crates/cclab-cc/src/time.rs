//! One integer time type for the whole project: nanoseconds since an arbitrary epoch (the start of a
//! simulation, or the start of a real run). `u64` nanoseconds cover 584 years; integer time keeps event
//! order exact and results bit-for-bit reproducible.

/// A point in time or a duration, in nanoseconds.
pub type Nanos = u64;

pub const NS_PER_US: Nanos = 1_000;
pub const NS_PER_MS: Nanos = 1_000_000;
pub const NS_PER_SEC: Nanos = 1_000_000_000;

/// Seconds (f64) to nanoseconds, rounded to nearest; negative values and NaN clamp to 0, values past
/// the clock's range saturate at `u64::MAX` (Rust's float-to-integer casts saturate).
#[inline]
pub fn from_secs(s: f64) -> Nanos {
    if s <= 0.0 {
        0
    } else {
        (s * 1e9).round() as Nanos
    }
}

/// Nanoseconds to seconds.
#[inline]
pub fn to_secs(t: Nanos) -> f64 {
    t as f64 * 1e-9
}

/// Milliseconds (f64) to nanoseconds.
#[inline]
pub fn from_ms(ms: f64) -> Nanos {
    from_secs(ms * 1e-3)
}

/// Time to serialise `bytes` at `rate_bps` bits per second, rounded up to a whole nanosecond so a link
/// never runs faster than configured.
/// Saturates at `u64::MAX` (a zero or non-finite rate; `RunSpec::validate` keeps rates far from that).
#[inline]
pub fn tx_time(bytes: u64, rate_bps: f64) -> Nanos {
    ((bytes as f64 * 8.0e9) / rate_bps).ceil() as Nanos
}
