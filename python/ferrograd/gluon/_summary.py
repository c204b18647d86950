"""``Block.summary``: MXNet's table of every layer's output shape and parameter count."""

from .. import ndarray as nd
from .. import symbol as sym

_ROW = "{:>20}  {:>42} {:>15}"


def _shapes_text(values):
    """Shapes of (nested) outputs written as MXNet does: ``(2, 5)`` or ``(1, 3), (2, 2)``."""
    def shapes(v):
        if isinstance(v, (list, tuple)):
            return [shapes(i) for i in v]
        return v.shape if isinstance(v, nd.NDArray) else v

    out = shapes(values)
    return str(out)[1:-1] if isinstance(out, list) else str(out)


def summarize(block, inputs):
    """Runs ``block(*inputs)`` with a hook on every non-container block, then prints the table."""
    from .block import HybridBlock
    from .nn.basic_layers import HybridSequential, Sequential

    rows = [("Input", _shapes_text(list(inputs)) if len(inputs) > 1 else
             _shapes_text(inputs[0]), 0, 0, 0)]
    seen = set()
    handles = []

    def record(layer, _inputs, outputs):
        # Hooks also fire while a deferred-shape pass traces the graph; only real runs count.
        if any(isinstance(o, sym.Symbol) for o in _leaves(outputs)):
            return
        total = trainable = shared = 0
        for p in layer.params.values():
            size = p._reduce().size
            total += size
            trainable += 0 if p.grad_req == "null" else size
            if id(p) in seen:
                shared += size
            seen.add(id(p))
        rows.append((f"{type(layer).__name__}-{len(rows)}", _shapes_text(outputs), total,
                     trainable, shared))

    hooked = set()

    def attach(layer):
        if isinstance(layer, HybridBlock) and layer._active:
            raise AssertionError(f'"{layer.name}" must not be hybridized to print summary.')
        # A block added twice gets one hook (MXNet hooks it twice and lists each call twice).
        if not isinstance(layer, (Sequential, HybridSequential)) and id(layer) not in hooked:
            hooked.add(id(layer))
            handles.append(layer.register_forward_hook(record))

    try:
        block.apply(attach)
        block(*inputs)
    finally:
        for h in handles:
            h.detach()
    total = sum(r[2] for r in rows)
    trainable = sum(r[3] for r in rows)
    shared = sum(r[4] for r in rows)
    lines = ["-" * 80, _ROW.format("Layer (type)", "Output Shape", "Param #"), "=" * 80]
    lines += [_ROW.format(name, shape, count) for name, shape, count, _, _ in rows]
    lines += ["=" * 80,
              "Parameters in forward computation graph, duplicate included",
              f"   Total params: {total}",
              f"   Trainable params: {trainable}",
              f"   Non-trainable params: {total - trainable}",
              f"Shared params in forward computation graph: {shared}",
              f"Unique parameters in model: {total - shared}",
              "-" * 80]
    print("\n".join(lines))


def _leaves(values):
    if isinstance(values, (list, tuple)):
        return [leaf for v in values for leaf in _leaves(v)]
    return [values]
