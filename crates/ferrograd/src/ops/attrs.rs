//! Op parameters: typed values from Python keyword arguments, or MXNet's string attributes from
//! symbol JSON (`'(3, 3)'`, `'True'`, `'relu'`). Each op parses what it needs through one set of
//! accessors, so both sources behave identically.

use crate::error::{Error, Result};

/// One parameter value.
#[derive(Clone, Debug, PartialEq)]
pub enum AttrValue {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Tuple(Vec<i64>),
}

impl AttrValue {
    /// MXNet's string form (`True`, `(2, 3)`, `0.5`).
    pub fn to_mx_string(&self) -> String {
        match self {
            AttrValue::None => "None".into(),
            AttrValue::Bool(b) => if *b { "True" } else { "False" }.into(),
            AttrValue::Int(i) => i.to_string(),
            AttrValue::Float(f) => fmt_float(*f),
            AttrValue::Str(s) => s.clone(),
            AttrValue::Tuple(t) => fmt_tuple(t),
        }
    }
}

/// Python-style float text (`2.0`, `0.5`, `1e-05`).
pub fn fmt_float(f: f64) -> String {
    if f.is_finite() && f == f.trunc() && f.abs() < 1e16 {
        format!("{f:.1}")
    } else {
        format!("{f}")
    }
}

/// MXNet tuple text: `(2, 3)`, `(4,)`, `()`.
pub fn fmt_tuple(t: &[i64]) -> String {
    match t.len() {
        1 => format!("({},)", t[0]),
        _ => format!("({})", t.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    }
}

/// Named parameters for one op call.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Attrs {
    pub op: String,
    pub items: Vec<(String, AttrValue)>,
}

impl Attrs {
    pub fn new(op: &str) -> Attrs {
        Attrs { op: op.to_string(), items: Vec::new() }
    }

    pub fn with(mut self, key: &str, v: AttrValue) -> Attrs {
        self.items.push((key.to_string(), v));
        self
    }

    fn get(&self, key: &str) -> Option<&AttrValue> {
        self.items.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v).filter(|v| **v != AttrValue::None)
    }

    /// Whether `key` was given explicitly as `None` (Python `axis=None`), which some ops read
    /// differently from an absent key.
    pub fn is_explicit_none(&self, key: &str) -> bool {
        self.items.iter().rev().find(|(k, _)| k == key).is_some_and(|(_, v)| *v == AttrValue::None)
    }

    fn bad(&self, key: &str, want: &str, v: &AttrValue) -> Error {
        Error::Value(format!("{}: parameter '{key}' expects {want}, got {}", self.op, v.to_mx_string()))
    }

    /// Fails on keys not in `known` (catches typos such as `axsi=1`).
    pub fn check_known(&self, known: &[&str]) -> Result<()> {
        for (k, _) in &self.items {
            if !known.contains(&k.as_str()) {
                return Err(Error::Value(format!(
                    "{}: unknown parameter '{k}' (expected one of: {})",
                    self.op,
                    known.join(", ")
                )));
            }
        }
        Ok(())
    }

    pub fn f64_or(&self, key: &str, default: f64) -> Result<f64> {
        match self.get(key) {
            None => Ok(default),
            Some(AttrValue::Float(f)) => Ok(*f),
            Some(AttrValue::Int(i)) => Ok(*i as f64),
            Some(AttrValue::Bool(b)) => Ok(f64::from(u8::from(*b))),
            Some(v @ AttrValue::Str(s)) => s.trim().parse().map_err(|_| self.bad(key, "a number", v)),
            Some(v) => Err(self.bad(key, "a number", v)),
        }
    }

    pub fn f64_req(&self, key: &str) -> Result<f64> {
        if self.get(key).is_none() {
            return Err(Error::Value(format!("{}: required parameter '{key}' is missing", self.op)));
        }
        self.f64_or(key, 0.0)
    }

    pub fn bool_or(&self, key: &str, default: bool) -> Result<bool> {
        match self.get(key) {
            None => Ok(default),
            Some(AttrValue::Bool(b)) => Ok(*b),
            Some(AttrValue::Int(i)) => Ok(*i != 0),
            Some(v @ AttrValue::Str(s)) => match s.trim() {
                "True" | "true" | "1" => Ok(true),
                "False" | "false" | "0" => Ok(false),
                _ => Err(self.bad(key, "a boolean", v)),
            },
            Some(v) => Err(self.bad(key, "a boolean", v)),
        }
    }

    pub fn int_or(&self, key: &str, default: i64) -> Result<i64> {
        match self.get(key) {
            None => Ok(default),
            Some(AttrValue::Int(i)) => Ok(*i),
            Some(AttrValue::Bool(b)) => Ok(i64::from(*b)),
            Some(v @ AttrValue::Float(f)) if f.fract() != 0.0 => Err(self.bad(key, "an integer", v)),
            Some(AttrValue::Float(f)) => Ok(*f as i64),
            Some(v @ AttrValue::Str(s)) => s.trim().parse().map_err(|_| self.bad(key, "an integer", v)),
            Some(v) => Err(self.bad(key, "an integer", v)),
        }
    }

    pub fn str_or<'a>(&'a self, key: &str, default: &'a str) -> Result<&'a str> {
        match self.get(key) {
            None => Ok(default),
            Some(AttrValue::Str(s)) => Ok(s),
            Some(v) => Err(self.bad(key, "a string", v)),
        }
    }

    /// A tuple of integers (`(1, 2)`, `[1,2]`, a single int, or `None` → `None`).
    pub fn tuple(&self, key: &str) -> Result<Option<Vec<i64>>> {
        match self.get(key) {
            None => Ok(None),
            Some(AttrValue::Tuple(t)) => Ok(Some(t.clone())),
            Some(AttrValue::Int(i)) => Ok(Some(vec![*i])),
            Some(v @ AttrValue::Str(s)) => {
                parse_tuple(s).map(Some).ok_or_else(|| self.bad(key, "a tuple of integers", v))
            }
            Some(v) => Err(self.bad(key, "a tuple of integers", v)),
        }
    }
}

/// Parses `(2, 3)`, `[2,3]`, `(4,)`, `()`, `5`, `None`.
pub fn parse_tuple(s: &str) -> Option<Vec<i64>> {
    let t = s.trim();
    if t == "None" {
        return Some(Vec::new());
    }
    let inner = t.strip_prefix(['(', '[']).and_then(|x| x.strip_suffix([')', ']'])).unwrap_or(t);
    inner
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| p.trim_end_matches('L').parse::<i64>().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_attrs_round_trip() {
        assert_eq!(parse_tuple("(3, 3)"), Some(vec![3, 3]));
        assert_eq!(parse_tuple("(4,)"), Some(vec![4]));
        assert_eq!(parse_tuple("()"), Some(vec![]));
        assert_eq!(parse_tuple("[1,2]"), Some(vec![1, 2]));
        assert_eq!(parse_tuple("(a, 2)"), None);
        let a = Attrs::new("op").with("flag", AttrValue::Str("True".into())).with("x", AttrValue::Str("2.5".into()));
        assert!(a.bool_or("flag", false).unwrap());
        assert_eq!(a.f64_or("x", 0.0).unwrap(), 2.5);
        assert_eq!(AttrValue::Tuple(vec![3, 3]).to_mx_string(), "(3, 3)");
        assert_eq!(AttrValue::Float(2.0).to_mx_string(), "2.0");
        assert!(a.check_known(&["flag"]).is_err());
    }
}
