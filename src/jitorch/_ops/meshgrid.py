"""`meshgrid`: coordinate grids from 0-D / 1-D tensors, PyTorch's `indexing` rules.

Each output is a view of its input reshaped to one non-unit axis and expanded over the others
(PyTorch's outputs are expanded views too), so gradients flow back by the `expand` VJP (a sum).
Omitting `indexing` means "ij" with PyTorch's UserWarning that it will become required.
"""
from __future__ import annotations

import warnings

from .._tensor import Tensor

__all__ = ["meshgrid"]


def meshgrid(*tensors, indexing=None):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"meshgrid(): expected Tensor as element of the tensor list, got "
                            f"{type(t).__name__}")
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got a tensor of shape {list(t.shape)}")
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but '
                           f'received: {indexing}')
    if any(t.dtype != tensors[0].dtype for t in tensors):
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    ts = list(tensors)
    swap = indexing == "xy" and len(ts) >= 2
    if swap:  # "xy" is "ij" with the first two inputs (and outputs) exchanged
        ts[0], ts[1] = ts[1], ts[0]
    sizes = [t.numel() for t in ts]
    out = []
    for i, t in enumerate(ts):
        shape = [1] * len(ts)
        shape[i] = sizes[i]
        out.append(t.reshape(shape).expand(*sizes))
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)
