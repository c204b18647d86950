"""The sparse array classes: ``CSRNDArray`` and ``RowSparseNDArray`` (MXNet's ``mx.nd.sparse``).

A sparse array is an :class:`NDArray` (as in MXNet, so ``isinstance(x, mx.nd.NDArray)`` holds)
that holds only its components, as dense NDArrays: ``data``, ``indices`` and ``indptr`` for csr;
``data`` and ``indices`` for row_sparse. Its memory and creation cost follow the stored values,
not the shape. The native object keeps the components too and builds the dense values only when
something native needs them: an operator without a sparse rule gets a temporary dense copy as
its input (MXNet's "storage fallback"), and a native method called on the array itself (or
``attach_grad``) makes the dense values part of the array from then on. The sparse rules
(``dot``, ``retain``, the elementwise ops that keep sparsity) read the components. Under
``autograd.record()`` those rules compute on the dense values, so the tape sees every result.
"""

import numpy as _np

from .. import _ferrograd
from .._ferrograd import NDArray
from ..base import DTypeError, MXNetError, ShapeError, ValueError_

STYPES = ("default", "row_sparse", "csr")
_INDEX_DTYPE = _np.int64


def _nd(values, dtype):
    return _ferrograd._array(_np.ascontiguousarray(values), _np.dtype(dtype).name)


def check_stype(stype, op):
    """``stype`` if it is a storage type MXNet knows; MXNetError naming ``op`` otherwise."""
    if stype not in STYPES:
        raise MXNetError(f"{op}: unknown storage type {stype!r}; valid values are 'csr', "
                         "'default' and 'row_sparse'")
    return stype


# ---------------------------------------------------------------------------------------------
# components <-> dense (NumPy; every check names the function and what is wrong)


def csr_components(dense):
    """``(data, indices, indptr)`` of a 2-D NumPy array (entries in row-major order)."""
    rows, cols = _np.nonzero(dense)
    counts = _np.bincount(rows, minlength=dense.shape[0])
    indptr = _np.concatenate([[0], _np.cumsum(counts)]).astype(_INDEX_DTYPE)
    return dense[rows, cols], cols.astype(_INDEX_DTYPE), indptr


def rsp_components(dense):
    """``(data, indices)`` of a NumPy array: its rows holding a nonzero, and their numbers."""
    flat = dense.reshape(dense.shape[0], -1) if dense.shape[0] else dense.reshape(0, 1)
    rows = _np.flatnonzero((flat != 0).any(axis=1)).astype(_INDEX_DTYPE)
    return dense[rows], rows


def _as_index(values, what, op):
    idx = _np.asarray(values.asnumpy() if isinstance(values, NDArray) else values)
    whole = _np.isfinite(idx) & (idx == _np.round(idx)) if idx.dtype.kind == "f" else True
    if not _np.all(whole):
        raise ValueError_(f"{op}: {what} must be integers, got {idx.tolist()}")
    return idx.astype(_INDEX_DTYPE).reshape(-1)


def check_csr(data, indices, indptr, shape, op):
    """Raises a clear error unless the csr components describe a valid ``shape`` array."""
    if len(shape) != 2:
        raise ShapeError(f"{op}: a csr array must be 2-D, got shape {tuple(shape)}")
    n_rows, n_cols = shape
    if data.ndim != 1 or data.shape[0] != indices.shape[0]:
        raise ShapeError(f"{op}: data (shape {data.shape}) and indices (shape {indices.shape}) "
                         "must be 1-D and of one length")
    if indptr.shape[0] != n_rows + 1:
        raise ShapeError(f"{op}: indptr must have {n_rows + 1} entries for {n_rows} rows, got "
                         f"{indptr.shape[0]}")
    if indptr[0] != 0 or indptr[-1] != data.shape[0] or (_np.diff(indptr) < 0).any():
        raise ValueError_(f"{op}: indptr {indptr.tolist()} must rise from 0 to the number of "
                          f"stored values ({data.shape[0]}) without decreasing")
    if indices.size and (indices.min() < 0 or indices.max() >= n_cols):
        raise ValueError_(f"{op}: column indices must lie in [0, {n_cols}), got "
                          f"{indices.min()}..{indices.max()}")
    if indices.size > 1:
        # Positions j where indices[j + 1] starts a new row are not compared.
        same_row = _np.ones(indices.size - 1, dtype=bool)
        starts = indptr[1:-1]
        starts = starts[(starts > 0) & (starts < indices.size)]
        same_row[starts - 1] = False
        bad = _np.flatnonzero(same_row & (_np.diff(indices) <= 0))
        if bad.size:
            r = int(_np.searchsorted(indptr, bad[0], side="right")) - 1
            row = indices[indptr[r]:indptr[r + 1]]
            raise ValueError_(f"{op}: column indices of row {r} must be sorted and unique, got "
                              f"{row.tolist()}")


def check_rsp(data, indices, shape, op):
    """Raises a clear error unless the row_sparse components describe a ``shape`` array."""
    if not shape:
        raise ShapeError(f"{op}: a row_sparse array needs at least one dimension")
    if data.shape[1:] != tuple(shape[1:]) or data.shape[0] != indices.shape[0]:
        raise ShapeError(f"{op}: data of shape {data.shape} does not hold {indices.shape[0]} "
                         f"rows of an array of shape {tuple(shape)}")
    if indices.size and (indices.min() < 0 or indices.max() >= shape[0]):
        raise ValueError_(f"{op}: row indices must lie in [0, {shape[0]}), got "
                          f"{indices.min()}..{indices.max()}")
    if (_np.diff(indices) <= 0).any():
        raise ValueError_(f"{op}: row indices must be sorted and unique, got {indices.tolist()}")


def csr_dense(data, indices, indptr, shape):
    dense = _np.zeros(shape, dtype=data.dtype)
    rows = _np.repeat(_np.arange(shape[0]), _np.diff(indptr))
    dense[rows, indices] = data
    return dense


def rsp_dense(data, indices, shape):
    dense = _np.zeros(shape, dtype=data.dtype)
    dense[indices] = data
    return dense


# ---------------------------------------------------------------------------------------------
# the classes


def _shape_str(shape):
    return "x".join(str(d) for d in shape)


class BaseSparseNDArray(NDArray):
    """What csr and row_sparse arrays share: components, storage conversions, copies."""

    _stype = None

    @classmethod
    def _lazy(cls, data, aux, shape):
        """An instance holding only the components ``data`` and ``aux`` (NDArrays, checked by
        the caller) of an array of ``shape``: no dense values are made."""
        obj = _ferrograd._sparse_new(cls, cls._stype, tuple(shape), data, list(aux))
        obj._sp_shape = tuple(int(d) for d in shape)
        obj._sp_data, obj._sp_aux = data, tuple(aux)
        return obj

    @classmethod
    def _wrap(cls, dense, data, aux):
        """An instance over the native array ``dense`` (same storage and autograd entry) with
        the components ``data`` and ``aux`` (NDArrays): for views and recorded results."""
        obj = _ferrograd._view_as(cls, dense)
        obj._sp_shape = tuple(dense.shape)
        obj._sp_data, obj._sp_aux = data, tuple(aux)
        return obj

    def _set_components(self, data, aux):
        self._sp_data = data
        self._sp_aux = tuple(aux)
        if self._pending:
            _ferrograd._sparse_reset(self, self._stype, self._sp_shape, data, list(aux))

    @property
    def _pending(self):
        """True while no dense values exist (only the components)."""
        return _ferrograd._sparse_pending(self)

    @property
    def stype(self):
        return self._stype

    @property
    def shape(self):
        return self._sp_shape

    @property
    def dtype(self):
        return self._sp_data.dtype

    @property
    def ndim(self):
        return len(self._sp_shape)

    @property
    def size(self):
        return int(_np.prod(self._sp_shape, dtype=_np.int64))

    def __len__(self):
        return self._sp_shape[0]

    @property
    def data(self):
        """The stored values (a dense NDArray)."""
        return self._sp_data

    @property
    def indices(self):
        """The column (csr) or row (row_sparse) numbers of the stored values (int64)."""
        return self._sp_aux[-1] if self._stype == "csr" else self._sp_aux[0]

    @property
    def _num_aux(self):
        return len(self._sp_aux)

    @property
    def _aux_types(self):
        return [a.dtype for a in self._sp_aux]

    def _aux_type(self, i):
        return self._sp_aux[i].dtype

    def _dense(self):
        """The values as a plain (dense) NDArray: a temporary copy while the array holds only
        components, else a view sharing its storage (and autograd entry)."""
        if self._pending:
            return _ferrograd._sparse_to_dense(self._stype, self._sp_shape, self._sp_data,
                                               list(self._sp_aux))
        return _ferrograd._view_as(NDArray, self)

    def asnumpy(self):
        if not self._pending:
            return NDArray.asnumpy(self)
        data, aux = self._sp_data.asnumpy(), [a.asnumpy() for a in self._sp_aux]
        if self._stype == "csr":
            return csr_dense(data, aux[1], aux[0], self._sp_shape)
        return rsp_dense(data, aux[0], self._sp_shape)

    def wait_to_read(self):
        self._sp_data.wait_to_read()

    def wait_to_write(self):
        self._sp_data.wait_to_read()

    def __repr__(self):
        return f"\n<{type(self).__name__} {_shape_str(self.shape)} @{self.context}>"

    __str__ = __repr__

    def __reduce__(self):
        return (_rebuild, (self._stype, self._sp_shape, self.data.asnumpy(),
                           [a.asnumpy() for a in self._sp_aux]))

    def __iter__(self):
        raise TypeError(f"{type(self).__name__} is not iterable")

    def tostype(self, stype):
        """A copy with storage ``stype``: 'default' gives a dense NDArray; csr and row_sparse
        convert only to and from dense, as in MXNet."""
        check_stype(stype, "tostype")
        if stype == "default":
            dense = self._dense()
            return dense if self._pending else dense.copy()
        if stype == self._stype:
            return self.copy()
        raise ValueError_(f"tostype: cast_storage from {self._stype} to {stype} is not "
                          "supported (convert to 'default' first)")

    def copy(self):
        if self._pending:
            return type(self)._lazy(self.data.copy(), [a.copy() for a in self._sp_aux],
                                    self._sp_shape)
        return type(self)._wrap(self._dense().copy(), self.data.copy(),
                                [a.copy() for a in self._sp_aux])

    def detach(self):
        if self._pending:
            return type(self)._lazy(self.data, self._sp_aux, self._sp_shape)
        return type(self)._wrap(self._dense().detach(), self.data, self._sp_aux)

    def astype(self, dtype, copy=True):
        if not copy and _np.dtype(dtype) == _np.dtype(self.dtype):
            return self
        if self._pending:
            return type(self)._lazy(self.data.astype(dtype), self._sp_aux, self._sp_shape)
        return type(self)._wrap(self._dense().astype(dtype), self.data.astype(dtype),
                                self._sp_aux)

    def as_in_context(self, context):
        return self if context == self.context else self.copyto(context)

    def copyto(self, other):
        """A copy on a context, or this array written into ``other`` (of this stype, or dense)."""
        if not isinstance(other, NDArray):
            res = self.copy()
            res._set_context(other)
            return res
        if other is self:
            return other
        if isinstance(other, BaseSparseNDArray):
            if other.stype != self._stype:
                raise DTypeError(f"copyto: cannot copy a {self._stype} array into a "
                                 f"{other.stype} array")
            other._assign(self)
            return other
        NDArray.__setitem__(other, slice(None), self._dense())
        return other

    def _assign(self, value):
        """Replaces the contents (``x[:] = value``): value of any storage, or array-like."""
        if not isinstance(value, NDArray):
            value = _ferrograd._array(_np.broadcast_to(_np.asarray(value, dtype=self.dtype),
                                                       self.shape), _np.dtype(self.dtype).name)
        if tuple(value.shape) != tuple(self.shape):
            raise ShapeError(f"{type(self).__name__}.__setitem__: value of shape {value.shape} "
                             f"does not match the array's shape {self.shape}")
        src = value if value.stype == self._stype else from_dense(value, self._stype)
        if not src._pending:
            # Dense values are the truth of an array that has them (native writes, such as an
            # optimizer's fused update, change them without touching the components).
            from .. import autograd
            with autograd.pause():
                src = from_dense(src._dense(), self._stype)
        data, aux = src.data.astype(self.dtype).copy(), [a.copy() for a in src._sp_aux]
        if not self._pending:
            from .. import autograd
            with autograd.pause():  # a storage write (e.g. a kvstore pull), never recorded
                NDArray.__setitem__(self, slice(None), src._dense().astype(self.dtype))
        self._set_components(data, aux)

    def __setitem__(self, key, value):
        if not (isinstance(key, slice) and key == slice(None)):
            raise ValueError_(f"{type(self).__name__}: only assignment to the whole array "
                              f"(x[:] = value) is supported, got key {key!r}")
        self._assign(value)

    def check_format(self, full_check=True):
        """Raises a clear error unless the components are valid (sorted, in-bounds indices)."""
        aux = [a.asnumpy() for a in self._sp_aux]
        if self._stype == "csr":
            check_csr(self.data.asnumpy(), aux[1], aux[0], self.shape, "check_format")
        else:
            check_rsp(self.data.asnumpy(), aux[0], self.shape, "check_format")

    # Elementwise rules that keep sparsity (see sparse_ops).
    def __add__(self, other):
        from . import sparse_ops
        return sparse_ops.binary("add", self, other)

    def __sub__(self, other):
        from . import sparse_ops
        return sparse_ops.binary("sub", self, other)

    def __mul__(self, other):
        from . import sparse_ops
        return sparse_ops.binary("mul", self, other)

    def __truediv__(self, other):
        from . import sparse_ops
        return sparse_ops.binary("div", self, other)

    def __rmul__(self, other):
        return self.__mul__(other)

    def __neg__(self):
        from . import sparse_ops
        return sparse_ops.unary("negative", self)

    def __iadd__(self, other):
        self._assign(self + other)
        return self

    def __isub__(self, other):
        self._assign(self - other)
        return self

    def __imul__(self, other):
        self._assign(self * other)
        return self

    def __itruediv__(self, other):
        self._assign(self / other)
        return self


class CSRNDArray(BaseSparseNDArray):
    """A 2-D compressed-sparse-row array: row ``i`` stores ``data[indptr[i]:indptr[i+1]]`` in
    columns ``indices[indptr[i]:indptr[i+1]]``."""

    _stype = "csr"

    @property
    def indptr(self):
        """Row pointers (int64, one more than the number of rows)."""
        return self._sp_aux[0]

    def asscipy(self):
        """The array as a ``scipy.sparse.csr_matrix`` (copies of the components)."""
        import scipy.sparse as sps
        return sps.csr_matrix((self.data.asnumpy(), self.indices.asnumpy(),
                               self.indptr.asnumpy()), shape=self.shape)

    def __getitem__(self, key):
        """Rows: an int gives a 1-row csr array, a step-1 slice a csr array of those rows."""
        if isinstance(key, tuple) and len(key) == 1:
            key = key[0]
        if isinstance(key, tuple):
            raise ValueError_("CSRNDArray: multi-dimension indexing is not supported; index "
                              "rows with an int or a slice")
        n = self.shape[0]
        if isinstance(key, (int, _np.integer)):
            if not -n <= key < n:
                raise IndexError(f"CSRNDArray: row {key} is out of bounds for {n} rows")
            key = slice(int(key) % n, int(key) % n + 1)
        if not isinstance(key, slice):
            raise ValueError_(f"CSRNDArray: index must be an int or a slice, got {key!r}")
        begin, end, step = key.indices(n)
        if step != 1:
            raise ValueError_("CSRNDArray only supports continuous slicing on axis 0")
        end = max(begin, end)
        indptr = self.indptr.asnumpy()
        lo, hi = int(indptr[begin]), int(indptr[end])
        return CSRNDArray._lazy(self.data[lo:hi].copy(),
                                [_nd(indptr[begin:end + 1] - lo, _INDEX_DTYPE),
                                 self.indices[lo:hi].copy()], (end - begin, self.shape[1]))


class RowSparseNDArray(BaseSparseNDArray):
    """An array storing only some rows (along axis 0): ``data[i]`` is row ``indices[i]``."""

    _stype = "row_sparse"

    def __getitem__(self, key):
        if isinstance(key, slice) and key == slice(None):
            return self
        raise ValueError_(f"RowSparseNDArray: only the whole-array index x[:] is supported, got "
                          f"{key!r} (use nd.sparse.retain to pick rows)")

    def retain(self, indices):
        from . import sparse_ops
        return sparse_ops.retain(self, indices)


_CLASSES = {"csr": CSRNDArray, "row_sparse": RowSparseNDArray}


def _rebuild(stype, shape, data, aux):
    cls = CSRNDArray if stype == "csr" else RowSparseNDArray
    return cls._lazy(_nd(data, data.dtype), [_nd(a, _INDEX_DTYPE) for a in aux], shape)


# ---------------------------------------------------------------------------------------------
# construction


def from_dense(x, stype, op="tostype"):
    """``x`` (an NDArray or NumPy array) as a ``stype`` array; its values are copied."""
    check_stype(stype, op)
    if isinstance(x, BaseSparseNDArray):
        return x.tostype(stype)
    if stype == "default":
        return x.copy() if isinstance(x, NDArray) else _nd(x, x.dtype)
    dense = x.asnumpy() if isinstance(x, NDArray) else _np.asarray(x)
    dtype = dense.dtype
    if stype == "csr" and dense.ndim != 2:
        raise ShapeError(f"{op}: a csr array must be 2-D, got shape {dense.shape}")
    if dense.ndim == 0:
        raise ShapeError(f"{op}: a row_sparse array needs at least one dimension")
    if stype == "csr":
        data, indices, indptr = csr_components(dense)
        aux = [_nd(indptr, _INDEX_DTYPE), _nd(indices, _INDEX_DTYPE)]
    else:
        data, indices = rsp_components(dense)
        aux = [_nd(indices, _INDEX_DTYPE)]
    from .. import autograd
    if isinstance(x, NDArray) and autograd.is_recording():
        # The copy is recorded: gradients flow from the sparse result back to x.
        return _CLASSES[stype]._wrap(x.copy(), _nd(data, dtype), aux)
    return _CLASSES[stype]._lazy(_nd(data, dtype), aux, dense.shape)


def _default_dtype(data, dtype):
    """MXNet's rule: the given dtype, else the dtype of an array source, else float32."""
    if dtype is not None:
        return _np.dtype(dtype)
    if isinstance(data, (NDArray, _np.ndarray)):
        return _np.dtype(data.dtype)
    return _np.dtype("float32")


def make_csr(data, indices, indptr, shape, dtype, op="csr_matrix"):
    """A csr array from NumPy-convertible components; checked first."""
    dtype = _default_dtype(data, dtype)
    data = _np.asarray(data.asnumpy() if isinstance(data, NDArray) else data)
    data = data.astype(dtype).reshape(-1)
    indices, indptr = _as_index(indices, "indices", op), _as_index(indptr, "indptr", op)
    if shape is None:
        shape = (indptr.shape[0] - 1, int(indices.max()) + 1 if indices.size else 0)
    shape = tuple(int(d) for d in shape)
    check_csr(data, indices, indptr, shape, op)
    return CSRNDArray._lazy(_nd(data, dtype), [_nd(indptr, _INDEX_DTYPE),
                                               _nd(indices, _INDEX_DTYPE)], shape)


def make_rsp(data, indices, shape, dtype, op="row_sparse_array"):
    """A row_sparse array from NumPy-convertible components; checked first."""
    dtype = _default_dtype(data, dtype)
    data = _np.asarray(data.asnumpy() if isinstance(data, NDArray) else data).astype(dtype)
    indices = _as_index(indices, "indices", op)
    if shape is None:
        shape = (int(indices.max()) + 1 if indices.size else 0, *data.shape[1:])
    shape = tuple(int(d) for d in shape)
    check_rsp(data, indices, shape, op)
    return RowSparseNDArray._lazy(_nd(data, dtype), [_nd(indices, _INDEX_DTYPE)], shape)


def zeros(stype, shape, dtype=None):
    """An all-zero ``stype`` array (no stored values)."""
    check_stype(stype, "zeros")
    dtype = _np.dtype(dtype if dtype is not None else "float32")
    shape = (shape,) if isinstance(shape, (int, _np.integer)) else tuple(int(d) for d in shape)
    if stype == "default":
        return _nd(_np.zeros(shape, dtype), dtype)
    if stype == "csr":
        if len(shape) != 2:
            raise ShapeError(f"zeros: a csr array must be 2-D, got shape {shape}")
        return make_csr([], [], _np.zeros(shape[0] + 1), shape, dtype, "zeros")
    return make_rsp(_np.zeros((0, *shape[1:]), dtype), [], shape, dtype, "zeros")


def sparse_view(x, stype):
    """``x`` (a dense NDArray) as a ``stype`` array sharing its storage and autograd entry:
    writes through the result (``view[:] = ...``) change ``x``. Components are taken now."""
    if stype == "default" or isinstance(x, BaseSparseNDArray):
        return x
    fresh = from_dense(x, stype)
    view = type(fresh)._wrap(x, fresh.data, fresh._sp_aux)
    if x.context != view.context:
        view._set_context(x.context)
    return view
