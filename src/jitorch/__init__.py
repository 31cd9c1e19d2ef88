"""jitorch: a PyTorch-compatible tensor library whose heart is a JIT to GIL-free Numba programs.

This module is the public face: it only re-exports. `import jitorch as torch` runs ordinary
PyTorch code that stays inside what jitorch offers.
"""
from . import _dtype
from ._dtype import (bfloat16, bool, cdouble, cfloat, complex64, complex128, double, dtype,
                     finfo, float, float16, float32, float64, get_default_dtype, half, iinfo,
                     int, int8, int16, int32, int64, long, promote_types, result_type, short,
                     set_default_dtype, uint8, can_cast)
from ._device import device
from ._tensor import Size, Tensor
from . import autograd
from .autograd import enable_grad, inference_mode, no_grad, set_grad_enabled
from .autograd.grad_mode import is_grad_enabled, is_inference_mode_enabled
from ._creation import *  # noqa: F401,F403
from ._random import *  # noqa: F401,F403
from ._tensor_str import *  # noqa: F401,F403
from . import _random as random  # `jitorch.random.manual_seed`, `fork_rng`, ...
from ._ops import *  # noqa: F401,F403
from . import linalg  # the `jitorch.linalg` namespace
from . import fft  # the `jitorch.fft` namespace (issue 11)
from ._ops.indexing import _getitem, _setitem  # noqa: F401  (Tensor.__getitem__/__setitem__)
from ._ops.registry import PUBLIC as _PUBLIC
from . import return_types  # noqa: E402
from ._threads import get_num_threads, set_num_threads  # noqa: E402
from . import jit  # noqa: E402
from . import script  # noqa: E402  (a callable module: `@jitorch.script`)
from . import nn  # noqa: E402  (`jitorch.nn`: modules, init, utils)
from . import utils  # noqa: E402  (`jitorch.utils.data`)
from .utils.dlpack import from_dlpack  # noqa: E402
from . import optim  # noqa: E402  (`jitorch.optim`: optimizers, lr_scheduler)
from . import func  # noqa: E402  (`jitorch.func`: functional_call, grad, vjp, jvp, jac*)
from .func import vmap  # noqa: E402  (`jitorch.vmap`, as torch.vmap)
from .serialization import load, save  # noqa: E402  (safe, pickle-free)
from ._determinism import (  # noqa: E402  (deterministic mode)
    are_deterministic_algorithms_enabled, get_deterministic_debug_mode, is_deterministic,
    is_deterministic_algorithms_warn_only_enabled, set_deterministic, set_deterministic_debug_mode,
    use_deterministic_algorithms)
from . import serialization  # noqa: E402,F401  (`jitorch.serialization.safe_globals`)
from . import profiler  # noqa: E402  (`jitorch.profiler`; `jitorch.autograd.profiler`)
from .autograd import profiler as _autograd_profiler  # noqa: E402,F401
from . import amp, cpu  # noqa: E402  (`jitorch.amp`: autocast, GradScaler; `jitorch.cpu.amp`)
from .amp import autocast  # noqa: E402
from ._precision import *  # noqa: E402,F401,F403  (autocast state, float32 matmul precision)

# the namespaces scripts touch on any machine (CPU-only answers, as PyTorch's CPU build gives)
from . import accelerator, backends, cuda, distributed  # noqa: E402,F401
from . import onnx, special, testing  # noqa: E402,F401
from . import distributions  # noqa: E402,F401  (`jitorch.distributions`, issue 19)
from ._device import get_default_device, set_default_device  # noqa: E402,F401
# sparse COO tensors (issue 19): the layouts, the constructor and `jitorch.sparse`
from ._layout import layout, sparse_coo, strided  # noqa: E402,F401
from . import sparse  # noqa: E402
from .sparse._coo import sparse_coo_tensor, spmm  # noqa: E402,F401

globals().update({k: v for k, v in _PUBLIC.items() if k not in globals()})

# issue 19: the legacy tensor types, and `jitorch.compile` (the script frontend behind
# PyTorch 2.x's entry point)
from ._legacy_types import *  # noqa: E402,F401,F403  (FloatTensor, ..., set_default_tensor_type)
from .jit._compile import compile  # noqa: E402,F401

from . import torch_version, version  # noqa: E402  (issue 19: docs/compat.md)
from .version import __version__  # noqa: E402


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def is_floating_point(input: Tensor) -> bool:
    return input.is_floating_point()


def is_complex(input: Tensor) -> bool:
    return input.is_complex()


def numel(input: Tensor) -> int:
    return input.numel()


def __getattr__(name):  # only reached for names the module does not have
    from ._out_of_scope import missing
    raise missing("jitorch", name)
