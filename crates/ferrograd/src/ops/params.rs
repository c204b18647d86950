//! Operator declarations: the one place an op's facts are written.
//!
//! An op's parameters are a struct deriving [`OpParams`] (one field per parameter: name, type,
//! default, one-line description); its registry entry is an [`OpDef`] next to it in the op file
//! (name, aliases, argument and auxiliary-state names, doc, builder). Everything else is derived
//! from these two: parsing from Python keywords and from MXNet's string attributes (with errors
//! naming the op, the parameter and the allowed values), the attribute serialiser, the registry
//! lookup, Python signatures with real defaults, docstrings, `.pyi` stubs and
//! `docs/operators.md`.
//!
//! ```
//! use ferrograd::ops::params::{Attrs, AttrValue, OpParams};
//! use ferrograd::ops::nn::activation::LeakyReluParams;
//! let p = LeakyReluParams::parse(&Attrs::new("LeakyReLU").with("slope", AttrValue::Float(0.1)))?;
//! assert_eq!(p.slope, 0.1);
//! let err = LeakyReluParams::parse(&Attrs::new("LeakyReLU").with("act_type", AttrValue::Str("nope".into())));
//! assert!(err.unwrap_err().to_string().contains("one of elu, gelu, leaky, prelu, rrelu, selu"));
//! # Ok::<(), ferrograd::Error>(())
//! ```

pub use super::attrs::{fmt_float, fmt_tuple, parse_tuple, AttrValue, Attrs};
pub use ferrograd_macros::{OpParams, ParamEnum};

use super::OpRef;
use crate::dtype::DType;
use crate::error::{Error, Result};

/// One declared parameter, as signatures, stubs and docs show it.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamDef {
    pub name: &'static str,
    /// One-line description (the field's doc comment).
    pub doc: &'static str,
    /// Python type annotation (`float`, `int | None`, `Literal['relu', 'tanh']`, ...).
    pub py_type: String,
    /// Allowed values of a string-choice parameter (empty otherwise).
    pub choices: &'static [&'static str],
    /// The default, or `None` for a required parameter.
    pub default: Option<AttrValue>,
}

/// A struct of parameters (derive it with `#[derive(OpParams)]`).
pub trait OpParams: Sized {
    /// Declared parameter names, in declaration order.
    const NAMES: &'static [&'static str];
    /// Every parameter's declaration.
    fn schema() -> Vec<ParamDef>;
    /// Parses and validates keyword or string attributes; unknown names, missing required
    /// parameters and bad values fail naming the op and the parameter.
    fn parse(a: &Attrs) -> Result<Self>;
    /// The parameters that differ from their defaults (and the required ones), as MXNet strings.
    fn to_attrs(&self) -> Vec<(&'static str, String)>;
}

/// Builder of an op whose parameter struct is the op itself (`build: params::parsed_op::<MyOp>`).
pub fn parsed_op<P: OpParams + super::Op + 'static>(a: &Attrs) -> Result<OpRef> {
    Ok(std::sync::Arc::new(P::parse(a)?))
}

/// The parameters of an op that has none.
#[derive(Clone, Debug, Default, PartialEq, OpParams)]
pub struct NoParams {}

/// A Rust type usable as a parameter: how it parses from an [`AttrValue`] (a Python keyword or an
/// MXNet string) and prints back.
pub trait ParamType: Sized + Clone + PartialEq {
    /// The Python annotation for signatures and stubs.
    fn py_type() -> String;
    /// Allowed string values (for choices), empty when any value of the type goes.
    fn choices() -> &'static [&'static str] {
        &[]
    }
    /// The value, or what was expected (`a number`, `one of relu, tanh`) on failure.
    fn parse(v: &AttrValue) -> std::result::Result<Self, String>;
    fn to_value(&self) -> AttrValue;
    /// The error for a value that does not parse (a ValueError; a TypeError for dtypes).
    fn invalid(msg: String) -> Error {
        Error::Value(msg)
    }
}

impl ParamType for f64 {
    fn py_type() -> String {
        "float".into()
    }
    fn parse(v: &AttrValue) -> std::result::Result<f64, String> {
        match v {
            AttrValue::Float(f) => Ok(*f),
            AttrValue::Int(i) => Ok(*i as f64),
            AttrValue::Bool(b) => Ok(f64::from(u8::from(*b))),
            AttrValue::Str(s) => parse_py_float(s).ok_or_else(|| "a number".into()),
            _ => Err("a number".into()),
        }
    }
    fn to_value(&self) -> AttrValue {
        AttrValue::Float(*self)
    }
}

/// A float as Python or MXNet writes it (`0.5`, `1e-05`, `inf`, `-inf`, `nan`).
fn parse_py_float(s: &str) -> Option<f64> {
    let t = s.trim();
    match t {
        "inf" | "Infinity" => Some(f64::INFINITY),
        "-inf" | "-Infinity" => Some(f64::NEG_INFINITY),
        _ => t.parse().ok(),
    }
}

impl ParamType for i64 {
    fn py_type() -> String {
        "int".into()
    }
    fn parse(v: &AttrValue) -> std::result::Result<i64, String> {
        match v {
            AttrValue::Int(i) => Ok(*i),
            AttrValue::Bool(b) => Ok(i64::from(*b)),
            AttrValue::Float(f) if f.fract() == 0.0 && f.is_finite() => Ok(*f as i64),
            AttrValue::Str(s) => s.trim().trim_end_matches('L').parse().map_err(|_| "an integer".into()),
            _ => Err("an integer".into()),
        }
    }
    fn to_value(&self) -> AttrValue {
        AttrValue::Int(*self)
    }
}

impl ParamType for bool {
    fn py_type() -> String {
        "bool".into()
    }
    fn parse(v: &AttrValue) -> std::result::Result<bool, String> {
        match v {
            AttrValue::Bool(b) => Ok(*b),
            AttrValue::Int(i) => Ok(*i != 0),
            AttrValue::Str(s) => match s.trim() {
                "True" | "true" | "1" => Ok(true),
                "False" | "false" | "0" => Ok(false),
                _ => Err("a boolean".into()),
            },
            _ => Err("a boolean".into()),
        }
    }
    fn to_value(&self) -> AttrValue {
        AttrValue::Bool(*self)
    }
}

impl ParamType for String {
    fn py_type() -> String {
        "str".into()
    }
    fn parse(v: &AttrValue) -> std::result::Result<String, String> {
        match v {
            AttrValue::Str(s) => Ok(s.clone()),
            _ => Err("a string".into()),
        }
    }
    fn to_value(&self) -> AttrValue {
        AttrValue::Str(self.clone())
    }
}

/// A tuple of integers: `(1, 2)`, `[1, 2]`, a single integer, or MXNet's string `'(1, 2)'`.
impl ParamType for Vec<i64> {
    fn py_type() -> String {
        "tuple[int, ...]".into()
    }
    fn parse(v: &AttrValue) -> std::result::Result<Vec<i64>, String> {
        let want = || "a tuple of integers".to_string();
        match v {
            AttrValue::Tuple(t) => Ok(t.clone()),
            AttrValue::Int(i) => Ok(vec![*i]),
            AttrValue::Str(s) => parse_tuple(s).ok_or_else(want),
            _ => Err(want()),
        }
    }
    fn to_value(&self) -> AttrValue {
        AttrValue::Tuple(self.clone())
    }
}

/// A tuple of floats (`multi_sgd_update`'s `lrs`): `(0.1, 0.2)`, a single number, or MXNet's
/// string `'(0.1, 0.2)'`.
impl ParamType for Vec<f64> {
    fn py_type() -> String {
        "tuple[float, ...]".into()
    }
    fn parse(v: &AttrValue) -> std::result::Result<Vec<f64>, String> {
        let want = || "a tuple of floats".to_string();
        match v {
            AttrValue::Tuple(t) => Ok(t.iter().map(|&i| i as f64).collect()),
            AttrValue::Int(i) => Ok(vec![*i as f64]),
            AttrValue::Float(f) => Ok(vec![*f]),
            AttrValue::Str(s) => {
                let inner = s.trim().trim_start_matches(['(', '[']).trim_end_matches([')', ']']);
                inner
                    .split(',')
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .map(|p| parse_py_float(p).ok_or_else(want))
                    .collect()
            }
            _ => Err(want()),
        }
    }
    fn to_value(&self) -> AttrValue {
        let parts: Vec<String> = self.iter().map(|f| fmt_float(*f)).collect();
        let comma = if parts.len() == 1 { "," } else { "" };
        AttrValue::Str(format!("({}{comma})", parts.join(", ")))
    }
}

/// A tuple whose entries may be `None` (`slice`'s open ends): `(1, None)`.
impl ParamType for Vec<Option<i64>> {
    fn py_type() -> String {
        "tuple[int | None, ...]".into()
    }
    fn parse(v: &AttrValue) -> std::result::Result<Vec<Option<i64>>, String> {
        let want = || "a tuple of integers or None".to_string();
        match v {
            AttrValue::Tuple(t) => Ok(t.iter().copied().map(Some).collect()),
            AttrValue::Int(i) => Ok(vec![Some(*i)]),
            AttrValue::Str(s) => {
                let inner = s.trim().trim_start_matches(['(', '[']).trim_end_matches([')', ']']);
                inner
                    .split(',')
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .map(|p| if p == "None" { Ok(None) } else { p.trim_end_matches('L').parse().map(Some) })
                    .collect::<std::result::Result<_, _>>()
                    .map_err(|_| want())
            }
            _ => Err(want()),
        }
    }
    fn to_value(&self) -> AttrValue {
        match self.iter().copied().collect::<Option<Vec<i64>>>() {
            Some(t) => AttrValue::Tuple(t),
            None => {
                let parts: Vec<String> = self.iter().map(|e| e.map_or("None".into(), |d| d.to_string())).collect();
                let comma = if parts.len() == 1 { "," } else { "" };
                AttrValue::Str(format!("({}{comma})", parts.join(", ")))
            }
        }
    }
}

impl ParamType for DType {
    fn py_type() -> String {
        "str".into()
    }
    fn choices() -> &'static [&'static str] {
        &["float16", "float32", "float64", "int8", "uint8", "int32", "int64", "bool"]
    }
    fn parse(v: &AttrValue) -> std::result::Result<DType, String> {
        let want = || "a dtype (float16, float32, float64, int8, uint8, int32, int64, bool)".to_string();
        match v {
            AttrValue::Str(s) => DType::from_name(s.trim()).map_err(|_| want()),
            _ => Err(want()),
        }
    }
    fn to_value(&self) -> AttrValue {
        AttrValue::Str(self.name().to_string())
    }
    fn invalid(msg: String) -> Error {
        Error::DType(msg)
    }
}

/// An optional parameter: `None` (Python's `None`, MXNet's `'None'`) or a value.
impl<T: ParamType> ParamType for Option<T> {
    fn py_type() -> String {
        format!("{} | None", T::py_type())
    }
    fn choices() -> &'static [&'static str] {
        T::choices()
    }
    fn parse(v: &AttrValue) -> std::result::Result<Option<T>, String> {
        match v {
            AttrValue::None => Ok(None),
            AttrValue::Str(s) if s.trim() == "None" => Ok(None),
            v => T::parse(v).map(Some),
        }
    }
    fn to_value(&self) -> AttrValue {
        self.as_ref().map_or(AttrValue::None, T::to_value)
    }
    fn invalid(msg: String) -> Error {
        T::invalid(msg)
    }
}

impl Attrs {
    /// The value given for `key`, last one winning (`None` only for an explicit Python `None`).
    fn given(&self, key: &str) -> Option<&AttrValue> {
        self.items.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    fn parse_value<T: ParamType>(&self, key: &str, v: &AttrValue) -> Result<T> {
        T::parse(v).map_err(|want| {
            T::invalid(format!("{}: parameter '{key}' expects {want}, got {}", self.op, v.to_mx_string()))
        })
    }

    /// Parameter `key`, or `default()` when absent. An explicit `None` is the value `None` for an
    /// `Option` parameter and "absent" for any other.
    pub fn param_or<T: ParamType>(&self, key: &str, default: impl FnOnce() -> T) -> Result<T> {
        match self.given(key) {
            None => Ok(default()),
            Some(AttrValue::None) => T::parse(&AttrValue::None).or_else(|_| Ok(default())),
            Some(v) => self.parse_value(key, v),
        }
    }

    /// Required parameter `key`.
    pub fn param_required<T: ParamType>(&self, key: &str) -> Result<T> {
        let missing = || Error::Value(format!("{}: required parameter '{key}' is missing", self.op));
        match self.given(key) {
            None => Err(missing()),
            // An explicit None is a value only for an Option parameter (slice_axis's end).
            Some(AttrValue::None) => T::parse(&AttrValue::None).map_err(|_| missing()),
            Some(v) => self.parse_value(key, v),
        }
    }

    /// Fails on names not declared (catches typos such as `axsi=1`), listing the declared ones.
    pub fn check_declared(&self, declared: &[&str]) -> Result<()> {
        match self.items.iter().find(|(k, _)| !declared.contains(&k.as_str())) {
            None => Ok(()),
            Some((k, _)) if declared.is_empty() => {
                Err(Error::Type(format!("{}: unknown parameter '{k}' (the op takes no parameters)", self.op)))
            }
            Some((k, _)) => Err(Error::Type(format!(
                "{}: unknown parameter '{k}' (expected one of: {})",
                self.op,
                declared.join(", ")
            ))),
        }
    }
}

/// Builds an op from its (unvalidated) attributes.
pub type Builder = fn(&Attrs) -> Result<OpRef>;

/// An op's registry entry: everything the front ends need to call, document and type it.
#[derive(Clone, Copy)]
pub struct OpDef {
    /// MXNet name (symbol JSON, error messages).
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    /// Input names in order: arguments then auxiliary states. `name?` may be omitted (a trailing
    /// optional input such as `bias` with `no_bias`), `*name` takes any number of arrays.
    pub args: &'static [&'static str],
    /// The op's documentation: first line a summary, the rest details.
    pub doc: &'static str,
    /// The parameter declarations (`P::schema` of the op's [`OpParams`] struct).
    pub params: fn() -> Vec<ParamDef>,
    pub build: Builder,
}

impl std::fmt::Debug for OpDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpDef").field("name", &self.name).field("aliases", &self.aliases).finish_non_exhaustive()
    }
}

impl OpDef {
    /// Declared parameter names.
    pub fn param_names(&self) -> Vec<&'static str> {
        (self.params)().iter().map(|p| p.name).collect()
    }
    /// Whether the op takes any number of arrays (`Concat`, `add_n`).
    pub fn variadic(&self) -> bool {
        self.args.first().is_some_and(|a| a.starts_with('*'))
    }
}
