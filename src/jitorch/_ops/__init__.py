"""The op families. Importing this package declares every op in the registry.

`__all__` is the union of the families' `__all__` lists, so `from jitorch._ops import *` (done
by `jitorch/__init__.py`) exports op functions only, never the family modules themselves.
Module names never equal an op name (`sorting`, not `sort`), so `_ops.<module>` stays a module.
"""
from . import registry  # noqa: F401
from . import (binary, compare, complex_ops, conversion, einsum_ops, indexing, join, linalg,
               linalg_decomp, linalg_diag, linalg_misc, linalg_norm, linalg_svd, minmax,
               moments, reduce, reorder, scan, scatter_ops, search, shape, sorting, ternary,
               unary)
from . import nn_activation, nn_loss, nn_misc, nn_norm
from . import nn_conv, nn_pool
from . import fft_ops, fft_windows  # noqa: F401  (jitorch.fft's ops; windows, stft)
from . import linalg_cholesky_solve, meshgrid, nn_distance, nn_instance_norm, nn_resample
from . import nn_activation_extra, nn_loss_extra, special_fns
from . import linalg_exp  # noqa: F401  (matrix_exp, dist)
from . import factories, index_write  # noqa: F401  (compiler-facing ops; nothing public)
from . import compat_more, linalg_eig, linalg_lu, matrix_build, nn_ctc  # noqa: E402  (issue 19)
from . import compat_aliases  # noqa: E402  (issue 19; reads compat_more's Tensor methods)
from . import compat_runtime  # noqa: E402  (issue 19)
from . import operators  # noqa: F401  (binds Tensor dunders; must come after every family)

_FAMILIES = (binary, compare, complex_ops, conversion, einsum_ops, indexing, join, linalg,
             linalg_decomp, linalg_diag, linalg_misc, linalg_norm, linalg_svd, minmax, moments,
             reduce, reorder, scan, scatter_ops, search, shape, sorting, ternary, unary,
             nn_activation, nn_loss, nn_misc, nn_norm, nn_conv, nn_pool,
             linalg_cholesky_solve, meshgrid, nn_distance, nn_instance_norm, nn_resample,
             nn_activation_extra, special_fns, fft_windows,
             linalg_exp)
_FAMILIES += (compat_more, compat_aliases, compat_runtime, linalg_eig, linalg_lu,  # issue 19
              matrix_build, nn_ctc)

__all__ = sorted({name for m in _FAMILIES for name in getattr(m, "__all__", ())})
globals().update({name: getattr(m, name) for m in _FAMILIES
                  for name in getattr(m, "__all__", ())})
