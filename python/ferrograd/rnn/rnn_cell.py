"""Symbolic recurrent cells of the legacy ``mx.rnn`` API.

A cell's ``__call__(inputs, states)`` adds one time step to a Symbol graph (names
``<prefix>t<k>_i2h`` etc.) and ``unroll`` adds a whole sequence. Weights are Variables named
``<prefix>i2h_weight``, ``<prefix>h2h_weight``, ``<prefix>i2h_bias``, ``<prefix>h2h_bias``.
When no begin state is given, ``unroll`` starts from zeros shaped after the first input step (so
the batch size needs no declaring).
"""

from .. import initializer as init
from .. import symbol as sym
from ..base import MXNetError

_GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


class RNNParams:
    """Variables of a cell, created once per name (``prefix + name``)."""

    def __init__(self, prefix=""):
        self._prefix = prefix
        self._params = {}

    def get(self, name, **kwargs):
        name = self._prefix + name
        if name not in self._params:
            self._params[name] = sym.Variable(name, **kwargs)
        return self._params[name]


def _split_inputs(length, inputs, layout):
    axis = layout.find("T")
    if isinstance(inputs, sym.Symbol) and len(inputs.list_outputs()) == 1:
        steps = sym.SliceChannel(inputs, axis=axis, num_outputs=length, squeeze_axis=1)
        return [steps[i] for i in range(length)] if length > 1 else [steps], axis
    if len(inputs) != length:
        raise ValueError(f"unroll: length={length} but got {len(inputs)} input steps")
    return list(inputs), axis


def _merge(outputs, axis, merge_outputs):
    if not merge_outputs:
        return outputs
    return sym.Concat(*[sym.expand_dims(o, axis=axis) for o in outputs], dim=axis)


def _zeros_like_state(step, hidden):
    """Zeros of shape (batch, hidden) from an input step (batch, features)."""
    col = sym.slice_axis(sym.zeros_like(step), axis=1, begin=0, end=1)
    return sym.tile(col, reps=(1, hidden))


class BaseRNNCell:
    """Base of the symbolic cells."""

    def __init__(self, prefix="", params=None):
        if params is None:
            params = RNNParams(prefix)
            self._own_params = True
        else:
            self._own_params = False
        self._prefix = prefix
        self._params = params
        self._modified = False
        self.reset()

    def reset(self):
        """Restarts the step counters used in node names."""
        self._init_counter = -1
        self._counter = -1
        for cell in getattr(self, "_cells", []):
            cell.reset()

    @property
    def params(self):
        self._own_params = False
        return self._params

    @property
    def state_info(self):
        raise NotImplementedError(f"{type(self).__name__} must define state_info")

    @property
    def state_shape(self):
        return [i["shape"] for i in self.state_info]

    @property
    def _gate_names(self):
        return ()

    def begin_state(self, func=sym.zeros, **kwargs):
        """One symbol per state, ``func(name=..., shape=...)``."""
        if self._modified:
            raise MXNetError("After applying modifier cells the base cell cannot be called "
                             "directly. Call the modifier cell instead.")
        states = []
        for info in self.state_info:
            self._init_counter += 1
            merged = dict(kwargs)
            merged.update(info or {})
            merged.pop("__layout__", None)
            states.append(func(name=f"{self._prefix}begin_state_{self._init_counter}", **merged))
        return states

    def _default_states(self, step):
        return [_zeros_like_state(step, info["shape"][1]) for info in self.state_info]

    def unpack_weights(self, args):
        """Fused → per-gate arrays (identity for unfused cells)."""
        return dict(args)

    def pack_weights(self, args):
        return dict(args)

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        """Adds ``length`` steps; returns ``(outputs, states)``."""
        self.reset()
        steps, axis = _split_inputs(length, inputs, layout)
        states = self._default_states(steps[0]) if begin_state is None else begin_state
        outputs = []
        for t in range(length):
            out, states = self(steps[t], states)
            outputs.append(out)
        return _merge(outputs, axis, merge_outputs), states

    def _get_activation(self, inputs, activation, **kwargs):
        if isinstance(activation, str):
            return sym.Activation(inputs, act_type=activation, **kwargs)
        return activation(inputs, **kwargs)


class _GatedCell(BaseRNNCell):
    _n_gates = 1

    def __init__(self, num_hidden, prefix, params, i2h_bias_init=None):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._iW = self.params.get("i2h_weight")
        self._iB = self.params.get("i2h_bias", **({"init": i2h_bias_init} if i2h_bias_init else {}))
        self._hW = self.params.get("h2h_weight")
        self._hB = self.params.get("h2h_bias")
        self._own_params = True

    @property
    def state_info(self):
        n = 2 if self._n_gates == 4 else 1
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"}] * n

    def _proj(self, inputs, states):
        self._counter += 1
        name = f"{self._prefix}t{self._counter}_"
        n = self._n_gates * self._num_hidden
        i2h = sym.FullyConnected(data=inputs, weight=self._iW, bias=self._iB, num_hidden=n,
                                 name=name + "i2h")
        h2h = sym.FullyConnected(data=states[0], weight=self._hW, bias=self._hB, num_hidden=n,
                                 name=name + "h2h")
        return name, i2h, h2h


class RNNCell(_GatedCell):
    """Elman cell ``h' = activation(i2h(x) + h2h(h))``."""

    def __init__(self, num_hidden, activation="tanh", prefix="rnn_", params=None):
        super().__init__(num_hidden, prefix, params)
        self._activation = activation

    @property
    def _gate_names(self):
        return ("",)

    def __call__(self, inputs, states):
        name, i2h, h2h = self._proj(inputs, states)
        out = self._get_activation(i2h + h2h, self._activation, name=name + "out")
        return out, [out]


class LSTMCell(_GatedCell):
    """LSTM cell (gates i, f, c, o); ``i2h_bias`` is initialised with ``forget_bias`` on the
    forget gate."""

    _n_gates = 4

    def __init__(self, num_hidden, prefix="lstm_", params=None, forget_bias=1.0):
        super().__init__(num_hidden, prefix, params, init.LSTMBias(forget_bias=forget_bias))

    @property
    def _gate_names(self):
        return ["_i", "_f", "_c", "_o"]

    def __call__(self, inputs, states):
        name, i2h, h2h = self._proj(inputs, states)
        gates = sym.SliceChannel(i2h + h2h, num_outputs=4, name=name + "slice")
        i = sym.Activation(gates[0], act_type="sigmoid", name=name + "i")
        f = sym.Activation(gates[1], act_type="sigmoid", name=name + "f")
        g = sym.Activation(gates[2], act_type="tanh", name=name + "c")
        o = sym.Activation(gates[3], act_type="sigmoid", name=name + "o")
        c = f * states[1] + i * g
        h = o * sym.Activation(c, act_type="tanh")
        return h, [h, c]


class GRUCell(_GatedCell):
    """GRU cell (gates r, z, n)."""

    _n_gates = 3

    def __init__(self, num_hidden, prefix="gru_", params=None):
        super().__init__(num_hidden, prefix, params)

    @property
    def _gate_names(self):
        return ["_r", "_z", "_o"]

    def __call__(self, inputs, states):
        name, i2h, h2h = self._proj(inputs, states)
        ir, iz, i_n = (sym.SliceChannel(i2h, num_outputs=3, name=name + "i2h_slice")[k]
                       for k in range(3))
        hr, hz, hn = (sym.SliceChannel(h2h, num_outputs=3, name=name + "h2h_slice")[k]
                      for k in range(3))
        r = sym.Activation(ir + hr, act_type="sigmoid", name=name + "r_act")
        z = sym.Activation(iz + hz, act_type="sigmoid", name=name + "z_act")
        n = sym.Activation(i_n + r * hn, act_type="tanh", name=name + "h_act")
        h = (1 - z) * n + z * states[0]
        return h, [h]


class FusedRNNCell(BaseRNNCell):
    """All layers in one ``RNN`` operator; parameters in one Variable ``<prefix>parameters``."""

    def __init__(self, num_hidden, num_layers=1, mode="lstm", bidirectional=False, dropout=0.0,
                 get_next_state=False, forget_bias=1.0, prefix=None, params=None):
        if mode not in _GATES:
            raise ValueError(f"FusedRNNCell: mode must be one of {sorted(_GATES)}, got {mode!r}")
        super().__init__(prefix=f"{mode}_" if prefix is None else prefix, params=params)
        self._num_hidden, self._num_layers, self._mode = num_hidden, num_layers, mode
        self._bidirectional, self._dropout = bidirectional, dropout
        self._get_next_state = get_next_state
        self._directions = ["l", "r"] if bidirectional else ["l"]
        self._parameter = self.params.get("parameters")

    @property
    def state_info(self):
        b = len(self._directions)
        n = 2 if self._mode == "lstm" else 1
        return [{"shape": (b * self._num_layers, 0, self._num_hidden), "__layout__": "LNC"}] * n

    def __call__(self, inputs, states):
        raise NotImplementedError("FusedRNNCell cannot be stepped. Please use unroll")

    def _slices(self, input_size):
        """(name, shape) of each per-gate array in the packed vector, in packing order."""
        g, h, dirs = _GATES[self._mode], self._num_hidden, len(self._directions)
        names = {"lstm": ["_i", "_f", "_c", "_o"], "gru": ["_r", "_z", "_o"]}.get(self._mode, [""])
        out = []
        for kind in ("weight", "bias"):
            for layer in range(self._num_layers):
                width = input_size if layer == 0 else dirs * h
                for d in self._directions:
                    for conn, cols in (("i2h", width), ("h2h", h)):
                        for gate in names[:g]:
                            shape = (h, cols) if kind == "weight" else (h,)
                            out.append((f"{self._prefix}{d}{layer}_{conn}{gate}_{kind}", shape))
        return out

    def unpack_weights(self, args):
        from .. import ndarray as nd

        args = dict(args)
        flat = args.pop(self._prefix + "parameters").asnumpy().ravel()
        g, h, dirs = _GATES[self._mode], self._num_hidden, len(self._directions)
        per_layer0 = dirs * g * h * (h + 2)
        rest = sum(dirs * g * h * (dirs * h + h + 2) for _ in range(1, self._num_layers))
        input_size = (flat.size - per_layer0 - rest) // (dirs * g * h)
        at = 0
        for name, shape in self._slices(input_size):
            n = int(__import__("numpy").prod(shape))
            args[name] = nd.array(flat[at:at + n].reshape(shape))
            at += n
        return args

    def pack_weights(self, args):
        import numpy as np

        from .. import ndarray as nd

        args = dict(args)
        first_gate = {"lstm": "_i", "gru": "_r"}.get(self._mode, "")
        w0 = args[f"{self._prefix}l0_i2h{first_gate}_weight"]
        parts = [args.pop(name).asnumpy().ravel() for name, _ in self._slices(w0.shape[1])]
        args[self._prefix + "parameters"] = nd.array(np.concatenate(parts))
        return args

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        self.reset()
        axis = layout.find("T")
        if isinstance(inputs, (list, tuple)):
            data = sym.Concat(*[sym.expand_dims(i, axis=0) for i in inputs], dim=0)
        elif axis == 1:
            data = sym.swapaxes(inputs, dim1=0, dim2=1)
        else:
            data = inputs
        if begin_state is None:
            col = sym.slice_axis(sym.zeros_like(sym.slice_axis(data, axis=0, begin=0, end=1)),
                                 axis=2, begin=0, end=1)
            zero = sym.tile(col, reps=(len(self._directions) * self._num_layers, 1,
                                       self._num_hidden))
            begin_state = [zero] * (2 if self._mode == "lstm" else 1)
        states = {"state": begin_state[0]}
        if self._mode == "lstm":
            states["state_cell"] = begin_state[1]
        rnn = sym.RNN(data=data, parameters=self._parameter, state_size=self._num_hidden,
                      num_layers=self._num_layers, bidirectional=self._bidirectional,
                      p=self._dropout, state_outputs=self._get_next_state, mode=self._mode,
                      name=self._prefix + "rnn", **states)
        if self._get_next_state:
            outputs, states = rnn[0], [rnn[i] for i in range(1, 3 if self._mode == "lstm" else 2)]
        else:
            outputs, states = rnn, []
        if axis == 1:
            outputs = sym.swapaxes(outputs, dim1=0, dim2=1)
        if merge_outputs is False or (merge_outputs is None and isinstance(inputs, (list, tuple))):
            outputs = sym.SliceChannel(outputs, axis=axis, num_outputs=length, squeeze_axis=1)
            outputs = [outputs[i] for i in range(length)] if length > 1 else [outputs]
        return outputs, states

    def unfuse(self):
        """The same network as a SequentialRNNCell of per-layer cells (same weight names as
        ``unpack_weights``)."""
        make = {
            "rnn_relu": lambda p: RNNCell(self._num_hidden, activation="relu", prefix=p),
            "rnn_tanh": lambda p: RNNCell(self._num_hidden, activation="tanh", prefix=p),
            "lstm": lambda p: LSTMCell(self._num_hidden, prefix=p),
            "gru": lambda p: GRUCell(self._num_hidden, prefix=p),
        }[self._mode]
        stack = SequentialRNNCell()
        for i in range(self._num_layers):
            if self._bidirectional:
                stack.add(BidirectionalCell(make(f"{self._prefix}l{i}_"),
                                            make(f"{self._prefix}r{i}_"),
                                            output_prefix=f"{self._prefix}bi_l{i}_"))
            else:
                stack.add(make(f"{self._prefix}l{i}_"))
            if self._dropout > 0 and i + 1 < self._num_layers:
                stack.add(DropoutCell(self._dropout, prefix=f"{self._prefix}_dropout{i}_"))
        return stack


class SequentialRNNCell(BaseRNNCell):
    """Stacks cells; each step runs them in order."""

    def __init__(self, params=None):
        super().__init__(prefix="", params=params)
        self._cells = []

    def add(self, cell):
        self._cells.append(cell)

    @property
    def state_info(self):
        return [i for c in self._cells for i in c.state_info]

    def begin_state(self, **kwargs):
        return [s for c in self._cells for s in c.begin_state(**kwargs)]

    def unpack_weights(self, args):
        for c in self._cells:
            args = c.unpack_weights(args)
        return args

    def pack_weights(self, args):
        for c in self._cells:
            args = c.pack_weights(args)
        return args

    def _split(self, states):
        out, at = [], 0
        for c in self._cells:
            n = len(c.state_info)
            out.append(states[at:at + n])
            at += n
        return out

    def __call__(self, inputs, states):
        self._counter += 1
        new = []
        for c, s in zip(self._cells, self._split(states), strict=False):
            inputs, s = c(inputs, s)
            new.extend(s)
        return inputs, new

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        self.reset()
        begins = [None] * len(self._cells) if begin_state is None else self._split(begin_state)
        states = []
        for i, (c, s) in enumerate(zip(self._cells, begins, strict=False)):
            merge = merge_outputs if i + 1 == len(self._cells) else None
            inputs, s = c.unroll(length, inputs, begin_state=s, layout=layout,
                                 merge_outputs=merge)
            states.extend(s)
        return inputs, states


class DropoutCell(BaseRNNCell):
    """Dropout on the step input; no state."""

    def __init__(self, dropout, prefix="dropout_", params=None):
        super().__init__(prefix, params)
        self.dropout = dropout

    @property
    def state_info(self):
        return []

    def _default_states(self, step):
        return []

    def __call__(self, inputs, states):
        if self.dropout > 0:
            inputs = sym.Dropout(data=inputs, p=self.dropout)
        return inputs, states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        self.reset()
        whole = isinstance(inputs, sym.Symbol) and len(inputs.list_outputs()) == 1
        if whole and merge_outputs is not False:
            return self(inputs, [])[0], []
        return super().unroll(length, inputs, begin_state, layout, merge_outputs)


class ModifierCell(BaseRNNCell):
    """Wraps a base cell, sharing its parameters."""

    def __init__(self, base_cell):
        super().__init__()
        base_cell._modified = True
        self.base_cell = base_cell

    @property
    def params(self):
        return self.base_cell.params

    @property
    def state_info(self):
        return self.base_cell.state_info

    def _default_states(self, step):
        return self.base_cell._default_states(step)

    def begin_state(self, func=sym.zeros, **kwargs):
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(func=func, **kwargs)
        finally:
            self.base_cell._modified = True


class ResidualCell(ModifierCell):
    """Adds the input to the base cell's output."""

    def __call__(self, inputs, states):
        out, states = self.base_cell(inputs, states)
        return sym.elemwise_add(out, inputs, name=f"{out.name}_plus_residual"), states


class BidirectionalCell(BaseRNNCell):
    """``l_cell`` forward and ``r_cell`` backward in time, outputs concatenated; unroll only."""

    def __init__(self, l_cell, r_cell, params=None, output_prefix="bi_"):
        super().__init__("", params=params)
        self._output_prefix = output_prefix
        self._cells = [l_cell, r_cell]

    def __call__(self, inputs, states):
        raise NotImplementedError("Bidirectional cannot be stepped. Please use unroll")

    @property
    def state_info(self):
        return [i for c in self._cells for i in c.state_info]

    def begin_state(self, **kwargs):
        return [s for c in self._cells for s in c.begin_state(**kwargs)]

    def unpack_weights(self, args):
        for c in self._cells:
            args = c.unpack_weights(args)
        return args

    def pack_weights(self, args):
        for c in self._cells:
            args = c.pack_weights(args)
        return args

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        self.reset()
        steps, axis = _split_inputs(length, inputs, layout)
        l_cell, r_cell = self._cells
        n_l = len(l_cell.state_info)
        lb, rb = (None, None) if begin_state is None else (begin_state[:n_l], begin_state[n_l:])
        l_out, l_states = l_cell.unroll(length, steps, lb, layout, False)
        r_out, r_states = r_cell.unroll(length, steps[::-1], rb, layout, False)
        outputs = [sym.Concat(lo, ro, dim=1, name=f"{self._output_prefix}t{t}")
                   for t, (lo, ro) in enumerate(zip(l_out, r_out[::-1], strict=False))]
        return _merge(outputs, axis, merge_outputs), l_states + r_states
