//! Python bindings of the tape (`ferrograd.autograd` and the NDArray autograd methods).
//!
//! The Python module `autograd.py` keeps MXNet's argument handling; everything here is a thin
//! call into `ferrograd::autograd`. A Python `autograd.Function` becomes one recorded node whose
//! gradient calls back into Python ([`PyBackward`]).

use crate::errors::IntoPyResult;
use ferrograd::autograd::{self, BackwardArgs, CustomBackward, Entry, GradReq, GradValue, Tracked};
use ferrograd::{Error, Meta, NDArray};
use pyo3::prelude::*;
use pyo3::types::{PyTuple, PyType};

use crate::errors::{enter, enter_with_gil, has_history};
use crate::ndarray::PyNDArray;

fn arrays(py: Python<'_>, xs: &[PyRef<'_, PyNDArray>]) -> PyResult<Vec<Tracked>> {
    xs.iter().map(|x| x.tracked().py_err(py)).collect()
}

#[pyfunction]
fn _ag_set_recording(on: bool) -> bool {
    autograd::set_recording(on)
}

#[pyfunction]
fn _ag_set_training(on: bool) -> bool {
    autograd::set_training(on)
}

#[pyfunction]
fn _ag_is_recording() -> bool {
    autograd::is_recording()
}

#[pyfunction]
fn _ag_is_training() -> bool {
    autograd::is_training()
}

/// Whether `x` takes part in autograd (a marked variable or a recorded result), i.e. whether a
/// gradient for it can be used (hybridized blocks skip input gradients nobody reads).
#[pyfunction]
fn _ag_in_graph(x: PyRef<'_, PyNDArray>) -> bool {
    x.entry().is_some()
}

/// Marks `var` as a fresh leaf whose gradient goes into `grad` (by reference).
#[pyfunction]
fn _ag_mark_variable(var: &Bound<'_, PyNDArray>, grad: PyRef<'_, PyNDArray>, req: &str) -> PyResult<()> {
    let py = var.py();
    let g = grad.array().py_err(py)?;
    drop(grad);
    let me = var.get();
    let shape = me.with(|x| x.shape().to_vec()).py_err(py)?;
    enter_with_gil(py, || {
        let req = GradReq::parse(req)?;
        if g.shape() != shape.as_slice() {
            return Err(Error::Shape(format!(
                "mark_variables: gradient buffer has shape {} but the variable has shape {}",
                ferrograd::error::fmt_shape(g.shape()),
                ferrograd::error::fmt_shape(&shape)
            )));
        }
        drop(me.set_entry(Some(Entry::variable(g, req)))?);
        Ok(())
    })
}

fn head_grad_arrays(py: Python<'_>, head_grads: &[Option<PyRef<'_, PyNDArray>>]) -> PyResult<Vec<Option<Tracked>>> {
    head_grads.iter().map(|g| g.as_ref().map(|g| g.tracked().py_err(py)).transpose()).collect()
}

#[pyfunction]
fn _ag_backward(
    py: Python<'_>,
    heads: Vec<PyRef<'_, PyNDArray>>,
    head_grads: Vec<Option<PyRef<'_, PyNDArray>>>,
    retain_graph: bool,
    train_mode: bool,
) -> PyResult<()> {
    let (hs, gs) = (arrays(py, &heads)?, head_grad_arrays(py, &head_grads)?);
    drop((heads, head_grads));
    let args = BackwardArgs { retain_graph, create_graph: false, train_mode };
    enter(py, has_history(&hs), || autograd::backward(&hs, &gs, args))
}

/// Installs `hook(grad, variable_id)` (or removes it with None), called during `backward` with
/// each gradient buffer as soon as it is final: see `ferrograd::autograd::GradReadyHook`. An
/// exception in the hook aborts the backward with a RuntimeError naming it.
#[pyfunction]
fn _ag_set_grad_ready_hook(hook: Option<Py<PyAny>>) {
    autograd::set_grad_ready_hook(hook.map(|f| -> autograd::GradReadyHook {
        std::sync::Arc::new(move |g: &NDArray, id: usize| {
            Python::attach(|py| {
                let arg = PyNDArray::wrap(py, g.clone()).map_err(|e| hook_error(py, e))?;
                f.bind(py).call1((arg, id)).map(|_| ()).map_err(|e| hook_error(py, e))
            })
        })
    }));
}

/// The id a grad-ready hook receives for the marked variable `x` (None if `x` is not one).
#[pyfunction]
fn _ag_variable_id(x: PyRef<'_, PyNDArray>) -> Option<usize> {
    x.entry().as_ref().and_then(Entry::variable_id)
}

fn hook_error(py: Python<'_>, e: PyErr) -> Error {
    let name = e.get_type(py).name().map(|n| n.to_string()).unwrap_or_else(|_| "Exception".into());
    Error::Runtime(format!("backward: the grad-ready hook raised {name}: {}", e.value(py)))
}

#[pyfunction]
fn _ag_grad(
    py: Python<'_>,
    heads: Vec<PyRef<'_, PyNDArray>>,
    head_grads: Vec<Option<PyRef<'_, PyNDArray>>>,
    variables: Vec<PyRef<'_, PyNDArray>>,
    retain_graph: bool,
    create_graph: bool,
    train_mode: bool,
) -> PyResult<Vec<Py<PyAny>>> {
    let (hs, gs, vs) = (arrays(py, &heads)?, head_grad_arrays(py, &head_grads)?, arrays(py, &variables)?);
    drop((heads, head_grads, variables));
    let args = BackwardArgs { retain_graph, create_graph, train_mode };
    let grads = enter(py, has_history(&hs), || autograd::grad_values(&hs, &gs, &vs, args))?;
    grads.into_iter().map(|g| grad_value_to_py(py, g)).collect()
}

/// A gradient for Python: an NDArray, or `(data, indices)` for a row-sparse one (the Python side
/// makes it a `RowSparseNDArray`).
fn grad_value_to_py(py: Python<'_>, g: GradValue) -> PyResult<Py<PyAny>> {
    Ok(match g {
        GradValue::Dense(t) => PyNDArray::wrap(py, t)?.into_any(),
        GradValue::Rows(r) => {
            let parts = [PyNDArray::wrap(py, r.data)?.into_any(), PyNDArray::wrap(py, r.indices)?.into_any()];
            PyTuple::new(py, parts)?.into_any().unbind()
        }
    })
}

/// The gradient `x` holds: None (not marked, or grad_req 'null'), an NDArray, or
/// `(data, indices)` for a row-sparse gradient holding rows.
#[pyfunction]
fn _ag_grad_value(x: PyRef<'_, PyNDArray>) -> PyResult<Option<Py<PyAny>>> {
    let py = x.py();
    let g = x.with(|x| x.entry().and_then(Entry::grad_value)).py_err(py)?;
    drop(x);
    g.map(|g| grad_value_to_py(py, g)).transpose()
}

/// Drops the stored rows of a row-sparse gradient (`zero_grad`); false if `x` has none.
#[pyfunction]
fn _ag_clear_rows(x: PyRef<'_, PyNDArray>) -> bool {
    x.entry().as_ref().is_some_and(Entry::clear_rows)
}

/// The recorded history of `x` as a symbol.
#[pyfunction]
fn _ag_get_symbol(x: PyRef<'_, PyNDArray>) -> PyResult<crate::symbol::PySymbol> {
    let py = x.py();
    let hs = [x.tracked().py_err(py)?];
    drop(x);
    let sym = enter(py, has_history(&hs), || autograd::history_symbol(&hs[0]))?;
    Ok(crate::symbol::PySymbol { inner: sym })
}

/// The recorded history of `x` in MXNet's symbol JSON format.
#[pyfunction]
fn _ag_get_symbol_json(x: PyRef<'_, PyNDArray>) -> PyResult<String> {
    let py = x.py();
    let hs = [x.tracked().py_err(py)?];
    drop(x);
    enter(py, has_history(&hs), || autograd::history_json(&hs[0]))
}

/// A new Python object of class `cls` (NDArray or a subclass) for the same array: same storage,
/// same autograd entry.
#[pyfunction]
fn _view_as<'py>(cls: &Bound<'py, PyType>, x: PyRef<'_, PyNDArray>) -> PyResult<Bound<'py, PyAny>> {
    let inner = x.tracked().py_err(cls.py())?;
    drop(x);
    let obj = cls.call0()?;
    obj.cast::<PyNDArray>()?.get().set_array(inner);
    Ok(obj)
}

/// The gradient of a Python `autograd.Function` node: calls `backward(*out_grads)`.
struct PyBackward {
    backward: Py<PyAny>,
    in_metas: Vec<Meta>,
}

impl CustomBackward for PyBackward {
    /// Calls the user's backward and checks what it returned: one array (or None) per input, in
    /// the input's shape. The arrays keep their autograd entries (under `create_graph` the
    /// user's ops were recorded).
    fn backward(&self, out_grads: Vec<Tracked>) -> ferrograd::Result<Vec<Option<Tracked>>> {
        Python::attach(|py| {
            let args: Vec<Py<PyNDArray>> =
                out_grads.into_iter().map(|g| PyNDArray::wrap(py, g)).collect::<PyResult<_>>().map_err(py_error)?;
            let ret = self.backward.bind(py).call1(PyTuple::new(py, args).map_err(py_error)?).map_err(py_error)?;
            let items: Vec<Bound<'_, PyAny>> = match ret.cast::<PyTuple>() {
                Ok(t) => t.iter().collect(),
                Err(_) if ret.is_instance_of::<pyo3::types::PyList>() => {
                    ret.try_iter().and_then(|i| i.collect()).map_err(py_error)?
                }
                Err(_) => vec![ret],
            };
            if items.len() != self.in_metas.len() {
                return Err(Error::Value(format!(
                    "Function.backward must return one gradient per input of forward ({}), got {}",
                    self.in_metas.len(),
                    items.len()
                )));
            }
            items
                .iter()
                .zip(&self.in_metas)
                .enumerate()
                .map(|(i, (item, meta))| {
                    if item.is_none() {
                        return Ok(None);
                    }
                    let g = item.cast::<PyNDArray>().map_err(|_| {
                        Error::DType(format!(
                            "Function.backward: gradient {i} must be an NDArray, got {}",
                            item.get_type().name().map(|n| n.to_string()).unwrap_or_default()
                        ))
                    })?;
                    let g = g.get().tracked()?;
                    if g.shape() != &meta.shape[..] {
                        return Err(Error::Shape(format!(
                            "Function.backward: gradient {i} has shape {} but input {i} has shape {}",
                            ferrograd::error::fmt_shape(g.shape()),
                            ferrograd::error::fmt_shape(&meta.shape)
                        )));
                    }
                    Ok(Some(g))
                })
                .collect()
        })
    }
}

/// A Python exception raised by user code inside a backward, as a native error.
fn py_error(e: PyErr) -> Error {
    Python::attach(|py| {
        let name = e.get_type(py).name().map(|n| n.to_string()).unwrap_or_else(|_| "Exception".into());
        Error::Runtime(format!("Error in Function.backward: {name}: {}", e.value(py)))
    })
}

/// Records one node for a Python `Function` call: gradients of `outputs` flow to `inputs` through
/// `backward(*out_grads)`. Outputs become non-leaf arrays of the graph. A hybridized block's call
/// also gives the `graph` it ran, the graph's argument name for each input (`input_names`) and
/// whether `get_symbol` shows the graph's ops (`inline`) or one `_CachedOp` node.
#[pyfunction]
#[pyo3(signature = (backward, inputs, outputs, graph=None, input_names=Vec::new(), inline=false))]
fn _ag_record_function(
    py: Python<'_>,
    backward: Py<PyAny>,
    inputs: Vec<PyRef<'_, PyNDArray>>,
    outputs: Vec<Bound<'_, PyNDArray>>,
    graph: Option<PyRef<'_, crate::symbol::PySymbol>>,
    input_names: Vec<String>,
    inline: bool,
) -> PyResult<()> {
    let xs = arrays(py, &inputs)?;
    drop(inputs);
    let graph = graph.map(|g| autograd::RecordedGraph { symbol: g.inner.clone(), input_names, inline });
    let ys: Vec<NDArray> = outputs.iter().map(|y| y.get().array().py_err(py)).collect::<PyResult<_>>()?;
    let ys = enter_with_gil(py, move || {
        let mut ys: Vec<Tracked> = ys.into_iter().map(Tracked::new).collect();
        let rule = PyBackward { backward, in_metas: xs.iter().map(|x| x.meta()).collect() };
        autograd::record_custom(std::sync::Arc::new(rule), &xs, &mut ys, graph);
        Ok::<_, Error>(ys)
    })?;
    for (obj, y) in outputs.iter().zip(ys) {
        obj.get().set_array(y);
    }
    Ok(())
}

/// The NDArray autograd methods, called from `ndarray.rs`'s `#[pymethods]`.
pub mod methods {
    use super::*;

    /// `attach_grad(grad_req)`: a zero gradient buffer and a fresh leaf (history is cut).
    pub fn attach_grad(slf: &Bound<'_, PyNDArray>, grad_req: &str, stype: Option<&str>) -> PyResult<()> {
        let py = slf.py();
        let row_sparse = match stype {
            None | Some("default") => false,
            Some("row_sparse") => true,
            Some(st) => {
                return Err(crate::errors::to_py(
                    py,
                    Error::Value(format!(
                        "attach_grad: stype '{st}' is not supported natively (use 'default' or 'row_sparse')"
                    )),
                ))
            }
        };
        let req = GradReq::parse(grad_req).map_err(|_| unknown_grad_req(py, "attach_grad", grad_req))?;
        let (shape, dtype) = slf.get().with(|x| (x.shape().to_vec(), x.dtype())).py_err(py)?;
        if row_sparse {
            // Only the rows a backward reaches are ever stored: no buffer of the whole shape.
            let entry = enter_with_gil(py, || Entry::row_sparse_variable(&shape, dtype, req))?;
            let old = slf.get().set_entry(Some(entry)).py_err(py)?;
            return enter_with_gil(py, || {
                drop(old);
                Ok::<_, Error>(())
            });
        }
        let n = shape.iter().product();
        let buf = enter(py, crate::errors::is_heavy(n), || NDArray::try_full("attach_grad", &shape, dtype, 0.0))?;
        let old = slf.get().set_entry(Some(Entry::variable(buf, req))).py_err(py)?;
        // Replacing the entry may free a recorded history (inside the guard: a graph drop is core work).
        enter_with_gil(py, || {
            drop(old);
            Ok::<_, Error>(())
        })
    }

    /// `ferrograd.base.UnknownGradReq` (an `MXNetError` that is also a `ValueError` and, as in
    /// MXNet, a `KeyError`) naming the function and the request.
    fn unknown_grad_req(py: Python<'_>, func: &str, req: &str) -> PyErr {
        let msg = format!("{func}: grad_req must be one of 'write', 'add', 'null', got {req:?}");
        match py.import("ferrograd.base").and_then(|b| b.getattr("UnknownGradReq")) {
            Ok(cls) => match cls.call1((msg,)) {
                Ok(e) => PyErr::from_value(e),
                Err(e) => e,
            },
            Err(e) => e,
        }
    }

    pub fn grad(py: Python<'_>, slf: &PyNDArray) -> PyResult<Option<PyNDArray>> {
        enter_with_gil(py, || Ok::<_, Error>(slf.entry().as_ref().and_then(Entry::grad_buffer).map(PyNDArray::new)))
    }

    pub fn fresh_grad(slf: &PyNDArray) -> bool {
        slf.entry().as_ref().is_some_and(Entry::fresh_grad)
    }

    pub fn set_fresh_grad(slf: &PyNDArray, on: bool) {
        if let Some(e) = slf.entry() {
            e.set_fresh_grad(on);
        }
    }

    /// `x.backward()`: releases the GIL whenever `x` has a recorded history (see
    /// [`has_history`]); no borrow of `x` or `out_grad` is held meanwhile.
    pub fn backward(
        slf: &Bound<'_, PyNDArray>,
        out_grad: Option<PyRef<'_, PyNDArray>>,
        retain_graph: bool,
        train_mode: bool,
    ) -> PyResult<()> {
        let py = slf.py();
        let hs = [slf.get().tracked().py_err(py)?];
        let gs = [out_grad.map(|g| g.tracked().py_err(py)).transpose()?];
        let args = BackwardArgs { retain_graph, create_graph: false, train_mode };
        enter(py, has_history(&hs), || autograd::backward(&hs, &gs, args))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_ag_set_recording, m)?)?;
    m.add_function(wrap_pyfunction!(_ag_set_training, m)?)?;
    m.add_function(wrap_pyfunction!(_ag_is_recording, m)?)?;
    m.add_function(wrap_pyfunction!(_ag_is_training, m)?)?;
    m.add_function(wrap_pyfunction!(_ag_in_graph, m)?)?;
    m.add_function(wrap_pyfunction!(_ag_mark_variable, m)?)?;
    m.add_function(wrap_pyfunction!(_ag_backward, m)?)?;
    m.add_function(wrap_pyfunction!(_ag_grad, m)?)?;
    m.add_function(wrap_pyfunction!(_ag_grad_value, m)?)?;
    m.add_function(wrap_pyfunction!(_ag_clear_rows, m)?)?;
    m.add_function(wrap_pyfunction!(_ag_set_grad_ready_hook, m)?)?;
    m.add_function(wrap_pyfunction!(_ag_variable_id, m)?)?;
    m.add_function(wrap_pyfunction!(_ag_get_symbol_json, m)?)?;
    m.add_function(wrap_pyfunction!(_ag_get_symbol, m)?)?;
    m.add_function(wrap_pyfunction!(_ag_record_function, m)?)?;
    m.add_function(wrap_pyfunction!(_view_as, m)?)?;
    Ok(())
}
