"""Fused recurrent layers ``RNN``, ``LSTM``, ``GRU``: one ``RNN`` operator call per forward.

Parameters are registered per layer and direction with MXNet's names (``l0_i2h_weight``,
``r1_h2h_bias``, ...) and concatenated, flattened, in the operator's packing order (all weights,
then all biases; per layer, direction, then i2h before h2h), so MXNet checkpoints load as is.
"""

from ... import ndarray as nd
from ... import symbol as sym
from ...base import MXNetError
from ..block import HybridBlock

_GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


class _RNNLayer(HybridBlock):
    def __init__(self, hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                 i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                 h2h_bias_initializer, mode, dtype, projection_size=None, lstm_state_clip_min=None,
                 lstm_state_clip_max=None, lstm_state_clip_nan=False, **kwargs):
        super().__init__(**kwargs)
        if layout not in ("TNC", "NTC"):
            raise ValueError(f"{type(self).__name__}: invalid layout {layout!r}; must be one of "
                             "['TNC', 'NTC']")
        if projection_size is not None:
            raise NotImplementedError(f"{type(self).__name__}: projection_size (LSTMP) is not "
                                      "implemented in ferrograd")
        self._hidden_size, self._num_layers, self._layout = hidden_size, num_layers, layout
        self._dropout, self._dir, self._input_size = dropout, 2 if bidirectional else 1, input_size
        self._mode, self._dtype, self._gates = mode, dtype, _GATES[mode]
        self._clip = (lstm_state_clip_min, lstm_state_clip_max, lstm_state_clip_nan)
        ng, nh = self._gates, hidden_size
        self._param_names = []
        with self.name_scope():
            for i in range(num_layers):
                ni = input_size if i == 0 else nh * self._dir
                for d in ["l", "r"][:self._dir]:
                    self._register(f"{d}{i}_i2h_weight", (ng * nh, ni), i2h_weight_initializer)
                    self._register(f"{d}{i}_h2h_weight", (ng * nh, nh), h2h_weight_initializer)
                    self._register(f"{d}{i}_i2h_bias", (ng * nh,), i2h_bias_initializer)
                    self._register(f"{d}{i}_h2h_bias", (ng * nh,), h2h_bias_initializer)

    def _register(self, name, shape, init):
        p = self.params.get(name, shape=shape, init=init, dtype=self._dtype,
                            allow_deferred_init=True)
        setattr(self, name, p)
        self._param_names.append(name)

    def __repr__(self):
        s = f"{type(self).__name__}({{mapping}}, {self._layout}"
        if self._num_layers != 1:
            s += f", num_layers={self._num_layers}"
        if self._dropout != 0:
            s += f", dropout={self._dropout}"
        if self._dir == 2:
            s += ", bidirectional"
        shape = self.l0_i2h_weight.shape
        mapping = f"{shape[1] if shape[1] else None} -> {shape[0] // self._gates}"
        return s.format(mapping=mapping) + ")"

    def _collect_params_with_prefix(self, prefix=""):
        """``save_parameters`` keys as MXNet writes them for a fused layer (its historical
        unfused-cell paths): ``_unfused.<layer>.<g>_<t>``, or
        ``_unfused.<layer>.<l|r>_cell.<g>_<t>`` when bidirectional."""
        if prefix:
            prefix += "."
        out = {}
        for key in self._param_names:
            d, rest = key[0], key[1:]
            layer, name = rest.split("_", 1)
            cell = f"{d}_cell." if self._dir == 2 else ""
            out[f"{prefix}_unfused.{layer}.{cell}{name}"] = self._reg_params[key]
        return out

    def state_info(self, batch_size=0):
        info = [{"shape": (self._num_layers * self._dir, batch_size, self._hidden_size),
                 "__layout__": "LNC", "dtype": self._dtype}]
        return info * (2 if self._mode == "lstm" else 1)

    def begin_state(self, batch_size=0, func=nd.zeros, **kwargs):
        """Initial states: ``func(shape=..., **kwargs)`` per state (zeros by default)."""
        states = []
        for i, info in enumerate(self.state_info(batch_size)):
            merged = dict(info)
            merged.update(kwargs)
            merged.pop("__layout__", None)
            if func is sym.zeros or getattr(func, "__module__", "").startswith("ferrograd.symbol"):
                merged.setdefault("name", f"{self._prefix}h0_{i}")
            states.append(func(**merged))
        return states

    def _set_input_size(self, inputs):
        """Resolves the deferred input width from the data (MXNet infers it in the graph)."""
        if not isinstance(inputs, nd.NDArray) or self.l0_i2h_weight.shape[1]:
            return
        width = inputs.shape[2]
        for d in ["l", "r"][:self._dir]:
            p = getattr(self, f"{d}0_i2h_weight")
            p.shape = (p.shape[0], width)

    def __call__(self, inputs, states=None, sequence_length=None, **kwargs):
        if sequence_length is not None:
            raise NotImplementedError(f"{type(self).__name__}: sequence_length (valid lengths) "
                                      "with the fused layer is not implemented in ferrograd; "
                                      "use the cells' unroll(valid_length=...)")
        self._set_input_size(inputs)
        skip = states is None
        if skip:
            if isinstance(inputs, nd.NDArray):
                batch = inputs.shape[self._layout.find("N")]
                states = self.begin_state(batch, ctx=inputs.context, dtype=inputs.dtype)
            else:
                states = self.begin_state(0, func=sym.zeros)
        if isinstance(states, (nd.NDArray, sym.Symbol)):
            states = [states]
        out = super().__call__(inputs, states)
        return out[0] if skip else out

    def hybrid_forward(self, F, inputs, states, **params):
        if F is nd:
            batch = inputs.shape[self._layout.find("N")]
            for state, info in zip(states, self.state_info(batch), strict=False):
                if state.shape != info["shape"]:
                    raise MXNetError(f"{type(self).__name__}: invalid recurrent state shape; "
                                     f"expected {info['shape']}, got {state.shape}")
        if self._layout == "NTC":
            inputs = F.swapaxes(inputs, dim1=0, dim2=1)
        flat = [F.reshape(params[f"{d}{i}_{g}_{t}"], shape=(-1,))
                for t in ("weight", "bias") for i in range(self._num_layers)
                for d in ["l", "r"][:self._dir] for g in ("i2h", "h2h")]
        packed = F.concat(*flat, dim=0)
        extra = {}
        if self._clip[0] is not None:
            extra = {"lstm_state_clip_min": self._clip[0], "lstm_state_clip_max": self._clip[1],
                     "lstm_state_clip_nan": self._clip[2]}
        rnn = F.RNN(inputs, packed, *states, state_size=self._hidden_size,
                    num_layers=self._num_layers, bidirectional=self._dir == 2, p=self._dropout,
                    state_outputs=True, mode=self._mode, **extra)
        outputs, new_states = rnn[0], [rnn[i] for i in range(1, len(states) + 1)]
        if self._layout == "NTC":
            outputs = F.swapaxes(outputs, dim1=0, dim2=1)
        return outputs, new_states


class RNN(_RNNLayer):
    """Multi-layer Elman RNN with ``relu`` or ``tanh``: ``h_t = act(W_i2h x_t + b_i2h + W_h2h
    h_{t-1} + b_h2h)``. Called as ``layer(x)`` it returns the outputs; ``layer(x, states)`` returns
    ``(outputs, new_states)``."""

    def __init__(self, hidden_size, num_layers=1, activation="relu", layout="TNC", dropout=0,
                 bidirectional=False, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 dtype="float32", **kwargs):
        if activation not in ("relu", "tanh"):
            raise ValueError(f"RNN: activation must be 'relu' or 'tanh', got {activation!r}")
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "rnn_" + activation, dtype, **kwargs)


class LSTM(_RNNLayer):
    """Multi-layer LSTM (gates i, f, g, o); states ``[h, c]``."""

    def __init__(self, hidden_size, num_layers=1, layout="TNC", dropout=0, bidirectional=False,
                 input_size=0, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", projection_size=None,
                 h2r_weight_initializer=None, state_clip_min=None, state_clip_max=None,
                 state_clip_nan=False, dtype="float32", **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "lstm", dtype, projection_size=projection_size,
                         lstm_state_clip_min=state_clip_min, lstm_state_clip_max=state_clip_max,
                         lstm_state_clip_nan=state_clip_nan, **kwargs)


class GRU(_RNNLayer):
    """Multi-layer GRU (gates r, z, n; ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``)."""

    def __init__(self, hidden_size, num_layers=1, layout="TNC", dropout=0, bidirectional=False,
                 input_size=0, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", dtype="float32",
                 **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "gru", dtype, **kwargs)
