//! `_Symbol` and `_Executor`: handles the Python `ferrograd.symbol` / `ferrograd.executor` classes
//! wrap. Naming rules, argument forms and MXNet's Python-level messages live in Python; the graph,
//! inference, JSON and the executor live in the `ferrograd` crate.

use crate::errors::IntoPyResult;
use ferrograd::autograd::GradReq;
use ferrograd::executor::{Bindings, Executor};
use ferrograd::ops::{registry, Attrs};
use ferrograd::symbol::infer::{infer, infer_types, Known};
use ferrograd::symbol::{json, Symbol};
use ferrograd::{Error, NDArray, Tracked};
use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::{enter, enter_with_gil};
use crate::ndarray::PyNDArray;

#[pyclass(name = "_Symbol", module = "ferrograd._ferrograd", frozen)]
#[derive(Clone)]
pub struct PySymbol {
    pub inner: Symbol,
}

fn wrap(inner: Symbol) -> PySymbol {
    PySymbol { inner }
}

/// Runs a symbol-graph query through the guard, keeping the GIL: symbol graphs are small (walks,
/// inference and JSON take microseconds), so releasing would cost more than it frees.
fn guarded<T>(py: Python<'_>, f: impl FnOnce() -> Result<T, Error>) -> PyResult<T> {
    enter_with_gil(py, f)
}

/// A Python callback's exception as an error of the running backward (type and message kept).
fn callback_error(py: Python<'_>, e: PyErr) -> Error {
    let name = e.get_type(py).name().map(|n| n.to_string()).unwrap_or_else(|_| "Exception".into());
    Error::Runtime(format!("backward: the grad_ready callback raised {name}: {}", e.value(py)))
}

type Shapes = Vec<Option<Vec<usize>>>;
type PartialShapes = Vec<Option<Vec<Option<usize>>>>;
type DTypes = Vec<Option<&'static str>>;
/// `[(node name, [(key, value)])]`.
type AttrDict = Vec<(String, Vec<(String, String)>)>;

fn shapes(ms: &[Option<ferrograd::ndarray::Meta>]) -> Shapes {
    ms.iter().map(|m| m.as_ref().map(|m| m.shape.to_vec())).collect()
}

fn dtypes(ms: &[Option<ferrograd::ndarray::Meta>]) -> DTypes {
    ms.iter().map(|m| m.as_ref().map(|m| m.dtype.name())).collect()
}

#[pymethods]
impl PySymbol {
    /// The head node's name (`None` for a group).
    #[getter]
    fn name(&self) -> Option<String> {
        self.inner.name()
    }

    fn num_outputs(&self) -> usize {
        self.inner.outputs.len()
    }

    /// The op name of the head node (`"null"` for a variable, `None` for a group).
    fn op_name(&self) -> Option<&'static str> {
        match self.inner.outputs.as_slice() {
            [o] => Some(o.node.op_name()),
            _ => None,
        }
    }

    fn list_arguments(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        guarded(py, || Ok(self.inner.list_arguments()))
    }

    fn list_outputs(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        guarded(py, || Ok(self.inner.list_outputs()))
    }

    fn list_auxiliary_states(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        guarded(py, || Ok(self.inner.list_auxiliary_states()))
    }

    fn list_inputs(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        guarded(py, || Ok(self.inner.list_inputs()))
    }

    fn output(&self, py: Python<'_>, i: usize) -> PyResult<Option<PySymbol>> {
        guarded(py, || Ok(self.inner.output(i).map(wrap)))
    }

    fn get_internals(&self, py: Python<'_>) -> PyResult<PySymbol> {
        guarded(py, || Ok(wrap(self.inner.get_internals())))
    }

    fn get_children(&self, py: Python<'_>) -> PyResult<Option<PySymbol>> {
        guarded(py, || Ok(self.inner.get_children().map(wrap)))
    }

    fn deep_copy(&self, py: Python<'_>) -> PyResult<PySymbol> {
        guarded(py, || Ok(wrap(self.inner.deep_copy())))
    }

    /// The graph with common subexpressions merged (MXNet's binding pass).
    fn eliminate_common_exprs(&self, py: Python<'_>) -> PyResult<PySymbol> {
        guarded(py, || Ok(wrap(self.inner.eliminate_common_exprs())))
    }

    /// A new graph with free variables replaced (by position or by name); `rename` renames the head.
    #[pyo3(signature = (positional, named, rename=None))]
    fn compose(
        &self,
        py: Python<'_>,
        positional: Vec<PyRef<'_, PySymbol>>,
        named: Vec<(String, PyRef<'_, PySymbol>)>,
        rename: Option<&str>,
    ) -> PyResult<PySymbol> {
        let pos: Vec<Symbol> = positional.iter().map(|s| s.inner.clone()).collect();
        let named: Vec<(String, Symbol)> = named.iter().map(|(k, s)| (k.clone(), s.inner.clone())).collect();
        guarded(py, || self.inner.compose(&pos, &named, rename).map(wrap))
    }

    /// Attributes of the head node (parameters and user attributes); empty for a group.
    fn list_attr(&self, py: Python<'_>) -> PyResult<Vec<(String, String)>> {
        guarded(py, || {
            Ok(match self.inner.outputs.as_slice() {
                [o] => o.node.attrs(),
                _ => Vec::new(),
            })
        })
    }

    /// Sets an attribute on every head node, in place (MXNet's `_set_attr`).
    fn set_attr(&self, py: Python<'_>, key: &str, value: &str) -> PyResult<()> {
        guarded(py, || {
            for o in &self.inner.outputs {
                o.node.set_attr(key, value);
            }
            Ok(())
        })
    }

    fn attr_dict(&self, py: Python<'_>) -> PyResult<AttrDict> {
        guarded(py, || Ok(self.inner.attr_dict()))
    }

    fn tojson(&self, py: Python<'_>) -> PyResult<String> {
        guarded(py, || Ok(json::to_json(&self.inner)))
    }

    /// Node-by-node dump: for every op node, its name, op, inputs and attributes.
    fn debug_str(&self, py: Python<'_>) -> PyResult<String> {
        guarded(py, || Ok(debug_str(&self.inner)))
    }

    /// `(arg_shapes, out_shapes, aux_shapes)`; unknown entries are `None`.
    fn infer_shape(&self, py: Python<'_>, shapes_in: Vec<(String, Vec<usize>)>) -> PyResult<(Shapes, Shapes, Shapes)> {
        let known = Known { shapes: shapes_in.into_iter().collect(), ..Default::default() };
        let inf = guarded(py, || infer(&self.inner, &known))?;
        Ok((shapes(&inf.args), shapes(&inf.outputs), shapes(&inf.aux)))
    }

    /// As `infer_shape` from shapes with unknown dimensions (`None`), returning what is known
    /// of each shape: `None` for an unknown rank, `None` entries for unknown dimensions.
    fn infer_shape_partial(
        &self,
        py: Python<'_>,
        shapes_in: Vec<(String, Vec<Option<usize>>)>,
    ) -> PyResult<(PartialShapes, PartialShapes, PartialShapes)> {
        let known = Known { partial: shapes_in.into_iter().collect(), ..Default::default() };
        let inf = guarded(py, || infer(&self.inner, &known))?;
        Ok((inf.arg_shapes, inf.out_shapes, inf.aux_shapes))
    }

    /// `(arg_types, out_types, aux_types)` as dtype names; unknown entries are `None`.
    fn infer_type(
        &self,
        py: Python<'_>,
        types_in: Vec<(String, Bound<'_, PyAny>)>,
    ) -> PyResult<(DTypes, DTypes, DTypes)> {
        let mut known = Known::default();
        for (k, v) in types_in {
            known.dtypes.insert(k, crate::convert::dtype_from_py(&v)?);
        }
        let inf = guarded(py, || infer_types(&self.inner, &known))?;
        Ok((dtypes(&inf.args), dtypes(&inf.outputs), dtypes(&inf.aux)))
    }

    /// Runs the graph op by op on `inputs` (in `list_inputs()` order), recording on the autograd
    /// tape when recording is on (`nd.CachedOp`).
    fn eval_imperative(&self, py: Python<'_>, inputs: Vec<PyRef<'_, PyNDArray>>) -> PyResult<Vec<PyNDArray>> {
        let arrays: Vec<Tracked> = inputs.iter().map(|a| a.tracked().py_err(py)).collect::<PyResult<_>>()?;
        let outs = guarded(py, || self.inner.eval_imperative(&arrays))?;
        Ok(outs.into_iter().map(PyNDArray::new).collect())
    }

    /// Binds arrays (in `list_arguments()` / `list_auxiliary_states()` order) into an executor.
    fn bind(
        &self,
        py: Python<'_>,
        args: Vec<PyRef<'_, PyNDArray>>,
        grads: Vec<Option<PyRef<'_, PyNDArray>>>,
        reqs: Vec<String>,
        aux: Vec<PyRef<'_, PyNDArray>>,
    ) -> PyResult<PyExecutor> {
        let args: Vec<NDArray> = args.iter().map(|a| a.array().py_err(py)).collect::<PyResult<_>>()?;
        let grads: Vec<Option<NDArray>> =
            grads.iter().map(|g| g.as_ref().map(|g| g.array().py_err(py)).transpose()).collect::<PyResult<_>>()?;
        let aux: Vec<NDArray> = aux.iter().map(|a| a.array().py_err(py)).collect::<PyResult<_>>()?;
        let sym = self.inner.clone();
        let exe = guarded(py, move || {
            let reqs = reqs.iter().map(|r| GradReq::parse(r)).collect::<Result<Vec<_>, _>>()?;
            Executor::bind(&sym, Bindings { args, grads, reqs, aux })
        })?;
        Ok(PyExecutor { inner: Mutex::new(exe) })
    }
}

/// A variable node with string attributes.
#[pyfunction]
fn _sym_var(py: Python<'_>, name: &str, attrs: Vec<(String, String)>) -> PyResult<PySymbol> {
    guarded(py, || Ok(wrap(Symbol::variable(name, attrs))))
}

/// Applies a registered op. Inputs not given (by position or by name) become variables named
/// `<name>_<input>` carrying the node's attributes, as MXNet creates `fc1_weight`.
#[pyfunction]
#[pyo3(signature = (op, params, positional, named, name, attrs))]
fn _sym_create(
    py: Python<'_>,
    op: &str,
    params: &Bound<'_, PyDict>,
    positional: Vec<PyRef<'_, PySymbol>>,
    named: Vec<(String, PyRef<'_, PySymbol>)>,
    name: &str,
    attrs: Vec<(String, String)>,
) -> PyResult<PySymbol> {
    let mut a = Attrs::new(op);
    for (k, v) in params.iter() {
        a.items.push((k.extract()?, crate::attr_value(&v)?));
    }
    let positional: Vec<Symbol> = positional.iter().map(|s| s.inner.clone()).collect();
    let named: Vec<(String, Symbol)> = named.iter().map(|(k, s)| (k.clone(), s.inner.clone())).collect();
    guarded(py, || create(op, &a, &positional, &named, name, attrs))
}

/// The core of [`_sym_create`] (no Python objects).
fn create(
    op: &str,
    a: &Attrs,
    positional: &[Symbol],
    named: &[(String, Symbol)],
    name: &str,
    attrs: Vec<(String, String)>,
) -> Result<PySymbol, Error> {
    let built = registry::create(op, a)?;
    let mut node_attrs: Vec<(String, String)> = built.attrs().into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    node_attrs.extend(attrs);
    let names: Vec<&str> = built.arg_names().iter().chain(built.aux_names()).copied().collect();
    let inputs: Vec<Symbol> = if built.variadic() {
        if let Some((k, _)) = named.first() {
            return Err(Error::Value(format!("{op}: takes its inputs by position only, got keyword input '{k}'")));
        }
        positional.to_vec()
    } else {
        if positional.len() > names.len() {
            return Err(Error::Value(format!(
                "{op} ({name}): {} positional inputs given, but it takes {} {:?}",
                positional.len(),
                names.len(),
                names
            )));
        }
        if let Some((k, _)) = named.iter().find(|(k, _)| !names.contains(&k.as_str())) {
            return Err(Error::Value(format!("{op} ({name}): unknown input '{k}'; its inputs are {names:?}")));
        }
        let mut slots: Vec<Option<Symbol>> = positional.iter().cloned().map(Some).collect();
        slots.resize(names.len(), None);
        for (k, s) in named {
            if let Some(i) = names.iter().position(|n| n == k) {
                slots[i] = Some(s.clone());
            }
        }
        slots
            .into_iter()
            .zip(&names)
            .map(|(s, arg)| s.unwrap_or_else(|| Symbol::variable(&format!("{name}_{arg}"), node_attrs.clone())))
            .collect()
    };
    Symbol::create(built, name, &inputs, node_attrs).map(wrap)
}

/// Cuts a control-flow body out of the graph it was built in (`ferrograd::symbol::subgraph`):
/// the body, and per body input its name and the value that feeds it.
#[pyfunction]
fn _sym_cut_subgraph(
    py: Python<'_>,
    sym: PyRef<'_, PySymbol>,
    scope: &str,
) -> PyResult<(PySymbol, Vec<(String, PySymbol)>)> {
    let cut = guarded(py, || Ok(ferrograd::symbol::subgraph::cut_subgraph(&sym.inner, scope)))?;
    Ok((wrap(cut.graph), cut.feeds.into_iter().map(|(n, s)| (n, wrap(s))).collect()))
}

/// A control-flow node (`_foreach`, `_while_loop`, `_cond`) over `subgraphs`, from MXNet's
/// string parameters; `attrs` are the node's user attributes.
#[pyfunction]
fn _sym_control_flow(
    py: Python<'_>,
    op: &str,
    subgraphs: Vec<PyRef<'_, PySymbol>>,
    params: Vec<(String, String)>,
    inputs: Vec<PyRef<'_, PySymbol>>,
    name: &str,
    attrs: Vec<(String, String)>,
) -> PyResult<PySymbol> {
    let graphs: Vec<Symbol> = subgraphs.iter().map(|s| s.inner.clone()).collect();
    let inputs: Vec<Symbol> = inputs.iter().map(|s| s.inner.clone()).collect();
    guarded(py, || {
        let built = ferrograd::ops::control_flow::build(op, &params, graphs, inputs.len())?;
        let mut node_attrs: Vec<(String, String)> =
            built.attrs().into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        node_attrs.extend(attrs);
        Symbol::create(built, name, &inputs, node_attrs).map(wrap)
    })
}

/// Several symbols' outputs as one symbol.
#[pyfunction]
fn _sym_group(py: Python<'_>, symbols: Vec<PyRef<'_, PySymbol>>) -> PyResult<PySymbol> {
    let s: Vec<Symbol> = symbols.iter().map(|s| s.inner.clone()).collect();
    guarded(py, || Ok(wrap(Symbol::group(&s))))
}

#[pyfunction]
fn _sym_load_json(py: Python<'_>, text: &str) -> PyResult<PySymbol> {
    guarded(py, || json::from_json(text).map(wrap))
}

fn debug_str(sym: &Symbol) -> String {
    use std::fmt::Write;
    let nodes = sym.topo_nodes();
    let mut out = String::from("Symbol Outputs:\n");
    for (i, o) in sym.outputs.iter().enumerate() {
        let _ = writeln!(out, "\toutput[{i}]={}({})", o.node.name, o.index);
    }
    for n in &nodes {
        if n.is_variable() {
            let _ = writeln!(out, "Variable:{}", n.name);
            continue;
        }
        let _ = writeln!(out, "--------------------\nOp:{}, Name={}\nInputs:", n.op_name(), n.name);
        for (i, inp) in n.inputs.iter().enumerate() {
            let _ = writeln!(out, "\targ[{i}]={}({}) version=0", inp.node.name, inp.index);
        }
        let attrs = n.attrs();
        if !attrs.is_empty() {
            out.push_str("Attrs:\n");
            for (k, v) in attrs {
                let _ = writeln!(out, "\t{k}={v}");
            }
        }
    }
    out
}

#[pyclass(name = "_Executor", module = "ferrograd._ferrograd", frozen)]
pub struct PyExecutor {
    inner: Mutex<Executor>,
}

#[pymethods]
impl PyExecutor {
    /// Runs the forward schedule. `monitor(name, array)` sees every op output (the GIL is then
    /// held throughout, since the callback is Python); inference fusion is off for that run, and
    /// steps fused for training recompute what they do not store, so the monitor sees the values
    /// inside fused chains and pairs too.
    #[pyo3(signature = (is_train, monitor=None))]
    fn forward(&self, py: Python<'_>, is_train: bool, monitor: Option<Bound<'_, PyAny>>) -> PyResult<()> {
        match monitor {
            // A whole-graph run: always worth releasing the GIL (see `backward`).
            None => enter(py, true, || self.inner.lock().forward(is_train, &mut |_, _| {})),
            Some(cb) => {
                let mut failure: Option<PyErr> = None;
                let mut exe = self.inner.lock();
                let fused = exe.inference_fusion();
                exe.set_inference_fusion(false);
                exe.set_monitored(true);
                let r = enter_with_gil(py, || {
                    exe.forward(is_train, &mut |name, arr| {
                        if failure.is_none() {
                            if let Err(e) = cb.call1((name, PyNDArray::new(arr.clone()))) {
                                failure = Some(e);
                            }
                        }
                    })
                });
                exe.set_inference_fusion(fused);
                exe.set_monitored(false);
                match failure {
                    Some(e) => Err(e),
                    None => r,
                }
            }
        }
    }

    /// Runs the backward schedule; `out_grads[i] = None` lets a loss head supply its own.
    /// `grad_ready(i, grad)`, if given, is called with each argument's index and gradient buffer
    /// as soon as that gradient is final, before the rest of backward runs; it must not use
    /// this executor.
    #[pyo3(signature = (out_grads, is_train, grad_ready=None))]
    fn backward(
        &self,
        py: Python<'_>,
        out_grads: Vec<Option<PyRef<'_, PyNDArray>>>,
        is_train: bool,
        grad_ready: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        let gs: Vec<Option<NDArray>> =
            out_grads.iter().map(|g| g.as_ref().map(|g| g.array().py_err(py)).transpose()).collect::<PyResult<_>>()?;
        drop(out_grads);
        // Runs the gradient rule of every node of the bound graph: always far more work than the
        // ~100 ns a GIL release costs, whatever the size of the heads (a loss is a scalar). The
        // executor lock is taken and released inside the GIL-free section, so another thread
        // waiting for it while holding the GIL cannot deadlock with this one.
        enter(py, true, || {
            let Some(f) = grad_ready else { return self.inner.lock().backward(&gs, is_train) };
            let mut call = |i: usize, g: &NDArray| {
                Python::attach(|py| {
                    let arg = PyNDArray::wrap(py, g.clone()).map_err(|e| callback_error(py, e))?;
                    f.bind(py).call1((i, arg)).map(|_| ()).map_err(|e| callback_error(py, e))
                })
            };
            self.inner.lock().backward_with(&gs, is_train, Some(&mut call))
        })
    }

    /// The output arrays (the same storage across runs).
    fn outputs(&self) -> Vec<PyNDArray> {
        self.inner.lock().outputs.iter().map(|a| PyNDArray::new(a.clone())).collect()
    }

    /// Makes the forward write into these arrays (views of a parent executor's outputs).
    fn share_outputs(&self, py: Python<'_>, outputs: Vec<PyRef<'_, PyNDArray>>) -> PyResult<()> {
        let arrays: Vec<NDArray> = outputs.iter().map(|a| a.array().py_err(py)).collect::<PyResult<_>>()?;
        guarded(py, || self.inner.lock().share_outputs(arrays))
    }

    fn output_names(&self) -> Vec<String> {
        self.inner.lock().output_names().to_vec()
    }

    fn is_loss_head(&self, h: usize) -> bool {
        self.inner.lock().is_loss_head(h)
    }

    /// `(node name, op name)` of every forward then backward step.
    fn schedule(&self, py: Python<'_>) -> PyResult<Vec<(String, &'static str)>> {
        guarded(py, || Ok(self.inner.lock().schedule()))
    }

    fn num_forward_steps(&self) -> usize {
        self.inner.lock().num_forward_steps()
    }

    /// Central differences of `sum(outputs[0])` w.r.t. the arguments at `targets` (flat
    /// float64 arrays), computed natively in parallel on private copies of the arrays.
    fn numeric_grad<'py>(
        &self,
        py: Python<'py>,
        targets: Vec<usize>,
        eps: f64,
        is_train: bool,
    ) -> PyResult<Vec<Bound<'py, numpy::PyArray1<f64>>>> {
        let exe = &self.inner;
        let res = enter(py, true, || exe.lock().numeric_grad(&targets, eps, is_train))?;
        Ok(res.into_iter().map(|v| numpy::IntoPyArray::into_pyarray(v, py)).collect())
    }

    /// `(planned bytes, unplanned bytes)` of the intermediate buffers.
    fn memory(&self) -> (usize, usize) {
        let exe = self.inner.lock();
        (exe.planned_bytes, exe.naive_bytes)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySymbol>()?;
    m.add_class::<PyExecutor>()?;
    m.add_function(wrap_pyfunction!(_sym_var, m)?)?;
    m.add_function(wrap_pyfunction!(_sym_create, m)?)?;
    m.add_function(wrap_pyfunction!(_sym_group, m)?)?;
    m.add_function(wrap_pyfunction!(_sym_cut_subgraph, m)?)?;
    m.add_function(wrap_pyfunction!(_sym_control_flow, m)?)?;
    m.add_function(wrap_pyfunction!(_sym_load_json, m)?)?;
    Ok(())
}
