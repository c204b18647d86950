"""``ferrograd.autograd``: recording, backward and gradients (MXNet 1.x semantics).

Recording and training flags are per thread. ``record()``/``pause()``/``train_mode()``/
``predict_mode()`` are scopes that restore the previous state on exit. Gradients flow only to arrays
marked with ``attach_grad()`` or ``mark_variables()``.
"""

from . import _ferrograd as _native
from ._ferrograd import NDArray
from .base import UnknownGradReq

__all__ = ["record", "pause", "train_mode", "predict_mode", "is_recording", "is_training",
           "set_recording", "set_training", "mark_variables", "backward", "grad", "get_symbol",
           "Function"]

_GRAD_REQ_MAP = {"null": 0, "write": 1, "add": 3}


def set_recording(is_recording):
    """Sets whether operations are recorded; returns the previous value."""
    return _native._ag_set_recording(bool(is_recording))


def set_training(train_mode):
    """Sets training mode (Dropout, BatchNorm); returns the previous value."""
    return _native._ag_set_training(bool(train_mode))


def is_recording():
    """Whether operations on this thread are being recorded."""
    return _native._ag_is_recording()


def is_training():
    """Whether this thread is in training mode."""
    return _native._ag_is_training()


class _RecordingStateScope:
    """Sets the recording/training flags on entry and restores what it changed on exit."""

    def __init__(self, is_record, train_mode):
        self._enter_is_record = is_record
        self._enter_train_mode = train_mode
        self._prev_is_record = None
        self._prev_train_mode = None

    def __enter__(self):
        if self._enter_is_record is not None:
            self._prev_is_record = set_recording(self._enter_is_record)
        if self._enter_train_mode is not None:
            self._prev_train_mode = set_training(self._enter_train_mode)

    def __exit__(self, exc_type, exc_value, traceback):
        if self._enter_is_record is not None and self._prev_is_record != self._enter_is_record:
            set_recording(self._prev_is_record)
        if self._enter_train_mode is not None and self._prev_train_mode != self._enter_train_mode:
            set_training(self._prev_train_mode)


def record(train_mode=True):
    """Scope in which operations are recorded for differentiation."""
    return _RecordingStateScope(True, train_mode)


def pause(train_mode=False):
    """Scope in which recording is off (results are constants)."""
    return _RecordingStateScope(False, train_mode)


def train_mode():
    """Scope in training mode; the recording flag is left alone."""
    return _RecordingStateScope(None, True)


def predict_mode():
    """Scope in prediction mode; the recording flag is left alone."""
    return _RecordingStateScope(None, False)


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def mark_variables(variables, gradients, grad_reqs="write"):
    """Marks arrays as leaves whose gradients are written into ``gradients`` (by reference)."""
    if isinstance(variables, NDArray):
        assert isinstance(gradients, NDArray)
        variables, gradients = [variables], [gradients]
    if isinstance(grad_reqs, str):
        grad_reqs = [grad_reqs] * len(variables)
    from .ndarray.sparse_grad import drop_links, link_row_sparse
    for v, g, r in zip(variables, gradients, grad_reqs, strict=True):
        if r not in _GRAD_REQ_MAP:
            raise UnknownGradReq(f"mark_variables: grad_reqs must be one of 'write', 'add', "
                                 f"'null', got {r!r}")
        if getattr(g, "stype", "default") == "row_sparse":
            # The gradient is held as rows and copied into g after each backward, as MXNet
            # writes a row_sparse gradient buffer (no dense buffer of the variable's shape).
            link_row_sparse(v, g, r)
        else:
            drop_links(v)
            _native._ag_mark_variable(v, g, r)


def backward(heads, head_grads=None, retain_graph=False, train_mode=True):
    """Computes gradients of ``heads`` and writes them into the marked variables."""
    heads = _as_list(heads)
    if head_grads is None:
        head_grads = [None] * len(heads)
    elif isinstance(head_grads, NDArray):
        head_grads = [head_grads]
    if len(heads) != len(head_grads):
        raise AssertionError("heads and head_grads must be lists of the same length")
    from .ndarray.sparse_grad import refreshing
    with refreshing():
        _native._ag_backward(heads, list(head_grads), bool(retain_graph), bool(train_mode))


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph=False,
         train_mode=True):
    """Returns gradients of ``heads`` w.r.t. ``variables`` (a list), leaving ``.grad`` alone."""
    heads = _as_list(heads)
    variables = _as_list(variables)
    if len(variables) == 0:
        raise AssertionError("variables cannot be an empty list.")
    if head_grads is None:
        head_grads = [None] * len(heads)
    elif isinstance(head_grads, NDArray):
        head_grads = [head_grads]
    if len(heads) != len(head_grads):
        raise AssertionError("heads and head_grads must be lists of the same length")
    if retain_graph is None:
        retain_graph = create_graph
    grads = _native._ag_grad(heads, list(head_grads), variables, bool(retain_graph),
                             bool(create_graph), bool(train_mode))
    # Each gradient has its variable's array class (np arrays get np arrays; MXNet returned
    # legacy NDArrays here); a row-sparse variable's comes as rows: a RowSparseNDArray.
    return [_as_grad_class(g, v) for g, v in zip(grads, variables, strict=True)]


def _as_grad_class(g, v):
    from .ndarray.sparse_grad import as_row_sparse, grad_stype
    if isinstance(g, tuple) or grad_stype(v) == "row_sparse":
        return as_row_sparse(g, v.shape, v.dtype)
    return g if type(v) is NDArray else _native._view_as(type(v), g)


def get_symbol(x):
    """The recorded computation that produced ``x`` as a :class:`~ferrograd.symbol.Symbol`
    (variables ``var<N>``, ops ``node_<N>``)."""
    if not isinstance(x, NDArray):
        raise AssertionError(
            f"get_symbol: Invalid argument type, expecting {NDArray}, got {type(x)}")
    from .symbol import Symbol

    return Symbol(_native._ag_get_symbol(x))


class Function:
    """A differentiable operation with a user-written ``forward`` and ``backward``.

    Subclass it, compute outputs from NDArrays in ``forward`` (recording is off there), keep what
    ``backward`` needs with ``save_for_backward``, and return one gradient per ``forward`` input
    from ``backward`` (which receives one gradient per output). Each instance is called once. The
    gradients honour every ``grad_req`` ('write', 'add', 'null'), and ``backward`` may use
    ferrograd ops, so ``create_graph=True`` differentiates through it again.
    """

    def __init__(self):
        self._used = False
        self.saved_tensors = ()

    def save_for_backward(self, *args):
        """Keeps ``args`` for ``backward`` as ``self.saved_tensors`` (replacing earlier ones)."""
        self.saved_tensors = args

    def __call__(self, *inputs):
        assert not self._used, \
            "Each Function instance can only be called once. Please create another instance."
        self._used = True
        for i, x in enumerate(inputs):
            if not isinstance(x, NDArray):
                raise TypeError(
                    f"{type(self).__name__}: input {i} must be an NDArray, got {type(x).__name__}")
        was_recording = set_recording(False)
        try:
            outputs = self.forward(*inputs)
        finally:
            set_recording(was_recording)
        single = isinstance(outputs, NDArray)
        outs = [outputs] if single else list(outputs)
        for i, y in enumerate(outs):
            if not isinstance(y, NDArray):
                raise TypeError(f"{type(self).__name__}.forward: output {i} must be an NDArray, "
                                f"got {type(y).__name__}")
            # An output that is an input object (or repeated) gets its own handle, so marking it
            # as this node's output does not rewrite the input's autograd entry.
            if any(y is x for x in inputs) or any(y is z for z in outs[:i]):
                outs[i] = _native._view_as(type(y), y.detach())
        if was_recording:
            self._out_types = [type(y) for y in outs]
            _native._ag_record_function(self._backward_entry, list(inputs), outs)
        return outs[0] if single else tuple(outs)

    def _backward_entry(self, *output_grads):
        # Gradients arrive as native NDArrays; give them the class of their outputs (np arrays).
        grads = [g if t is NDArray else _native._view_as(t, g)
                 for g, t in zip(output_grads, self._out_types, strict=True)]
        return self.backward(*grads)

    def forward(self, *inputs):
        """Computes the outputs; override it."""
        raise NotImplementedError

    def backward(self, *output_grads):
        """Returns the gradients w.r.t. the inputs of ``forward``; override it."""
        raise NotImplementedError
