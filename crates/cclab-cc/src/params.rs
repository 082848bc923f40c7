//! Algorithm and queue parameters as given in a scenario's `params` table, read with type checks and
//! an "unknown parameter" error that lists what is allowed (a typo must never be silently ignored).
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

    /// A number, `default` when absent.
    pub fn f64(&mut self, name: &'static str, default: f64) -> Result<f64, ParamError> {
        self.known.push(name);
        match self.params.get(name) {
            None => Ok(default),
            Some(ParamValue::Num(x)) if x.is_finite() => Ok(*x),
            Some(v) => Err(self.err(name, format!("must be a finite number, got {v:?}"))),
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
            return Err(self.err(name, format!("must be in [{lo}, {hi}], got {x}")));
        }
        Ok(x)
    }

    /// A number that must be > 0.
    pub fn positive(&mut self, name: &'static str, default: f64) -> Result<f64, ParamError> {
        let x = self.f64(name, default)?;
        if x <= 0.0 {
            return Err(self.err(name, format!("must be > 0, got {x}")));
        }
        Ok(x)
    }

    pub fn bool(&mut self, name: &'static str, default: bool) -> Result<bool, ParamError> {
        self.known.push(name);
        match self.params.get(name) {
            None => Ok(default),
            Some(ParamValue::Bool(b)) => Ok(*b),
            Some(v) => Err(self.err(name, format!("must be true or false, got {v:?}"))),
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
            Some(v) => Err(self.err(name, format!("must be one of {allowed:?}, got {v:?}"))),
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
}
