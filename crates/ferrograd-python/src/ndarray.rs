//! The native `NDArray` class: properties, arithmetic dunders (in Rust: the per-op path never
//! runs Python), conversions and layout methods. Indexing lives in `indexing.rs`, zero-copy
//! interop in `interop.rs`, the locking that makes one array safe to share between threads in
//! `ndarray_sync.rs`.

use crate::errors::IntoPyResult;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};

use ferrograd::autograd::{self, Entry, Tracked};
use ferrograd::ops::binary::{Binary, BinaryKind, Scalar};
use ferrograd::ops::matmul::Dot;
use ferrograd::ops::unary::{Unary, UnaryKind};
use ferrograd::ops::{Op, OpRef};
use ferrograd::{DType, Error, NDArray};
use parking_lot::{Mutex, RwLock};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyTuple, PyType};
use pyo3::IntoPyObjectExt;

use crate::convert;
use crate::errors::{enter, enter_with_gil, is_heavy};
use crate::ndarray_sync::update_storage;
use crate::sparse::SparseParts;

/// An n-dimensional array (MXNet `mx.nd.NDArray`).
///
/// Frozen, so several Python threads can use one array without PyO3's borrow flag (which made
/// concurrent use panic): the handle sits behind a lock held only to clone or replace it, never
/// while running Python code or with the GIL released. Storage writes are serialised by the
/// update locks of `ndarray_sync.rs`.
#[pyclass(name = "NDArray", module = "ferrograd.ndarray", weakref, subclass, frozen)]
pub struct PyNDArray {
    /// The array with its place in the autograd graph: what op calls take.
    handle: RwLock<Tracked>,
    /// The Context the array was created with, when one was given (e.g. `cpu_shared(0)`);
    /// `None` means `cpu(0)`. All memory is CPU memory either way.
    context: Mutex<Option<Py<PyAny>>>,
    /// A sparse array's components while its dense values have not been needed: the handle
    /// then holds an empty placeholder (keeping the autograd entry), and the first native use
    /// of the handle builds the dense values from these (`crate::sparse`).
    pending: Mutex<Option<Arc<SparseParts>>>,
    /// `pending.is_some()`, read without the lock: dense arrays pay one atomic load.
    is_pending: AtomicBool,
}

impl PyNDArray {
    /// Wraps an array: a plain [`NDArray`] (untracked) or a [`Tracked`] op result.
    pub fn new(inner: impl Into<Tracked>) -> Self {
        PyNDArray {
            handle: RwLock::new(inner.into()),
            context: Mutex::new(None),
            pending: Mutex::new(None),
            is_pending: AtomicBool::new(false),
        }
    }

    /// The Context given to the array, if any (`None`: it reports `cpu(0)`).
    pub fn given_context(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.context.lock().as_ref().map(|c| c.clone_ref(py))
    }

    /// The array reporting `ctx` as its Context (an op result on its inputs' context).
    pub fn with_context(mut self, ctx: Option<Py<PyAny>>) -> Self {
        *self.context.get_mut() = ctx;
        self
    }

    /// Makes sure the handle holds the dense values (a sparse array built from components gets
    /// them now, once); an error (storage the allocator refuses) leaves the components in place.
    pub fn materialize(&self) -> ferrograd::Result<()> {
        if !self.is_pending.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut pending = self.pending.lock();
        let Some(parts) = pending.clone() else { return Ok(()) };
        let dense = parts.to_dense()?;
        let old = {
            let mut h = self.handle.write();
            let entry = h.set_entry(None);
            std::mem::replace(&mut *h, Tracked::with_entry(dense, entry))
        };
        *pending = None;
        self.is_pending.store(false, Ordering::Release);
        drop(pending);
        drop(old);
        Ok(())
    }

    /// Replaces the sparse components the dense values are built from (they are built again
    /// on the next native use); the autograd entry and context stay.
    pub fn set_pending(&self, parts: SparseParts) {
        let mut pending = self.pending.lock();
        let placeholder = NDArray::zeros(&[0], parts.dtype());
        let old = {
            let mut h = self.handle.write();
            let entry = h.set_entry(None);
            std::mem::replace(&mut *h, Tracked::with_entry(placeholder, entry))
        };
        *pending = Some(Arc::new(parts));
        self.is_pending.store(true, Ordering::Release);
        drop(pending);
        drop(old);
    }

    /// Whether the dense values are still to be built from sparse components.
    pub fn is_pending(&self) -> bool {
        self.is_pending.load(Ordering::Acquire)
    }

    /// The array as an op input: a sparse array not yet dense gives a temporary dense copy of
    /// its values (MXNet's storage fallback) and stays sparse; others give [`Self::tracked`].
    pub fn input(&self) -> ferrograd::Result<Tracked> {
        if self.is_pending.load(Ordering::Acquire) {
            let parts = self.pending.lock().clone();
            if let Some(parts) = parts {
                // No entry to carry: a pending array is marked (`attach_grad`) only after
                // `set_entry` made it dense.
                return Ok(Tracked::new(parts.to_dense()?));
            }
        }
        self.tracked()
    }

    /// The array with its autograd entry, as op calls take it (a handle: cloning it copies
    /// reference counts, not data). A sparse array still held as components gets its dense
    /// values first: an error (never a panic) when they cannot be allocated.
    pub fn tracked(&self) -> ferrograd::Result<Tracked> {
        self.materialize()?;
        Ok(self.handle.read().clone())
    }

    /// The array's autograd entry. A sparse array still held as components keeps its entry on
    /// the placeholder, so this needs no dense values.
    pub fn entry(&self) -> Option<Entry> {
        self.handle.read().entry().cloned()
    }

    /// The storage handle alone (for the executor, I/O, kernels: everything but the tape).
    pub fn array(&self) -> ferrograd::Result<NDArray> {
        self.materialize()?;
        Ok(self.handle.read().array().clone())
    }

    /// Reads the handle in place (shape, dtype, entry, ...); `f` must not call Python.
    pub fn with<R>(&self, f: impl FnOnce(&Tracked) -> R) -> ferrograd::Result<R> {
        self.materialize()?;
        Ok(f(&self.handle.read()))
    }

    /// Rebinds this Python object to another array (its entry included); a sparse array's
    /// components are dropped (the new array is its value).
    pub fn set_array(&self, x: impl Into<Tracked>) {
        let parts = self.pending.lock().take();
        self.is_pending.store(false, Ordering::Release);
        let old = std::mem::replace(&mut *self.handle.write(), x.into());
        drop((old, parts)); // after the lock: dropping history may release Python objects
    }

    /// Sets the array's autograd entry (a marked variable, or none) and returns the old one,
    /// for the caller to drop outside the lock (it may hold the last reference to a history).
    pub fn set_entry(&self, e: Option<Entry>) -> ferrograd::Result<Option<Entry>> {
        self.materialize()?;
        Ok(self.handle.write().set_entry(e))
    }

    pub fn wrap(py: Python<'_>, inner: impl Into<Tracked>) -> PyResult<Py<PyNDArray>> {
        Py::new(py, PyNDArray::new(inner))
    }

    /// The value of a one-element array (checked by the caller).
    fn scalar_value(&self, py: Python<'_>) -> PyResult<f64> {
        let x = self.tracked().py_err(py)?;
        enter_with_gil(py, || x.to_f64_vec().first().copied().ok_or_else(|| Error::Value("the array is empty".into())))
    }
}

fn work_of(inputs: &[Tracked]) -> usize {
    inputs.iter().map(|x| x.size()).max().unwrap_or(0)
}

/// Runs one op built for this call through the autograd tape (recorded when recording and some
/// input is tracked); releases the GIL only for large inputs. The inputs are the caller's own
/// handles (moved in), so work done without the GIL never reads memory owned by a Python object.
pub fn run_op<O: Op + 'static, const N: usize>(py: Python<'_>, op: O, inputs: [Tracked; N]) -> PyResult<Tracked> {
    let heavy = is_heavy(work_of(&inputs));
    enter(py, heavy, move || Ok(autograd::invoke_owned(op, inputs)?.swap_remove(0)))
}

/// [`run_op`] for a shared op.
pub fn run_shared<const N: usize>(py: Python<'_>, op: &OpRef, inputs: [Tracked; N]) -> PyResult<Tracked> {
    let heavy = is_heavy(work_of(&inputs));
    enter(py, heavy, move || autograd::invoke1(op, inputs))
}

/// `ferrograd.context.cpu` and `ferrograd.context._check_context`, handed over once when
/// `ferrograd.context` is imported (`_init_context`), never imported per access.
static CONTEXT: PyOnceLock<(Py<PyAny>, Py<PyAny>)> = PyOnceLock::new();

fn context_hooks(py: Python<'_>) -> PyResult<&(Py<PyAny>, Py<PyAny>)> {
    CONTEXT.get_or_try_init(py, || {
        let m = py.import("ferrograd.context")?;
        Ok::<_, PyErr>((m.getattr("cpu")?.unbind(), m.getattr("_check_context")?.unbind()))
    })
}

/// Receives `cpu` and `_check_context` from `ferrograd.context` at its import.
#[pyfunction]
pub fn _init_context(py: Python<'_>, cpu: Py<PyAny>, check_context: Py<PyAny>) {
    let _ = CONTEXT.set(py, (cpu, check_context));
}

/// A new `Context` for the CPU (a fresh object each time: contexts are mutable context managers).
fn cpu_context(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    context_hooks(py)?.0.bind(py).call0()
}

/// Validates a context argument with `ferrograd.context._check_context`.
fn check_context(ctx: &Bound<'_, PyAny>) -> PyResult<()> {
    context_hooks(ctx.py())?.1.bind(ctx.py()).call1((ctx,)).map(drop)
}

/// The right-hand operand of an arithmetic dunder.
enum Operand {
    Array(Tracked),
    Scalar(f64),
}

fn operand(other: &Bound<'_, PyAny>) -> PyResult<Option<Operand>> {
    if let Ok(a) = other.cast::<PyNDArray>() {
        return Ok(Some(Operand::Array(a.get().input().map_err(|e| crate::errors::to_py(other.py(), e))?)));
    }
    if other.is_instance_of::<pyo3::types::PyFloat>() || other.is_instance_of::<pyo3::types::PyInt>() {
        return Ok(Some(Operand::Scalar(other.extract::<f64>()?)));
    }
    // NumPy scalars and 0-d/1-d NumPy arrays.
    let np = convert::numpy(other.py())?;
    if other.is_instance(&np.getattr("generic")?)? {
        return Ok(Some(Operand::Scalar(other.extract::<f64>()?)));
    }
    if other.is_instance(&np.getattr("ndarray")?)? {
        let dt = convert::dtype_of_numpy(other).unwrap_or(DType::F32);
        return Ok(Some(Operand::Array(Tracked::new(convert::array_from_py(other, Some(dt))?))));
    }
    Ok(None)
}

macro_rules! static_op {
    ($name:ident, $e:expr) => {
        static $name: LazyLock<Arc<dyn Op>> = LazyLock::new(|| Arc::new($e));
    };
}
static_op!(ADD, Binary { kind: BinaryKind::Add, broadcast: true });
static_op!(SUB, Binary { kind: BinaryKind::Sub, broadcast: true });
static_op!(MUL, Binary { kind: BinaryKind::Mul, broadcast: true });
static_op!(DIV, Binary { kind: BinaryKind::Div, broadcast: true });

fn binary_op(kind: BinaryKind) -> Arc<dyn Op> {
    match kind {
        BinaryKind::Add => ADD.clone(),
        BinaryKind::Sub => SUB.clone(),
        BinaryKind::Mul => MUL.clone(),
        BinaryKind::Div => DIV.clone(),
        k => Arc::new(Binary { kind: k, broadcast: true }),
    }
}

/// `a <kind> other` (or `other <kind> a` when `reverse`); `None` = NotImplemented.
fn arith(
    py: Python<'_>,
    a: Tracked,
    other: &Bound<'_, PyAny>,
    kind: BinaryKind,
    reverse: bool,
) -> PyResult<Option<Tracked>> {
    let Some(o) = operand(other)? else { return Ok(None) };
    compute(py, a, o, kind, reverse).map(Some)
}

/// `a <kind> o` (or `o <kind> a` when `reverse`).
fn compute(py: Python<'_>, a: Tracked, o: Operand, kind: BinaryKind, reverse: bool) -> PyResult<Tracked> {
    let r = match o {
        Operand::Array(b) => {
            let op = binary_op(kind);
            if reverse {
                run_shared(py, &op, [b, a])?
            } else {
                run_shared(py, &op, [a, b])?
            }
        }
        Operand::Scalar(s) => {
            // Reversed comparisons are plain comparisons with the roles swapped (2 > x is x < 2).
            let (kind, reverse) = match (kind, reverse) {
                (BinaryKind::Gt, true) => (BinaryKind::Lt, false),
                (BinaryKind::Lt, true) => (BinaryKind::Gt, false),
                (BinaryKind::Ge, true) => (BinaryKind::Le, false),
                (BinaryKind::Le, true) => (BinaryKind::Ge, false),
                (k @ (BinaryKind::Add | BinaryKind::Mul | BinaryKind::Eq | BinaryKind::Ne), _) => (k, false),
                kr => kr,
            };
            run_op(py, Scalar { kind, scalar: s, reverse }, [a])?
        }
    };
    Ok(r)
}

fn not_impl(py: Python<'_>) -> PyResult<Py<PyAny>> {
    Ok(py.NotImplemented())
}

fn wrap_any(py: Python<'_>, r: Option<Tracked>) -> PyResult<Py<PyAny>> {
    match r {
        Some(x) => Py::new(py, PyNDArray::new(x))?.into_py_any(py),
        None => not_impl(py),
    }
}

fn unary(py: Python<'_>, a: Tracked, kind: UnaryKind) -> PyResult<PyNDArray> {
    Ok(PyNDArray::new(run_op(py, Unary { kind }, [a])?))
}

/// In-place `self op= other`: computes the result, then writes it through self's layout, as one
/// step with respect to other threads updating the same array (`ndarray_sync`).
fn inplace(slf: &Bound<'_, PyNDArray>, other: &Bound<'_, PyAny>, kind: BinaryKind) -> PyResult<()> {
    let py = slf.py();
    // The operand is converted first: that may run Python code, which must not hold the lock.
    let Some(o) = operand(other)? else {
        return Err(PyTypeError::new_err(format!(
            "unsupported operand type for in-place operation: {}",
            other.get_type().name()?
        )));
    };
    update_storage(py, slf.get(), |target| {
        enter_with_gil(py, || ferrograd::autograd::check_inplace(target, None))?;
        let r = compute(py, target.clone(), o, kind, false)?;
        let dst = target.array_mut();
        enter(py, is_heavy(dst.size()), || dst.assign_from(&r))
    })
}

fn shape_tuple<'py>(py: Python<'py>, shape: &[usize]) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(py, shape)
}

/// Parses `reshape((2, 3))`, `reshape(2, 3)`, `reshape(shape=(2, 3))`.
fn shape_args(args: &Bound<'_, PyTuple>, kw: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<i64>> {
    if let Some(k) = kw {
        return k.extract();
    }
    if args.len() == 1 {
        let a = args.get_item(0)?;
        if let Ok(v) = a.extract::<Vec<i64>>() {
            return Ok(v);
        }
        return Ok(vec![a.extract::<i64>()?]);
    }
    args.extract()
}

/// MXNet's `flatten`/`squeeze`/`expand_dims` methods return a copy unless `inplace=True`.
fn copy_unless_inplace(py: Python<'_>, view: Tracked, inplace: bool) -> PyResult<PyNDArray> {
    if inplace {
        return Ok(PyNDArray::new(view));
    }
    Ok(PyNDArray::new(run_op(py, ferrograd::ops::convert::Identity, [view])?))
}

#[pymethods]
impl PyNDArray {
    /// An empty float32 array of shape (0,). Arrays are made with `nd.array`, `nd.zeros`, ...;
    /// this constructor exists so Python subclasses (`ferrograd.np.ndarray`) can be instantiated.
    #[new]
    #[pyo3(signature = (*args, **_kwargs))]
    fn py_new(args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, pyo3::types::PyDict>>) -> PyResult<Self> {
        // MXNet's constructor takes a native handle, never a shape: `NDArray((2, 3))` is a
        // mistake for `nd.empty((2, 3))`, not an empty array. (No arguments: unpickling.)
        if let Some(a) = args.iter().find(|a| !a.is_none()) {
            let msg = format!(
                "NDArray(): the constructor takes no shape or data (got {}); create arrays with \
                 nd.array, nd.zeros, nd.ones or nd.empty",
                a.repr()?
            );
            return Err(crate::errors::to_py(args.py(), Error::Type(msg)));
        }
        Ok(PyNDArray::new(NDArray::zeros(&[0], DType::F32)))
    }

    /// Allocates a zero gradient buffer and makes this array a fresh autograd leaf (any recorded
    /// history is cut). `grad_req` is 'write', 'add' or 'null'.
    #[pyo3(signature = (grad_req="write", stype=None))]
    fn attach_grad(slf: &Bound<'_, Self>, grad_req: &str, stype: Option<&str>) -> PyResult<()> {
        crate::autograd::methods::attach_grad(slf, grad_req, stype)
    }

    /// The gradient buffer of a marked array (`None` if not marked or `grad_req='null'`).
    #[getter]
    fn grad(&self, py: Python<'_>) -> PyResult<Option<PyNDArray>> {
        crate::autograd::methods::grad(py, self)
    }

    /// The same storage without autograd history: a constant in later recordings.
    fn detach(&self, py: Python<'_>) -> PyResult<PyNDArray> {
        enter_with_gil(py, || Ok::<_, Error>(PyNDArray::new(self.tracked()?.detach())))
    }

    /// Backpropagates from this array; `out_grad` defaults to ones (an implicit sum).
    #[pyo3(signature = (out_grad=None, retain_graph=false, train_mode=true))]
    fn backward(
        slf: &Bound<'_, Self>,
        out_grad: Option<PyRef<'_, PyNDArray>>,
        retain_graph: bool,
        train_mode: bool,
    ) -> PyResult<()> {
        crate::autograd::methods::backward(slf, out_grad, retain_graph, train_mode)
    }

    /// Whether a backward wrote the gradient since it was last reset (MXNet `_fresh_grad`).
    #[getter(_fresh_grad)]
    fn fresh_grad(&self) -> bool {
        crate::autograd::methods::fresh_grad(self)
    }

    #[setter(_fresh_grad)]
    fn set_fresh_grad(&self, on: bool) {
        crate::autograd::methods::set_fresh_grad(self, on)
    }

    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        shape_tuple(py, self.tracked().py_err(py)?.shape())
    }

    /// The element type as a NumPy type class (`numpy.float32`), as in MXNet.
    #[getter]
    fn dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        // `numpy.bool_` names the boolean scalar type in NumPy 1 and 2 (`numpy.bool` is
        // a deprecated alias of the builtin in NumPy 1).
        let name = match self.with(|x| x.dtype()).py_err(py)? {
            DType::Bool => "bool_",
            other => other.name(),
        };
        convert::numpy(py)?.getattr(name)
    }

    #[getter]
    fn size(&self, py: Python<'_>) -> PyResult<usize> {
        self.with(|x| x.size()).py_err(py)
    }

    #[getter]
    fn ndim(&self, py: Python<'_>) -> PyResult<usize> {
        self.with(|x| x.ndim()).py_err(py)
    }

    /// Storage type; ferrograd arrays are always dense.
    #[getter]
    fn stype(&self) -> &'static str {
        "default"
    }

    #[getter]
    fn context<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let given = self.context.lock().as_ref().map(|c| c.clone_ref(py));
        match given {
            Some(c) => Ok(c.into_bound(py)),
            None => cpu_context(py),
        }
    }

    /// Records the (validated) Context the array was created on; `context` returns it.
    fn _set_context(&self, ctx: &Bound<'_, PyAny>) -> PyResult<()> {
        check_context(ctx)?;
        let old = self.context.lock().replace(ctx.clone().unbind());
        drop(old); // outside the lock: releasing a Python object may run Python code
        Ok(())
    }

    #[getter]
    fn ctx<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.context(py)
    }

    /// Transpose with the axes reversed; the array itself when it has fewer than 2 axes (MXNet).
    #[getter(T)]
    fn t(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let x = slf.get().tracked().py_err(py)?;
        if x.ndim() < 2 {
            return Ok(slf.clone().into_any().unbind());
        }
        let op = ferrograd::ops::layout::Transpose { axes: Vec::new() };
        Py::new(py, PyNDArray::new(run_op(py, op, [x])?))?.into_py_any(py)
    }

    #[pyo3(signature = (*shape, reverse=false, **kwargs))]
    fn reshape(
        &self,
        py: Python<'_>,
        shape: &Bound<'_, PyTuple>,
        reverse: bool,
        kwargs: Option<&Bound<'_, pyo3::types::PyDict>>,
    ) -> PyResult<PyNDArray> {
        let kw = match kwargs {
            Some(d) => {
                let unknown: Vec<String> = d.keys().iter().map(|k| k.to_string()).filter(|k| k != "shape").collect();
                if !unknown.is_empty() {
                    return Err(PyTypeError::new_err(format!(
                        "Got unknown keywords in reshape: {}. Accepted keyword arguments are 'shape' and 'reverse'.",
                        unknown.join(", ")
                    )));
                }
                d.get_item("shape")?
            }
            None => None,
        };
        if shape.is_empty() && kw.is_none() {
            return Err(PyTypeError::new_err("reshape: the new shape must be provided"));
        }
        let spec = shape_args(shape, kw.as_ref())?;
        let op = ferrograd::ops::layout::Reshape { spec, reverse };
        Ok(PyNDArray::new(run_op(py, op, [self.tracked().py_err(py)?])?))
    }

    #[pyo3(signature = (*axes, **kwargs))]
    fn transpose(
        &self,
        py: Python<'_>,
        axes: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, pyo3::types::PyDict>>,
    ) -> PyResult<PyNDArray> {
        let kw = match kwargs {
            Some(d) => d.get_item("axes")?,
            None => None,
        };
        let axes = if axes.is_empty() && kw.is_none() { vec![] } else { shape_args(axes, kw.as_ref())? };
        let op = ferrograd::ops::layout::Transpose { axes: axes.into_iter().collect() };
        Ok(PyNDArray::new(run_op(py, op, [self.tracked().py_err(py)?])?))
    }

    /// A new axis of size 1 at `axis`: a copy, or with `inplace=True` a view sharing this
    /// array's memory (MXNet).
    #[pyo3(signature = (axis, inplace=false))]
    fn expand_dims(&self, py: Python<'_>, axis: i64, inplace: bool) -> PyResult<PyNDArray> {
        let x = self.tracked().py_err(py)?;
        let view = enter(py, false, || x.expand_dims(axis))?;
        copy_unless_inplace(py, view.into(), inplace)
    }

    /// Size-1 axes removed (all, or those in `axis`): a copy, or with `inplace=True` a view.
    #[pyo3(signature = (axis=None, inplace=false))]
    fn squeeze(&self, py: Python<'_>, axis: Option<&Bound<'_, PyAny>>, inplace: bool) -> PyResult<PyNDArray> {
        let axes: Option<Vec<i64>> = match axis {
            None => None,
            Some(a) => Some(a.extract::<Vec<i64>>().or_else(|_| a.extract::<i64>().map(|v| vec![v]))?),
        };
        let op = ferrograd::ops::layout::Squeeze { axis: axes };
        let view = run_op(py, op, [self.tracked().py_err(py)?])?;
        copy_unless_inplace(py, view, inplace)
    }

    /// Collapses all axes but the first (`(n, rest)`): a copy, or with `inplace=True` a view.
    #[pyo3(signature = (inplace=false))]
    fn flatten(&self, py: Python<'_>, inplace: bool) -> PyResult<PyNDArray> {
        let op = ferrograd::ops::layout::Reshape { spec: vec![0, -1], reverse: false };
        let x = self.tracked().py_err(py)?;
        let x = if x.ndim() == 0 { run_op(py, ferrograd::ops::layout::Reshape::to(&[1]), [x])? } else { x };
        let view = run_op(py, op, [x])?;
        copy_unless_inplace(py, view, inplace)
    }

    /// A copy converted to `dtype` (MXNet: always a copy unless `copy=False` and same dtype).
    #[pyo3(signature = (dtype, copy=true))]
    fn astype(slf: &Bound<'_, Self>, dtype: &Bound<'_, PyAny>, copy: bool) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let dt = convert::dtype_from_py(dtype)?;
        let x = slf.get().tracked().py_err(py)?;
        if !copy && dt == x.dtype() {
            return Ok(slf.clone().into_any().unbind());
        }
        let r = if dt == x.dtype() {
            run_op(py, ferrograd::ops::convert::Identity, [x])?
        } else {
            run_op(py, ferrograd::ops::convert::Cast { dtype: dt }, [x])?
        };
        Py::new(py, PyNDArray::new(r))?.into_py_any(py)
    }

    fn copy(&self, py: Python<'_>) -> PyResult<PyNDArray> {
        Ok(PyNDArray::new(run_op(py, ferrograd::ops::convert::Identity, [self.tracked().py_err(py)?])?))
    }

    /// Copies into `other` (an NDArray of the same shape) or to a context; returns the target.
    fn copyto(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        if let Ok(t) = other.cast::<PyNDArray>() {
            let src = self.tracked().py_err(py)?;
            update_storage(py, t.get(), |target| {
                if target.shape() != src.shape() {
                    return Err(crate::errors::to_py(
                        py,
                        Error::Shape(format!(
                            "copyto: source shape {} does not match target shape {}",
                            ferrograd::error::fmt_shape(src.shape()),
                            ferrograd::error::fmt_shape(target.shape())
                        )),
                    ));
                }
                enter_with_gil(py, || ferrograd::autograd::check_inplace(target, Some(&src)))?;
                let dst = target.array_mut();
                enter(py, is_heavy(src.size()), || dst.assign_from(&src))
            })?;
            return Ok(t.clone().into_any().unbind());
        }
        // A context: a new copy there (MXNet's copyto always copies).
        check_context(other)?;
        Py::new(py, PyNDArray::new(run_op(py, ferrograd::ops::convert::Identity, [self.tracked().py_err(py)?])?))?
            .into_py_any(py)
    }

    /// The array on `ctx`: itself, since every array lives on the CPU (MXNet returns `self` when
    /// the context already matches).
    fn as_in_context(slf: &Bound<'_, Self>, ctx: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        check_context(ctx)?;
        Ok(slf.clone().into_any().unbind())
    }

    /// A private, writable NumPy copy (MXNet semantics).
    fn asnumpy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::to_numpy_copy(py, &self.array().py_err(py)?)
    }

    /// The value of a one-element array as a NumPy scalar.
    fn asscalar<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if self.with(|x| x.size()).py_err(py)? != 1 {
            return Err(PyValueError::new_err("The current array is not a scalar"));
        }
        convert::to_numpy_copy(py, &self.array().py_err(py)?)?.call_method1("reshape", (-1,))?.get_item(0)
    }

    /// The value of a one-element array as a Python number.
    fn item<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if self.with(|x| x.size()).py_err(py)? != 1 {
            return Err(PyValueError::new_err("can only convert an array of size 1 to a Python scalar"));
        }
        convert::to_numpy_copy(py, &self.array().py_err(py)?)?.call_method0("item")
    }

    fn tolist<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::to_numpy_copy(py, &self.array().py_err(py)?)?.call_method0("tolist")
    }

    /// No-op: execution is synchronous.
    fn wait_to_read(&self) {}

    /// No-op: execution is synchronous.
    fn wait_to_write(&self) {}

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.with(|x| x.shape().first().copied())
            .py_err(py)?
            .ok_or_else(|| PyTypeError::new_err("len() of unsized object"))
    }

    fn __bool__(&self, py: Python<'_>) -> PyResult<bool> {
        match self.with(|x| x.size()).py_err(py)? {
            0 => Ok(false),
            1 => Ok(self.scalar_value(py)? != 0.0),
            _ => Err(PyValueError::new_err("The truth value of an NDArray with multiple elements is ambiguous.")),
        }
    }

    fn __float__(&self, py: Python<'_>) -> PyResult<f64> {
        if self.with(|x| x.size()).py_err(py)? != 1 {
            return Err(PyTypeError::new_err("only one-element arrays can be converted to Python scalars"));
        }
        self.scalar_value(py)
    }

    fn __int__(&self, py: Python<'_>) -> PyResult<i64> {
        Ok(self.__float__(py)? as i64)
    }

    fn __index__(&self, py: Python<'_>) -> PyResult<i64> {
        if self.with(|x| x.dtype()).py_err(py)?.is_float() {
            return Err(PyTypeError::new_err("only integer arrays with one element can be converted to an index"));
        }
        self.__int__(py)
    }

    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        slf.as_ptr() as isize
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let x = self.tracked().py_err(py)?;
        let np_str = convert::to_numpy_copy(py, &x)?.str()?.to_string();
        let shape = x.shape().iter().map(|d| d.to_string()).collect::<Vec<_>>().join("x");
        Ok(format!("\n{np_str}\n<NDArray {shape} @cpu(0)>"))
    }

    fn __str__(&self, py: Python<'_>) -> PyResult<String> {
        self.__repr__(py)
    }

    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<PyNDArray> {
        Ok(PyNDArray::new(crate::indexing::getitem(py, &self.tracked().py_err(py)?, key)?))
    }

    fn __setitem__(slf: &Bound<'_, Self>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        crate::indexing::setitem(slf, key, value)
    }

    fn __neg__(&self, py: Python<'_>) -> PyResult<PyNDArray> {
        unary(py, self.tracked().py_err(py)?, UnaryKind::Negative)
    }

    fn __pos__(&self, py: Python<'_>) -> PyResult<PyNDArray> {
        Ok(PyNDArray::new(self.tracked().py_err(py)?))
    }

    fn __abs__(&self, py: Python<'_>) -> PyResult<PyNDArray> {
        unary(py, self.tracked().py_err(py)?, UnaryKind::Abs)
    }

    fn __add__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        wrap_any(py, arith(py, self.tracked().py_err(py)?, o, BinaryKind::Add, false)?)
    }
    fn __radd__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        wrap_any(py, arith(py, self.tracked().py_err(py)?, o, BinaryKind::Add, true)?)
    }
    fn __sub__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        wrap_any(py, arith(py, self.tracked().py_err(py)?, o, BinaryKind::Sub, false)?)
    }
    fn __rsub__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        wrap_any(py, arith(py, self.tracked().py_err(py)?, o, BinaryKind::Sub, true)?)
    }
    fn __mul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        wrap_any(py, arith(py, self.tracked().py_err(py)?, o, BinaryKind::Mul, false)?)
    }
    fn __rmul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        wrap_any(py, arith(py, self.tracked().py_err(py)?, o, BinaryKind::Mul, true)?)
    }
    fn __truediv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        wrap_any(py, arith(py, self.tracked().py_err(py)?, o, BinaryKind::Div, false)?)
    }
    fn __rtruediv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        wrap_any(py, arith(py, self.tracked().py_err(py)?, o, BinaryKind::Div, true)?)
    }
    fn __floordiv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        wrap_any(py, arith(py, self.tracked().py_err(py)?, o, BinaryKind::FloorDiv, false)?)
    }
    fn __rfloordiv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        wrap_any(py, arith(py, self.tracked().py_err(py)?, o, BinaryKind::FloorDiv, true)?)
    }
    fn __mod__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        wrap_any(py, arith(py, self.tracked().py_err(py)?, o, BinaryKind::Mod, false)?)
    }
    fn __rmod__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        wrap_any(py, arith(py, self.tracked().py_err(py)?, o, BinaryKind::Mod, true)?)
    }
    fn __pow__(&self, py: Python<'_>, o: &Bound<'_, PyAny>, _modulo: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        wrap_any(py, arith(py, self.tracked().py_err(py)?, o, BinaryKind::Pow, false)?)
    }
    fn __rpow__(
        &self,
        py: Python<'_>,
        o: &Bound<'_, PyAny>,
        _modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        wrap_any(py, arith(py, self.tracked().py_err(py)?, o, BinaryKind::Pow, true)?)
    }
    fn __matmul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let Some(Operand::Array(b)) = operand(o)? else { return not_impl(py) };
        let op = Dot { transpose_a: false, transpose_b: false, batch: false };
        wrap_any(py, Some(run_op(py, op, [self.tracked().py_err(py)?, b])?))
    }
    fn __rmatmul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let Some(Operand::Array(a)) = operand(o)? else { return not_impl(py) };
        let op = Dot { transpose_a: false, transpose_b: false, batch: false };
        wrap_any(py, Some(run_op(py, op, [a, self.tracked().py_err(py)?])?))
    }

    fn __iadd__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, o, BinaryKind::Add)
    }
    fn __isub__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, o, BinaryKind::Sub)
    }
    fn __imul__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, o, BinaryKind::Mul)
    }
    fn __itruediv__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, o, BinaryKind::Div)
    }
    fn __ifloordiv__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, o, BinaryKind::FloorDiv)
    }
    fn __imod__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(slf, o, BinaryKind::Mod)
    }
    fn __ipow__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>, _modulo: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        inplace(slf, o, BinaryKind::Pow)
    }

    fn __richcmp__(&self, py: Python<'_>, o: &Bound<'_, PyAny>, op: pyo3::basic::CompareOp) -> PyResult<Py<PyAny>> {
        use pyo3::basic::CompareOp::*;
        let kind = match op {
            Lt => BinaryKind::Lt,
            Le => BinaryKind::Le,
            Eq => BinaryKind::Eq,
            Ne => BinaryKind::Ne,
            Gt => BinaryKind::Gt,
            Ge => BinaryKind::Ge,
        };
        wrap_any(py, arith(py, self.tracked().py_err(py)?, o, kind, false)?)
    }

    /// Pickling as MXNet: the class, no arguments, and the state below.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let state = crate::io::getstate(py, slf.get())?;
        (slf.get_type(), (), state).into_bound_py_any(py)
    }

    /// MXNet's state: `{'handle': bytearray}` holding the array as one NDArray-file record.
    fn __getstate__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        crate::io::getstate(py, self)
    }

    /// Restores a state from `__getstate__` (also MXNet's, of arrays on any device).
    fn __setstate__(slf: &Bound<'_, Self>, state: &Bound<'_, PyAny>) -> PyResult<()> {
        crate::io::setstate(slf, state)
    }

    // --- Zero-copy interop (all of it, and its `unsafe`, in interop.rs) ---

    /// A zero-copy, read-only NumPy view of a snapshot of the array: later in-place writes to
    /// the array copy first, so the view never changes. Use `asnumpy()` for a writable copy.
    fn to_numpy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::interop::to_numpy(py, &self.array().py_err(py)?)
    }

    /// NumPy protocol (`np.asarray(x)`): the read-only snapshot view; a copy for `copy=True` or
    /// another `dtype`.
    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::interop::array(py, &self.array().py_err(py)?, dtype, copy)
    }

    /// DLPack export: a capsule over a read-only snapshot (versioned when `max_version >= (1, 0)`).
    #[pyo3(signature = (stream=None, *, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<&Bound<'py, PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::interop::to_dlpack(py, &self.array().py_err(py)?, stream, max_version, dl_device, copy)
    }

    fn __dlpack_device__(&self) -> (i32, i32) {
        crate::interop::dlpack_device()
    }

    /// Buffer protocol (`memoryview(x)`): a read-only snapshot, strided like the array.
    #[cfg(any(not(Py_LIMITED_API), Py_3_11))]
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: std::ffi::c_int,
    ) -> PyResult<()> {
        // SAFETY: CPython's bf_getbuffer contract, forwarded (see interop::get_buffer).
        unsafe { crate::interop::get_buffer(&slf, view, flags) }
    }

    #[cfg(any(not(Py_LIMITED_API), Py_3_11))]
    unsafe fn __releasebuffer__(&self, view: *mut pyo3::ffi::Py_buffer) {
        // SAFETY: CPython's bf_releasebuffer contract, forwarded (see interop::release_buffer).
        unsafe { crate::interop::release_buffer(view) }
    }

    #[classattr]
    fn __array_priority__() -> f64 {
        1000.0
    }

    /// Class method hook so `type(x)` can be tested against `mx.nd.NDArray` in Python.
    #[classmethod]
    fn _native(_cls: &Bound<'_, PyType>) -> bool {
        true
    }
}
