"""Recurrent cells of ``gluon.rnn``: one time step per call, ``unroll`` for a whole sequence.

A cell maps ``(inputs, states)`` to ``(output, new_states)``. ``unroll(length, inputs, ...)``
accepts a tensor in ``layout`` (``NTC``/``TNC``) or a list of per-step tensors, returns the outputs
merged into one tensor or as a list, and with ``valid_length`` zeroes the outputs past each
sequence's end and returns the states at its last valid step.
"""

from ... import ndarray as nd
from ... import symbol as sym
from ...base import MXNetError
from ..block import Block, HybridBlock


def _is_symbol(x):
    return isinstance(x, sym.Symbol)


def _F(x):
    return sym if _is_symbol(x) else nd


def _split_steps(length, inputs, layout):
    """``inputs`` (tensor or list) → list of ``length`` per-step tensors ``(N, C)``."""
    axis = layout.find("T")
    if isinstance(inputs, (list, tuple)):
        if len(inputs) != length:
            raise ValueError(f"unroll: length={length} but got {len(inputs)} input steps")
        return list(inputs), axis, False
    F = _F(inputs)
    if not _is_symbol(inputs) and inputs.shape[axis] != length:
        raise ValueError(f"unroll: length={length} does not match the time axis of inputs with "
                         f"shape {inputs.shape} (layout {layout})")
    steps = F.split(inputs, num_outputs=length, axis=axis, squeeze_axis=True)
    if length == 1 and not isinstance(steps, (list, tuple)):
        steps = [steps]
    return list(steps), axis, True


def _merge(outputs, axis, merge):
    if not merge:
        return outputs
    return _F(outputs[0]).stack(*outputs, axis=axis)


def _valid_mask(valid_length, length):
    """``(T, N)`` float mask: 1 where step t < valid_length[n] (NDArray inputs only)."""
    if _is_symbol(valid_length):
        raise NotImplementedError("unroll: valid_length with Symbol inputs is not implemented in "
                                  "ferrograd; call unroll on NDArrays")
    steps = nd.array([[t] for t in range(length)], dtype=valid_length.dtype)
    return nd.broadcast_lesser(steps, valid_length.reshape((1, -1)))


class RecurrentCell(Block):
    """Base class of the cells; subclasses define ``state_info`` and ``forward``."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._modified = False
        self.reset()

    def reset(self):
        """Resets the step counters (names of symbolic steps restart at t0)."""
        self._init_counter = -1
        self._counter = -1
        for cell in self._children.values():
            if isinstance(cell, RecurrentCell):
                cell.reset()

    def state_info(self, batch_size=0):
        raise NotImplementedError(f"{type(self).__name__} must define state_info")

    def begin_state(self, batch_size=0, func=nd.zeros, **kwargs):
        """Initial states, ``func(shape=..., **kwargs)`` for each entry of ``state_info``."""
        if self._modified:
            raise MXNetError("After applying modifier cells (e.g. ZoneoutCell) the base cell "
                             "cannot be called directly. Call the modifier cell instead.")
        states = []
        for info in self.state_info(batch_size):
            self._init_counter += 1
            merged = dict(info or {})
            merged.pop("__layout__", None)
            merged.update(kwargs)
            if func is sym.zeros or func is getattr(sym, "var", None):
                merged.setdefault("name", f"{self._prefix}begin_state_{self._init_counter}")
            states.append(func(**merged))
        return states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        """Runs ``length`` steps; returns ``(outputs, states)``."""
        self.reset()
        steps, axis, was_tensor = _split_steps(length, inputs, layout)
        if begin_state is None:
            F = _F(steps[0])
            batch = 0 if F is sym else steps[0].shape[0]
            kwargs = {} if F is sym else {"ctx": steps[0].context, "dtype": steps[0].dtype}
            begin_state = self.begin_state(batch, func=F.zeros, **kwargs)
        states = begin_state
        outputs, all_states = [], []
        for t in range(length):
            out, states = self(steps[t], states)
            outputs.append(out)
            if valid_length is not None:
                all_states.append(states)
        if valid_length is not None:
            mask = _valid_mask(valid_length, length)
            outputs = [o * mask[t].reshape((-1,) + (1,) * (o.ndim - 1))
                       for t, o in enumerate(outputs)]
            last = nd.one_hot(valid_length - 1, length)  # (N, T)
            states = [sum(s[i] * last[:, t].reshape((-1,) + (1,) * (s[i].ndim - 1))
                          for t, s in enumerate(all_states)) for i in range(len(states))]
        merge = was_tensor if merge_outputs is None else merge_outputs
        return _merge(outputs, axis, merge), states

    def _get_activation(self, F, inputs, activation, **kwargs):
        if isinstance(activation, str):
            return F.Activation(inputs, act_type=activation, **kwargs)
        return activation(inputs, **kwargs)

    def forward(self, inputs, states):
        self._counter += 1
        return super().forward(inputs, states)


class HybridRecurrentCell(RecurrentCell, HybridBlock):
    """A cell whose step is a ``hybrid_forward(F, inputs, states, **params)``."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def forward(self, inputs, states):
        self._counter += 1
        return HybridBlock.forward(self, inputs, states)

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define hybrid_forward")


class _GatedCell(HybridRecurrentCell):
    """Shared parameters of RNN/LSTM/GRU cells: i2h/h2h weights and biases for ``gates`` gates."""

    _gates = 1

    def __init__(self, hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                 i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size, self._input_size = hidden_size, input_size
        n = self._gates * hidden_size
        self.i2h_weight = self.params.get("i2h_weight", shape=(n, input_size),
                                          init=i2h_weight_initializer, allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=(n, hidden_size),
                                          init=h2h_weight_initializer, allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(n,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(n,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    def state_info(self, batch_size=0):
        info = {"shape": (batch_size, self._hidden_size), "__layout__": "NC"}
        return [info] * (2 if self._gates == 4 else 1)

    def _alias(self):
        return type(self).__name__.replace("Cell", "").lower()

    def __repr__(self):
        shape = self.i2h_weight.shape
        return (f"{type(self).__name__}({shape[1] if shape[1] else None} -> "
                f"{shape[0] // self._gates})")

    def _projections(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        n = self._gates * self._hidden_size
        name = f"{self._prefix}t{self._counter}_"
        i2h = F.FullyConnected(inputs, i2h_weight, i2h_bias, num_hidden=n, name=name + "i2h")
        h2h = F.FullyConnected(states[0], h2h_weight, h2h_bias, num_hidden=n,
                               name=name + "h2h")
        return i2h, h2h


class RNNCell(_GatedCell):
    """Elman cell: ``h' = activation(W_i2h x + b_i2h + W_h2h h + b_h2h)``."""

    def __init__(self, hidden_size, activation="tanh", i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", input_size=0, prefix=None, params=None):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params)
        self._activation = activation

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        i2h, h2h = self._projections(F, inputs, states, i2h_weight, h2h_weight, i2h_bias,
                                     h2h_bias)
        out = self._get_activation(F, i2h + h2h, self._activation)
        return out, [out]


class LSTMCell(_GatedCell):
    """LSTM cell, gates ``i, f, g, o``: ``c' = f*c + i*g``, ``h' = o*activation(c')``."""

    _gates = 4

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 prefix=None, params=None, activation="tanh", recurrent_activation="sigmoid"):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params)
        self._activation, self._recurrent_activation = activation, recurrent_activation

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        i2h, h2h = self._projections(F, inputs, states, i2h_weight, h2h_weight, i2h_bias,
                                     h2h_bias)
        i, f, g, o = F.split(i2h + h2h, num_outputs=4, axis=1)
        rec = self._recurrent_activation
        i, f, o = (self._get_activation(F, v, rec) for v in (i, f, o))
        g = self._get_activation(F, g, self._activation)
        c = f * states[1] + i * g
        h = o * self._get_activation(F, c, self._activation)
        return h, [h, c]


class GRUCell(_GatedCell):
    """GRU cell, gates ``r, z, n``: ``n = tanh(W_in x + b_in + r*(W_hn h + b_hn))``,
    ``h' = (1 - z)*n + z*h``."""

    _gates = 3

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 prefix=None, params=None, activation="tanh", recurrent_activation="sigmoid"):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params)
        self._activation, self._recurrent_activation = activation, recurrent_activation

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        i2h, h2h = self._projections(F, inputs, states, i2h_weight, h2h_weight, i2h_bias,
                                     h2h_bias)
        ir, iz, i_n = F.split(i2h, num_outputs=3, axis=1)
        hr, hz, hn = F.split(h2h, num_outputs=3, axis=1)
        r = self._get_activation(F, ir + hr, self._recurrent_activation)
        z = self._get_activation(F, iz + hz, self._recurrent_activation)
        n = self._get_activation(F, i_n + r * hn, self._activation)
        h = (1 - z) * n + z * states[0]
        return h, [h]


class _SequentialMixin:
    def add(self, cell):
        """Appends a cell; its output feeds the next one."""
        self.register_child(cell)

    def state_info(self, batch_size=0):
        return [i for c in self._children.values() for i in c.state_info(batch_size)]

    def begin_state(self, batch_size=0, func=nd.zeros, **kwargs):
        return [s for c in self._children.values()
                for s in c.begin_state(batch_size, func=func, **kwargs)]

    def _split_states(self, states):
        out, at = [], 0
        for c in self._children.values():
            n = len(c.state_info())
            out.append(states[at:at + n])
            at += n
        return out

    def _step(self, inputs, states):
        new = []
        for c, s in zip(self._children.values(), self._split_states(states), strict=False):
            inputs, s = c(inputs, s)
            new.extend(s)
        return inputs, new

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        self.reset()
        cells = list(self._children.values())
        if begin_state is None:
            begin_state = [None] * len(cells)
        else:
            begin_state = self._split_states(begin_state)
        states = []
        for i, (c, s) in enumerate(zip(cells, begin_state, strict=False)):
            merge = None if i + 1 == len(cells) else merge_outputs
            inputs, s = c.unroll(length, inputs, begin_state=s, layout=layout,
                                 merge_outputs=merge, valid_length=valid_length)
            states.extend(s)
        return inputs, states

    def __getitem__(self, i):
        return list(self._children.values())[i]

    def __len__(self):
        return len(self._children)

    def __repr__(self):
        lines = [f"  ({k}): {v!r}" for k, v in self._children.items()]
        return f"{type(self).__name__}(\n" + "\n".join(lines) + "\n)"


class SequentialRNNCell(_SequentialMixin, RecurrentCell):
    """Stacks cells: each step runs them in order."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def forward(self, inputs, states):
        self._counter += 1
        return self._step(inputs, states)


class HybridSequentialRNNCell(_SequentialMixin, HybridRecurrentCell):
    """Stacks hybrid cells."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def forward(self, inputs, states):
        self._counter += 1
        return self._step(inputs, states)


class DropoutCell(HybridRecurrentCell):
    """Applies Dropout to its input; no state."""

    def __init__(self, rate, axes=(), prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._rate, self._axes = rate, axes

    def state_info(self, batch_size=0):
        return []

    def __repr__(self):
        return f"{type(self).__name__}(rate={self._rate}, axes={self._axes})"

    def hybrid_forward(self, F, inputs, states):
        if self._rate > 0:
            inputs = F.Dropout(inputs, p=self._rate, axes=self._axes)
        return inputs, states


class ModifierCell(HybridRecurrentCell):
    """Wraps a base cell and changes its behaviour; the base cell's parameters are shared."""

    def __init__(self, base_cell):
        if getattr(base_cell, "_modified", False):
            raise MXNetError(f"Cell {base_cell.name} is already modified. One cell cannot be "
                             "modified twice")
        base_cell._modified = True
        super().__init__(prefix=base_cell.prefix + self._alias(), params=None)
        self.base_cell = base_cell

    @property
    def params(self):
        return self.base_cell.params

    def state_info(self, batch_size=0):
        return self.base_cell.state_info(batch_size)

    def begin_state(self, batch_size=0, func=nd.zeros, **kwargs):
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(batch_size, func=func, **kwargs)
        finally:
            self.base_cell._modified = True

    def __repr__(self):
        return f"{type(self).__name__}({self.base_cell!r})"


class ResidualCell(ModifierCell):
    """Adds the cell's input to its output."""

    def _alias(self):
        return "residual"

    def forward(self, inputs, states):
        self._counter += 1
        out, states = self.base_cell(inputs, states)
        return out + inputs, states


class ZoneoutCell(ModifierCell):
    """Zoneout: while training, each output/state unit keeps its previous value with probability
    ``zoneout_outputs`` / ``zoneout_states``."""

    def __init__(self, base_cell, zoneout_outputs=0.0, zoneout_states=0.0):
        if isinstance(base_cell, (BidirectionalCell, _SequentialMixin)):
            raise MXNetError("ZoneoutCell wraps a single cell, not a bidirectional or sequential "
                             "one; wrap each inner cell instead")
        super().__init__(base_cell)
        self.zoneout_outputs, self.zoneout_states = zoneout_outputs, zoneout_states
        self._prev_output = None

    def _alias(self):
        return "zoneout"

    def reset(self):
        super().reset()
        self._prev_output = None

    def forward(self, inputs, states):
        from ... import autograd

        self._counter += 1
        out, new_states = self.base_cell(inputs, states)
        if not autograd.is_training():
            return out, new_states
        F = _F(out)

        def keep(p, like):
            return F.Dropout(F.ones_like(like), p=p) * (1 - p) if p > 0 else None

        prev = self._prev_output if self._prev_output is not None else F.zeros_like(out)
        m = keep(self.zoneout_outputs, out)
        if m is not None:
            out = F.where(m, out, prev)
        ms = [keep(self.zoneout_states, s) for s in new_states]
        new_states = [F.where(k, n, o) if k is not None else n
                      for k, n, o in zip(ms, new_states, states, strict=False)]
        self._prev_output = out
        return out, new_states


class BidirectionalCell(HybridRecurrentCell):
    """Runs ``l_cell`` forward and ``r_cell`` backward in time and concatenates their outputs;
    only ``unroll`` is supported."""

    def __init__(self, l_cell, r_cell, output_prefix="bi_"):
        super().__init__(prefix="", params=None)
        self.register_child(l_cell, "l_cell")
        self.register_child(r_cell, "r_cell")
        self._output_prefix = output_prefix

    def __call__(self, inputs, states):
        raise NotImplementedError("Bidirectional cannot be stepped. Please use unroll")

    def state_info(self, batch_size=0):
        return [i for c in self._children.values() for i in c.state_info(batch_size)]

    def begin_state(self, batch_size=0, func=nd.zeros, **kwargs):
        return [s for c in self._children.values()
                for s in c.begin_state(batch_size, func=func, **kwargs)]

    def __repr__(self):
        return (f"{type(self).__name__}(forward={self._children['l_cell']!r}, "
                f"backward={self._children['r_cell']!r})")

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        self.reset()
        steps, axis, was_tensor = _split_steps(length, inputs, layout)
        l_cell, r_cell = self._children["l_cell"], self._children["r_cell"]
        n_l = len(l_cell.state_info())
        if begin_state is None:
            begin_state = [None] * 2
            l_begin = r_begin = None
        else:
            l_begin, r_begin = begin_state[:n_l], begin_state[n_l:]
        l_out, l_states = l_cell.unroll(length, steps, l_begin, layout, False, valid_length)
        if valid_length is None:
            rev = steps[::-1]
        else:
            rev = _reverse_valid(steps, valid_length)
        r_out, r_states = r_cell.unroll(length, rev, r_begin, layout, False, valid_length)
        r_out = r_out[::-1] if valid_length is None else _reverse_valid(r_out, valid_length)
        F = _F(steps[0])
        outputs = [F.concat(lo, ro, dim=1) for lo, ro in zip(l_out, r_out, strict=False)]
        merge = was_tensor if merge_outputs is None else merge_outputs
        return _merge(outputs, axis, merge), l_states + r_states


def _reverse_valid(steps, valid_length):
    """Reverses each sequence's first ``valid_length`` steps, leaving the padding in place."""
    length = len(steps)
    stacked = nd.stack(*steps, axis=0)  # (T, N, C)
    idx = []
    vl = valid_length.asnumpy().astype(int)
    for t in range(length):
        idx.append([(v - 1 - t) if t < v else t for v in vl])
    index = nd.array(idx, dtype="int64")  # (T, N)
    batch = nd.array([list(range(len(vl)))] * length, dtype="int64")
    picked = nd.gather_nd(stacked, nd.stack(index, batch, axis=0))
    return [picked[t] for t in range(length)]
