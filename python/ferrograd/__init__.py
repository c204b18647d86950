"""ferrograd: MXNet 1.x's NDArray/autograd API on a Rust core. ``import ferrograd as mx``."""

import os as _os

from . import (
           _ferrograd,
           attribute,
           autograd,
           base,
           callback,
           context,
           contrib,
           executor,
           gluon,
           gradient_check,
           image,
           initializer,
           io,
           kvstore,
           lr_scheduler,
           metric,
           model,
           module,
           monitor,
           name,
           ndarray,
           onnx,
           operator,
           optimizer,
           profiler,
           recordio,
           rnn,  # noqa: F401 - mx.rnn
           runtime,
           symbol,
           test_utils,
           util,
           visualization,
)
from . import initializer as init
from . import kvstore as kv
from . import module as mod
from . import monitor as mon
from . import ndarray as nd
from . import numpy as np
from . import numpy_extension as npx
from . import symbol as sym
from . import visualization as viz
from ._ferrograd import build_info
from .attribute import AttrScope  # noqa: F401 - mx.AttrScope
from .base import MXNetError
from .context import Context, cpu, cpu_pinned, current_context, gpu, num_gpus
from .ndarray import random
from .util import (
           is_np_array,
           is_np_shape,
           np_array,
           np_shape,
           set_np_shape,
           use_np,
           use_np_array,
           use_np_shape,
)

__version__ = "0.1.0"

# rayon's threads do not survive fork: a forked child (DataLoader workers) computes serially.
_os.register_at_fork(after_in_child=_ferrograd._after_fork_in_child)

__all__ = ["autograd", "gradient_check", "test_utils", "nd", "ndarray", "base", "context",
           "random", "Context", "cpu", "cpu_pinned", "gpu", "num_gpus", "current_context",
           "MXNetError", "build_info"]
__all__ += ["np", "npx", "symbol", "sym", "executor", "name", "attribute"]
__all__ += ["operator"]
__all__ += ["util", "runtime", "contrib", "image", "np_shape", "use_np_shape", "is_np_shape",
            "set_np_shape", "np_array", "use_np_array", "is_np_array", "use_np"]
__all__ += ["model"]
__all__ += ["gluon", "init", "initializer"]
__all__ += ["visualization", "viz", "onnx"]
__all__ += ["io"]
__all__ += ["profiler"]
__all__ += ["module", "mod"]
__all__ += ["callback"]
__all__ += ["monitor", "mon"]
__all__ += ["metric", "recordio"]
__all__ += ["optimizer", "lr_scheduler", "kvstore", "kv"]
