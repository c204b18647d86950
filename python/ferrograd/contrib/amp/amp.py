"""``mx.contrib.amp.amp``: each of MXNet's AMP functions raises a clear NotImplementedError."""

__all__ = ["init", "init_trainer", "scale_loss", "unscale", "convert_model",
           "convert_hybrid_block", "list_lp16_ops", "list_fp32_ops", "list_lp16_fp32_ops",
           "list_conditional_fp32_ops", "list_widest_type_cast", "list_loss_output_functions",
           "list_lp16_use_fp32_params", "convert_symbol"]


def _not_implemented(name):
    def fn(*args, **kwargs):
        raise NotImplementedError(f"mx.contrib.amp.{name}: automatic mixed precision is not "
                                  "implemented in ferrograd; train in float32 or cast "
                                  "explicitly (astype / Block.cast)")

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"MXNet's ``amp.{name}``: raises NotImplementedError in ferrograd."
    return fn


init = _not_implemented("init")
init_trainer = _not_implemented("init_trainer")
scale_loss = _not_implemented("scale_loss")
unscale = _not_implemented("unscale")
convert_model = _not_implemented("convert_model")
convert_hybrid_block = _not_implemented("convert_hybrid_block")
list_lp16_ops = _not_implemented("list_lp16_ops")
list_fp32_ops = _not_implemented("list_fp32_ops")
list_lp16_fp32_ops = _not_implemented("list_lp16_fp32_ops")
list_conditional_fp32_ops = _not_implemented("list_conditional_fp32_ops")
list_widest_type_cast = _not_implemented("list_widest_type_cast")
list_loss_output_functions = _not_implemented("list_loss_output_functions")
list_lp16_use_fp32_params = _not_implemented("list_lp16_use_fp32_params")
convert_symbol = _not_implemented("convert_symbol")
