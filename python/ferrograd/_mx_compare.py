"""MXNet 1.x ``test_utils`` helpers: contexts, tolerances, random data and array comparisons.

This module holds the implementation; the public names are re-exported by
:mod:`ferrograd.test_utils`, which is the MXNet-compatible namespace (``mx.test_utils``).

Comparison helpers accept NumPy arrays, ferrograd arrays (``mx.nd.NDArray`` and
``mx.np.ndarray``, read with ``asnumpy``), Python scalars and nested lists. Differences from MXNet,
all deliberate:

* a failed :func:`assert_almost_equal` leaves NumPy's global print options untouched (MXNet calls
  ``np.set_printoptions(threshold=4, suppress=True)`` for good);
* the worst-violation search works on the broadcast operands, so it also reports arrays of
  different (broadcastable) shapes, and NaN mismatches are reported as an infinite error;
* :func:`same_array` restores the first array bit for bit after probing it;
* :func:`rand_shape_nd` returns Python ints, and input errors raise ``ValueError``/``TypeError``
  with a message instead of a bare ``AssertionError``.
"""

import contextlib
import functools
import numbers
import os

import numpy as np
import numpy.testing as npt

from . import autograd
from . import ndarray as nd
from ._ferrograd import NDArray
from .context import Context, _check_context, _check_context_type, current_context

__all__ = [
    "default_context", "set_default_context", "default_dtype", "default_rtols", "default_atols",
    "default_numeric_eps", "effective_dtype", "get_tolerance", "get_tols", "get_rtol", "get_atol",
    "get_etol", "random_arrays", "random_uniform_arrays", "rand_ndarray", "rand_shape_2d",
    "rand_shape_3d", "rand_shape_nd", "same", "almost_equal", "almost_equal_ignore_nan",
    "find_max_violation", "assert_almost_equal", "assert_allclose",
    "assert_almost_equal_with_err", "assert_almost_equal_ignore_nan", "assert_exception",
    "retry", "same_array", "collapse_sum_like", "environment",
]

# ----------------------------------------------------------------------------------------------
# contexts and dtypes


def default_context():
    """The context tests run on: the current context (``cpu(0)`` unless changed)."""
    return current_context()


def set_default_context(ctx):
    """Makes ``ctx`` the default context of this thread (``mx.current_context()`` follows)."""
    Context._default_ctx.value = _check_context_type(ctx)


def default_dtype():
    """The dtype of generated test data: ``numpy.float32``."""
    return np.float32


_INT_KINDS = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")


def _table(f16, f32, f64):
    table = {np.dtype(np.float16): f16, np.dtype(np.float32): f32, np.dtype(np.float64): f64}
    table.update({np.dtype(k): 0 for k in _INT_KINDS})
    return table


def default_rtols():
    """Relative tolerance per dtype: f16 1e-2, f32 1e-4, f64 1e-5, integers and bool 0."""
    return _table(1e-2, 1e-4, 1e-5)


def default_atols():
    """Absolute tolerance per dtype: f16 1e-1, f32 1e-3, f64 1e-20, integers and bool 0."""
    return _table(1e-1, 1e-3, 1e-20)


def default_numeric_eps():
    """Finite-difference step per float dtype (powers of two): 2^-6, 2^-9 and 2^-14."""
    return {np.dtype(np.float16): 1.0 / 2**6, np.dtype(np.float32): 1.0 / 2**9,
            np.dtype(np.float64): 1.0 / 2**14}


def effective_dtype(dat):
    """The dtype used to pick tolerances for ``dat`` (its own dtype: there is no TF32 on CPU)."""
    return np.dtype(dat.dtype)


def get_tolerance(dat, tol, default_tol):
    """The tolerance for comparing ``dat``.

    A number ``tol`` is returned unchanged. Otherwise ``tol`` (None or a dict keyed by
    ``numpy.dtype``) is looked up with ``dat``'s dtype, falling back to ``default_tol``.
    """
    if isinstance(tol, numbers.Number):
        return tol
    dtype = effective_dtype(dat)
    tol = {} if tol is None else tol
    if dtype in tol:
        return tol[dtype]
    if dtype not in default_tol:
        raise KeyError(f"no default tolerance for dtype {dtype.name}")
    return default_tol[dtype]


def _with_dtype(x):
    """``x`` itself when it has a dtype, else a NumPy array of it (a Python float becomes f64)."""
    return x if hasattr(x, "dtype") else np.asarray(x)


def get_tols(x, y, rtol, atol):
    """``(rtol, atol)`` for comparing ``x`` with ``y``: the looser default of the two dtypes.

    Explicit numbers win; dicts are looked up per dtype as in :func:`get_tolerance`.
    """
    x, y = _with_dtype(x), _with_dtype(y)
    rtol = max(get_tolerance(x, rtol, default_rtols()), get_tolerance(y, rtol, default_rtols()))
    atol = max(get_tolerance(x, atol, default_atols()), get_tolerance(y, atol, default_atols()))
    return rtol, atol


def get_rtol(rtol=None, dtype=np.dtype(np.float64)):  # noqa: B008 - MXNet's default argument
    """``rtol``, or the default relative tolerance of ``dtype`` (float64: 1e-5) when None."""
    return default_rtols()[np.dtype(dtype)] if rtol is None else rtol


def get_atol(atol=None, dtype=np.dtype(np.float64)):  # noqa: B008
    """``atol``, or the default absolute tolerance of ``dtype`` (float64: 1e-20) when None."""
    return default_atols()[np.dtype(dtype)] if atol is None else atol


def get_etol(etol=None):
    """``etol``, or 0 (no mismatching element allowed) when None."""
    return 0 if etol is None else etol


# ----------------------------------------------------------------------------------------------
# random data


def _shape_tuple(s):
    return (int(s),) if isinstance(s, (int, np.integer)) else tuple(s)


def random_arrays(*shapes):
    """Standard-normal float32 NumPy arrays, one per shape.

    A single shape gives one array (not a list); ``()`` gives a 0-d array.
    """
    arrays = [np.random.randn(*_shape_tuple(s)).astype(default_dtype()) if _shape_tuple(s)
              else np.array(np.random.randn(), dtype=default_dtype()) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def random_uniform_arrays(*shapes, low=0.0, high=1.0, dtype=np.float32):
    """Uniform NumPy arrays in ``[low, high)``, one per shape, always as a list."""
    return [np.random.uniform(low, high, size=s).astype(dtype) for s in shapes]


def rand_ndarray(shape, stype="default", density=None, dtype=None, modifier_func=None,
                 shuffle_csr_indices=False, distribution=None, ctx=None):
    """A random ``mx.nd`` array: standard-normal values when dense (float32 unless ``dtype`` is
    given); for 'csr'/'row_sparse' see :func:`rand_sparse_ndarray`."""
    if ctx is not None:
        _check_context(ctx)
    if stype != "default":
        from ._mx_misc import rand_sparse_ndarray
        return rand_sparse_ndarray(shape, stype, density=density, dtype=dtype,
                                   modifier_func=modifier_func, distribution=distribution,
                                   shuffle_csr_indices=shuffle_csr_indices, ctx=ctx)[0]
    return nd.array(random_arrays(_shape_tuple(shape)), dtype=dtype)


def _rand_dim(d, allow_zero_size):
    return np.random.randint(0 if allow_zero_size else 1, d + 1)


def rand_shape_2d(dim0=10, dim1=10, allow_zero_size=False):
    """A random 2-D shape with each size in ``[1, dim]`` (``[0, dim]`` if zero is allowed)."""
    return _rand_dim(dim0, allow_zero_size), _rand_dim(dim1, allow_zero_size)


def rand_shape_3d(dim0=10, dim1=10, dim2=10, allow_zero_size=False):
    """A random 3-D shape, sizes drawn as in :func:`rand_shape_2d`."""
    return (_rand_dim(dim0, allow_zero_size), _rand_dim(dim1, allow_zero_size),
            _rand_dim(dim2, allow_zero_size))


def rand_shape_nd(num_dim, dim=10, allow_zero_size=False):
    """A random shape of ``num_dim`` sizes in ``[1, dim]`` (``[0, dim]`` if zero is allowed)."""
    low = 0 if allow_zero_size else 1
    return tuple(int(d) for d in np.random.randint(low, dim + 1, size=num_dim))


# ----------------------------------------------------------------------------------------------
# comparisons


def _to_np(x):
    """A NumPy array for any accepted input (ferrograd arrays are copied out)."""
    if isinstance(x, NDArray):
        return x.asnumpy()
    return np.asarray(x)


def _shown(x, arr):
    """What a failure report prints for an input: scalars as Python numbers (``1.0``)."""
    if isinstance(x, np.generic):
        return x.item()
    return x if isinstance(x, numbers.Number) else arr


def same(a, b):
    """Whether ``a`` and ``b`` have the same shape and exactly equal elements."""
    return bool(np.array_equal(_to_np(a), _to_np(b)))


def _check_shapes(a, b):
    if a.shape != b.shape:
        raise AssertionError(npt.build_err_msg(
            [a, b], err_msg=f"a.shape = {a.shape} and b.shape = {b.shape} are not equal"))


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False, use_broadcast=True):
    """Whether ``|a - b| <= atol + rtol * |b|`` everywhere (``numpy.allclose``).

    None tolerances mean the float64 defaults (1e-5, 1e-20) whatever the dtypes, unlike
    :func:`assert_almost_equal`. ``use_broadcast=False`` requires equal shapes.
    """
    a, b = _to_np(a), _to_np(b)
    if not use_broadcast:
        _check_shapes(a, b)
    return bool(np.allclose(a, b, rtol=get_rtol(rtol), atol=get_atol(atol),
                            equal_nan=equal_nan))


def _nan_free_copies(a, b):
    a, b = np.broadcast_arrays(_to_np(a), _to_np(b))
    a, b = a.copy(), b.copy()
    mask = np.zeros(a.shape, dtype=bool)
    for x in (a, b):
        if x.dtype.kind in "fc":
            mask |= np.isnan(x)
    a[mask] = 0
    b[mask] = 0
    return a, b


def almost_equal_ignore_nan(a, b, rtol=None, atol=None):
    """:func:`almost_equal` after zeroing the positions that are NaN in either input."""
    return almost_equal(*_nan_free_copies(a, b), rtol, atol)


def _violations(a, b, rtol, atol, equal_nan=False):
    """Per element, ``|a-b| / (atol + rtol*|b|)`` (0 where equal) and the ``isclose`` mask.

    NaN ratios become 0 where the elements count as close and ``inf`` where they do not.
    """
    # computed in the operands' float type, as NumPy would for float inputs (f32 stays f32)
    ftype = np.dtype(np.result_type(a, b) if a.dtype.kind == b.dtype.kind == "f" else np.float64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        af, bf = a.astype(ftype), b.astype(ftype)
        diff = np.where(af == bf, 0.0, np.abs(af - bf))
        ratio = diff / (ftype.type(atol) + ftype.type(rtol) * np.abs(bf) + ftype.type(1e-20))
    close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    ratio = np.where(np.isnan(ratio), np.where(close, 0.0, np.inf), ratio)
    return ratio, close


def find_max_violation(a, b, rtol=None, atol=None):
    """``(index, ratio)`` of the element that exceeds its tolerance the most."""
    a, b = np.broadcast_arrays(_to_np(a), _to_np(b))
    ratio, _ = _violations(a, b, get_rtol(rtol), get_atol(atol))
    idx = np.unravel_index(int(np.argmax(ratio)), ratio.shape) if ratio.ndim else ()
    return tuple(int(i) for i in idx), float(np.max(ratio))


def _location(a, b, index, names, worst=False):
    kind = "maximum error" if worst else "error"
    return (f"Location of {kind}: {index}, {names[0]}={float(a[index]):.8f}, "
            f"{names[1]}={float(b[index]):.8f}")


def _fail(a, b, shown, rtol, atol, names, equal_nan, mismatches):
    """Prints the worst violations and raises the ``AssertionError`` report."""
    a, b = np.broadcast_arrays(a, b)
    ratio, close = _violations(a, b, rtol, atol, equal_nan)
    if a.ndim == 0:
        err = (f"Error {float(ratio):f} exceeds tolerance rtol={rtol:e}, atol={atol:e}.")
    else:
        bad = np.flatnonzero(~close.ravel())
        if bad.size == 0:  # a failure that isclose cannot locate: report the largest ratio
            bad = np.array([int(np.argmax(ratio))])
        bad = bad[np.argsort(-ratio.ravel()[bad], kind="stable")]
        show, limit = mismatches
        truncated = 0 < limit < bad.size
        found = bad[:limit] if truncated else bad
        print(f"\n*** Maximum errors for vector of size {a.size}:  rtol={rtol}, atol={atol}\n")
        spots = [tuple(int(i) for i in np.unravel_index(int(k), a.shape)) for k in found]
        for n, spot in enumerate(spots[:max(show, 0)], 1):
            print(f"{n:3d}: Error {ratio[spot]:f}  {_location(a, b, spot, names)}")
        count = limit + 1 if truncated else bad.size
        degree = "at least " if truncated else ""
        err = (f"Error {ratio[spots[0]]:f} exceeds tolerance rtol={rtol:e}, atol={atol:e} "
               f"(mismatch {degree}{100 * count / a.size:f}%).\n"
               f"{_location(a, b, spots[0], names, worst=True)}")
    with np.printoptions(threshold=4, suppress=True):
        msg = npt.build_err_msg(list(shown), err_msg=err)
    raise AssertionError(msg)


def assert_almost_equal(a, b, rtol=None, atol=None, names=("a", "b"), equal_nan=False,
                        use_broadcast=True, mismatches=(10, 10)):
    """Asserts ``|a - b| <= atol + rtol * |b|`` elementwise (broadcasting by default).

    None tolerances come from :func:`get_tols` (the looser default of the two dtypes). Two bool
    arrays must be exactly equal. On failure the worst violations (up to ``mismatches[0]``,
    searching at most ``mismatches[1]``; 0 means no limit) are printed to stdout and the
    ``AssertionError`` gives the largest error ``|a-b| / (atol + rtol*|b|)``, the mismatch
    percentage, its location and both inputs.
    """
    rtol, atol = get_tols(a, b, rtol, atol)
    an, bn = _to_np(a), _to_np(b)
    if not use_broadcast:
        _check_shapes(an, bn)
    if an.dtype == np.bool_ and bn.dtype == np.bool_:
        npt.assert_equal(an, bn)
        return
    if np.allclose(an, bn, rtol=rtol, atol=atol, equal_nan=equal_nan):
        return
    _fail(an, bn, (_shown(a, an), _shown(b, bn)), rtol, atol, names, equal_nan, mismatches)


def assert_allclose(a, b, rtol=1e-07, atol=0, equal_nan=True):
    """MXNet's ``assert_allclose``: :func:`assert_almost_equal` with these tolerances.

    NaN equals NaN by default. (Chainer's checker with ``atol=1e-5, rtol=1e-4`` is
    :func:`ferrograd.gradient_check.assert_allclose`.)
    """
    assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_almost_equal_with_err(a, b, rtol=None, atol=None, etol=None, names=("a", "b"),
                                 equal_nan=False, mismatches=(10, 10)):
    """Like :func:`assert_almost_equal`, but passes while at most a fraction ``etol`` of the
    elements is out of tolerance (``etol`` None or 0: no element may be)."""
    etol = get_etol(etol)
    if etol <= 0:
        assert_almost_equal(a, b, rtol=rtol, atol=atol, names=names, equal_nan=equal_nan,
                            mismatches=mismatches)
        return
    rtol, atol = get_tols(a, b, rtol, atol)
    an, bn = _to_np(a), _to_np(b)
    close = np.isclose(an, bn, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if close.size and 1 - np.count_nonzero(close) / close.size > etol:
        _fail(an, bn, (_shown(a, an), _shown(b, bn)), rtol, atol, names, equal_nan, mismatches)


def assert_almost_equal_ignore_nan(a, b, rtol=None, atol=None, names=("a", "b")):
    """:func:`assert_almost_equal` after zeroing the positions that are NaN in either input."""
    assert_almost_equal(*_nan_free_copies(a, b), rtol, atol, names)


def assert_exception(f, exception_type, *args, **kwargs):
    """Asserts that ``f(*args, **kwargs)`` raises ``exception_type`` (other errors propagate)."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    name = getattr(exception_type, "__name__", str(exception_type))
    raise AssertionError(f"{getattr(f, '__name__', f)!s} did not raise {name}")


def retry(n):
    """Decorator: runs a flaky test up to ``n`` times, failing only if every run raises
    ``AssertionError`` (the last one is re-raised)."""
    if not isinstance(n, (int, np.integer)) or n <= 0:
        raise ValueError(f"retry: n must be a positive integer, got {n!r}")

    def decorate(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            for attempt in range(n):
                try:
                    return f(*args, **kwargs)
                except AssertionError:
                    if attempt == n - 1:
                        raise
        return wrapper
    return decorate


def _write(arr, values):
    if arr.ndim == 0:
        arr[()] = values.item()
    else:
        arr[:] = values


def same_array(array1, array2):
    """Whether two NDArrays share the same memory block.

    ``array1`` is overwritten with different values while ``array2`` is watched, then restored
    exactly (the probe is not recorded by autograd).
    """
    before1, before2 = array1.asnumpy(), array2.asnumpy()
    if not np.array_equal(before1, before2, equal_nan=before1.dtype.kind in "fc"):
        return False
    probe = (~before1 if before1.dtype == np.bool_
             else np.where(before1 == 1, 2, 1).astype(before1.dtype))
    with autograd.pause():
        _write(array1, probe)
        try:
            return bool(np.array_equal(array2.asnumpy(), probe))
        finally:
            _write(array1, before1)


def collapse_sum_like(a, shape):
    """Sums ``a`` over the axes that broadcasting added or stretched to reach it from ``shape``.

    ``shape`` must broadcast to ``a.shape``; the result has exactly ``shape``.
    """
    a = _to_np(a)
    shape = tuple(shape)
    ndiff = a.ndim - len(shape)
    if ndiff < 0 or any(s not in (1, d) for s, d in zip(shape, a.shape[ndiff:], strict=True)):
        raise ValueError(f"collapse_sum_like: shape {shape} does not broadcast to {a.shape}")
    if a.size == 0 or int(np.prod(shape)) == 0:
        return np.zeros(shape, dtype=a.dtype)
    axes = tuple(range(ndiff)) + tuple(
        ndiff + i for i, s in enumerate(shape) if s != a.shape[ndiff + i])
    return np.sum(a, axis=axes).reshape(shape)


def _set_env(values):
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@contextlib.contextmanager
def environment(*args):
    """Context manager setting environment variables, restored on exit (even after an error).

    Call it as ``environment(name, value)`` or ``environment({name: value, ...})``; a value of
    None unsets the variable.
    """
    if len(args) == 1 and isinstance(args[0], dict):
        values = dict(args[0])
    elif len(args) == 2:
        values = {args[0]: args[1]}
    else:
        raise TypeError("environment: expected one dict argument or two arguments (name, value), "
                        f"got {len(args)} argument(s)")
    saved = {name: os.environ.get(name) for name in values}
    _set_env(values)
    try:
        yield
    finally:
        _set_env(saved)
