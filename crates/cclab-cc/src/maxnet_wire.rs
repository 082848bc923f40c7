//! MaxNet's 24-bit router fields and the RFC 1624 incremental checksum a router needs to rewrite them.
//!
//! Source: M. Suchara, "TCP MaxNet: background, algorithms, implementation and experiments", Caltech
//! B.S. thesis, 2006 (docs/algorithms/papers.md), §3.3 (price and QuickStart-rate encoding), §4.2 (router
//! code, eq. 11, the incremental checksum), §4.4 (the MaxNet TCP option). Notes and DECISIONs:
//! `docs/algorithms/maxnet.md`, "Wire encoding".
//!
//! # The field (24 bits, big-endian on the wire)
//!
//! ```text
//!  bit 23      bits 22 … 0
//! +------+-------------------------------------------+
//! | flag | unsigned fixed point, 18 fractional bits   |   value = code / 2^18, range [0, 32)
//! +------+-------------------------------------------+
//! ```
//!
//! * flag 0: a **price** (seconds; the router's virtual-queue delay, see `aqm::maxnet`), carried directly.
//! * flag 1: a **QuickStart rate**, carried as −ln(rate / x_max) with x_max = 10^15 bit/s, so the 23 bits
//!   cover x_min = 32 bit/s (code ≈ 31.07) … x_max (code 0) with a relative step of 2^−18 ≈ 3.8·10^−6.
//!
//! DECISIONS (also in docs/algorithms/maxnet.md, "Wire encoding"):
//! * **flag polarity**: 1 = QuickStart rate, 0 = price. The thesis only says "the 24th bit" tells them
//!   apart; with this choice an all-zero field is "price 0", the natural initial value of a data packet.
//! * **18 fractional bits**, not the 17 the thesis text (§3.3) states: its router parameter
//!   p_min = 181,083 / 2^18 (§4.2) shows 18 fractional bits, and 5 integer + 18 fraction bits fill the 23.
//! * **round to nearest, saturate** at 2^23 − 1 (negative or NaN values encode as 0): a price above 32 s
//!   means "no rate at all" anyway (x_max·e^(−32/0.05) underflows), so saturation loses nothing.
//! * **"empty" QuickStart field** = flag 1 with code 0 (= x_max): every router on the path sees a larger
//!   rate than its own and overwrites it, so no separate "uninitialised" value is needed.
//!
//! # Checksum
//!
//! A router that rewrites a field must fix the transport checksum. RFC 1624 eq. 3:
//! HC' = ~(~HC + ~m + m'), in ones'-complement arithmetic, for each 16-bit word m → m' that changed.
//! The 3-byte fields straddle 16-bit words (at an odd offset a field touches two words partially), so
//! [`patch_field`] updates every aligned word the field overlaps, one word at a time. The result equals a
//! full recomputation ([`internet_checksum`]) except in the ±0 ambiguity of ones'-complement arithmetic,
//! which RFC 1624 §3 shows eq. 3 resolves correctly whenever the checksummed data is not all zero words
//! (always true of a real packet: the pseudo-header alone has non-zero addresses and protocol).

/// Fractional bits of the 23-bit fixed-point value.
pub const FRAC_BITS: u32 = 18;
/// Bits of the value part of the field.
pub const VALUE_BITS: u32 = 23;
/// Largest code (saturation value).
pub const CODE_MAX: u32 = (1 << VALUE_BITS) - 1;
/// The flag bit: set = QuickStart rate, clear = price.
pub const QS_FLAG: u32 = 1 << VALUE_BITS;
/// All 24 bits of a field.
pub const FIELD_MASK: u32 = (1 << 24) - 1;
/// One unit of the fixed point (the encoding's resolution), 2^−18.
pub const RESOLUTION: f64 = 1.0 / (1u32 << FRAC_BITS) as f64;
/// Largest representable value, (2^23 − 1)/2^18 ≈ 31.999996.
pub const VALUE_MAX: f64 = CODE_MAX as f64 / (1u32 << FRAC_BITS) as f64;

/// Maximum supported rate x_max, bit/s (§3.3). The demand function's rate at price 0.
pub const X_MAX_BPS: f64 = 1e15;
/// Minimum supported rate x_min, bit/s (§3.3).
pub const X_MIN_BPS: f64 = 32.0;
/// The demand-function time constant T, seconds (§4.3 table, `tcp_maxnet_T`). Must be equal at every
/// source and router, because routers derive p_min from it.
pub const DEFAULT_T: f64 = 0.05;

/// The empty QuickStart request a sender puts on its first packet: flag 1, code 0 (rate x_max).
pub const QS_EMPTY: u32 = QS_FLAG;

/// Encodes a non-negative real number as a 23-bit code: round to nearest, saturate at 2^23 − 1; values
/// ≤ 0 and NaN give 0.
#[inline]
pub fn encode_value(v: f64) -> u32 {
    // NaN and non-positive values encode as 0 (the 23-bit saturation is not u32's, so no bare `as`).
    if v.is_nan() || v <= 0.0 {
        return 0;
    }
    let scaled = (v * (1u32 << FRAC_BITS) as f64).round();
    if scaled >= CODE_MAX as f64 {
        CODE_MAX
    } else {
        scaled as u32
    }
}

/// Decodes a 23-bit code (the flag bit, if present, is ignored).
#[inline]
pub fn decode_value(code: u32) -> f64 {
    (code & CODE_MAX) as f64 * RESOLUTION
}

/// True if the field carries a QuickStart rate (flag set).
#[inline]
pub fn is_quickstart(field: u32) -> bool {
    field & QS_FLAG != 0
}

/// A price field (flag 0) for a price in seconds.
#[inline]
pub fn encode_price(price: f64) -> u32 {
    encode_value(price)
}

/// The price carried by a field, or `None` if the field carries a QuickStart rate.
#[inline]
pub fn decode_price(field: u32) -> Option<f64> {
    if is_quickstart(field) {
        None
    } else {
        Some(decode_value(field))
    }
}

/// A QuickStart field (flag 1) for a rate in bit/s, carried as −ln(rate / x_max). Rates are clamped to
/// [x_min, x_max] first (a router never grants more than x_max; below x_min the code would still fit, but
/// the thesis's stated range is x_min … x_max).
#[inline]
pub fn encode_qs_rate(rate_bps: f64) -> u32 {
    let r = if rate_bps.is_nan() {
        X_MIN_BPS
    } else {
        rate_bps.clamp(X_MIN_BPS, X_MAX_BPS)
    };
    QS_FLAG | encode_value(-(r / X_MAX_BPS).ln())
}

/// The rate (bit/s) carried by a QuickStart field, or `None` if the field carries a price.
#[inline]
pub fn decode_qs_rate(field: u32) -> Option<f64> {
    if is_quickstart(field) {
        Some(X_MAX_BPS * (-decode_value(field)).exp())
    } else {
        None
    }
}

/// Eq. 11: the lowest price a router with capacity `c_bps` signals, p_min = −T·ln(C / x_max). At this
/// price the demand function x_max·e^(−q/T) asks for exactly C, so a router never invites more than its
/// capacity. 1 Gbit/s, T = 0.05: 0.690776 s (×2^18 = 181,083, the thesis's value).
#[inline]
pub fn p_min(c_bps: f64, t: f64) -> f64 {
    -t * (c_bps / X_MAX_BPS).ln()
}

/// The equilibrium demand of a MaxNet source at path price `q`: x_max·e^(−q/T), bit/s (eq. 8 with ξ at
/// its fixed point, eq. 10).
#[inline]
pub fn demand_rate(q: f64, t: f64) -> f64 {
    X_MAX_BPS * (-q / t).exp()
}

// ---------------------------------------------------------------------------------------------------
// Internet checksum (RFC 1071) and its incremental update (RFC 1624).

/// Ones'-complement sum of two 16-bit values (end-around carry).
#[inline]
fn oc_add(a: u16, b: u16) -> u16 {
    let s = a as u32 + b as u32;
    ((s & 0xffff) + (s >> 16)) as u16
}

/// Ones'-complement sum of the big-endian 16-bit words of `data` (an odd trailing byte is padded with a
/// zero byte, RFC 1071). Not complemented.
pub fn ones_complement_sum(data: &[u8]) -> u16 {
    let mut acc: u64 = 0;
    let mut chunks = data.chunks_exact(2);
    for w in &mut chunks {
        acc += u16::from_be_bytes([w[0], w[1]]) as u64;
    }
    if let [last] = chunks.remainder() {
        acc += (*last as u64) << 8;
    }
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// The Internet checksum of `data` (RFC 1071): the complement of the ones'-complement sum. To compute a
/// packet's checksum, zero its checksum field first (and include the pseudo-header where one applies).
pub fn internet_checksum(data: &[u8]) -> u16 {
    !ones_complement_sum(data)
}

/// RFC 1624 eq. 3: the checksum after one 16-bit word of the covered data changed from `old` to `new`:
/// HC' = ~(~HC + ~m + m').
#[inline]
pub fn checksum_update_word(checksum: u16, old: u16, new: u16) -> u16 {
    !oc_add(oc_add(!checksum, !old), new)
}

/// The word at aligned index `i` (bytes 2i, 2i+1; a byte past the end counts as the zero pad).
#[inline]
fn word_at(data: &[u8], i: usize) -> u16 {
    let hi = data[2 * i];
    let lo = data.get(2 * i + 1).copied().unwrap_or(0);
    u16::from_be_bytes([hi, lo])
}

/// Why a field could not be patched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchError {
    /// The 3-byte field does not fit in the buffer at this offset.
    FieldOutOfRange,
    /// The checksum's 2 bytes are outside the buffer, not 16-bit aligned, or overlap the field.
    BadChecksumOffset,
}

impl std::fmt::Display for PatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PatchError::FieldOutOfRange => write!(f, "3-byte field does not fit in the packet"),
            PatchError::BadChecksumOffset => {
                write!(
                    f,
                    "checksum offset outside the packet, odd, or overlapping the field"
                )
            }
        }
    }
}

impl std::error::Error for PatchError {}

/// Writes the 24-bit `field` big-endian at byte `offset` (any alignment) of `data` and returns the
/// checksum updated for the change with RFC 1624 eq. 3, word by word. `data` is the checksummed region,
/// aligned so that its byte 0 starts a 16-bit word (a TCP/UDP segment: the pseudo-header is 12 bytes, so
/// the alignment is the segment's own); `checksum` is the current checksum value, stored wherever the
/// caller keeps it. The caller must not let the field overlap the checksum bytes if they live in `data`
/// (use [`patch_field`] for that case).
pub fn patch_u24(
    data: &mut [u8],
    offset: usize,
    field: u32,
    checksum: u16,
) -> Result<u16, PatchError> {
    if offset.checked_add(3).is_none_or(|end| end > data.len()) {
        return Err(PatchError::FieldOutOfRange);
    }
    let first_word = offset / 2;
    let last_word = (offset + 2) / 2;
    // A 3-byte field always straddles exactly two aligned words: at an odd offset the low byte of word k
    // and all of word k+1, at an even offset all of word k and the high byte of word k+1.
    let mut old = [0u16; 2];
    for (j, w) in (first_word..=last_word).enumerate() {
        old[j] = word_at(data, w);
    }
    let bytes = (field & FIELD_MASK).to_be_bytes();
    data[offset..offset + 3].copy_from_slice(&bytes[1..4]);
    let mut c = checksum;
    for (j, w) in (first_word..=last_word).enumerate() {
        let new = word_at(data, w);
        if new != old[j] {
            c = checksum_update_word(c, old[j], new);
        }
    }
    Ok(c)
}

/// Like [`patch_u24`], for a packet that stores its checksum inside the checksummed region at the even
/// byte offset `checksum_offset` (as TCP and UDP do): reads it, patches the field, writes it back.
pub fn patch_field(
    data: &mut [u8],
    offset: usize,
    field: u32,
    checksum_offset: usize,
) -> Result<(), PatchError> {
    if !checksum_offset.is_multiple_of(2)
        || checksum_offset
            .checked_add(2)
            .is_none_or(|e| e > data.len())
        || (checksum_offset < offset + 3 && offset < checksum_offset + 2)
    {
        return Err(PatchError::BadChecksumOffset);
    }
    let c = u16::from_be_bytes([data[checksum_offset], data[checksum_offset + 1]]);
    let c = patch_u24(data, offset, field, c)?;
    data[checksum_offset..checksum_offset + 2].copy_from_slice(&c.to_be_bytes());
    Ok(())
}

/// Reads a 24-bit big-endian field at byte `offset`.
#[inline]
pub fn read_u24(data: &[u8], offset: usize) -> Option<u32> {
    let b = data.get(offset..offset + 3)?;
    Some(u32::from_be_bytes([0, b[0], b[1], b[2]]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn p_min_matches_the_thesis() {
        // §4.2: p_min = 181,083 / 2^18 at 1 Gbit/s; 181,083 / 2^18 = 0.690773…, and the exact eq. 11 value is
        // 0.690776, so a tolerance of 1e-4 holds for both; the code must round to 181,083.
        let p = p_min(1e9, DEFAULT_T);
        assert!((p - 0.6908).abs() < 1e-4, "{p}");
        assert_eq!(encode_price(p), 181_083);
        // The values of docs/algorithms/maxnet.md (Router, eq. 11), printed to 6 decimals there:
        // tolerance half a unit of the last digit.
        assert!(
            (p_min(400e6, DEFAULT_T) - 0.736590).abs() < 5e-7,
            "{}",
            p_min(400e6, DEFAULT_T)
        );
        assert!(
            (p_min(100e6, DEFAULT_T) - 0.805905).abs() < 5e-7,
            "{}",
            p_min(100e6, DEFAULT_T)
        );
        // The demand at p_min is the capacity (eq. 11's purpose); relative error of exp/ln only.
        assert!((demand_rate(p, DEFAULT_T) / 1e9 - 1.0).abs() < 1e-12);
    }

    #[test]
    fn encoding_edges() {
        assert_eq!(encode_value(0.0), 0);
        assert_eq!(encode_value(-1.0), 0);
        assert_eq!(encode_value(f64::NAN), 0);
        assert_eq!(encode_value(1e9), CODE_MAX);
        assert_eq!(encode_value(32.0), CODE_MAX);
        assert_eq!(encode_value(RESOLUTION * 0.49), 0);
        assert_eq!(encode_value(RESOLUTION * 0.51), 1);
        assert_eq!(decode_value(CODE_MAX), VALUE_MAX);
        // flag polarity (DECISION): QS sets bit 23, prices never do
        assert!(is_quickstart(QS_EMPTY) && !is_quickstart(encode_price(31.0)));
        assert_eq!(decode_qs_rate(QS_EMPTY), Some(X_MAX_BPS));
        assert_eq!(decode_price(QS_EMPTY), None);
        assert_eq!(decode_qs_rate(encode_price(1.0)), None);
        assert_eq!(encode_qs_rate(1e18), QS_EMPTY);
        // x_min needs ln(1e15/32) = 31.07 < 32: representable without saturation
        assert!(encode_qs_rate(X_MIN_BPS) & CODE_MAX < CODE_MAX);
    }

    #[test]
    fn qs_rates_32bps_to_1pbps_round_trip_within_0_01_percent() {
        // Every decade and a half from x_min to x_max, plus the ends. Code step 2^-18 in ln(rate) is a
        // relative rate error ≤ 2^-19 ≈ 1.9e-6 after rounding, far inside this test's 1e-4 (0.01 %).
        let mut r = X_MIN_BPS;
        while r <= X_MAX_BPS * 1.000001 {
            let back = decode_qs_rate(encode_qs_rate(r)).unwrap();
            assert!((back / r - 1.0).abs() < 1e-4, "{r} -> {back}");
            assert!((back / r - 1.0).abs() < 2.0e-6, "{r} -> {back}");
            r *= 1.7;
        }
        for r in [X_MIN_BPS, 1e3, 1e6, 1e9, 1e12, X_MAX_BPS] {
            let back = decode_qs_rate(encode_qs_rate(r)).unwrap();
            assert!((back / r - 1.0).abs() < 1e-4, "{r} -> {back}");
        }
    }

    #[test]
    fn rfc1624_example() {
        // RFC 1624 §4: HC = 0xDD2F, m = 0x5555 -> m' = 0x3285 gives HC' = 0x0000.
        assert_eq!(checksum_update_word(0xDD2F, 0x5555, 0x3285), 0x0000);
        // RFC 1071 §3 example words 0001 f203 f4f5 f6f7: sum 0xddf2 (after end-around carry).
        assert_eq!(
            ones_complement_sum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]),
            0xddf2
        );
        // odd length: trailing byte padded on the right
        assert_eq!(ones_complement_sum(&[0x12, 0x34, 0x56]), 0x1234 + 0x5600);
    }

    #[test]
    fn patch_rejects_bad_offsets() {
        let mut p = [0u8; 20];
        assert_eq!(
            patch_field(&mut p, 18, 1, 0),
            Err(PatchError::FieldOutOfRange)
        );
        assert_eq!(
            patch_field(&mut p, 4, 1, 3),
            Err(PatchError::BadChecksumOffset)
        );
        assert_eq!(
            patch_field(&mut p, 4, 1, 6),
            Err(PatchError::BadChecksumOffset)
        );
        assert_eq!(
            patch_field(&mut p, 5, 1, 4),
            Err(PatchError::BadChecksumOffset)
        );
        assert_eq!(
            patch_field(&mut p, 4, 1, 19),
            Err(PatchError::BadChecksumOffset)
        );
        assert_eq!(patch_field(&mut p, 5, 1, 8), Ok(()));
        assert_eq!(read_u24(&p, 5), Some(1));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// Round-to-nearest: |decode(encode(v)) − v| ≤ 2^−19 inside the range (half a step), and never more
        /// than 2^−18 (one step of the encoding) anywhere in [0, 32); values past the top saturate.
        #[test]
        fn price_round_trip_within_resolution(v in 0.0f64..32.0) {
            let back = decode_price(encode_price(v)).unwrap();
            if v <= VALUE_MAX {
                prop_assert!((back - v).abs() <= RESOLUTION / 2.0 + 1e-12, "{} -> {}", v, back);
            } else {
                prop_assert_eq!(back, VALUE_MAX);
            }
            prop_assert!((back - v).abs() <= RESOLUTION, "{} -> {}", v, back);
        }

        /// Every code decodes and re-encodes to itself (the encoding is a bijection on codes).
        #[test]
        fn codes_are_fixed_points(code in 0u32..=CODE_MAX) {
            prop_assert_eq!(encode_value(decode_value(code)), code);
            prop_assert_eq!(encode_qs_rate(decode_qs_rate(QS_FLAG | code).unwrap()) & CODE_MAX,
                            code.min(encode_value(-(X_MIN_BPS / X_MAX_BPS).ln())));
        }

        /// QS rates anywhere in [x_min, x_max] (log-uniform) round-trip within 0.01%.
        #[test]
        fn qs_rate_round_trip(log_r in X_MIN_BPS.ln()..X_MAX_BPS.ln()) {
            let r = log_r.exp();
            let back = decode_qs_rate(encode_qs_rate(r)).unwrap();
            prop_assert!((back / r - 1.0).abs() < 1e-4, "{} -> {}", r, back);
        }

        /// Incremental update equals the full recomputation for random packets, field offsets (odd and
        /// even) and values, including odd-length packets whose last word is half padding.
        #[test]
        fn incremental_checksum_equals_full(
            mut body in proptest::collection::vec(any::<u8>(), 8..200),
            off_frac in 0.0f64..1.0,
            field in 0u32..=FIELD_MASK,
        ) {
            // A real segment is never all zero words (the checksum then has the ±0 ambiguity, see the
            // module doc); make byte 0 non-zero like a port number's high byte.
            body[0] |= 0x80;
            let csum_off = 2; // inside the packet, like UDP's (offset 6) or TCP's (16): any even offset
            body[csum_off] = 0;
            body[csum_off + 1] = 0;
            let c0 = internet_checksum(&body);
            body[csum_off..csum_off + 2].copy_from_slice(&c0.to_be_bytes());
            // field somewhere after the checksum, any alignment, possibly ending on the last byte
            let lo = csum_off + 2;
            let span = body.len() - 3 - lo;
            let offset = lo + ((off_frac * (span as f64 + 1.0)) as usize).min(span);
            patch_field(&mut body, offset, field, csum_off).unwrap();
            prop_assert_eq!(read_u24(&body, offset), Some(field));
            let mut zeroed = body.clone();
            zeroed[csum_off] = 0;
            zeroed[csum_off + 1] = 0;
            let full = internet_checksum(&zeroed);
            let inc = u16::from_be_bytes([body[csum_off], body[csum_off + 1]]);
            prop_assert_eq!(inc, full);
            // and the receiver's check: the sum over the packet including its checksum is 0xffff
            prop_assert_eq!(ones_complement_sum(&body), 0xffff);
        }

        /// Repeated patches of the same field (several routers on a path) keep the checksum right.
        #[test]
        fn repeated_patches(mut body in proptest::collection::vec(any::<u8>(), 16..64),
                            fields in proptest::collection::vec(0u32..=FIELD_MASK, 1..6), odd in any::<bool>()) {
            body[0] |= 1;
            body[0..2].copy_from_slice(&[0x12, 0x34]);
            body[6] = 0;
            body[7] = 0;
            let c0 = internet_checksum(&body);
            body[6..8].copy_from_slice(&c0.to_be_bytes());
            let offset = if odd { 9 } else { 10 };
            for f in fields {
                patch_field(&mut body, offset, f, 6).unwrap();
            }
            prop_assert_eq!(ones_complement_sum(&body), 0xffff);
        }
    }
}
