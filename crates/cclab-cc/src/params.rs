//! Algorithm and queue parameters as given in a scenario's `params` table, read with type checks and
//! an "unknown parameter" error that lists what is allowed (a typo must never be silently ignored).
//!
//! A parameter that is a physical quantity (a time, a rate, a size: [`unit_of`]) also takes a string
//! with a unit, as every other scenario field does (`target = "5ms"`, `capacity_mbps = "100Mbps"`), and
//! its range errors are written in that unit ("must be between 1 µs and 10 s, got 20 s").
//!
//! ```
//! use cclab_cc::params::{Params, ParamValue, ParamReader};
//! let mut p = Params::new();
//! p.insert("k".into(), ParamValue::Num(0.5));
//! let mut r = ParamReader::new("binomial", &p);
//! let k = r.f64("k", 1.0).unwrap();
//! let l = r.f64("l", 0.0).unwrap();
//! r.finish().unwrap();
//! assert_eq!((k, l), (0.5, 0.0));
//! ```

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// One parameter value. Scenario files are TOML, so numbers, strings and booleans are possible.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ParamValue {
    Bool(bool),
    Num(f64),
    Str(String),
}

pub type Params = BTreeMap<String, ParamValue>;

/// A rejected parameter: `field` is the parameter name, `message` says what is allowed.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamError {
    pub field: String,
    pub message: String,
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "params.{}: {}", self.field, self.message)
    }
}

impl std::error::Error for ParamError {}

/// Reads parameters one by one, remembering which names the algorithm knows, so that [`finish`]
/// can reject the rest.
///
/// [`finish`]: ParamReader::finish
pub struct ParamReader<'a> {
    owner: &'static str,
    params: &'a Params,
    known: Vec<&'static str>,
}

impl<'a> ParamReader<'a> {
    pub fn new(owner: &'static str, params: &'a Params) -> Self {
        ParamReader {
            owner,
            params,
            known: Vec::new(),
        }
    }

    fn err(&self, field: &str, message: String) -> ParamError {
        ParamError {
            field: field.to_string(),
            message,
        }
    }

    /// A number, `default` when absent; for a parameter with a unit also a string with a unit.
    pub fn f64(&mut self, name: &'static str, default: f64) -> Result<f64, ParamError> {
        self.known.push(name);
        let unit = unit_of(self.owner, name);
        match (self.params.get(name), unit) {
            (None, _) => Ok(default),
            (Some(ParamValue::Num(x)), _) if x.is_finite() => Ok(*x),
            (Some(ParamValue::Str(s)), Some(u)) => u.parse(s).map_err(|why| self.err(name, why)),
            (Some(v), Some(u)) => Err(self.err(
                name,
                format!(
                    "must be {} or a number of {}, got {v}",
                    u.example(),
                    u.symbol()
                ),
            )),
            (Some(v), None) => Err(self.err(name, format!("must be a finite number, got {v}"))),
        }
    }

    /// `x` as a message shows it: in the parameter's unit when it has one ("20 ms").
    fn show(&self, name: &str, x: f64) -> String {
        match unit_of(self.owner, name) {
            Some(u) => u.show(x),
            None => short(x),
        }
    }

    /// A number that must lie in `[lo, hi]`.
    pub fn f64_in(
        &mut self,
        name: &'static str,
        default: f64,
        lo: f64,
        hi: f64,
    ) -> Result<f64, ParamError> {
        let x = self.f64(name, default)?;
        if x < lo || x > hi {
            let (l, h, v) = (self.show(name, lo), self.show(name, hi), self.show(name, x));
            return Err(self.err(name, format!("must be between {l} and {h}, got {v}")));
        }
        Ok(x)
    }

    /// A number that must be > 0.
    pub fn positive(&mut self, name: &'static str, default: f64) -> Result<f64, ParamError> {
        let x = self.f64(name, default)?;
        if x <= 0.0 {
            let zero = self.show(name, 0.0);
            let v = self.show(name, x);
            return Err(self.err(name, format!("must be > {zero}, got {v}")));
        }
        Ok(x)
    }

    pub fn bool(&mut self, name: &'static str, default: bool) -> Result<bool, ParamError> {
        self.known.push(name);
        match self.params.get(name) {
            None => Ok(default),
            Some(ParamValue::Bool(b)) => Ok(*b),
            Some(v) => Err(self.err(name, format!("must be true or false, got {v}"))),
        }
    }

    /// One of a fixed set of strings.
    pub fn choice(
        &mut self,
        name: &'static str,
        default: &'static str,
        allowed: &[&'static str],
    ) -> Result<&'static str, ParamError> {
        self.known.push(name);
        match self.params.get(name) {
            None => Ok(default),
            Some(ParamValue::Str(s)) => allowed
                .iter()
                .find(|a| **a == s.as_str())
                .copied()
                .ok_or_else(|| self.err(name, format!("must be one of {allowed:?}, got {s:?}"))),
            Some(v) => Err(self.err(name, format!("must be one of {allowed:?}, got {v}"))),
        }
    }

    /// Rejects every parameter that was not read.
    pub fn finish(self) -> Result<(), ParamError> {
        for name in self.params.keys() {
            if !self.known.iter().any(|k| k == name) {
                let mut allowed = self.known.clone();
                allowed.sort();
                allowed.dedup();
                let allowed = if allowed.is_empty() {
                    "none".to_string()
                } else {
                    allowed.join(", ")
                };
                return Err(self.err(
                    name,
                    format!("unknown parameter for {}; allowed: {}", self.owner, allowed),
                ));
            }
        }
        Ok(())
    }
}

impl fmt::Display for ParamValue {
    /// As the user wrote it in the scenario: `0.5`, `true`, `"x"`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Bool(b) => write!(f, "{b}"),
            ParamValue::Num(x) => write!(f, "{x}"),
            ParamValue::Str(s) => write!(f, "{s:?}"),
        }
    }
}

/// The unit of a parameter that is a physical quantity. A number given for it is in this unit (the
/// unit the algorithm has always read: seconds, Mbit/s, bytes); a string carries its own unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Seconds,
    Mbps,
    Bytes,
}

/// Which parameters are quantities, by the owner [`ParamReader::new`] names (an algorithm or a queue
/// discipline) and the parameter: kept in one table so that the unit of every parameter is stated in
/// one place and the algorithms keep reading plain numbers. `maxnet` is both the algorithm and the
/// queue; both read `T` and `dt` in seconds.
const UNITS: &[(&str, &str, Unit)] = &[
    ("codel", "target", Unit::Seconds),
    ("codel", "interval", Unit::Seconds),
    ("pie", "target", Unit::Seconds),
    ("pie", "t_update", Unit::Seconds),
    ("pie", "max_burst", Unit::Seconds),
    ("maxnet", "T", Unit::Seconds),
    ("maxnet", "dt", Unit::Seconds),
    ("fq", "quantum", Unit::Bytes),
    ("fq", "initial_quantum", Unit::Bytes),
    ("fq_codel", "quantum", Unit::Bytes),
    ("fq_codel", "target", Unit::Seconds),
    ("fq_codel", "interval", Unit::Seconds),
    ("fast", "update_interval", Unit::Seconds),
    ("westwood", "min_sample_period", Unit::Seconds),
    ("madison", "T", Unit::Seconds),
    ("madison", "startup_spacing", Unit::Seconds),
    ("madison", "probe_spacing_min", Unit::Seconds),
    ("madison", "probe_spacing_max", Unit::Seconds),
    ("madison", "capacity_mbps", Unit::Mbps),
    ("libra", "t0", Unit::Seconds),
    ("libra", "t1", Unit::Seconds),
    ("libra", "capacity_mbps", Unit::Mbps),
    ("ledbat", "target", Unit::Seconds),
    ("hybla", "rtt0", Unit::Seconds),
    ("bbr", "probe_rtt_interval", Unit::Seconds),
    ("bbr", "probe_rtt_duration", Unit::Seconds),
    ("bbr3", "probe_rtt_interval", Unit::Seconds),
    ("bbr3", "probe_rtt_duration", Unit::Seconds),
    ("bbr3", "min_rtt_filter_len", Unit::Seconds),
];

/// The unit of `owner`'s parameter `name`, or None for a plain number (a gain, a count, a flag).
pub fn unit_of(owner: &str, name: &str) -> Option<Unit> {
    UNITS
        .iter()
        .find(|(o, n, _)| *o == owner && *n == name)
        .map(|(_, _, u)| *u)
}

/// Every (owner, parameter, unit) that takes a unit, for documentation and tests.
pub fn units() -> &'static [(&'static str, &'static str, Unit)] {
    UNITS
}

impl Unit {
    /// The quantity's word and an example, for messages.
    fn example(self) -> &'static str {
        match self {
            Unit::Seconds => "a time like \"10ms\"",
            Unit::Mbps => "a rate like \"100Mbps\"",
            Unit::Bytes => "a size like \"1500B\"",
        }
    }

    /// What a bare number means.
    fn symbol(self) -> &'static str {
        match self {
            Unit::Seconds => "seconds",
            Unit::Mbps => "Mbit/s",
            Unit::Bytes => "bytes",
        }
    }

    /// `s` ("10ms", "100 Mbit/s", "3KB") in this unit; the units are those of the scenario file
    /// (python/cclab/units.py, which a Python test holds this to).
    pub fn parse(self, s: &str) -> Result<f64, String> {
        let (num, unit) = split_quantity(s).ok_or_else(|| {
            format!(
                "must be {} or a number of {}, got {s:?}",
                self.example(),
                self.symbol()
            )
        })?;
        let scale = match self {
            Unit::Seconds => match unit {
                "ns" => Some(1e-9),
                "us" => Some(1e-6),
                "ms" => Some(1e-3),
                "s" => Some(1.0),
                "min" => Some(60.0),
                _ => None,
            },
            Unit::Mbps => rate_scale(unit).map(|bps| bps / 1e6),
            Unit::Bytes => match unit {
                "B" => Some(1.0),
                "KB" | "kB" => Some(1e3),
                "MB" => Some(1e6),
                "GB" => Some(1e9),
                "KiB" => Some(1024.0),
                "MiB" => Some(1024.0 * 1024.0),
                "GiB" => Some(1024.0 * 1024.0 * 1024.0),
                _ => None,
            },
        };
        let allowed = match self {
            Unit::Seconds => "ns, us, ms, s, min",
            Unit::Mbps => "bps, kbps, Mbps, Gbps, Tbps (also written mbps, Mbit/s, Mb/s)",
            Unit::Bytes => "B, KB, kB, MB, GB, KiB, MiB, GiB",
        };
        match scale {
            None if unit.is_empty() => Err(format!("needs a unit ({allowed}), got {s:?}")),
            None => Err(format!("unknown unit {unit:?}; allowed: {allowed}")),
            Some(k) if (num * k).is_finite() => Ok(num * k),
            Some(_) => Err(format!("must be finite, got {s:?}")),
        }
    }

    /// `x` (in this unit) for a message, in the unit a reader would pick: "20 ms", "1 µs", "100 Mbit/s".
    pub fn show(self, x: f64) -> String {
        let steps: &[(f64, &str)] = match self {
            Unit::Seconds => &[(1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")],
            Unit::Mbps => &[
                (1e6, "Tbit/s"),
                (1e3, "Gbit/s"),
                (1.0, "Mbit/s"),
                (1e-3, "kbit/s"),
                (1e-6, "bit/s"),
            ],
            Unit::Bytes => &[(1.0, "B")],
        };
        let (k, sym) = steps
            .iter()
            .find(|(k, _)| x.abs() >= *k)
            .copied()
            .unwrap_or(steps[0]);
        format!("{} {sym}", short(x / k))
    }
}

/// A rate unit's bit/s: "bps", "bit/s" or "b/s" after an optional SI prefix (k, M, G, T in either
/// case: "mbps" is megabits, as people write it); "B" is bytes and never a rate unit here.
fn rate_scale(unit: &str) -> Option<f64> {
    for suffix in ["bps", "bit/s", "b/s"] {
        if let Some(prefix) = unit.strip_suffix(suffix) {
            return match prefix {
                "" => Some(1.0),
                "k" | "K" => Some(1e3),
                "m" | "M" => Some(1e6),
                "g" | "G" => Some(1e9),
                "t" | "T" => Some(1e12),
                _ => None,
            };
        }
    }
    None
}

/// "10 ms" as (10.0, "ms"): a decimal number (sign, fraction, exponent), optional spaces, then the unit
/// (letters, "/" and "%"), as the scenario file's quantities are written. None if it is not one.
fn split_quantity(s: &str) -> Option<(f64, &str)> {
    let t = s.trim();
    if t.len() > 100 {
        return None;
    }
    let b = t.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    let mut n = digits(&mut i);
    if i < b.len() && b[i] == b'.' {
        i += 1;
        n += digits(&mut i);
    }
    if n == 0 {
        return None;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        if digits(&mut j) > 0 {
            i = j;
        }
    }
    let num: f64 = t[..i].parse().ok()?;
    let unit = t[i..].trim_start();
    if !unit
        .bytes()
        .all(|c| c.is_ascii_alphabetic() || c == b'/' || c == b'%')
    {
        return None;
    }
    Some((num, unit))
}

/// A number with at most 6 significant digits, without trailing zeros: 0.1 + 0.2 shows as 0.3.
fn short(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let rounded: f64 = format!("{x:.5e}").parse().unwrap_or(x);
    format!("{rounded}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_parameter_is_rejected_with_allowed_list() {
        let mut p = Params::new();
        p.insert("alpah".into(), ParamValue::Num(1.0));
        let mut r = ParamReader::new("vegas", &p);
        r.f64("alpha", 2.0).unwrap();
        r.f64("beta", 4.0).unwrap();
        let e = r.finish().unwrap_err();
        assert_eq!(e.field, "alpah");
        assert!(e.message.contains("alpha, beta"), "{}", e.message);
    }

    #[test]
    fn wrong_type_and_range() {
        let mut p = Params::new();
        p.insert("gamma".into(), ParamValue::Str("x".into()));
        p.insert("k".into(), ParamValue::Num(-1.0));
        let mut r = ParamReader::new("fast", &p);
        assert!(r.f64("gamma", 0.5).is_err());
        assert!(r.positive("k", 1.0).is_err());
    }

    #[test]
    fn a_time_parameter_takes_a_unit_and_says_its_range_in_it() {
        let mut p = Params::new();
        p.insert("target".into(), ParamValue::Str("10ms".into()));
        p.insert("interval".into(), ParamValue::Str("20 s".into()));
        let mut r = ParamReader::new("codel", &p);
        assert_eq!(r.f64_in("target", 0.005, 1e-6, 10.0).unwrap(), 0.01);
        let e = r.f64_in("interval", 0.1, 1e-6, 10.0).unwrap_err();
        assert_eq!(e.message, "must be between 1 µs and 10 s, got 20 s");
        // A parameter without a unit still takes numbers only.
        let mut q = Params::new();
        q.insert("beta".into(), ParamValue::Str("0.5s".into()));
        let e = ParamReader::new("cubic", &q).f64("beta", 0.7).unwrap_err();
        assert_eq!(e.message, "must be a finite number, got \"0.5s\"");
    }

    #[test]
    fn rate_and_size_spellings() {
        for s in [
            "100Mbps",
            "100mbps",
            "100Mbit/s",
            "100Mb/s",
            "100 mbit/s",
            "0.1Gbps",
            "1e5kbps",
        ] {
            assert_eq!(Unit::Mbps.parse(s), Ok(100.0), "{s}");
        }
        assert!(Unit::Mbps.parse("100MBps").is_err()); // bytes per second: not a rate unit here
        assert!(Unit::Mbps
            .parse("100")
            .unwrap_err()
            .contains("needs a unit"));
        assert_eq!(Unit::Bytes.parse("3KB"), Ok(3000.0));
        assert_eq!(Unit::Bytes.parse("2KiB"), Ok(2048.0));
        assert_eq!(Unit::Seconds.parse("1.5e-3 s"), Ok(0.0015));
        assert!(Unit::Seconds
            .parse("1e999s")
            .unwrap_err()
            .contains("finite"));
        assert!(Unit::Seconds.parse("ten ms").is_err());
        assert_eq!(Unit::Seconds.show(0.0001), "100 µs");
        assert_eq!(Unit::Mbps.show(2500.0), "2.5 Gbit/s");
        assert_eq!(short(0.1 + 0.2), "0.3");
    }
}
