"""Shape ops (view, reshape, expand, transpose, permute, ...): declarations for the registry.

View ops (`view=True`) return NumPy views, so the result shares storage and version counter with
its base, as in PyTorch; `reshape` is a view when NumPy can make one ("maybe").
"""
from __future__ import annotations

import numpy as np

from ._util import wrap_dim
from .registry import defop

__all__ = ["reshape", "transpose", "permute", "unsqueeze"]


def _infer_shape(shape, numel: int, ndim_in=None) -> tuple:
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    for s in shape:
        if s < -1:
            raise RuntimeError(f"invalid shape dimension {s}")
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return tuple(shape)


def _reshape(input, shape):
    return input.reshape(_infer_shape(shape, input.size))


reshape = defop("reshape", _reshape, kind="shape", view="maybe", varargs="shape",
                vjp=lambda g, input_shape: g.reshape(input_shape),
                jvp=lambda t_input, shape: t_input.reshape(shape))


def _view(input, shape):
    shape = _infer_shape(shape, input.size)
    try:
        v = input.view()
        v.shape = shape  # raises instead of copying when no view exists
    except AttributeError:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.") from None
    return v


defop("view", _view, kind="shape", view=True, varargs="shape", function=False,
      vjp=lambda g, input_shape: g.reshape(input_shape),
      jvp=lambda t_input, shape: t_input.reshape(shape))


def _view_as(input, other):
    return _view(input, other.shape)


defop("view_as", _view_as, tensors=("input", "other"), kind="shape", view=True,
      function=False, vjp=lambda g, input_shape: (g.reshape(input_shape), None),
      jvp=lambda t_input, input: t_input.view_as(input))


def _expand(input, size):
    nd = len(size)
    if nd < input.ndim:
        raise RuntimeError(f"expand(torch.FloatTensor{{{list(input.shape)}}}, size={list(size)}): "
                           "the number of sizes provided ({nd}) must be greater or equal to the "
                           f"number of dimensions in the tensor ({input.ndim})")
    lead = nd - input.ndim
    target = []
    for i, s in enumerate(size):
        cur = input.shape[i - lead] if i >= lead else None
        if s == -1:
            if cur is None:
                raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a "
                                   f"leading, non-existing dimension {i}")
            s = cur
        elif cur is not None and cur != 1 and cur != s:
            raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing "
                               f"size ({cur}) at non-singleton dimension {i}.  Target sizes: "
                               f"{list(size)}.  Tensor sizes: {list(input.shape)}")
        target.append(s)
    return np.broadcast_to(input, tuple(target))


defop("expand", _expand, kind="shape", view=True, varargs="size", function=False,
      vjp=lambda g: g, jvp=lambda t_input, size: t_input.expand(size))


def _transpose(input, dim0, dim1):
    if input.ndim == 0:
        wrap_dim(dim0, 0), wrap_dim(dim1, 0)
        return input.view()
    return np.swapaxes(input, wrap_dim(dim0, input.ndim), wrap_dim(dim1, input.ndim))


transpose = defop("transpose", _transpose, kind="shape", view=True,
                  vjp=lambda g, dim0, dim1: g.transpose(dim0, dim1),
                  jvp=lambda t_input, dim0, dim1: t_input.transpose(dim0, dim1))


def _permute(input, dims):
    if len(dims) != input.ndim:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {input.ndim} is not equal to len(dims) = {len(dims)}")
    axes = [wrap_dim(d, input.ndim) for d in dims]
    if len(set(axes)) != len(axes):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return np.transpose(input, axes)


def _permute_vjp(g, dims):
    n = len(dims)
    inv = [0] * n
    for i, d in enumerate(dims):
        inv[d % n] = i
    return g.permute(inv)


permute = defop("permute", _permute, kind="shape", view=True, varargs="dims",
                vjp=_permute_vjp, jvp=lambda t_input, dims: t_input.permute(dims))


def _unsqueeze(input, dim):
    return np.expand_dims(input, wrap_dim(dim, input.ndim + 1))


unsqueeze = defop("unsqueeze", _unsqueeze, kind="shape", view=True,
                  vjp=lambda g, input_shape: g.reshape(input_shape),
                  jvp=lambda t_input, dim: t_input.unsqueeze(dim))
