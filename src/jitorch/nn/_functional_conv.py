"""The convolution and pooling part of `jitorch.nn.functional` (re-exported by functional.py).

The ops are declared in the registry families `_ops/nn_conv.py` and `_ops/nn_pool.py`; this
module only gives them PyTorch's functional names (`unfold` / `fold` are the `im2col` /
`col2im` ops; `max_pool2d(..., return_indices=)` selects from `max_pool2d_with_indices`).
"""
from __future__ import annotations

from .._ops.nn_conv import (conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d,
                            conv_transpose3d)
from .._ops.nn_pool import (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d,
                            adaptive_max_pool1d, adaptive_max_pool2d, adaptive_max_pool3d,
                            avg_pool1d, avg_pool2d, avg_pool3d, col2im as fold,
                            im2col as unfold, lp_pool1d, lp_pool2d, lp_pool3d, max_pool1d,
                            max_pool1d_with_indices, max_pool2d, max_pool2d_with_indices,
                            max_pool3d, max_pool3d_with_indices)

__all__ = [
    "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "max_pool1d", "max_pool2d",
    "max_pool1d_with_indices", "max_pool2d_with_indices", "avg_pool1d", "avg_pool2d",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d",
    "unfold", "fold",
    "conv3d", "conv_transpose3d", "max_pool3d", "max_pool3d_with_indices", "avg_pool3d",
    "adaptive_avg_pool3d", "adaptive_max_pool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d",
]
