"""Convolutions of `jitorch.nn.functional`: conv1d/2d/3d, conv_transpose1d/2d/3d.

NumPy kernels (rank-generic over 1, 2 or 3 spatial dims, batched): im2col is a strided view of the
padded input (`as_strided`: (N, C, *out, *kernel)), then ONE batched matmul over the groups;
the adjoint (col2im) is one matmul followed by a strided add per kernel offset (a loop over the
kernel's few offsets, never over pixels).

Autograd: three internal registry ops, all linear in each tensor argument, whose VJPs are each
other (so convolutions are differentiable any number of times):
  `_conv_nd(x, w)`            y  = conv(x, w)          (padding given as explicit lo/hi pairs)
  `_conv_nd_input_grad(g, w)` x' = conv(., w)^T g      (the transposed convolution)
  `_conv_nd_weight_grad(x, g)` w' = d<conv(x, w), g>/dw
The public ops (conv2d, conv_transpose2d, unfold, fold, ...) are registry ops too: their NumPy
impls call the kernels directly, their VJP/JVP rules are written with the internal ops.
"""
from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import infer
from ._linalg_util import matmul_arrays
from .registry import _pt_name, defop
from .batching import LOOP, fold
from .. import _dtype as dt

# why the compiler runs these ops in the interpreter (their declarations' interpreted=)
_NOT_YET = "no CPU lowering yet (conv1d, conv2d are lowered)"

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d"]


# --- argument normalisation ----------------------------------------------------------------------
def _tup(v, nd, name, who="convolution"):
    """An int or a sequence of nd ints -> tuple of nd ints (PyTorch's expand_param_if_needed)."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return (int(v),) * nd
    v = tuple(int(x) for x in v)
    if len(v) == 1:
        return v * nd
    if len(v) != nd:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {nd} "
                           f"values to match the {who} dimensions, but got {name}={list(v)}")
    return v


def _flat_pads(pads) -> tuple:
    return tuple(p for lo_hi in pads for p in lo_hi)


def _pairs(flat) -> tuple:
    return tuple((flat[2 * i], flat[2 * i + 1]) for i in range(len(flat) // 2))


def _conv_params(nd, weight_shape, stride, padding, dilation):
    """(stride, flat lo/hi pads, dilation) with PyTorch's checks; "same" pads asymmetrically
    (the extra element on the high side) when the total is odd."""
    stride = _tup(stride, nd, "stride")
    dilation = _tup(dilation, nd, "dilation")
    if isinstance(padding, str):
        if padding == "valid":
            pads = ((0, 0),) * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            tot = [d * (k - 1) for d, k in zip(dilation, weight_shape[2:])]
            pads = tuple((t // 2, t - t // 2) for t in tot)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        pads = tuple((p, p) for p in _tup(padding, nd, "padding"))
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for lo_hi in pads for p in lo_hi):
        raise RuntimeError("negative padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    return stride, _flat_pads(pads), dilation


def _check_dtypes(input, weight, bias):
    for other in (weight, bias):
        if other is not None and other.dtype != input.dtype:
            raise RuntimeError(f"expected scalar type {_pt_name(dt.from_numpy_dtype(input.dtype))}"
                               f" but found {_pt_name(dt.from_numpy_dtype(other.dtype))}")


def _check_conv(name, nd, input, weight, bias, groups, transposed=False):
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                           f"{name}, but got input of size: {list(input.shape)}")
    if weight.ndim != nd + 2:
        raise RuntimeError(f"weight should have {nd + 2} dimensions for {name}, but got weight "
                           f"of size {list(weight.shape)}")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    _check_dtypes(input, weight, bias)
    c = input.shape[-nd - 1]
    shape = list(input.shape) if input.ndim == nd + 2 else [1] + list(input.shape)
    if transposed:
        if c != weight.shape[0]:
            raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected"
                               f" input{shape} to have {weight.shape[0]} channels, but got {c} "
                               f"channels instead")
        if weight.shape[0] % groups:
            raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by "
                               f"{groups} at dimension 0, but got weight of size "
                               f"[{list(weight.shape)}] instead")
        out_c = weight.shape[1] * groups
    else:
        if weight.shape[0] % groups:
            raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by "
                               f"{groups} at dimension 0, but got weight of size "
                               f"[{list(weight.shape)}] instead")
        if c != weight.shape[1] * groups:
            raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, "
                               f"expected input{shape} to have {weight.shape[1] * groups} "
                               f"channels, but got {c} channels instead")
        out_c = weight.shape[0]
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != out_c):
        raise RuntimeError(f"Given weight of size {list(weight.shape)}, expected bias to be "
                           f"1-dimensional with {out_c} elements, but got bias of size "
                           f"{list(bias.shape)} instead")


# --- NumPy kernels (batched: (N, C, *spatial)) ---------------------------------------------------
def _pad(x, pads, value=0.0):
    pairs = _pairs(pads)
    if not any(lo or hi for lo, hi in pairs):
        return x
    return np.pad(x, ((0, 0),) * (x.ndim - len(pairs)) + pairs, constant_values=value)


def _out_sizes(spatial, pads, k, stride, dil):
    return tuple((s + pads[2 * i] + pads[2 * i + 1] - dil[i] * (k[i] - 1) - 1) // stride[i] + 1
                 for i, s in enumerate(spatial))


def _windows(xp, out, k, stride, dil):
    """View (lead..., *out, *k) of the padded array xp (lead..., *padded spatial)."""
    nd = len(k)
    st = xp.strides
    lead = xp.ndim - nd
    shape = xp.shape[:lead] + tuple(out) + tuple(k)
    strides = (st[:lead] + tuple(st[lead + i] * stride[i] for i in range(nd))
               + tuple(st[lead + i] * dil[i] for i in range(nd)))
    return as_strided(xp, shape, strides, writeable=False)


def _col2im(cols, padded, out, k, stride, dil):
    """Adjoint of `_windows`: cols (lead..., *k, *out) summed into zeros (lead..., *padded)."""
    nd = len(k)
    lead = cols.shape[:cols.ndim - 2 * nd]
    xp = np.zeros(lead + tuple(padded), cols.dtype)
    if 0 in out or 0 in lead:
        return xp
    pre = (slice(None),) * len(lead)
    for off in np.ndindex(*k):
        sl = tuple(slice(off[i] * dil[i], off[i] * dil[i] + stride[i] * (out[i] - 1) + 1,
                         stride[i]) for i in range(nd))
        xp[pre + sl] += cols[pre + off]
    return xp


def _crop(xp, pads, spatial):
    nd = len(spatial)
    sl = tuple(slice(pads[2 * i], pads[2 * i] + spatial[i]) for i in range(nd))
    return np.ascontiguousarray(xp[(slice(None),) * (xp.ndim - nd) + sl])


def _cols(x, out, k, stride, pads, dil, groups):
    """im2col: (g, cg * K, N * L) with the output positions innermost (the copy then reads
    rows of the input, which is several times faster than putting channels innermost)."""
    n, c = x.shape[:2]
    nd = len(k)
    cg = c // groups
    win = _windows(_pad(x, pads), out, k, stride, dil).reshape((n, groups, cg) + out + k)
    perm = (1, 2) + tuple(range(3 + nd, 3 + 2 * nd)) + (0,) + tuple(range(3, 3 + nd))
    return win.transpose(perm).reshape(groups, cg * math.prod(k), n * math.prod(out))


def _grad_rows(gy, groups):
    """gy (N, O, *out) -> (g, og, N * L)."""
    n, o = gy.shape[:2]
    big_l = math.prod(gy.shape[2:])
    return gy.reshape(n, groups, o // groups, big_l).transpose(1, 2, 0, 3).reshape(
        groups, o // groups, n * big_l)


def _conv_kernel(x, w, stride, pads, dil, groups):
    n = x.shape[0]
    o, cg = w.shape[:2]
    k = tuple(w.shape[2:])
    out = _out_sizes(x.shape[2:], pads, k, stride, dil)
    cols = _cols(x, out, k, stride, pads, dil, groups)
    # matmul_arrays: half types multiply in float32 and round back (NumPy alone turns bf16
    # operands into a float32 result)
    res = matmul_arrays(w.reshape(groups, o // groups, cg * math.prod(k)), cols)  # (g, og, N*L)
    res = res.reshape(o, n, math.prod(out)).transpose(1, 0, 2).reshape((n, o) + out)
    return np.ascontiguousarray(res)


def _conv_input_kernel(gy, w, spatial, stride, pads, dil, groups):
    n = gy.shape[0]
    o, cg = w.shape[:2]
    k = tuple(w.shape[2:])
    nd = len(k)
    out = tuple(gy.shape[2:])
    g = groups
    wt = w.reshape(g, o // g, cg * math.prod(k)).transpose(0, 2, 1)
    cols = matmul_arrays(wt, _grad_rows(gy, g))  # (g, cg*K, N*L)
    cols = cols.reshape((g * cg,) + k + (n,) + out)
    padded = tuple(s + pads[2 * i] + pads[2 * i + 1] for i, s in enumerate(spatial))
    xp = np.zeros((g * cg, n) + padded, cols.dtype)  # channel-major: the adds read cols rows
    if 0 not in out and n:
        for off in np.ndindex(*k):
            sl = tuple(slice(off[i] * dil[i], off[i] * dil[i] + stride[i] * (out[i] - 1) + 1,
                             stride[i]) for i in range(nd))
            xp[(slice(None), slice(None)) + sl] += cols[(slice(None),) + off]
    return _crop(xp.swapaxes(0, 1), pads, spatial)


def _conv_weight_kernel(x, gy, k, stride, pads, dil, groups):
    o = gy.shape[1]
    cg = x.shape[1] // groups
    cols = _cols(x, tuple(gy.shape[2:]), k, stride, pads, dil, groups)  # (g, cg*K, N*L)
    res = matmul_arrays(cols, _grad_rows(gy, groups).transpose(0, 2, 1))  # (g, cg*K, og)
    res = res.reshape((groups, cg) + tuple(k) + (o // groups,))
    res = np.moveaxis(res, -1, 1).reshape((o, cg) + tuple(k))
    return np.ascontiguousarray(res)


# --- internal linear ops (batched; explicit lo/hi pads) ------------------------------------------
# (attributes may arrive as lists from compiled graphs: normalised to tuples here)
def _conv_nd_impl(input, weight, stride, padding, dilation, groups):
    return _conv_kernel(input, weight, tuple(stride), tuple(padding), tuple(dilation), groups)


def _conv_nd_input_grad_impl(grad, weight, input_size, stride, padding, dilation, groups):
    return _conv_input_kernel(grad, weight, tuple(input_size), tuple(stride), tuple(padding),
                              tuple(dilation), groups)


def _conv_nd_weight_grad_impl(input, grad, kernel_size, stride, padding, dilation, groups):
    return _conv_weight_kernel(input, grad, tuple(kernel_size), tuple(stride), tuple(padding),
                               tuple(dilation), groups)


def _conv_nd_vjp(g, input, weight, input_shape, weight_shape, stride, padding, dilation, groups):
    return (_conv_nd_input_grad(g, weight, tuple(input_shape[2:]), stride, padding, dilation,
                                groups),
            _conv_nd_weight_grad(input, g, tuple(weight_shape[2:]), stride, padding, dilation,
                                 groups))


def _conv_nd_jvp(t_input, t_weight, input, weight, stride, padding, dilation, groups):
    return (_conv_nd(t_input, weight, stride, padding, dilation, groups)
            + _conv_nd(input, t_weight, stride, padding, dilation, groups))


def _input_grad_vjp(gg, grad, weight, weight_shape, input_size, stride, padding, dilation,
                    groups):
    return (_conv_nd(gg, weight, stride, padding, dilation, groups),
            _conv_nd_weight_grad(gg, grad, tuple(weight_shape[2:]), stride, padding, dilation,
                                 groups))


def _input_grad_jvp(t_grad, t_weight, grad, weight, input_size, stride, padding, dilation,
                    groups):
    return (_conv_nd_input_grad(t_grad, weight, input_size, stride, padding, dilation, groups)
            + _conv_nd_input_grad(grad, t_weight, input_size, stride, padding, dilation, groups))


def _weight_grad_vjp(gw, input, grad, input_shape, stride, padding, dilation, groups):
    return (_conv_nd_input_grad(grad, gw, tuple(input_shape[2:]), stride, padding, dilation,
                                groups),
            _conv_nd(input, gw, stride, padding, dilation, groups))


def _weight_grad_jvp(t_input, t_grad, input, grad, kernel_size, stride, padding, dilation,
                     groups):
    return (_conv_nd_weight_grad(t_input, grad, kernel_size, stride, padding, dilation, groups)
            + _conv_nd_weight_grad(input, t_grad, kernel_size, stride, padding, dilation,
                                   groups))


_conv_nd = defop("_conv_nd", _conv_nd_impl, tensors=("input", "weight"), kind="other",
                 method=False, vjp=_conv_nd_vjp, jvp=_conv_nd_jvp, infer=infer.same,
                 batch=LOOP)
_conv_nd_input_grad = defop("_conv_nd_input_grad", _conv_nd_input_grad_impl,
                            tensors=("grad", "weight"), kind="other", method=False,
                            vjp=_input_grad_vjp, jvp=_input_grad_jvp, infer=infer.same,
                            batch=LOOP)
_conv_nd_weight_grad = defop("_conv_nd_weight_grad", _conv_nd_weight_grad_impl,
                             tensors=("input", "grad"), kind="other", method=False,
                             vjp=_weight_grad_vjp, jvp=_weight_grad_jvp, infer=infer.same,
                             batch=LOOP)


# --- public convolutions -------------------------------------------------------------------------
def _bias_shape(nd):
    return (1, -1) + (1,) * nd


def _batched(t, nd):
    """(tensor with a batch dim, whether one was added) for jitorch tensors in rules."""
    return (t, False) if t.ndim == nd + 2 else (t.unsqueeze(0), True)


def _make_conv(nd):
    name = f"conv{nd}d"

    def impl(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        _check_conv(name, nd, input, weight, bias, groups)
        s, p, d = _conv_params(nd, weight.shape, stride, padding, dilation)
        x = input if input.ndim == nd + 2 else input[None]
        padded = [x.shape[2 + i] + p[2 * i] + p[2 * i + 1] for i in range(nd)]
        eff = [d[i] * (weight.shape[2 + i] - 1) + 1 for i in range(nd)]
        if any(e > q for e, q in zip(eff, padded)):
            raise RuntimeError(f"Calculated padded input size per channel: "
                               f"({' x '.join(map(str, padded))}). Kernel size: "
                               f"({' x '.join(map(str, eff))}). Kernel size can't be greater "
                               f"than actual input size")
        y = _conv_kernel(x, weight, s, p, d, groups)
        if bias is not None:
            y += bias.reshape(_bias_shape(nd))
        return y if input.ndim == nd + 2 else y[0]

    def vjp(g, input, weight, bias, weight_shape, stride, padding, dilation, groups,
            needs_input_grad=(True, True, True)):
        s, p, d = _conv_params(nd, weight_shape, stride, padding, dilation)
        x, unb = _batched(input, nd)
        gb = g.unsqueeze(0) if unb else g
        # (sizes read from `input` itself: they stay symbolic when compiled backwards trace
        # this rule, those of the unsqueezed copy would not)
        gi = gw = gbias = None
        if needs_input_grad[0]:  # (not for a first layer's input)
            gi = _conv_nd_input_grad(gb, weight, tuple(input.shape[input.ndim - nd:]), s, p,
                                     d, groups)
            gi = gi.select(0, 0) if unb else gi
        if needs_input_grad[1]:
            gw = _conv_nd_weight_grad(x, gb, tuple(weight_shape[2:]), s, p, d, groups)
        if bias is not None and needs_input_grad[2]:
            gbias = gb.sum((0,) + tuple(range(2, nd + 2)))
        return gi, gw, gbias

    def jvp(t_input, t_weight, t_bias, input, weight, stride, padding, dilation, groups):
        s, p, d = _conv_params(nd, weight.shape, stride, padding, dilation)
        x, unb = _batched(input, nd)
        tx = t_input.unsqueeze(0) if unb else t_input
        y = _conv_nd(tx, weight, s, p, d, groups) + _conv_nd(x, t_weight, s, p, d, groups)
        if t_bias is not None:
            y = y + t_bias.reshape(_bias_shape(nd))
        return y.select(0, 0) if unb else y

    impl.__name__ = name
    impl.__doc__ = (f"{nd}-D convolution (cross-correlation) of (N, C_in, *) or unbatched input "
                    f"with weight (C_out, C_in / groups, *kernel), plus bias.")
    return defop(name, impl, tensors=("input", "weight", "bias"), kind="other", method=False,
                 vjp=vjp, jvp=jvp, infer=infer.same, batch=fold(nd + 2), autocast="lower",
                 interpreted=_NOT_YET if nd == 3 else None)


conv1d = _make_conv(1)
conv2d = _make_conv(2)
conv3d = _make_conv(3)


def _transpose_params(nd, input_shape, weight_shape, stride, padding, output_padding, groups,
                      dilation):
    s = _tup(stride, nd, "stride")
    p = _tup(padding, nd, "padding")
    op = _tup(output_padding, nd, "output_padding")
    d = _tup(dilation, nd, "dilation")
    if any(v <= 0 for v in s):
        raise RuntimeError("non-positive stride is not supported")
    if any(v < 0 for v in p):
        raise RuntimeError("negative padding is not supported")
    if any(v < 0 for v in op):
        raise RuntimeError("negative output_padding is not supported")
    if any(v <= 0 for v in d):
        raise RuntimeError("dilation should be greater than zero")
    if any(o >= s_ and o >= d_ for o, s_, d_ in zip(op, s, d)):
        names = ("depth", "height", "width")[3 - nd:]
        parts = [f"output_padding_{n}: {v}" for n, v in zip(names, op)]
        parts += [f"stride_{n}: {v}" for n, v in zip(names, s)]
        parts += [f"dilation_{n}: {v}" for n, v in zip(names, d)]
        raise RuntimeError("output padding must be smaller than either stride or dilation, but "
                           "got " + " ".join(parts))
    k = weight_shape[2:]
    out = tuple((input_shape[-nd + i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] + 1
                for i in range(nd))
    if any(o <= 0 for o in out):
        raise RuntimeError(f"Given input size per channel: {list(input_shape[-nd:])}. "
                           f"Calculated output size per channel: {list(out)}. Output size is "
                           f"too small")
    return s, _flat_pads(tuple((v, v) for v in p)), d, out


def _make_conv_transpose(nd):
    name = f"conv_transpose{nd}d"

    def impl(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
             dilation=1):
        _check_conv(name, nd, input, weight, bias, groups, transposed=True)
        s, p, d, out = _transpose_params(nd, input.shape, weight.shape, stride, padding,
                                         output_padding, groups, dilation)
        x = input if input.ndim == nd + 2 else input[None]
        y = _conv_input_kernel(x, weight, out, s, p, d, groups)
        if bias is not None:
            y += bias.reshape(_bias_shape(nd))
        return y if input.ndim == nd + 2 else y[0]

    def vjp(g, input, weight, bias, weight_shape, stride, padding, output_padding, groups,
            dilation):
        s, p, d, _ = _transpose_params(nd, input.shape, weight_shape, stride, padding,
                                       output_padding, groups, dilation)
        x, unb = _batched(input, nd)
        gb = g.unsqueeze(0) if unb else g
        gi = _conv_nd(gb, weight, s, p, d, groups)
        gw = _conv_nd_weight_grad(gb, x, tuple(weight_shape[2:]), s, p, d, groups)
        gbias = None if bias is None else gb.sum((0,) + tuple(range(2, nd + 2)))
        return (gi.select(0, 0) if unb else gi), gw, gbias

    def jvp(t_input, t_weight, t_bias, input, weight, stride, padding, output_padding, groups,
            dilation):
        s, p, d, out = _transpose_params(nd, input.shape, weight.shape, stride, padding,
                                         output_padding, groups, dilation)
        x, unb = _batched(input, nd)
        tx = t_input.unsqueeze(0) if unb else t_input
        y = (_conv_nd_input_grad(tx, weight, out, s, p, d, groups)
             + _conv_nd_input_grad(x, t_weight, out, s, p, d, groups))
        if t_bias is not None:
            y = y + t_bias.reshape(_bias_shape(nd))
        return y.select(0, 0) if unb else y

    impl.__name__ = name
    impl.__doc__ = (f"{nd}-D transposed convolution of (N, C_in, *) or unbatched input with "
                    f"weight (C_in, C_out / groups, *kernel), plus bias.")
    return defop(name, impl, tensors=("input", "weight", "bias"), kind="other", method=False,
                 vjp=vjp, jvp=jvp, infer=infer.same, interpreted=_NOT_YET,
                 batch=fold(nd + 2), autocast="lower")


conv_transpose1d = _make_conv_transpose(1)
conv_transpose2d = _make_conv_transpose(2)
conv_transpose3d = _make_conv_transpose(3)
