"""Pooling and sliding blocks of `jitorch.nn.functional`: max_pool1d/2d/3d (with indices),
avg_pool1d/2d/3d, adaptive_avg_pool1d/2d/3d, adaptive_max_pool1d/2d/3d, lp_pool1d/2d/3d,
fractional_max_pool2d/3d, unfold (im2col) and fold (col2im).

Kernels are NumPy over strided window views (`nn_conv._windows`, no Python loop over pixels),
for any leading dims ((C, *S) unbatched or (N, C, *S)); 1-D and 2-D float max pooling (forward,
indices, backward) calls the compiled, disk-cached kernels of script/targets/cpu/pool.py
instead (`_planes`). Autograd:
- max pools return (values, flat indices into each (n, c) plane, as PyTorch); the VJP scatters
  the gradient through the indices (`scatter_add`), the JVP gathers the tangent: both jitorch
  ops, so twice differentiable. Adaptive max pools share these rules.
- avg_pool is linear: y = W(x) / divisor; VJP W^T(g / divisor) with the internal pair of
  linear ops `_window_sum` / `_window_sum_t`, each the other's VJP.
- adaptive_avg_pool is separable and linear: y = P_h x P_w^T with constant averaging matrices;
  its VJP is the internal op `_adaptive_avg_t` (P_h^T g P_w), whose VJP is the pool again.
- im2col / col2im are each other's VJP.
"""
from __future__ import annotations

import math

import numpy as np

from .nn_conv import _col2im, _crop, _pad, _tup, _windows
from . import infer
from .registry import defop
from .batching import LOOP, fold

# why the compiler runs these ops in the interpreter (their declarations' interpreted=)
_NOT_YET = "no CPU lowering yet"
_RANK3 = "no CPU lowering yet for 3-D pooling (the 1-D and 2-D forms are lowered)"

# top-level names as in PyTorch (torch.adaptive_max_pool1d, the op, returns (values, indices));
# the rest is reached through jitorch.nn.functional
__all__: list = []


def _check_rank(name, nd, input):
    """(C, *S) or (N, C, *S) with non-empty non-batch dims (N may be 0), as PyTorch."""
    if input.ndim not in (nd + 1, nd + 2):
        if name == "avg_pool1d":
            raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional "
                               f"tensor for argument #1 'self' (while checking arguments for "
                               f"avg_pool1d)")
        if nd >= 2:
            raise RuntimeError(f"non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected "
                               f"for input")
    if input.ndim not in (nd + 1, nd + 2) or 0 in input.shape[input.ndim - nd - 1:]:
        raise RuntimeError(f"{name + ': ' if nd == 1 else ''}Expected {nd + 1}D or {nd + 2}D "
                           f"(batch mode) tensor with optional 0 dim batch size for input, but "
                           f"got:{list(input.shape)}")


def _pool_params(nd, kernel_size, stride, padding, dilation):
    k = _tup(kernel_size, nd, "kernel_size", "pooling")
    s = k if stride is None or (isinstance(stride, (tuple, list)) and not len(stride)) \
        else _tup(stride, nd, "stride", "pooling")
    p = _tup(padding, nd, "padding", "pooling")
    d = _tup(dilation, nd, "dilation", "pooling")
    if any(v <= 0 for v in k):
        raise RuntimeError("kernel size should be greater than zero")
    if any(v == 0 for v in s):
        raise RuntimeError("stride should not be zero")
    if any(v <= 0 for v in d):
        raise RuntimeError("dilation should be greater than zero")
    for i in range(nd):
        if p[i] < 0 or p[i] > (d[i] * (k[i] - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p[i]}, kernel_size={k[i]} and dilation={d[i]}")
    return k, s, p, d


def _pool_out(spatial, lead_c, k, s, p, d, ceil_mode):
    """Output sizes (PyTorch's pooling_output_shape) and the high-side pads they need."""
    out, hi = [], []
    for i, size in enumerate(spatial):
        num = size + 2 * p[i] - d[i] * (k[i] - 1) - 1 + (s[i] - 1 if ceil_mode else 0)
        o = num // s[i] + 1
        if ceil_mode and (o - 1) * s[i] >= size + p[i]:
            o -= 1
        out.append(o)
        hi.append(max(p[i], (o - 1) * s[i] + d[i] * (k[i] - 1) + 1 - size - p[i]))
    if any(o < 1 for o in out):
        c = f"{lead_c}x" if lead_c is not None else ""
        raise RuntimeError(f"Given input size: ({c}{'x'.join(map(str, spatial))}). Calculated "
                           f"output size: ({c}{'x'.join(map(str, out))}). Output size is too "
                           f"small")
    pads = tuple(v for i in range(len(spatial)) for v in (p[i], hi[i]))
    return tuple(out), pads


def _lowest(dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _argmax_windows(win, nd, starts, steps, spatial):
    """win (lead..., *out, *k): (max values, flat input indices) per output element."""
    lead_out = win.shape[:win.ndim - nd]
    k = win.shape[win.ndim - nd:]
    flat = win.reshape(lead_out + (math.prod(k),))
    arg = np.argmax(flat, axis=-1)
    vals = np.take_along_axis(flat, arg[..., None], -1)[..., 0]
    offs = np.unravel_index(arg, k)
    idx = np.zeros(arg.shape, np.int64)
    for i in range(nd):
        shape = [1] * len(lead_out)
        shape[len(lead_out) - nd + i] = -1
        pos = starts[i].reshape(shape) + offs[i] * steps[i]
        idx = idx * spatial[i] + pos
    return np.ascontiguousarray(vals), idx


# --- max pooling ---------------------------------------------------------------------------------
_KERNELS = None  # script/targets/cpu/pool.py (imported at the first 1-D / 2-D float pool)


def _planes(nd, a):
    """1-D and 2-D float max pooling run the compiled kernels of script/targets/cpu/pool.py
    (one pass per output element, disk-cached, the first maximum in window order with a NaN
    winning: eager's `argmax` choice; one pass instead of a window copy plus `argmax`).
    Returns `a` (..., *S) as the kernels' C-contiguous (R, H, W) planes (1-D: H == 1); None
    where the NumPy path runs it."""
    global _KERNELS
    if nd > 2 or a.dtype not in (np.float32, np.float64):
        return None
    if _KERNELS is None:
        from ..script.kernels.cache_guards import guard_eager
        from ..script.targets.cpu import pool
        guard_eager(pool)  # checked, lean loads (script/kernels/cache_guards.py)
        _KERNELS = pool
    lead = a.shape[:a.ndim - nd]
    return np.ascontiguousarray(a).reshape((math.prod(lead),) + (1,) * (2 - nd) +
                                           a.shape[a.ndim - nd:])


def _hw(nd, params):
    """The kernels' (h, w) pairs of per-dim (out, kernel, stride, padding, dilation) tuples,
    in that order (a 1-D pool is 1 high, unpadded)."""
    if nd == 2:
        return tuple(v for t in params for v in t)
    return tuple(v for fill, t in zip((1, 1, 1, 0, 1)[5 - len(params):], params)
                 for v in (fill, t[0]))


def _max_pool_impl(nd, name, input, kernel_size, stride, padding, dilation, ceil_mode,
                   want_idx=True):
    """(values, flat per-plane indices, or None when not `want_idx`)."""
    _check_rank(name, nd, input)
    k, s, p, d = _pool_params(nd, kernel_size, stride, padding, dilation)
    spatial = input.shape[-nd:]
    out, pads = _pool_out(spatial, input.shape[-nd - 1], k, s, p, d, ceil_mode)
    x = _planes(nd, input)
    if x is not None:
        hw = _hw(nd, (out, k, s, p, d))
        if _KERNELS.takes_2x2(*hw[2:], ceil_mode, want_idx):
            vals, idx = _KERNELS.max_pool2d_forward_2x2(x, hw[0], hw[1]), None
        else:
            vals, idx = _KERNELS.max_pool2d_forward(x, *hw, want_idx)
        shape = input.shape[:input.ndim - nd] + out
        return vals.reshape(shape), idx.reshape(shape) if want_idx else None
    xp = _pad(input, pads, _lowest(input.dtype))
    win = _windows(xp, out, k, s, d)
    starts = [np.arange(out[i]) * s[i] - p[i] for i in range(nd)]
    return _argmax_windows(win, nd, starts, d, spatial)


def _scatter_planes(g, idx, input_shape, nd):
    """Gradient of a selection by flat per-plane indices: scatter-add g into the input."""
    from .._creation import zeros
    lead = tuple(input_shape[:len(input_shape) - nd])
    # (zeros of the input's shape, then -1: no size product, which compiled backwards would bake)
    z = zeros(tuple(input_shape), dtype=g.dtype).reshape(lead + (-1,))
    return z.scatter_add(-1, idx.reshape(lead + (-1,)), g.reshape(lead + (-1,))).reshape(
        tuple(input_shape))


def _gather_planes(t, idx, nd):
    lead = tuple(t.shape[:t.ndim - nd])
    return t.reshape(lead + (-1,)).gather(-1, idx.reshape(lead + (-1,))).reshape(idx.shape)


def _rules(nd):
    """VJP/JVP of the (values, indices) ops (max pools, adaptive max pools)."""
    def vjp(g, result, input_shape):
        return _scatter_planes(g[0], result[1], input_shape, nd)

    def jvp(t_input, result):
        return _gather_planes(t_input, result[1], nd), None
    return vjp, jvp


def _make_max_pool(nd):
    name = f"max_pool{nd}d"

    def impl(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
        return _max_pool_impl(nd, name, input, kernel_size, stride, padding, dilation,
                              ceil_mode)
    impl.__name__ = name + "_with_indices"
    impl.__doc__ = f"{nd}-D max pooling: (values, flat indices into each input plane)."
    vjp, jvp = _rules(nd)
    with_indices = defop(name + "_with_indices", impl, kind="other", method=False, vjp=vjp,
                         jvp=jvp, function=nd == 1, infer=infer.with_indices,
                         batch=fold(nd + 2), interpreted=_RANK3 if nd == 3 else None)

    # the values-only op (torch.max_pool2d): its rules recompute the indices from the saved
    # input (one more pooling pass) rather than keeping a second output alive
    def values_impl(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
        return _max_pool_impl(nd, name, input, kernel_size, stride, padding, dilation,
                              ceil_mode, want_idx=False)[0]

    def indices(input, kernel_size, stride, padding, dilation, ceil_mode):
        return with_indices(input.detach(), kernel_size, stride, padding, dilation,
                            ceil_mode)[1]

    def values_vjp(g, input, kernel_size, stride, padding, dilation, ceil_mode):
        # one op (compiled as one loop nest, targets/cpu/lower_pool.py) instead of an index pass
        # plus a scatter
        k, s, p, d = _pool_params(nd, kernel_size, stride, padding, dilation)
        return _max_pool_nd_backward(g, input, k, s, p, d, ceil_mode)

    def values_jvp(t_input, input, kernel_size, stride, padding, dilation, ceil_mode):
        idx = indices(input, kernel_size, stride, padding, dilation, ceil_mode)
        return _gather_planes(t_input, idx, nd)

    values_impl.__name__ = name
    values_impl.__doc__ = f"{nd}-D max pooling over (N, C, *) or (C, *) input."
    values = defop(name, values_impl, kind="other", method=False, vjp=values_vjp,
                   jvp=values_jvp, infer=infer.same, batch=fold(nd + 2),
                   interpreted=_RANK3 if nd == 3 else None)
    return with_indices, values


def _max_pool_nd_backward_impl(grad, input, kernel_size, stride, padding, dilation, ceil_mode):
    """Input gradient of the values-only max pool: each grad element added at its window's
    argmax (normalised tuples; nd = len(kernel_size))."""
    nd = len(kernel_size)
    k, s, d = kernel_size, stride, dilation
    if grad.dtype == input.dtype and all(s[i] >= d[i] * (k[i] - 1) + 1 for i in range(nd)):
        # disjoint windows: each input element takes at most one gradient element, so the
        # kernel's in-dtype sum is exact (overlapping windows keep the float64 bincount below)
        x = _planes(nd, input)
        if x is not None:
            g = np.ascontiguousarray(grad).reshape(x.shape[:3 - nd] + grad.shape[grad.ndim - nd:])
            hw = _hw(nd, (k, s, padding, d))
            if _KERNELS.takes_2x2(*hw, ceil_mode, False):
                return _KERNELS.max_pool2d_backward_2x2(g, x).reshape(input.shape)
            return _KERNELS.max_pool2d_backward(g, x, *hw).reshape(input.shape)
    _, idx = _max_pool_impl(nd, f"max_pool{nd}d", input, tuple(kernel_size), tuple(stride),
                            tuple(padding), tuple(dilation), ceil_mode)
    lead = input.shape[:input.ndim - nd]
    plane = math.prod(input.shape[input.ndim - nd:])
    rows = math.prod(lead)
    flat = idx.reshape(rows, -1) + (np.arange(rows) * plane)[:, None]
    res = np.bincount(flat.reshape(-1), weights=grad.reshape(-1).astype(np.float64),
                      minlength=rows * plane)
    return res.astype(grad.dtype).reshape(input.shape)


def _max_pool_nd_backward_vjp(gg, input, kernel_size, stride, padding, dilation, ceil_mode):
    nd = len(kernel_size)
    idx = _BY_ND[nd]["max_pool_with_indices"](input.detach(), kernel_size, stride, padding,
                                              dilation, ceil_mode)[1]
    return _gather_planes(gg, idx, nd), None


_max_pool_nd_backward = defop(
    "_max_pool_nd_backward", _max_pool_nd_backward_impl, tensors=("grad", "input"),
    kind="other", method=False, vjp=_max_pool_nd_backward_vjp,
    jvp=lambda t_grad, input, kernel_size, stride, padding, dilation, ceil_mode:
    _max_pool_nd_backward(t_grad, input, kernel_size, stride, padding, dilation, ceil_mode),
    infer=infer.same,
    batch=LOOP)

max_pool1d_with_indices, _max_pool1d = _make_max_pool(1)
max_pool2d_with_indices, _max_pool2d = _make_max_pool(2)
max_pool3d_with_indices, _max_pool3d = _make_max_pool(3)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """1-D max pooling over (N, C, L) or (C, L); (values, indices) when return_indices."""
    if return_indices:
        return max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return _max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """2-D max pooling over (N, C, H, W) or (C, H, W); (values, indices) when return_indices."""
    if return_indices:
        return max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return _max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """3-D max pooling over (N, C, D, H, W) or (C, D, H, W); (values, indices) when
    return_indices."""
    if return_indices:
        return max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return _max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode)


# the scripting frontend compiles a call that binds to the op's signature to the op itself
max_pool1d.__wrapped__ = _max_pool1d
max_pool2d.__wrapped__ = _max_pool2d
max_pool3d.__wrapped__ = _max_pool3d


# --- window sums (avg_pool's linear core) --------------------------------------------------------
def _window_sum_impl(input, kernel_size, stride, padding):
    kernel_size, stride, padding = tuple(kernel_size), tuple(stride), tuple(padding)
    nd = len(kernel_size)
    out = tuple((input.shape[-nd + i] + padding[2 * i] + padding[2 * i + 1] - kernel_size[i])
                // stride[i] + 1 for i in range(nd))
    win = _windows(_pad(input, padding), out, kernel_size, stride, (1,) * nd)
    return np.ascontiguousarray(win.sum(axis=tuple(range(-nd, 0))))


def _window_sum_t_impl(grad, input_size, kernel_size, stride, padding):
    input_size, kernel_size = tuple(input_size), tuple(kernel_size)
    stride, padding = tuple(stride), tuple(padding)
    nd = len(kernel_size)
    out = grad.shape[-nd:]
    cols = np.broadcast_to(grad.reshape(grad.shape[:-nd] + (1,) * nd + out),
                           grad.shape[:-nd] + tuple(kernel_size) + out)
    padded = tuple(s + padding[2 * i] + padding[2 * i + 1] for i, s in enumerate(input_size))
    return _crop(_col2im(cols, padded, out, kernel_size, stride, (1,) * nd), padding,
                 input_size)


_window_sum = defop(
    "_window_sum", _window_sum_impl, kind="other", method=False,
    vjp=lambda g, input_shape, kernel_size, stride, padding: _window_sum_t(
        g, tuple(input_shape[len(input_shape) - len(kernel_size):]), kernel_size, stride,
        padding),
    jvp=lambda t_input, kernel_size, stride, padding: _window_sum(t_input, kernel_size, stride,
                                                                  padding), interpreted=_NOT_YET,
    batch=LOOP)
_window_sum_t = defop(
    "_window_sum_t", _window_sum_t_impl, tensors=("grad",), kind="other", method=False,
    vjp=lambda g, kernel_size, stride, padding: _window_sum(g, kernel_size, stride, padding),
    jvp=lambda t_grad, input_size, kernel_size, stride, padding: _window_sum_t(
        t_grad, input_size, kernel_size, stride, padding), interpreted=_NOT_YET,
    batch=LOOP)


def _avg_setup(nd, name, shape, kernel_size, stride, padding, ceil_mode, count_include_pad,
               divisor_override):
    """(kernel, stride, lo/hi pads, divisor array over the output spatial dims)."""
    k, s, p, _ = _pool_params(nd, kernel_size, stride, padding, 1)
    spatial = tuple(shape[len(shape) - nd:])
    out, pads = _pool_out(spatial, shape[len(shape) - nd - 1], k, s, p, (1,) * nd, ceil_mode)
    if divisor_override is not None:
        if divisor_override == 0:
            raise RuntimeError("divisor must be not zero")
        div = np.full(out, float(divisor_override))
    else:
        div = np.ones(out)
        for i in range(nd):
            start = np.arange(out[i]) * s[i] - p[i]
            end = np.minimum(start + k[i], spatial[i] + p[i])
            size = end - start
            if not count_include_pad:
                size = np.minimum(end, spatial[i]) - np.maximum(start, 0)
            shp = [1] * nd
            shp[i] = -1
            div = div * size.reshape(shp)
    return k, s, pads, div


def _make_avg_pool(nd):
    name = f"avg_pool{nd}d"

    def impl2(input, kernel_size, stride=None, padding=0, ceil_mode=False,
              count_include_pad=True, divisor_override=None):
        _check_rank(name, nd, input)
        k, s, pads, div = _avg_setup(nd, name, input.shape, kernel_size, stride, padding,
                                     ceil_mode, count_include_pad, divisor_override)
        res = _window_sum_impl(input, k, s, pads) / div
        return res.astype(input.dtype, copy=False)

    def impl1(input, kernel_size, stride=None, padding=0, ceil_mode=False,
              count_include_pad=True):
        return impl2(input, kernel_size, stride, padding, ceil_mode, count_include_pad)

    def vjp2(g, input_shape, kernel_size, stride, padding, ceil_mode, count_include_pad,
             divisor_override):
        # one op whose divisors are computed from the run-time sizes (a divisor array built
        # here would bake the sizes into compiled backwards)
        k, s, p, _ = _pool_params(nd, kernel_size, stride, padding, 1)
        return _avg_pool_nd_backward(g, tuple(input_shape[len(input_shape) - nd:]), k, s, p,
                                     ceil_mode, count_include_pad, divisor_override)

    def vjp1(g, input_shape, kernel_size, stride, padding, ceil_mode, count_include_pad):
        return vjp2(g, input_shape, kernel_size, stride, padding, ceil_mode, count_include_pad,
                    None)

    def jvp2(t_input, kernel_size, stride, padding, ceil_mode, count_include_pad,
             divisor_override):
        return fn(t_input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                  divisor_override)

    def jvp1(t_input, kernel_size, stride, padding, ceil_mode, count_include_pad):
        return fn(t_input, kernel_size, stride, padding, ceil_mode, count_include_pad)

    impl = impl1 if nd == 1 else impl2
    impl.__name__ = name
    impl.__doc__ = f"{nd}-D average pooling over (N, C, *) or (C, *) input."
    fn = defop(name, impl, kind="other", method=False, vjp=vjp1 if nd == 1 else vjp2,
               jvp=jvp1 if nd == 1 else jvp2, function=nd == 1, infer=infer.same,
               batch=fold(nd + 2), interpreted=_RANK3 if nd == 3 else None)
    return fn


def _avg_pool_nd_backward_impl(grad, input_size, kernel_size, stride, padding, ceil_mode,
                               count_include_pad, divisor_override):
    """Input gradient of avg_pool (linear: W^T(grad / divisor)); nd = len(kernel_size)."""
    nd = len(kernel_size)
    shape = grad.shape[:grad.ndim - nd] + tuple(input_size)
    k, s, pads, div = _avg_setup(nd, f"avg_pool{nd}d", shape, tuple(kernel_size),
                                 tuple(stride), tuple(padding), ceil_mode, count_include_pad,
                                 divisor_override)
    scaled = (grad / div).astype(grad.dtype, copy=False)
    return _window_sum_t_impl(scaled, tuple(input_size), k, s, pads)


def _avg_pool_nd_backward_vjp(gg, kernel_size, stride, padding, ceil_mode, count_include_pad,
                              divisor_override):
    if len(kernel_size) == 1:
        return avg_pool1d(gg, kernel_size, stride, padding, ceil_mode, count_include_pad)
    return _BY_ND[len(kernel_size)]["avg_pool"](gg, kernel_size, stride, padding, ceil_mode,
                                                count_include_pad, divisor_override)


_avg_pool_nd_backward = defop(
    "_avg_pool_nd_backward", _avg_pool_nd_backward_impl, tensors=("grad",), kind="other",
    method=False, vjp=_avg_pool_nd_backward_vjp,
    jvp=lambda t_grad, input_size, kernel_size, stride, padding, ceil_mode, count_include_pad,
    divisor_override: _avg_pool_nd_backward(t_grad, input_size, kernel_size, stride, padding,
                                            ceil_mode, count_include_pad, divisor_override),
    infer=infer.same,
    batch=LOOP)

avg_pool1d = _make_avg_pool(1)
avg_pool2d = _make_avg_pool(2)
avg_pool3d = _make_avg_pool(3)


# --- adaptive pooling ----------------------------------------------------------------------------
def _adaptive_sizes(nd, output_size, spatial):
    if isinstance(output_size, (int, np.integer)) or output_size is None:
        output_size = (output_size,) * nd
    output_size = tuple(output_size)
    if len(output_size) == 1 and nd > 1:
        output_size = output_size * nd
    if len(output_size) != nd:
        raise RuntimeError(f"adaptive_pool{nd}d: output_size must be {nd}")
    return tuple(spatial[i] if o is None else int(o) for i, o in enumerate(output_size))


def _bounds(size, out):
    i = np.arange(out)
    return (i * size) // out, -((-(i + 1) * size) // out)


def _window_mean(x, axis, out):
    """Adaptive average along one axis: output i is the mean of x's window i on that axis.
    Each window is reduced on its own (not a product with a 0/1 averaging matrix, where
    0 * nan spreads a nan or inf to every output of its row)."""
    start, end = _bounds(x.shape[axis], out)
    x = np.moveaxis(x, axis, -1)
    y = np.empty(x.shape[:-1] + (out,), x.dtype)
    for i, (a, b) in enumerate(zip(start, end)):
        y[..., i] = x[..., a:b].sum(-1) / x.dtype.type(b - a)
    return np.moveaxis(y, -1, axis)


def _window_mean_t(g, axis, size):
    """The adjoint of `_window_mean`: each output's gradient spread over its own window."""
    out = g.shape[axis]
    start, end = _bounds(size, out)
    g = np.moveaxis(g, axis, -1)
    dx = np.zeros(g.shape[:-1] + (size,), g.dtype)
    for i, (a, b) in enumerate(zip(start, end)):
        dx[..., a:b] += (g[..., i] / g.dtype.type(b - a))[..., None]
    return np.moveaxis(dx, -1, axis)


def _check_adaptive(name, nd, input, output_size, colon=""):
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got"
                           f"{colon} {list(input.shape)}")
    sizes = _adaptive_sizes(nd, output_size, input.shape[-nd:])
    if any(o < 0 for o in sizes):
        raise RuntimeError(f"{name}(): elements of output_size must be greater than or equal "
                           f"to 0 but received {list(sizes)}")
    for i in range(input.ndim - nd):
        if input.shape[i] == 0 and i == input.ndim - nd - 1:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {list(input.shape)} with "
                               f"dimension {i} being empty")
    for i in range(nd):
        if input.shape[input.ndim - nd + i] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {list(input.shape)} with "
                               f"dimension {input.ndim - nd + i} being empty")
    return sizes


def _make_adaptive_avg(nd):
    name = f"adaptive_avg_pool{nd}d"

    def impl(input, output_size):
        sizes = _check_adaptive(name, nd, input, output_size)
        y = input if input.dtype.kind == "f" else input.astype(np.float64)
        for i in range(nd):  # windows are uniform per axis: the mean of the means
            y = _window_mean(y, input.ndim - nd + i, sizes[i])
        return np.ascontiguousarray(y).astype(input.dtype, copy=False)

    def vjp(g, input_shape, output_size):
        return _adaptive_avg_t(g, tuple(input_shape[len(input_shape) - nd:]))

    def jvp(t_input, output_size):
        return fn(t_input, output_size)

    impl.__name__ = name
    impl.__doc__ = f"{nd}-D adaptive average pooling to output_size."
    fn = defop(name, impl, kind="other", method=False, vjp=vjp, jvp=jvp, function=nd == 1,
               infer=infer.same, batch=fold(nd + 2), interpreted=_RANK3 if nd == 3 else None)
    return fn


adaptive_avg_pool1d = _make_adaptive_avg(1)
adaptive_avg_pool2d = _make_adaptive_avg(2)
adaptive_avg_pool3d = _make_adaptive_avg(3)


def _adaptive_avg_t_impl(grad, input_size):
    """The adjoint of adaptive average pooling (per axis: each window's share)."""
    nd = len(input_size)
    dx = grad
    for i in range(nd):
        dx = _window_mean_t(dx, grad.ndim - nd + i, input_size[i])
    return np.ascontiguousarray(dx)


def _adaptive_avg_t_vjp(g, grad_shape, input_size):
    out = tuple(grad_shape[len(grad_shape) - len(input_size):])
    return _BY_ND[len(input_size)]["adaptive_avg_pool"](g, out)


_adaptive_avg_t = defop(
    "_adaptive_avg_t", _adaptive_avg_t_impl, tensors=("grad",), kind="other", method=False,
    vjp=_adaptive_avg_t_vjp,
    jvp=lambda t_grad, input_size: _adaptive_avg_t(t_grad, input_size), infer=infer.same,
    batch=LOOP)


def _make_adaptive_max(nd):
    name = f"adaptive_max_pool{nd}d"

    def impl(input, output_size):
        sizes = _check_adaptive(name, nd, input, output_size, colon=":")
        spatial = input.shape[-nd:]
        idxs = []
        for i in range(nd):
            start, end = _bounds(spatial[i], sizes[i])
            kmax = int((end - start).max()) if sizes[i] else 1
            # clamp each window to its own end: repeats of the last element leave the max
            idxs.append(np.minimum(start[:, None] + np.arange(kmax), end[:, None] - 1))
        # (lead, *O, *k): axis i's index array (O_i, k_i) broadcast to its own two axes
        win = input[(Ellipsis,) + tuple(
            ix.reshape(tuple(-1 if j == i else 1 for j in range(nd))
                       + tuple(ix.shape[1] if j == i else 1 for j in range(nd)))
            for i, ix in enumerate(idxs))]
        lead_out = win.shape[:win.ndim - nd]
        k = win.shape[win.ndim - nd:]
        flat = win.reshape(lead_out + (math.prod(k),))
        arg = np.argmax(flat, axis=-1)
        offs = np.unravel_index(arg, k)
        vals = np.take_along_axis(flat, arg[..., None], -1)[..., 0]
        idx = np.zeros(arg.shape, np.int64)
        for i in range(nd):
            shape = [1] * len(lead_out)
            shape[len(lead_out) - nd + i] = -1
            rows = idxs[i]  # (O_i, k_i)
            o_i = np.arange(sizes[i]).reshape(shape)
            pos = rows[o_i, offs[i]]
            idx = idx * spatial[i] + pos
        return np.ascontiguousarray(vals), idx

    impl.__name__ = name + "_with_indices"
    vjp, jvp = _rules(nd)
    return defop(name + "_with_indices", impl, kind="other", method=False, function=nd == 1,
                 export_as=name if nd == 1 else None, vjp=vjp, jvp=jvp, interpreted=_NOT_YET,
                 batch=fold(nd + 2))


_adaptive_max1 = _make_adaptive_max(1)
_adaptive_max2 = _make_adaptive_max(2)
_adaptive_max3 = _make_adaptive_max(3)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """1-D adaptive max pooling; (values, indices) when return_indices."""
    r = _adaptive_max1(input, output_size)
    return r if return_indices else r[0]


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """2-D adaptive max pooling; (values, indices) when return_indices."""
    r = _adaptive_max2(input, output_size)
    return r if return_indices else r[0]


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """3-D adaptive max pooling; (values, indices) when return_indices."""
    r = _adaptive_max3(input, output_size)
    return r if return_indices else r[0]


# the ops of each rank, for rules that dispatch on a kernel's length
_BY_ND = {nd: {"max_pool_with_indices": mp, "avg_pool": ap, "adaptive_avg_pool": aap}
          for nd, mp, ap, aap in ((1, max_pool1d_with_indices, avg_pool1d, adaptive_avg_pool1d),
                                  (2, max_pool2d_with_indices, avg_pool2d, adaptive_avg_pool2d),
                                  (3, max_pool3d_with_indices, avg_pool3d,
                                   adaptive_avg_pool3d))}


# --- power-average pooling ----------------------------------------------------------------------
def _make_lp_pool(nd):
    """lp_pool{nd}d: (sum over each window of x^p)^(1/p), PyTorch's composite of avg_pool:
    sign(s) * relu(|s|) * kernel volume, then ^(1/p) (so its gradient is avg_pool's)."""
    def lp_pool(input, norm_type, kernel_size, stride=None, ceil_mode=False):
        from .. import _ops
        k = _tup(kernel_size, nd, "kernel_size", "pooling")
        pool = avg_pool1d if nd == 1 else _BY_ND[nd]["avg_pool"]
        if norm_type in (math.inf, -math.inf):  # the max (min) of |x| over each window
            sign = 1 if norm_type > 0 else -1
            return sign * _BY_ND[nd]["max_pool_with_indices"](
                sign * input.abs(), k, stride, 0, 1, ceil_mode)[0]
        out = pool(input.pow(norm_type), k, stride, 0, ceil_mode)
        return (_ops.sign(out) * _ops.relu(_ops.abs(out))).mul(math.prod(k)).pow(
            1.0 / norm_type)
    lp_pool.__name__ = f"lp_pool{nd}d"
    lp_pool.__doc__ = f"{nd}-D power-average pooling: (sum over each window of x^p)^(1/p)."
    return lp_pool


lp_pool1d = _make_lp_pool(1)
lp_pool2d = _make_lp_pool(2)
lp_pool3d = _make_lp_pool(3)


# --- unfold / fold -------------------------------------------------------------------------------
def _block_params(kernel_size, dilation, padding, stride):
    k = _tup(kernel_size, 2, "kernel_size", "unfold")
    d = _tup(dilation, 2, "dilation", "unfold")
    p = _tup(padding, 2, "padding", "unfold")
    s = _tup(stride, 2, "stride", "unfold")
    for nm, v, lo in (("kernel", k, 1), ("dilation", d, 1), ("stride", s, 1)):
        if any(x < lo for x in v):
            raise RuntimeError(f"{nm} should be greater than zero, but got {nm}_height: {v[0]} "
                               f"{nm}_width: {v[1]}")
    if any(x < 0 for x in p):
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {p[0]} "
                           f"pad_width: {p[1]}")
    return k, d, p, s


def _im2col(input, kernel_size, dilation=1, padding=0, stride=1):
    if input.ndim not in (3, 4) or (input.ndim == 4 and 0 in input.shape[1:]) or \
            (input.ndim == 3 and 0 in input.shape):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size "
                           f"and other non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")
    k, d, p, s = _block_params(kernel_size, dilation, padding, stride)
    x = input if input.ndim == 4 else input[None]
    pads = (p[0], p[0], p[1], p[1])
    out = tuple((x.shape[2 + i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1
                for i in range(2))
    if any(o < 1 for o in out):
        raise RuntimeError(f"Given input with spatial size ({x.shape[2]}, {x.shape[3]}), "
                           f"kernel_size=({k[0]}, {k[1]}), dilation=({d[0]}, {d[1]}), "
                           f"padding=({p[0]}, {p[1]}), calculated shape of the array of sliding "
                           f"blocks as ({out[0]}, {out[1]}), but its components must be at "
                           f"least one.")
    win = _windows(_pad(x, pads), out, k, s, d)  # (N, C, oh, ow, kh, kw)
    n, c = x.shape[:2]
    res = np.ascontiguousarray(win.transpose(0, 1, 4, 5, 2, 3)).reshape(
        n, c * k[0] * k[1], out[0] * out[1])
    return res if input.ndim == 4 else res[0]


def _col2im_op(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    if input.ndim not in (2, 3) or (input.ndim == 3 and 0 in input.shape[1:]) or \
            (input.ndim == 2 and 0 in input.shape):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor with possibly 0 batch size "
                           f"and non-zero dimensions for input, but got: {list(input.shape)}")
    size = _tup(output_size, 2, "output_size", "fold")
    k, d, p, s = _block_params(kernel_size, dilation, padding, stride)
    x = input if input.ndim == 3 else input[None]
    kk = k[0] * k[1]
    if x.shape[1] % kk:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={x.shape[1]} and "
                           f"kernel_size=({k[0]}, {k[1]}).")
    out = tuple((size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2))
    if out[0] * out[1] != x.shape[2] or any(o < 1 for o in out):
        raise RuntimeError(f"Given output_size=({size[0]}, {size[1]}), kernel_size=({k[0]}, "
                           f"{k[1]}), dilation=({d[0]}, {d[1]}), padding=({p[0]}, {p[1]}), "
                           f"stride=({s[0]}, {s[1]}), expected size of input's dimension 2 to "
                           f"match the calculated number of sliding blocks {out[0]} * {out[1]} "
                           f"= {out[0] * out[1]}, but got input.size(2)={x.shape[2]}.")
    n, c = x.shape[0], x.shape[1] // kk
    cols = x.reshape((n, c) + k + out)
    pads = (p[0], p[0], p[1], p[1])
    padded = (size[0] + 2 * p[0], size[1] + 2 * p[1])
    res = _crop(_col2im(cols, padded, out, k, s, d), pads, size)
    return res if input.ndim == 3 else res[0]


im2col = defop(
    "im2col", _im2col, kind="other", method=False, function=False,
    vjp=lambda g, input_shape, kernel_size, dilation, padding, stride: col2im(
        g, tuple(input_shape[-2:]), kernel_size, dilation, padding, stride),
    jvp=lambda t_input, kernel_size, dilation, padding, stride: im2col(
        t_input, kernel_size, dilation, padding, stride), interpreted=_NOT_YET,
    batch=fold(4))
col2im = defop(
    "col2im", _col2im_op, kind="other", method=False, function=False,
    vjp=lambda g, kernel_size, dilation, padding, stride: im2col(
        g, kernel_size, dilation, padding, stride),
    jvp=lambda t_input, output_size, kernel_size, dilation, padding, stride: col2im(
        t_input, output_size, kernel_size, dilation, padding, stride), interpreted=_NOT_YET,
    batch=fold(3))


# --- fractional max pooling ----------------------------------------------------------------------
def _fractional_starts(sample, in_size, out_size, pool):
    """PyTorch's pseudo-random window starts: int((i + u) * alpha) - int(u * alpha), the last
    window flush with the end (alpha = (in - pool) / (out - 1), in the input's dtype)."""
    seq = np.empty(out_size, np.int64)
    if out_size > 1:
        alpha = sample.dtype.type(in_size - pool) / sample.dtype.type(out_size - 1)
        i = np.arange(out_size - 1, dtype=sample.dtype)
        seq[:-1] = ((i + sample) * alpha).astype(np.int64) - np.int64(sample * alpha)
    if out_size > 0:
        seq[-1] = in_size - pool
    return seq


def _make_fractional(nd):
    name = f"fractional_max_pool{nd}d"

    def impl(input, random_samples, kernel_size, output_size):
        if input.ndim not in (nd + 1, nd + 2):
            raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: "
                               f"{list(input.shape)}")
        k = _tup(kernel_size, nd, "kernel_size", "pooling")
        out = _tup(output_size, nd, "output_size", "pooling")
        x = input if input.ndim == nd + 2 else input[None]
        spatial = x.shape[2:]
        for i in range(nd):
            if out[i] + k[i] - 1 > spatial[i]:
                raise RuntimeError(f"{name}(): pool size {k[i]} too large relative to input "
                                   f"size {spatial[i]} and output size {out[i]}")
        n, c = x.shape[:2]
        vals = np.empty((n, c) + out, x.dtype)
        idx = np.empty((n, c) + out, np.int64)
        # the samples' last axis is (W, H) in 2-D and (T, H, W) in 3-D, as PyTorch's kernels
        order = (1, 0) if nd == 2 else tuple(range(nd))
        for b in range(n):
            for ch in range(c):
                starts = [_fractional_starts(random_samples[b, ch, order[i]], spatial[i],
                                             out[i], k[i]) for i in range(nd)]
                # windows (out..., k...) gathered by broadcast index arrays
                ix = tuple((starts[i].reshape([-1 if j == i else 1 for j in range(nd)] + [1] * nd)
                            + np.arange(k[i]).reshape([1] * nd
                                                      + [-1 if j == i else 1
                                                         for j in range(nd)]))
                           for i in range(nd))
                win = x[b, ch][ix].reshape(out + (-1,))
                arg = np.argmax(win, -1)
                vals[b, ch] = np.take_along_axis(win, arg[..., None], -1)[..., 0]
                offs = np.unravel_index(arg, k)
                flat = np.zeros(out, np.int64)
                for i in range(nd):
                    pos = starts[i].reshape([-1 if j == i else 1 for j in range(nd)]) + offs[i]
                    flat = flat * spatial[i] + pos
                idx[b, ch] = flat
        if input.ndim == nd + 1:
            vals, idx = vals[0], idx[0]
        return vals, idx

    def vjp(g, result, input_shape):
        return _scatter_planes(g[0], result[1], input_shape, nd), None

    def jvp(t_input, result):
        return _gather_planes(t_input, result[1], nd), None

    impl.__name__ = name
    impl.__doc__ = f"{nd}-D fractional max pooling with given random samples (N, C, {nd})."
    return defop("_" + name, impl, tensors=("input", "random_samples"), kind="other",
                 method=False, vjp=vjp, jvp=jvp, interpreted=_NOT_YET, batch=LOOP)


_fractional2 = _make_fractional(2)
_fractional3 = _make_fractional(3)


def _fractional(nd, op, input, kernel_size, output_size, output_ratio, return_indices,
                _random_samples):
    import jitorch
    if output_size is None and output_ratio is None:
        raise ValueError(f"fractional_max_pool{nd}d requires specifying either an output_size "
                         f"or an output_ratio")
    if output_size is None:
        ratio = _tup_float(output_ratio, nd)
        output_size = [int(input.shape[input.dim() - nd + i] * ratio[i]) for i in range(nd)]
    if _random_samples is None:
        n = 1 if input.dim() == nd + 1 else input.shape[0]
        _random_samples = jitorch.rand(n, input.shape[input.dim() - nd - 1], nd,
                                       dtype=input.dtype)
    r = op(input, _random_samples, kernel_size, tuple(_tup(output_size, nd, "output_size")))
    return r if return_indices else r[0]


def _tup_float(v, nd):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * nd


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """2-D fractional max pooling (Graham): pseudo-random window starts."""
    return _fractional(2, _fractional2, input, kernel_size, output_size, output_ratio,
                       return_indices, _random_samples)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """3-D fractional max pooling (Graham): pseudo-random window starts."""
    return _fractional(3, _fractional3, input, kernel_size, output_size, output_ratio,
                       return_indices, _random_samples)
