"""Lowering of pooling (max_pool1d/2d with or without indices, avg_pool1d/2d,
adaptive_avg_pool1d/2d) and of their gradient ops (`_max_pool_nd_backward`,
`_avg_pool_nd_backward`, `_adaptive_avg_t` of `_ops/nn_pool.py`) to njit loop kernels.

Owns the kernels (njit(nogil), typed per dtype only; every size is a run-time value) and the
lowering that calls them from a generated program (imported from this module, whose hash keys
the program's cache name). Kernels see the input as (R, H, W): every leading dim flattened into
R planes, 1-D pools with H == 1. Window bounds are clipped per output element, so padding is
never materialised and nothing outside a plane is read. Max pooling keeps eager's choice of
element (the first maximum in window order, a NaN wins), so gradients route to the same input
as eager's `argmax`; the backward kernels recompute that choice instead of storing indices.

Hyper-parameters must be constants (PyTorch's checks run at lowering time through the eager
helpers: a bad value leaves the node to the interpreter, which raises PyTorch's error); sizes
are checked in the program with PyTorch's messages. float32/float64 are lowered.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .. import ir
from . import NotLowered, literal
from .cpu import Emitter
from .lower_conv import float_operands, int_list
from .lowering import lowers

__all__ = ["pool_out_size", "max_pool2d_forward", "max_pool2d_backward", "avg_pool2d_forward",
           "avg_pool2d_backward", "adaptive_avg_pool2d_forward", "adaptive_avg_pool2d_backward"]

_OPTS = dict(nogil=True, error_model="numpy", fastmath={"reassoc", "contract"}, cache=True)
MODULE = "jitorch.script.codegen.lower_pool"


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
def max_pool2d_forward(x, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, want_idx):
    """(values (R, oh, ow), int64 flat indices per plane, or an empty array)."""
    r = x.shape[0]
    y = np.empty((r, oh, ow), x.dtype)
    idx = np.empty((r, oh, ow) if want_idx else (0, 0, 0), np.int64)
    if kh == 2 and kw == 2 and sh == 2 and sw == 2 and ph == 0 and pw == 0 and dh == 1 and \
            dw == 1 and 2 * oh <= x.shape[1] and 2 * ow <= x.shape[2] and not want_idx:
        # the common 2x2 / 2 pool: four loads per output, no bounds logic
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
        return y, idx
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
def max_pool2d_backward(g, x, kh, kw, sh, sw, ph, pw, dh, dw):
    """dx (R, H, W): each g[c, i, j] added at its window's argmax (recomputed from x)."""
    r, h, w = x.shape
    if g.shape[0] != r:
        raise ValueError("max_pool2d_backward: grad and input planes do not match")
    oh, ow = g.shape[1], g.shape[2]
    dx = np.zeros((r, h, w), g.dtype)
    if kh == 2 and kw == 2 and sh == 2 and sw == 2 and ph == 0 and pw == 0 and dh == 1 and \
            dw == 1 and 2 * oh <= h and 2 * ow <= w:
        # the common 2x2 / 2 pool: the same choice as _argmax_window, without bounds logic;
        # plain comparisons (3-4x faster than with NaN tests inside), and a window holding a
        # NaN (its sum is NaN) takes the exact rule
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
                        _, bi = _argmax_window(x[c], 2 * i, 2 * j, 2, 2, 1, 1)
                        k = (bi // w - 2 * i) * 2 + bi % w - 2 * j
                    dx[c, 2 * i + k // 2, 2 * j + k % 2] += g[c, i, j]
        return dx
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
    y = np.empty((r, oh, ow), x.dtype)
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
    dx = np.zeros((r, h, w), g.dtype)
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
    y = np.empty((r, oh, ow), x.dtype)
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
    dx = np.zeros((r, h, w), g.dtype)
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


# --- lowering ------------------------------------------------------------------------------------
def _import(em: Emitter, names: str) -> None:
    line = f"from {MODULE} import {names}"
    if line not in em.globals:
        em.globals.append(line)


def _check(em: Emitter, cond: str, *parts) -> None:
    em.emit(f"if {cond}:")
    em.indent += 1
    em.raise_("RuntimeError", *parts)
    em.indent -= 1


def _planes(em: Emitter, xs: str, rank: int, nd: int) -> tuple:
    """(3-D (R, H, W) C-contiguous expression, [lead size exprs], [spatial size exprs])."""
    c = em.fresh("pc")
    em.emit(f"{c} = np.ascontiguousarray({xs})")
    lead = [f"{c}.shape[{i}]" for i in range(rank - nd)]
    sp = [f"{c}.shape[{i}]" for i in range(rank - nd, rank)]
    r = em.fresh("pr")
    em.emit(f"{r} = {' * '.join(lead) if lead else '1'}")
    hw = (["1"] + sp) if nd == 1 else sp
    x3 = em.fresh("px")
    em.emit(f"{x3} = {c}.reshape(({r}, {hw[0]}, {hw[1]}))")
    return x3, lead, sp


def _unplanes(em: Emitter, y3: str, lead: list, nd: int) -> str:
    out = em.fresh("py")
    dims = lead + ([f"{y3}.shape[2]"] if nd == 1 else [f"{y3}.shape[1]", f"{y3}.shape[2]"])
    em.emit(f"{out} = {y3}.reshape(({', '.join(dims)},))")
    return out


def _nd(op: str) -> int:
    return 1 if "1d" in op else 2


def _input(em: Emitter, n: ir.Node, x: ir.Value, nd: int, name: str):
    """Checks of the pooled input (rank statically, empty non-batch dims at run time)."""
    float_operands(em, n, x)
    t = em.tensor(x)
    if t.ndim not in (nd + 1, nd + 2):
        raise NotLowered(f"op {n.op}: rank {t.ndim}")  # the interpreter raises PyTorch's error
    xs = em.name(x)
    dims = [f"{xs}.shape[{i}]" for i in range(t.ndim)]
    parts = [f"{name}: " if nd == 1 else "", f"Expected {nd + 1}D or {nd + 2}D (batch mode) "
             "tensor with optional 0 dim batch size for input, but got:["]
    for i, dd in enumerate(dims):
        parts += [(dd,), ", " if i + 1 < len(dims) else "]"]
    first = 0 if t.ndim == nd + 1 else 1
    _check(em, " or ".join(f"{dd} == 0" for dd in dims[first:]), *parts)
    return t, xs


def _static(nd, fn, *args):
    """The checked hyper-parameters, as int literals (literal.py)."""
    try:
        vals = fn(nd, *args)
    except Exception as e:  # eager raises PyTorch's error for these: let the interpreter
        raise NotLowered(f"pooling parameters: {e}") from None
    return tuple([literal.integer(e) for e in v] for v in vals)


def _out_sizes(em: Emitter, xs: str, lead, sp, k, s, p, d, ceil: bool, name: str) -> list:
    """Output sizes, checked >= 1 with PyTorch's message."""
    out = []
    for i in range(len(sp)):
        o = em.fresh("po")
        em.emit(f"{o} = pool_out_size({sp[i]}, {k[i]}, {s[i]}, {p[i]}, {d[i]}, {ceil})")
        out.append(o)
    c = [(lead[-1],), "x"] if lead else []
    parts = ["Given input size: ("] + c
    for i, e in enumerate(sp):
        parts += [(e,), "x" if i + 1 < len(sp) else ""]
    parts += ["). Calculated output size: ("] + c
    for i, e in enumerate(out):
        parts += [(e,), "x" if i + 1 < len(out) else ""]
    parts += ["). Output size is too small"]
    _check(em, " or ".join(f"{o} < 1" for o in out), *parts)
    return out


def _two(v: list, nd: int, fill: int) -> list:
    return [str(fill)] + [str(e) for e in v] if nd == 1 else [str(e) for e in v]


@lowers("max_pool1d", "max_pool2d", "max_pool1d_with_indices", "max_pool2d_with_indices")
def lower_max_pool(em: Emitter, n: ir.Node) -> None:
    from ..._ops.nn_pool import _pool_params
    nd = _nd(n.op)
    x, k_v, s_v, p_v, d_v, ceil_v = n.inputs
    name = f"max_pool{nd}d"
    t, xs = _input(em, n, x, nd, name)
    k, s, p, d = _static(nd, _pool_params, em.const(k_v), em.const(s_v), em.const(p_v),
                         em.const(d_v))
    ceil = bool(em.const(ceil_v))
    _import(em, "pool_out_size, max_pool2d_forward")
    x3, lead, sp = _planes(em, xs, t.ndim, nd)
    o = _out_sizes(em, xs, lead, sp, k, s, p, d, ceil, name)
    o = (["1"] + o) if nd == 1 else o
    k2, s2, p2, d2 = _two(k, nd, 1), _two(s, nd, 1), _two(p, nd, 0), _two(d, nd, 1)
    want = len(n.outputs) == 2
    y3, i3 = em.fresh("py"), em.fresh("pi")
    em.emit(f"{y3}, {i3} = max_pool2d_forward({x3}, {o[0]}, {o[1]}, {k2[0]}, {k2[1]}, "
            f"{s2[0]}, {s2[1]}, {p2[0]}, {p2[1]}, {d2[0]}, {d2[1]}, {want})")
    em.bind(n.outputs[0], _unplanes(em, y3, lead, nd))
    if want:
        em.bind(n.outputs[1], _unplanes(em, i3, lead, nd))


@lowers("_max_pool_nd_backward")
def lower_max_pool_backward(em: Emitter, n: ir.Node) -> None:
    g, x, k_v, s_v, p_v, d_v, ceil_v = n.inputs
    float_operands(em, n, g, x)
    k = em.const(k_v)
    nd = len(k) if isinstance(k, (tuple, list)) else 0
    tg, tx = em.tensor(g), em.tensor(x)
    if nd not in (1, 2) or tg.ndim != tx.ndim or tx.ndim not in (nd + 1, nd + 2):
        raise NotLowered(f"op {n.op}: ranks")
    k, s, p, d = (int_list(em, v, nd, w) for v, w in ((k_v, "kernel_size"), (s_v, "stride"),
                                                       (p_v, "padding"), (d_v, "dilation")))
    ceil = bool(em.const(ceil_v))
    _import(em, "pool_out_size, max_pool2d_backward")
    x3, lead, sp = _planes(em, em.name(x), tx.ndim, nd)
    g3, _, gsp = _planes(em, em.name(g), tg.ndim, nd)
    for i in range(nd):
        _check(em, f"{gsp[i]} != pool_out_size({sp[i]}, {k[i]}, {s[i]}, {p[i]}, {d[i]}, "
               f"{ceil}) or {g3}.shape[0] != {x3}.shape[0]",
               f"op {n.op}: the gradient's sizes do not match the pooled input's")
    k2, s2, p2, d2 = _two(k, nd, 1), _two(s, nd, 1), _two(p, nd, 0), _two(d, nd, 1)
    y3 = em.fresh("py")
    em.emit(f"{y3} = max_pool2d_backward({g3}, {x3}, {k2[0]}, {k2[1]}, {s2[0]}, {s2[1]}, "
            f"{p2[0]}, {p2[1]}, {d2[0]}, {d2[1]})")
    em.bind(n.outputs[0], _unplanes(em, y3, lead, nd))


def _divisor(em: Emitter, v) -> str:
    dv = None if v is None else em.const(v)
    if dv is None:
        return "0"
    if isinstance(dv, bool) or not isinstance(dv, int) or dv == 0:
        raise NotLowered(f"divisor_override {dv!r}")  # eager raises for 0
    return literal.integer(dv)


@lowers("avg_pool1d", "avg_pool2d")
def lower_avg_pool(em: Emitter, n: ir.Node) -> None:
    from ..._ops.nn_pool import _pool_params
    nd = _nd(n.op)
    if nd == 1:
        x, k_v, s_v, p_v, ceil_v, cip_v = n.inputs
        div_v = None
    else:
        x, k_v, s_v, p_v, ceil_v, cip_v, div_v = n.inputs
    name = f"avg_pool{nd}d"
    t, xs = _input(em, n, x, nd, name)
    k, s, p, _ = _static(nd, _pool_params, em.const(k_v), em.const(s_v), em.const(p_v), 1)
    ceil, cip, div = bool(em.const(ceil_v)), bool(em.const(cip_v)), _divisor(em, div_v)
    _import(em, "pool_out_size, avg_pool2d_forward")
    x3, lead, sp = _planes(em, xs, t.ndim, nd)
    o = _out_sizes(em, xs, lead, sp, k, s, p, (1,) * nd, ceil, name)
    o = (["1"] + o) if nd == 1 else o
    k2, s2, p2 = _two(k, nd, 1), _two(s, nd, 1), _two(p, nd, 0)
    y3 = em.fresh("py")
    em.emit(f"{y3} = avg_pool2d_forward({x3}, {o[0]}, {o[1]}, {k2[0]}, {k2[1]}, {s2[0]}, "
            f"{s2[1]}, {p2[0]}, {p2[1]}, {cip}, {div})")
    em.bind(n.outputs[0], _unplanes(em, y3, lead, nd))


@lowers("_avg_pool_nd_backward")
def lower_avg_pool_backward(em: Emitter, n: ir.Node) -> None:
    g, size_v, k_v, s_v, p_v, ceil_v, cip_v, div_v = n.inputs
    float_operands(em, n, g)
    k = em.const(k_v)
    nd = len(k) if isinstance(k, (tuple, list)) else 0
    tg = em.tensor(g)
    if nd not in (1, 2) or tg.ndim not in (nd + 1, nd + 2):
        raise NotLowered(f"op {n.op}: ranks")
    size = int_list(em, size_v, nd, "input_size")
    k, s, p = (int_list(em, v, nd, w) for v, w in ((k_v, "kernel_size"), (s_v, "stride"),
                                                    (p_v, "padding")))
    ceil, cip, div = bool(em.const(ceil_v)), bool(em.const(cip_v)), _divisor(em, div_v)
    _import(em, "pool_out_size, avg_pool2d_backward")
    g3, lead, gsp = _planes(em, em.name(g), tg.ndim, nd)
    for i in range(nd):
        _check(em, f"{size[i]} < 1 or {gsp[i]} != pool_out_size({size[i]}, {k[i]}, {s[i]}, "
               f"{p[i]}, 1, {ceil})",
               f"op {n.op}: the gradient's sizes do not match the pooled input's")
    k2, s2, p2, sz = _two(k, nd, 1), _two(s, nd, 1), _two(p, nd, 0), _two(size, nd, 1)
    y3 = em.fresh("py")
    em.emit(f"{y3} = avg_pool2d_backward({g3}, {sz[0]}, {sz[1]}, {k2[0]}, {k2[1]}, {s2[0]}, "
            f"{s2[1]}, {p2[0]}, {p2[1]}, {cip}, {div})")
    em.bind(n.outputs[0], _unplanes(em, y3, lead, nd))


@lowers("adaptive_avg_pool1d", "adaptive_avg_pool2d")
def lower_adaptive_avg(em: Emitter, n: ir.Node) -> None:
    nd = _nd(n.op)
    x, out_v = n.inputs
    name = f"adaptive_avg_pool{nd}d"
    float_operands(em, n, x)
    t = em.tensor(x)
    if t.ndim not in (nd + 1, nd + 2):
        raise NotLowered(f"op {n.op}: rank {t.ndim}")
    osz = em.const(out_v)
    osz = [osz] * nd if isinstance(osz, int) or osz is None else list(osz)
    if len(osz) == 1 and nd > 1:
        osz = osz * nd
    if len(osz) != nd or any(o is not None and (isinstance(o, bool) or not isinstance(o, int)
                                                or o < 0) for o in osz):
        raise NotLowered(f"op {n.op}: output_size {osz!r}")
    xs = em.name(x)
    dims = [f"{xs}.shape[{i}]" for i in range(t.ndim)]
    parts = [f"{name}(): Expected input to have non-zero size for non-batch dimensions, but "
             "input has sizes ["]
    for i, dd in enumerate(dims):
        parts += [(dd,), ", " if i + 1 < len(dims) else "] with an empty dimension"]
    first = 0 if t.ndim == nd + 1 else 1
    _check(em, " or ".join(f"{dd} == 0" for dd in dims[first:]), *parts)
    _import(em, "adaptive_avg_pool2d_forward")
    x3, lead, sp = _planes(em, xs, t.ndim, nd)
    o = [sp[i] if osz[i] is None else literal.integer(osz[i]) for i in range(nd)]
    o = (["1"] + o) if nd == 1 else o
    y3 = em.fresh("py")
    em.emit(f"{y3} = adaptive_avg_pool2d_forward({x3}, {o[0]}, {o[1]})")
    em.bind(n.outputs[0], _unplanes(em, y3, lead, nd))


@lowers("_adaptive_avg_t")
def lower_adaptive_avg_t(em: Emitter, n: ir.Node) -> None:
    g, size_v = n.inputs
    float_operands(em, n, g)
    size = em.const(size_v) if em.is_const(size_v) else None
    nd = len(size) if size is not None else len(em.lists.get(size_v.uid, ()))
    tg = em.tensor(g)
    if nd not in (1, 2) or tg.ndim not in (nd + 1, nd + 2):
        raise NotLowered(f"op {n.op}: ranks")
    sz = int_list(em, size_v, nd, "input_size")
    for e in sz:
        _check(em, f"{e} < 0", f"op {n.op}: negative input size")
    _import(em, "adaptive_avg_pool2d_backward")
    g3, lead, _ = _planes(em, em.name(g), tg.ndim, nd)
    sz = (["1"] + sz) if nd == 1 else sz
    y3 = em.fresh("py")
    em.emit(f"{y3} = adaptive_avg_pool2d_backward({g3}, {sz[0]}, {sz[1]})")
    em.bind(n.outputs[0], _unplanes(em, y3, lead, nd))
