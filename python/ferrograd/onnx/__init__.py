"""``mx.onnx``: export a Symbol and its parameters to an ONNX model, as MXNet 1.9's
``mx.onnx.export_model``. Needs the ``onnx`` package (``pip install 'ferrograd[onnx]'``)."""

import numpy as np

from ._graph import OPSET, build_model
from ._registry import CONVERTERS, UnsupportedError

__all__ = ["export_model", "get_operator_support", "UnsupportedError", "OPSET"]


def get_operator_support(opset_version=None):
    """Sorted names of the MXNet operators that ``export_model`` translates (for the opset it
    writes, ``OPSET``; an older ``opset_version`` gives an empty list)."""
    if opset_version is not None and opset_version < OPSET:
        return []
    return sorted(CONVERTERS)


def export_model(sym, params, in_shapes=None, in_types=np.float32, onnx_file_path="model.onnx",
                 verbose=False, dynamic=False, dynamic_input_shapes=None,
                 run_shape_inference=False, input_type=None, input_shape=None):
    """Writes ``sym`` with ``params`` as an ONNX model (opset ``OPSET``) to ``onnx_file_path`` and
    returns the path.

    ``sym``: a Symbol or a ``-symbol.json`` path. ``params``: a dict of NDArrays (``arg:``/``aux:``
    prefixes allowed), ``[arg_params, aux_params]``, or a ``.params`` file path. Variables found in
    ``params`` become the model's initializers; the others are its inputs, in ``list_inputs()``
    order, with shapes ``in_shapes`` and types ``in_types`` (one dtype for all, or a list); a loss
    op's label variable is dropped. ``dynamic``: inputs and outputs get unknown dimensions (or
    ``dynamic_input_shapes``, ``None`` for an unknown dimension). ``input_type``/``input_shape``
    are the old names of ``in_types``/``in_shapes``. ``verbose`` logs each node converted
    (``logging.info``). An operator without an ONNX translation
    raises :class:`UnsupportedError` (an ``MXNetError``) naming it.
    """
    from ._graph import _onnx

    onnx = _onnx()
    if input_type is not None:
        in_types = input_type
    if input_shape is not None:
        in_shapes = input_shape
    model = build_model(sym, params, in_shapes, in_types, dynamic=dynamic,
                        dynamic_input_shapes=dynamic_input_shapes, verbose=verbose)
    onnx.checker.check_model(model)
    if run_shape_inference:
        model = onnx.shape_inference.infer_shapes(model)
    with open(onnx_file_path, "wb") as f:
        f.write(model.SerializeToString())
    return onnx_file_path
