//! `nd.<op>`: every registered op as a native callable. Inputs, positional parameters and
//! keywords are sorted and validated here, in Rust, against the op's declaration; Python only
//! attaches the signature and docstring (`ferrograd.ndarray._registry`). Nothing on the call
//! path runs `inspect`.

use crate::errors::IntoPyResult;
use ferrograd::ops::params::OpDef;
use ferrograd::ops::{self, registry, AttrValue, Attrs};
use ferrograd::{Error, NDArray, Tracked};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PySlice, PyString, PyTuple};
use pyo3::IntoPyObjectExt;
use smallvec::SmallVec;

use crate::errors::{enter, is_heavy, to_py};
use crate::ndarray::PyNDArray;

/// A registered op, callable as `op(*inputs, *params, out=None, name=None, **params)`.
#[pyclass(name = "OpFunc", module = "ferrograd._ferrograd", dict, frozen)]
pub struct OpFunc {
    def: &'static OpDef,
    /// Input names without their `?`/`*` marks.
    inputs: Vec<&'static str>,
    /// How many leading inputs are required (the rest are optional, `bias?`).
    required: usize,
    /// Declared parameter names, in order (positional parameters follow the inputs).
    params: Vec<&'static str>,
}

fn type_err(py: Python<'_>, msg: String) -> PyErr {
    to_py(py, Error::Type(msg))
}

impl OpFunc {
    fn variadic(&self) -> bool {
        self.def.variadic()
    }

    fn input_index(&self, key: &str) -> Option<usize> {
        if self.variadic() {
            return None;
        }
        self.inputs.iter().position(|i| *i == key)
    }

    /// The array in `v`; `what` names the argument, built only for the error (no formatting on
    /// the call path).
    fn array(&self, py: Python<'_>, what: impl FnOnce() -> String, v: &Bound<'_, PyAny>) -> PyResult<Tracked> {
        match v.cast::<PyNDArray>() {
            // A sparse array without a sparse rule here is read as dense values (fallback).
            Ok(a) => a.get().input().map_err(|e| to_py(py, e)),
            Err(_) => Err(type_err(
                py,
                format!("{}(): {} must be an NDArray, got {}", self.def.name, what(), v.get_type().name()?),
            )),
        }
    }

    /// Sorts a call's arguments into input arrays, op attributes and `out`.
    fn sort_args(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<(Vec<Tracked>, Attrs, Option<Py<PyAny>>)> {
        let name = self.def.name;
        let mut attrs = Attrs::new(name);
        let mut arrays: SmallVec<[Option<Tracked>; 4]> = SmallVec::new();
        let n_in = if self.variadic() { 0 } else { self.inputs.len() };
        arrays.resize(n_in, None);
        for (i, v) in args.iter().enumerate() {
            if self.variadic() {
                arrays.push(Some(self.array(py, || format!("input {i}"), &v)?));
            } else if i < n_in {
                if !v.is_none() {
                    arrays[i] = Some(self.array(py, || format!("argument '{}'", self.inputs[i]), &v)?);
                }
            } else if let Some(p) = self.params.get(i - n_in) {
                attrs.items.push((p.to_string(), attr_value(&v)?));
            } else {
                let names: Vec<&str> = self.inputs.iter().chain(&self.params).copied().collect();
                return Err(type_err(
                    py,
                    format!(
                        "{name}(): takes at most {} positional argument(s) ({}), got {}",
                        names.len(),
                        names.join(", "),
                        args.len()
                    ),
                ));
            }
        }
        let positional_params = args.len().saturating_sub(n_in);
        let mut out = None;
        if let Some(kw) = kwargs {
            for (k, v) in kw.iter() {
                let key = k.cast::<PyString>()?.to_str()?;
                match key {
                    "out" => out = (!v.is_none()).then(|| v.unbind()),
                    "name" => {}
                    // A Context (MXNet's op functions take `ctx`): every array lives on the CPU,
                    // so it is passed on as text only to ops that declare it.
                    "ctx" if !v.is_instance_of::<PyString>() => {
                        if self.params.contains(&"ctx") && !v.is_none() {
                            attrs.items.push(("ctx".into(), AttrValue::Str(v.str()?.to_string())));
                        }
                    }
                    _ => {
                        let dup = if let Some(i) = self.input_index(key) {
                            let dup = arrays[i].is_some() || i < args.len();
                            if !v.is_none() {
                                arrays[i] = Some(self.array(py, || format!("argument '{key}'"), &v)?);
                            }
                            dup
                        } else {
                            let dup = self.params.iter().take(positional_params).any(|p| *p == key);
                            attrs.items.push((key.to_string(), attr_value(&v)?));
                            dup
                        };
                        if dup && !self.variadic() {
                            return Err(type_err(py, format!("{name}(): got multiple values for argument '{key}'")));
                        }
                    }
                }
            }
        }
        if self.variadic() && self.params.contains(&"num_args") && !attrs.items.iter().any(|(k, _)| k == "num_args") {
            attrs.items.push(("num_args".into(), AttrValue::Int(arrays.len() as i64)));
        }
        // Omitted optional inputs are left out, as MXNet's op functions do: an op with several
        // optional inputs tells the given ones apart by its flags (CTCLoss's `use_data_lengths`
        // and `use_label_lengths`), and checks its own arity.
        let missing: Vec<&str> = (arrays.iter().zip(&self.inputs).take(self.required))
            .filter(|(a, _)| a.is_none())
            .map(|(_, n)| *n)
            .collect();
        if !missing.is_empty() {
            return Err(type_err(py, format!("{name}(): missing required input(s): {}", missing.join(", "))));
        }
        Ok((arrays.into_iter().flatten().collect(), attrs, out))
    }
}

/// The Context given to the first array argument that has one: as in MXNet, an op's outputs
/// report their inputs' context (a Gluon block then finds its parameters on that device).
fn input_context(py: Python<'_>, args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> Option<Py<PyAny>> {
    let from = |v: &Bound<'_, PyAny>| v.cast::<PyNDArray>().ok().and_then(|a| a.get().given_context(py));
    args.iter().find_map(|v| from(&v)).or_else(|| kwargs.and_then(|kw| kw.values().iter().find_map(|v| from(&v))))
}

#[pymethods]
impl OpFunc {
    #[new]
    #[pyo3(text_signature = "(name)")]
    fn py_new(py: Python<'_>, name: &str) -> PyResult<Self> {
        let def = registry::lookup(name)
            .ok_or_else(|| to_py(py, Error::Value(format!("Cannot find operator '{name}' in the op registry"))))?;
        let inputs: Vec<&'static str> =
            def.args.iter().map(|a| a.trim_start_matches('*').trim_end_matches('?')).collect();
        let required = def.args.iter().take_while(|a| !a.ends_with('?')).count();
        Ok(OpFunc { def, inputs, required, params: def.param_names() })
    }

    /// The op's registry name (aliases resolve to it).
    #[getter]
    fn op_name(&self) -> &'static str {
        self.def.name
    }

    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let (xs, attrs, out) = self.sort_args(py, args, kwargs)?;
        let def = self.def;
        if let Some(o) = &out {
            if self.updates_its_weight(py, &xs, o) {
                update_in_place(py, def.name, &attrs, &xs)?;
                return Ok(o.clone_ref(py));
            }
        }
        let ctx = input_context(py, args, kwargs);
        let work = xs.iter().map(|x| x.size()).max().unwrap_or(0);
        let outs = enter(py, is_heavy(work), move || {
            let op = registry::build(def, &attrs)?;
            ops::check_arity(op.as_ref(), xs.len())?;
            let mut outs = ferrograd::autograd::invoke(&op, xs)?;
            outs.truncate(op.num_visible_outputs());
            Ok(outs)
        })?;
        if let Some(o) = &out {
            check_out(def.name, o.bind(py), &outs)?;
        }
        let wrap = |t| PyNDArray::new(t).with_context(ctx.as_ref().map(|c| c.clone_ref(py)));
        let result = if outs.len() == 1 {
            outs.into_iter().next().map(wrap).into_py_any(py)?
        } else {
            PyList::new(py, outs.into_iter().map(wrap))?.into_any().unbind()
        };
        match out {
            None => Ok(result),
            // A list of arrays (`multi_sgd_update(..., out=[w0, w1])`) takes one output each.
            Some(o) if o.bind(py).is_instance_of::<PyList>() || o.bind(py).is_instance_of::<PyTuple>() => {
                let (targets, results) = (o.bind(py), result.bind(py));
                let n = targets.len()?;
                let results: Vec<Bound<'_, PyAny>> = if results.is_instance_of::<PyList>() {
                    results.try_iter()?.collect::<PyResult<_>>()?
                } else {
                    vec![results.clone()]
                };
                if results.len() != n {
                    return Err(type_err(
                        py,
                        format!(
                            "{name}(): out has {n} arrays but the op has {} outputs",
                            results.len(),
                            name = def.name
                        ),
                    ));
                }
                for (i, r) in results.into_iter().enumerate() {
                    targets.get_item(i)?.set_item(PySlice::full(py), r)?;
                }
                Ok(o)
            }
            Some(o) => {
                o.bind(py).set_item(PySlice::full(py), result)?;
                Ok(o)
            }
        }
    }

    fn __repr__(&self) -> String {
        format!("<ferrograd op {}>", self.def.name)
    }
}

impl OpFunc {
    /// Whether this call is a fused optimizer update whose `out=` is its weight itself
    /// (`sgd_update(w, g, out=w)`, as MXNet's optimizers call it): it then writes the weight in
    /// one pass, with the same values as computing a result and copying it into `out`.
    fn updates_its_weight(&self, py: Python<'_>, xs: &[Tracked], out: &Py<PyAny>) -> bool {
        let (Some(w), Ok(o)) = (xs.first(), out.bind(py).cast::<PyNDArray>()) else { return false };
        let Ok(o) = o.get().tracked() else { return false };
        ops::optim::is_single_update(self.def.name)
            && o.array().shares_storage(w.array())
            && o.array().layout() == w.array().layout()
    }
}

/// Runs the fused optimizer update `name` on `xs` (weight, grad, states...) writing the weights
/// themselves (see `ferrograd::ops::optim::update_in_place`). A weight in a recorded graph may not
/// be overwritten inside `record()`, like any in-place write.
pub(crate) fn update_in_place(py: Python<'_>, name: &str, attrs: &Attrs, xs: &[Tracked]) -> PyResult<()> {
    let work = xs.iter().map(|x| x.size()).sum();
    enter(py, is_heavy(work), || {
        let arrays: Vec<NDArray> = xs.iter().map(|x| x.array().clone()).collect();
        ops::optim::update_in_place(name, attrs, &arrays, |i| ferrograd::autograd::check_inplace(&xs[i], None))
    })
}

/// MXNet's rule for `out=`: each given array must have exactly the result's shape and dtype (no
/// broadcasting into it, no conversion), checked before anything is written.
fn check_out(op: &str, out: &Bound<'_, PyAny>, results: &[Tracked]) -> PyResult<()> {
    let targets: Vec<Bound<'_, PyAny>> = if out.is_instance_of::<PyList>() || out.is_instance_of::<PyTuple>() {
        out.try_iter()?.collect::<PyResult<_>>()?
    } else {
        vec![out.clone()]
    };
    if targets.len() != results.len() {
        let msg = format!("{op}: out= gives {} array(s), but the op has {} output(s)", targets.len(), results.len());
        return Err(to_py(out.py(), Error::Value(msg)));
    }
    for (i, (t, r)) in targets.iter().zip(results).enumerate() {
        let Ok(t) = t.cast::<PyNDArray>() else {
            let msg = format!("{op}: out= must be an NDArray, got {}", t.get_type().name()?);
            return Err(to_py(out.py(), Error::Type(msg)));
        };
        let t = t.get().tracked().py_err(out.py())?;
        let which = if results.len() == 1 { String::new() } else { format!(" (output {i})") };
        if t.shape() != r.shape() {
            let msg = format!(
                "{op}: out={which} has shape {}, but the result has shape {}",
                ferrograd::error::fmt_shape(t.shape()),
                ferrograd::error::fmt_shape(r.shape())
            );
            return Err(to_py(out.py(), Error::Shape(msg)));
        }
        if t.dtype() != r.dtype() {
            let msg = format!("{op}: out={which} has dtype {}, but the result has dtype {}", t.dtype(), r.dtype());
            return Err(to_py(out.py(), Error::DType(msg)));
        }
    }
    Ok(())
}

/// A Python keyword value as an op parameter.
pub(crate) fn attr_value(v: &Bound<'_, PyAny>) -> PyResult<AttrValue> {
    if v.is_none() {
        return Ok(AttrValue::None);
    }
    if let Ok(b) = v.cast::<pyo3::types::PyBool>() {
        return Ok(AttrValue::Bool(b.is_true()));
    }
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(AttrValue::Str(s.to_str()?.to_string()));
    }
    if let Ok(i) = v.extract::<i64>() {
        if !v.is_instance_of::<pyo3::types::PyFloat>() {
            return Ok(AttrValue::Int(i));
        }
    }
    if let Ok(f) = v.extract::<f64>() {
        if v.is_instance_of::<pyo3::types::PyFloat>() || !v.hasattr("__len__")? {
            return Ok(AttrValue::Float(f));
        }
    }
    // A 1-D integer NumPy array (`shape=np.array([2, 3])`) is a tuple, as in MXNet.
    if v.is_instance(&crate::convert::numpy(v.py())?.getattr("ndarray")?)? {
        let kind: String = v.getattr("dtype")?.getattr("kind")?.extract()?;
        if v.getattr("ndim")?.extract::<usize>()? == 1 && (kind == "i" || kind == "u") {
            return Ok(AttrValue::Tuple(v.call_method0("tolist")?.extract()?));
        }
    }
    if v.is_instance_of::<PyTuple>() || v.is_instance_of::<PyList>() {
        return sequence_value(v);
    }
    // dtype-like objects (np.float32, np.dtype('f4')).
    if let Ok(dt) = crate::convert::dtype_from_py(v) {
        return Ok(AttrValue::Str(dt.name().to_string()));
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!("unsupported parameter value {}", v.repr()?)))
}

/// A tuple or list parameter, classified in one pass over its items (a failed whole-sequence
/// extraction costs microseconds, a lot for a per-sample transform's call): integers make a
/// tuple; floats (`multi_sgd_update`'s `lrs`, `normalize`'s `mean`) and `None` entries (slice's
/// open ends) MXNet's string form, each float as Python writes it.
fn sequence_value(v: &Bound<'_, PyAny>) -> PyResult<AttrValue> {
    let (mut ints, mut text, mut textual) = (Vec::new(), Vec::new(), false);
    for e in v.try_iter()? {
        let e = e?;
        if e.is_none() {
            textual = true;
            text.push("None".to_string());
        } else if e.is_instance_of::<pyo3::types::PyFloat>() {
            textual = true;
            text.push(e.repr()?.extract()?);
        } else {
            // Integers, NumPy integers and bools.
            let i: i64 = e.extract()?;
            ints.push(i);
            text.push(i.to_string());
        }
    }
    if !textual {
        return Ok(AttrValue::Tuple(ints));
    }
    let comma = if text.len() == 1 { "," } else { "" };
    Ok(AttrValue::Str(format!("({}{comma})", text.join(", "))))
}

/// A parameter default as a Python value.
fn default_to_py(py: Python<'_>, v: &AttrValue) -> PyResult<Py<PyAny>> {
    match v {
        AttrValue::None => Ok(py.None()),
        AttrValue::Bool(b) => b.into_py_any(py),
        AttrValue::Int(i) => i.into_py_any(py),
        AttrValue::Float(f) => f.into_py_any(py),
        AttrValue::Str(s) => s.into_py_any(py),
        AttrValue::Tuple(t) => PyTuple::new(py, t)?.into_py_any(py),
    }
}

/// One parameter: (name, Python type, required, default, allowed values, description).
type ParamInfo = (&'static str, String, bool, Py<PyAny>, Vec<&'static str>, &'static str);
/// One op: (name, aliases, inputs, parameters, doc).
type OpInfo = (&'static str, Vec<&'static str>, Vec<&'static str>, Vec<ParamInfo>, &'static str);

/// Every op's declaration, for signatures, docstrings, stubs and docs.
#[pyfunction]
fn _op_info(py: Python<'_>) -> PyResult<Vec<OpInfo>> {
    registry::entries()
        .iter()
        .map(|d| {
            let params = (d.params)()
                .into_iter()
                .map(|p| {
                    let default = match &p.default {
                        Some(v) => default_to_py(py, v)?,
                        None => py.None(),
                    };
                    Ok((p.name, p.py_type, p.default.is_none(), default, p.choices.to_vec(), p.doc))
                })
                .collect::<PyResult<Vec<_>>>()?;
            Ok((d.name, d.aliases.to_vec(), d.args.to_vec(), params, d.doc))
        })
        .collect()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<OpFunc>()?;
    m.add_function(wrap_pyfunction!(_op_info, m)?)?;
    Ok(())
}
