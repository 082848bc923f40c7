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
    ceil_to_nanos((bytes as f64 * 8.0e9) / rate_bps)
}

/// `x.ceil() as Nanos` for x ≥ 0 (NaN: 0; beyond u64: saturated), without the libm call `ceil` is on
/// baseline x86-64 (no SSE4.1 `roundsd`): every packet's serialisation time goes through here, and the
/// call was 2.8 % of the simulation loop. Exact: a float at or above 2^53 is a whole number, below it
/// the truncation is exact.
#[inline]
pub fn ceil_to_nanos(x: f64) -> Nanos {
    let t = x as Nanos; // truncates (x ≥ 0), saturates, NaN → 0
    if (t as f64) < x && t != Nanos::MAX {
        t + 1
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same as `ceil() as Nanos` on whole numbers, fractions, the edges of exactness and saturation.
    #[test]
    fn ceil_to_nanos_is_ceil() {
        let mut xs = vec![
            0.0,
            0.5,
            1.0,
            1.0 + f64::EPSILON,
            120_000.0,
            119_999.999_9,
            1e15 + 0.5,
        ];
        xs.extend([
            2f64.powi(53),
            2f64.powi(53) - 0.5,
            2f64.powi(63),
            2f64.powi(64),
            1e30,
        ]);
        xs.extend([f64::INFINITY, f64::NAN, f64::MIN_POSITIVE]);
        let mut r = 0x9E37_79B9_7F4A_7C15_u64;
        for _ in 0..100_000 {
            r = r
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            xs.push((r >> 11) as f64 / (1u64 << 20) as f64);
        }
        for x in xs {
            assert_eq!(ceil_to_nanos(x), x.ceil() as Nanos, "{x}");
        }
        for (bytes, rate) in [
            (1500, 100e6),
            (1500, 622e6),
            (52, 1e9),
            (1500, 0.0),
            (1, 3.0),
        ] {
            assert_eq!(
                tx_time(bytes, rate),
                ((bytes as f64 * 8.0e9) / rate).ceil() as Nanos
            );
        }
    }
}
