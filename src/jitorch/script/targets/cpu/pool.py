"""The pooling kernels that generated programs call (max/avg/adaptive-avg pooling forward and
backward): njit(nogil), disk-cached, typed per dtype only; every size is a run-time value.
targets/cpu/lower_pool.py lowers pooling ops to calls of them. Kernels see the input as (R, H, W):
every leading dim flattened into R planes, 1-D pools with H == 1. Window bounds are clipped per
output element, so padding is never materialised and nothing outside a plane is read. Max
pooling keeps eager's choice of element (the first maximum in window order, a NaN wins), so
gradients route to the same input as eager's `argmax`; the backward kernels recompute that
choice instead of storing indices.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ...kernels import kernel_call, source_stamp
from . import alloc
from .alloc import _jt_empty, _jt_zeros  # intrinsics: no NumPy overload compiled per type

__all__ = ["pool_out_size", "max_pool2d_forward", "max_pool2d_backward", "avg_pool2d_forward",
           "avg_pool2d_backward", "adaptive_avg_pool2d_forward", "adaptive_avg_pool2d_backward"]

_OPTS = dict(nogil=True, error_model="numpy", fastmath={"reassoc", "contract"}, cache=True)


# --- kernels (x: (R, H, W) C-contiguous) ---------------------------------------------------------
@njit(**_OPTS)
def pool_out_size(size, k, s, p, d, ceil_mode):
    """PyTorch's pooling_output_shape."""
    num = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    o = num // s + 1
    if ceil_mode and (o - 1) * s >= size + p:
        o -= 1
    return o


@njit(**_OPTS)
def _argmax_window(plane, h0, w0, kh, kw, dh, dw):
    """(value, flat index in the plane) of the window's first maximum (a NaN wins); -1 when the
    window holds no element of the plane."""
    h, w = plane.shape
    best = plane.dtype.type(-np.inf)
    bi = -1
    nan = False
    for a in range(kh):
        hh = h0 + a * dh
        if hh < 0 or hh >= h:
            continue
        row = plane[hh]
        for b in range(kw):
            ww = w0 + b * dw
            if ww < 0 or ww >= w:
                continue
            v = row[ww]
            nan |= v != v
            if bi < 0 or v > best:
                best = v
                bi = hh * w + ww
    if nan:  # rare: the first NaN wins (a NaN test in the loop above costs 3x)
        for a in range(kh):
            hh = h0 + a * dh
            if 0 <= hh < h:
                for b in range(kw):
                    ww = w0 + b * dw
                    if 0 <= ww < w and plane[hh, ww] != plane[hh, ww]:
                        return plane[hh, ww], hh * w + ww
    return best, bi


@njit(**_OPTS)
def max_pool2d_forward_2x2(x, oh, ow):
    """The values of the common 2x2 max pool (stride 2, no padding or dilation; 2*oh <= H and
    2*ow <= W, checked): four loads per output, no bounds logic. A kernel of its own, so that
    a program whose pool is this one compiles neither `_argmax_window` nor the general loops."""
    r = x.shape[0]
    if 2 * oh > x.shape[1] or 2 * ow > x.shape[2]:
        raise ValueError("max_pool2d_forward_2x2: more outputs than 2x2 windows")
    y = _jt_empty((r, oh, ow), x.dtype)
    for c in range(r):
        for i in range(oh):
            # strided views indexed by the loop variable only (no wraparound checks)
            r00, r01 = x[c, 2 * i, 0:2 * ow:2], x[c, 2 * i, 1:2 * ow:2]
            r10, r11 = x[c, 2 * i + 1, 0:2 * ow:2], x[c, 2 * i + 1, 1:2 * ow:2]
            dst = y[c, i]
            for j in range(ow):
                a, b = r00[j], r01[j]
                m = a if (a >= b or a != a) else b
                a, b = r10[j], r11[j]
                m2 = a if (a >= b or a != a) else b
                dst[j] = m if (m >= m2 or m != m) else m2
    return y


@njit(**_OPTS)
def is_2x2(kh, kw, sh, sw, ph, pw, dh, dw):
    """The 2x2 / stride-2 pool without padding or dilation that `max_pool2d_*_2x2` serve
    (they check that the sizes fit)."""
    return kh == 2 and kw == 2 and sh == 2 and sw == 2 and ph == 0 and pw == 0 and dh == 1 and \
        dw == 1


def takes_2x2(kh, kw, sh, sw, ph, pw, dh, dw, ceil_mode, want_idx) -> bool:
    """Whether a max pool of these parameters is one that `max_pool2d_*_2x2` serve: the 2x2
    pool, in floor mode (so 2*out <= in) and without indices (lower_pool.py for constant
    parameters, _ops/nn_pool.py for eager pools: a model that pools only so compiles neither
    the general loops nor `_argmax_window`, whether its code runs compiled or eagerly)."""
    return not ceil_mode and not want_idx and is_2x2.py_func(kh, kw, sh, sw, ph, pw, dh, dw)


@njit(**_OPTS)
def max_pool2d_forward(x, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, want_idx):
    """(values (R, oh, ow), int64 flat indices per plane, or an empty array)."""
    r = x.shape[0]
    if is_2x2(kh, kw, sh, sw, ph, pw, dh, dw) and 2 * oh <= x.shape[1] and \
            2 * ow <= x.shape[2] and not want_idx:
        return max_pool2d_forward_2x2(x, oh, ow), _jt_empty((0, 0, 0), np.int64)
    y = _jt_empty((r, oh, ow), x.dtype)
    idx = _jt_empty((r, oh, ow) if want_idx else (0, 0, 0), np.int64)
    for c in range(r):
        plane = x[c]
        for i in range(oh):
            for j in range(ow):
                v, bi = _argmax_window(plane, i * sh - ph, j * sw - pw, kh, kw, dh, dw)
                y[c, i, j] = v
                if want_idx:
                    idx[c, i, j] = bi
    return y, idx


@njit(**_OPTS)
def max_pool2d_backward_2x2(g, x):
    """max_pool2d_backward of the 2x2 pool (`max_pool2d_forward_2x2`'s): the same choice as
    `_argmax_window` (the first maximum in window order, the first NaN), without bounds logic;
    plain comparisons (3-4x faster than with NaN tests inside), and a window whose sum is NaN
    looks for a NaN in it (an inf and a -inf sum to NaN too: then the comparisons stand)."""
    r, h, w = x.shape
    oh, ow = g.shape[1], g.shape[2]
    if g.shape[0] != r or 2 * oh > h or 2 * ow > w:
        raise ValueError("max_pool2d_backward_2x2: grad and input sizes do not match")
    dx = _jt_zeros((r, h, w), g.dtype)
    for c in range(r):
        for i in range(oh):
            for j in range(ow):
                a, b = x[c, 2 * i, 2 * j], x[c, 2 * i, 2 * j + 1]
                e, f = x[c, 2 * i + 1, 2 * j], x[c, 2 * i + 1, 2 * j + 1]
                k, best = 0, a
                if b > best:
                    k, best = 1, b
                if e > best:
                    k, best = 2, e
                if f > best:
                    k = 3
                t = a + b + e + f
                if t != t:
                    if a != a:
                        k = 0
                    elif b != b:
                        k = 1
                    elif e != e:
                        k = 2
                    elif f != f:
                        k = 3
                dx[c, 2 * i + k // 2, 2 * j + k % 2] += g[c, i, j]
    return dx


@njit(**_OPTS)
def max_pool2d_backward(g, x, kh, kw, sh, sw, ph, pw, dh, dw):
    """dx (R, H, W): each g[c, i, j] added at its window's argmax (recomputed from x)."""
    r, h, w = x.shape
    if g.shape[0] != r:
        raise ValueError("max_pool2d_backward: grad and input planes do not match")
    oh, ow = g.shape[1], g.shape[2]
    if is_2x2(kh, kw, sh, sw, ph, pw, dh, dw) and 2 * oh <= h and 2 * ow <= w:
        return max_pool2d_backward_2x2(g, x)
    dx = _jt_zeros((r, h, w), g.dtype)
    for c in range(r):
        plane = x[c]
        flat = dx[c].reshape(h * w)
        for i in range(oh):
            for j in range(ow):
                _, bi = _argmax_window(plane, i * sh - ph, j * sw - pw, kh, kw, dh, dw)
                if bi >= 0:
                    flat[bi] += g[c, i, j]
    return dx


@njit(**_OPTS)
def _avg_window(h, w, i, j, kh, kw, sh, sw, ph, pw, count_include_pad, divisor):
    """(h0, h1, w0, w1, divisor) of output (i, j): the clipped window and PyTorch's divisor."""
    hs, ws = i * sh - ph, j * sw - pw
    he, we = min(hs + kh, h + ph), min(ws + kw, w + pw)
    pool = (he - hs) * (we - ws)
    h0, w0, h1, w1 = max(hs, 0), max(ws, 0), min(he, h), min(we, w)
    if divisor != 0:
        div = divisor
    elif count_include_pad:
        div = pool
    else:
        div = (h1 - h0) * (w1 - w0)
    return h0, h1, w0, w1, div


@njit(**_OPTS)
def avg_pool2d_forward(x, oh, ow, kh, kw, sh, sw, ph, pw, count_include_pad, divisor):
    r, h, w = x.shape
    y = _jt_empty((r, oh, ow), x.dtype)
    for c in range(r):
        plane = x[c]
        for i in range(oh):
            for j in range(ow):
                h0, h1, w0, w1, div = _avg_window(h, w, i, j, kh, kw, sh, sw, ph, pw,
                                                  count_include_pad, divisor)
                acc = x.dtype.type(0)
                for a in range(h0, h1):
                    row = plane[a]
                    for b in range(w0, w1):
                        acc += row[b]
                y[c, i, j] = acc / div if h1 > h0 and w1 > w0 else x.dtype.type(0)
    return y


@njit(**_OPTS)
def avg_pool2d_backward(g, h, w, kh, kw, sh, sw, ph, pw, count_include_pad, divisor):
    r, oh, ow = g.shape
    dx = _jt_zeros((r, h, w), g.dtype)
    for c in range(r):
        plane = dx[c]
        for i in range(oh):
            for j in range(ow):
                h0, h1, w0, w1, div = _avg_window(h, w, i, j, kh, kw, sh, sw, ph, pw,
                                                  count_include_pad, divisor)
                if h1 <= h0 or w1 <= w0:
                    continue
                v = g.dtype.type(g[c, i, j] / div)
                for a in range(h0, h1):
                    row = plane[a]
                    for b in range(w0, w1):
                        row[b] += v
    return dx


@njit(**_OPTS)
def adaptive_avg_pool2d_forward(x, oh, ow):
    r, h, w = x.shape
    y = _jt_empty((r, oh, ow), x.dtype)
    for c in range(r):
        plane = x[c]
        for i in range(oh):
            h0, h1 = (i * h) // oh, ((i + 1) * h + oh - 1) // oh
            for j in range(ow):
                w0, w1 = (j * w) // ow, ((j + 1) * w + ow - 1) // ow
                acc = x.dtype.type(0)
                for a in range(h0, h1):
                    row = plane[a]
                    for b in range(w0, w1):
                        acc += row[b]
                y[c, i, j] = acc / ((h1 - h0) * (w1 - w0))
    return y


@njit(**_OPTS)
def adaptive_avg_pool2d_backward(g, h, w):
    r, oh, ow = g.shape
    dx = _jt_zeros((r, h, w), g.dtype)
    if oh == 0 or ow == 0:
        return dx
    for c in range(r):
        plane = dx[c]
        for i in range(oh):
            h0, h1 = (i * h) // oh, ((i + 1) * h + oh - 1) // oh
            for j in range(ow):
                w0, w1 = (j * w) // ow, ((j + 1) * w + ow - 1) // ow
                v = g.dtype.type(g[c, i, j] / ((h1 - h0) * (w1 - w0)))
                for a in range(h0, h1):
                    row = plane[a]
                    for b in range(w0, w1):
                        row[b] += v
    return dx


# --- what generated kernels call -----------------------------------------------------------------
# Through symbols (kernels/kernel_call.library): each compiled once per dtype and process (or
# loaded from its disk cache), never linked into (and optimised again inside) every kernel that
# pools (~0.5 CPU-s per kernel). Eager code (_ops/nn_pool.py) calls the dispatchers themselves.
max_pool2d_forward_by_symbol = kernel_call.library(max_pool2d_forward)
max_pool2d_backward_by_symbol = kernel_call.library(max_pool2d_backward)
max_pool2d_forward_2x2_by_symbol = kernel_call.library(max_pool2d_forward_2x2)
max_pool2d_backward_2x2_by_symbol = kernel_call.library(max_pool2d_backward_2x2)
avg_pool2d_forward_by_symbol = kernel_call.library(avg_pool2d_forward)
avg_pool2d_backward_by_symbol = kernel_call.library(avg_pool2d_backward)
adaptive_avg_pool2d_forward_by_symbol = kernel_call.library(adaptive_avg_pool2d_forward)
adaptive_avg_pool2d_backward_by_symbol = kernel_call.library(adaptive_avg_pool2d_backward)

# alloc.py's intrinsics are emitted into these kernels: their disk cache follows that file too
source_stamp.follow(globals(), alloc)
