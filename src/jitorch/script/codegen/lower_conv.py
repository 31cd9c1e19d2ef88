"""Lowering of convolutions (conv1d/2d and the internal `_conv_nd`, `_conv_nd_input_grad`,
`_conv_nd_weight_grad` ops of `_ops/nn_conv.py`, which conv's VJPs are written with) to njit
kernels.

Owns the kernels (`conv2d_forward`, `conv2d_input_grad`, `conv2d_weight_grad`: njit(nogil),
disk-cached, typed per dtype and layout only; every size is a run-time value) and the lowering
that calls them from a generated program (`from jitorch.script.codegen.lower_conv import ...`:
the program cache hashes this file into the program's name). The kernels call BLAS through
Numba's own `np.dot` (not blas.py: a callee in another file would make this file's Numba cache
stale when that file changed).

Method (stride 1, the common case): the padded input of a sample lives on a grid of width
Wp = W + pads, and output pixel (y, z) is grid column y*Wp + z; then every im2col row is ONE
contiguous run of the padded plane (a vectorised copy, no per-pixel bounds logic), a chunk of
samples sits side by side in one (Cg*K, chunk*span) buffer, and one gemm per group gives the
outputs, copied out of the grid with the bias added. The input gradient is W^T @ grad on the
same grid followed by the adjoint copies (contiguous adds), the weight gradient sums
grad @ cols^T over the chunks. Other strides use a general im2col (clipped row segments).
1-D convolutions are 2-D ones with a height of 1; unbatched inputs get a batch of 1.
float32/float64 are lowered; other dtypes go to the interpreter.

Sizes: the program checks PyTorch's user-facing relations (channels vs weight and groups, bias
length, kernel vs padded input) with PyTorch's messages; the kernels re-check the relations they
index by and bound every read and write by the arrays' own sizes (never out of bounds).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ... import _dtype as dt
from .. import ir
from . import NotLowered, literal
from .cpu import Emitter
from .lowering import lowers

__all__ = ["conv2d_forward", "conv2d_input_grad", "conv2d_weight_grad"]

_OPTS = dict(nogil=True, error_model="numpy", fastmath={"reassoc", "contract"}, cache=True)
_FLOATS = (dt.float32, dt.float64)
MODULE = "jitorch.script.codegen.lower_conv"
CHUNK = 1 << 16  # im2col elements per gemm (256 KiB of float32)


# --- kernels (x: (N, C, H, W), w: (O, C / groups, kh, kw), C-contiguous) ------------------------
@njit(**_OPTS)
def _span(size, out, k_off, s):
    """[lo, hi): the output positions z whose input z * s + k_off lies in [0, size)."""
    lo = 0 if k_off >= 0 else (-k_off + s - 1) // s
    hi = (size - 1 - k_off) // s + 1 if size - 1 - k_off >= 0 else 0
    hi = min(hi, out)
    return min(lo, hi), hi


@njit(**_OPTS)
def _im2col(x, n, c0, cg, cols, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw):
    """cols[(c, i, j), y * ow + z] = x[n, c0 + c, y*sh - ph + i*dh, z*sw - pw + j*dw], or 0
    outside the input."""
    h_in, w_in = x.shape[2], x.shape[3]
    zero = x.dtype.type(0)
    for c in range(cg):
        for i in range(kh):
            for j in range(kw):
                crow = cols[(c * kh + i) * kw + j]
                off = j * dw - pw
                lo, hi = _span(w_in, ow, off, sw)
                for y in range(oh):
                    ih = y * sh - ph + i * dh
                    base = y * ow
                    if ih < 0 or ih >= h_in:
                        for z in range(ow):
                            crow[base + z] = zero
                        continue
                    xrow = x[n, c0 + c, ih]
                    for z in range(lo):
                        crow[base + z] = zero
                    if sw == 1:
                        for z in range(lo, hi):
                            crow[base + z] = xrow[z + off]
                    else:
                        for z in range(lo, hi):
                            crow[base + z] = xrow[z * sw + off]
                    for z in range(hi, ow):
                        crow[base + z] = zero


@njit(**_OPTS)
def _col2im_add(cols, dx, n, c0, cg, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw):
    """The adjoint of `_im2col`: dx[n, c0 + c, ...] += each column entry at its input pixel."""
    h_in, w_in = dx.shape[2], dx.shape[3]
    for c in range(cg):
        for i in range(kh):
            for j in range(kw):
                crow = cols[(c * kh + i) * kw + j]
                off = j * dw - pw
                lo, hi = _span(w_in, ow, off, sw)
                for y in range(oh):
                    ih = y * sh - ph + i * dh
                    if ih < 0 or ih >= h_in:
                        continue
                    drow = dx[n, c0 + c, ih]
                    base = y * ow
                    if sw == 1:
                        for z in range(lo, hi):
                            drow[z + off] += crow[base + z]
                    else:
                        for z in range(lo, hi):
                            drow[z * sw + off] += crow[base + z]


@njit(**_OPTS)
def _pad_into(x, n, c0, cg, xp, ph, pw):
    """xp[c, ph:ph + H, pw:pw + W] = x[n, c0 + c] (xp's border stays as it is: zeros)."""
    h_in, w_in = x.shape[2], x.shape[3]
    for c in range(cg):
        for i in range(h_in):
            src = x[n, c0 + c, i]
            dst = xp[c, ph + i, pw:pw + w_in]
            for j in range(w_in):
                dst[j] = src[j]


@njit(**_OPTS)
def _grid_cols(xp, cols, kh, kw, dh, dw, span, at):
    """Stride-1 im2col on the padded grid: row (c, i, j) is ONE contiguous run of xp[c]
    starting at (i*dh, j*dw); column at + y*Wp + z is output pixel (y, z) (z >= ow: unused)."""
    cg, hp, wp = xp.shape
    flat = xp.reshape((cg, hp * wp))
    for c in range(cg):
        src = flat[c]
        for i in range(kh):
            for j in range(kw):
                # (sub-views indexed by the loop variable only: Numba then drops its
                # negative-index wraparound and the copy vectorises)
                crow = cols[(c * kh + i) * kw + j, at:at + span]
                off = i * dh * wp + j * dw
                seg = src[off:off + span]
                for z in range(span):
                    crow[z] = seg[z]


@njit(**_OPTS)
def _grid_cols_add(cols, dxp, kh, kw, dh, dw, span, at):
    """The adjoint of `_grid_cols`: each row added back onto its run of dxp[c]."""
    cg, hp, wp = dxp.shape
    flat = dxp.reshape((cg, hp * wp))
    for c in range(cg):
        dst = flat[c]
        for i in range(kh):
            for j in range(kw):
                crow = cols[(c * kh + i) * kw + j, at:at + span]
                off = i * dh * wp + j * dw
                seg = dst[off:off + span]
                for z in range(span):
                    seg[z] += crow[z]


@njit(**_OPTS)
def _out_size(size, pad_total, k, s, d):
    return (size + pad_total - d * (k - 1) - 1) // s + 1


@njit(**_OPTS)
def _chunk(nb, per_sample):
    """Samples per gemm: about CHUNK elements of im2col buffer (L2-sized), at least one."""
    return max(1, min(nb, CHUNK // max(per_sample, 1)))


@njit(**_OPTS)
def _weight_groups(w, groups):
    """Each group's (O / groups, Cg*kh*kw) weight block as its own C-contiguous matrix."""
    o = w.shape[0]
    og = o // groups
    w2 = w.reshape((o, w.size // o if o else 0))
    return [np.ascontiguousarray(w2[g * og:(g + 1) * og]) for g in range(groups)]


@njit(**_OPTS)
def conv2d_forward(x, w, b, sh, sw, ph, pw, ph_hi, pw_hi, dh, dw, groups):
    """y = conv(x, w) + b (b None or (O,)); pads lo (ph, pw) / hi (ph_hi, pw_hi)."""
    nb, c, h_in, w_in = x.shape
    o, cg, kh, kw = w.shape
    if groups <= 0 or cg * groups != c or o % groups != 0:
        raise ValueError("conv2d_forward: channels do not match the weight and groups")
    if b is not None:
        if b.shape[0] != o:
            raise ValueError("conv2d_forward: bias size does not match the weight")
    oh = _out_size(h_in, ph + ph_hi, kh, sh, dh)
    ow = _out_size(w_in, pw + pw_hi, kw, sw, dw)
    if oh < 1 or ow < 1:
        raise ValueError("conv2d_forward: kernel larger than the padded input")
    og = o // groups
    kk = cg * kh * kw
    y = np.empty((nb, o, oh, ow), x.dtype)
    zero = x.dtype.type(0)
    if kk == 0 or nb == 0:
        for n in range(nb):
            for k in range(o):
                y[n, k] = b[k] if b is not None else zero
        return y
    wgs = _weight_groups(w, groups)
    if sh == 1 and sw == 1:
        # the padded grid: output (y, z) at column y*Wp + z, every im2col row one run; a
        # chunk of samples side by side makes one larger gemm
        hp, wp = h_in + ph + ph_hi, w_in + pw + pw_hi
        span = (oh - 1) * wp + ow
        bc = _chunk(nb, kk * span)
        xp = np.zeros((cg, hp, wp), x.dtype)
        cbuf = np.empty(kk * bc * span, x.dtype)
        tbuf = np.empty(og * bc * span, x.dtype)
        for n0 in range(0, nb, bc):
            m = min(bc, nb - n0)
            cols = cbuf[:kk * m * span].reshape((kk, m * span))
            tmp = tbuf[:og * m * span].reshape((og, m * span))
            for g in range(groups):
                for q in range(m):
                    _pad_into(x, n0 + q, g * cg, cg, xp, ph, pw)
                    _grid_cols(xp, cols, kh, kw, dh, dw, span, q * span)
                np.dot(wgs[g], cols, tmp)
                for q in range(m):
                    for k in range(og):
                        bv = b[g * og + k] if b is not None else zero
                        for yy in range(oh):
                            dst = y[n0 + q, g * og + k, yy]
                            base = q * span + yy * wp
                            t = tmp[k, base:base + ow]
                            for z in range(ow):
                                dst[z] = t[z] + bv
        return y
    big_l = oh * ow
    y3 = y.reshape((nb, o, big_l))
    cols = np.empty((kk, big_l), x.dtype)
    tmp = np.empty((og, big_l), x.dtype)
    for n in range(nb):
        for g in range(groups):
            _im2col(x, n, g * cg, cg, cols, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw)
            np.dot(wgs[g], cols, tmp)
            for k in range(og):
                bv = b[g * og + k] if b is not None else zero
                src = tmp[k]
                dst = y3[n, g * og + k]
                for z in range(big_l):
                    dst[z] = src[z] + bv
    return y


@njit(**_OPTS)
def _grid_grad(gy, n, o0, og, gg, wp, at):
    """gg[k, at + y*Wp + z] = gy[n, o0 + k, y, z] (gg's gap columns stay zero)."""
    oh, ow = gy.shape[2], gy.shape[3]
    for k in range(og):
        dst = gg[k]
        for yy in range(oh):
            src = gy[n, o0 + k, yy]
            base = at + yy * wp
            d = dst[base:base + ow]
            for z in range(ow):
                d[z] = src[z]


@njit(**_OPTS)
def conv2d_input_grad(gy, w, h_in, w_in, sh, sw, ph, pw, dh, dw, groups):
    """dx (N, C, h_in, w_in) of y = conv(x, w) given gy (N, O, oh, ow) (= conv_transpose)."""
    nb, o, oh, ow = gy.shape
    o2, cg, kh, kw = w.shape
    if groups <= 0 or o2 != o or o % groups != 0:
        raise ValueError("conv2d_input_grad: channels do not match the weight and groups")
    og = o // groups
    kk = cg * kh * kw
    if sh == 1 and sw == 1:
        # stride 1: dx is the forward convolution of gy with the flipped, transposed kernel
        # (the fast forward path), padded by (k-1)*d - p on each side when that is >= 0
        lo_h, lo_w = (kh - 1) * dh - ph, (kw - 1) * dw - pw
        hi_h = (kh - 1) * dh - (oh - h_in - ph + (kh - 1) * dh)
        hi_w = (kw - 1) * dw - (ow - w_in - pw + (kw - 1) * dw)
        if lo_h >= 0 and lo_w >= 0 and hi_h >= 0 and hi_w >= 0:
            wt = np.empty((cg * groups, og, kh, kw), gy.dtype)
            for g in range(groups):
                for k in range(og):
                    for c in range(cg):
                        for i in range(kh):
                            for j in range(kw):
                                wt[g * cg + c, k, i, j] = w[g * og + k, c, kh - 1 - i,
                                                            kw - 1 - j]
            return conv2d_forward(gy, wt, None, 1, 1, lo_h, lo_w, hi_h, hi_w, dh, dw, groups)
    dx = np.zeros((nb, cg * groups, h_in, w_in), gy.dtype)
    if kk == 0 or nb == 0 or oh == 0 or ow == 0:
        return dx
    wgs = _weight_groups(w, groups)
    hp = (oh - 1) * sh + (kh - 1) * dh + 1
    wp = (ow - 1) * sw + (kw - 1) * dw + 1
    if sh == 1 and sw == 1 and hp >= ph + h_in and wp >= pw + w_in:
        # adjoint of the forward's padded grid (the grid covers every input pixel)
        span = (oh - 1) * wp + ow
        bc = _chunk(nb, kk * span)
        gbuf = np.zeros(og * bc * span, gy.dtype)
        cbuf = np.empty(kk * bc * span, gy.dtype)
        dxp = np.empty((cg, hp, wp), gy.dtype)
        for n0 in range(0, nb, bc):
            m = min(bc, nb - n0)
            if m != bc:
                gbuf[:] = 0  # the rows move: clear the gap columns again
            gg = gbuf[:og * m * span].reshape((og, m * span))
            cols = cbuf[:kk * m * span].reshape((kk, m * span))
            for g in range(groups):
                for q in range(m):
                    _grid_grad(gy, n0 + q, g * og, og, gg, wp, q * span)
                np.dot(wgs[g].T, gg, cols)
                for q in range(m):
                    dxp[:] = 0
                    _grid_cols_add(cols, dxp, kh, kw, dh, dw, span, q * span)
                    for c in range(cg):
                        for i in range(h_in):
                            src = dxp[c, ph + i]
                            dst = dx[n0 + q, g * cg + c, i]
                            for j in range(w_in):
                                dst[j] = src[pw + j]
        return dx
    big_l = oh * ow
    g3 = gy.reshape((nb, o, big_l))
    cols = np.empty((kk, big_l), gy.dtype)
    gn = np.empty((og, big_l), gy.dtype)
    for n in range(nb):
        for g in range(groups):
            gn[:] = g3[n, g * og:(g + 1) * og]
            np.dot(wgs[g].T, gn, cols)
            _col2im_add(cols, dx, n, g * cg, cg, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw)
    return dx


@njit(**_OPTS)
def conv2d_weight_grad(x, gy, kh, kw, sh, sw, ph, pw, dh, dw, groups):
    """dw (O, C / groups, kh, kw) of y = conv(x, w) given gy (N, O, oh, ow)."""
    nb, c, h_in, w_in = x.shape
    nb2, o, oh, ow = gy.shape
    if groups <= 0 or nb2 != nb or c % groups != 0 or o % groups != 0:
        raise ValueError("conv2d_weight_grad: batch or channels do not match")
    og, cg = o // groups, c // groups
    kk = cg * kh * kw
    dw_ = np.zeros((o, kk), x.dtype)
    part = np.empty((og, kk), x.dtype)
    if kk == 0 or nb == 0 or oh == 0 or ow == 0:
        return dw_.reshape((o, cg, kh, kw))
    hp = (oh - 1) * sh + (kh - 1) * dh + 1
    wp = (ow - 1) * sw + (kw - 1) * dw + 1
    if sh == 1 and sw == 1 and hp >= ph + h_in and wp >= pw + w_in:
        span = (oh - 1) * wp + ow
        bc = _chunk(nb, kk * span)
        gbuf = np.zeros(og * bc * span, x.dtype)
        cbuf = np.empty(kk * bc * span, x.dtype)
        xp = np.zeros((cg, hp, wp), x.dtype)
        for n0 in range(0, nb, bc):
            m = min(bc, nb - n0)
            if m != bc:
                gbuf[:] = 0  # the rows move: clear the gap columns again
            gg = gbuf[:og * m * span].reshape((og, m * span))
            cols = cbuf[:kk * m * span].reshape((kk, m * span))
            for g in range(groups):
                for q in range(m):
                    _pad_into(x, n0 + q, g * cg, cg, xp, ph, pw)
                    _grid_cols(xp, cols, kh, kw, dh, dw, span, q * span)
                    _grid_grad(gy, n0 + q, g * og, og, gg, wp, q * span)
                np.dot(gg, cols.T, part)
                dw_[g * og:(g + 1) * og] += part
        return dw_.reshape((o, cg, kh, kw))
    big_l = oh * ow
    g3 = gy.reshape((nb, o, big_l))
    cols = np.empty((kk, big_l), x.dtype)
    gn = np.empty((og, big_l), x.dtype)
    for n in range(nb):
        for g in range(groups):
            _im2col(x, n, g * cg, cg, cols, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw)
            gn[:] = g3[n, g * og:(g + 1) * og]
            np.dot(gn, cols.T, part)
            dw_[g * og:(g + 1) * og] += part
    return dw_.reshape((o, cg, kh, kw))


# --- lowering ------------------------------------------------------------------------------------
def import_kernels(em: Emitter, module: str, names: str) -> None:
    """The program imports `names` from `module` (whose hash then keys its cache name)."""
    line = f"from {module} import {names}"
    if line not in em.globals:
        em.globals.append(line)


def int_list(em: Emitter, v: ir.Value, n: int, what: str) -> list:
    """`n` expressions for an int-or-list argument: a constant (an int repeats, as PyTorch's
    expand_param_if_needed) or a list built from run-time ints (backward graphs)."""
    if em.is_const(v):
        c = em.const(v)
        if isinstance(c, bool):
            raise NotLowered(f"{what} {c!r}")
        if isinstance(c, int):
            return [literal.integer(c)] * n
        if not isinstance(c, (tuple, list)) or not all(
                isinstance(e, int) and not isinstance(e, bool) for e in c):
            raise NotLowered(f"{what} {c!r}")
        c = list(c) * n if len(c) == 1 else list(c)
        if len(c) != n:
            raise NotLowered(f"{what} {c!r}: expected {n} values")
        return [literal.integer(e) for e in c]
    from .lower_shape import _runtime_sizes
    parts = _runtime_sizes(em, v)
    if len(parts) == 1:
        parts = parts * n
    if len(parts) != n:
        raise NotLowered(f"{what}: expected {n} values")
    return parts


def float_operands(em: Emitter, n: ir.Node, *vals) -> dt.dtype:
    """The common float dtype of tensor operands (None values skipped), else NotLowered."""
    d = None
    for v in vals:
        if v is None:
            continue
        t = em.tensor(v)
        if t.dtype not in _FLOATS or (d is not None and t.dtype is not d):
            raise NotLowered(f"op {n.op}: operands of dtype {t.dtype} (float32/float64 of one "
                             "dtype are lowered)")
        d = t.dtype
    return d


def _as4(em: Emitter, xs: str, rank: int, nd: int, batched_rank: int) -> str:
    """A C-contiguous 4-D (N, C, H, W) version of an (N, C, *) / (C, *) array expression."""
    out = em.fresh("cv")
    em.emit(f"{out} = np.ascontiguousarray({xs})")
    lead = [] if rank == batched_rank else ["1"]
    dims = lead + [f"{out}.shape[{i}]" for i in range(rank)]
    if nd == 1:
        dims = dims[:-1] + ["1", dims[-1]]
    if dims != [f"{out}.shape[{i}]" for i in range(4)]:
        em.emit(f"{out} = {out}.reshape(({', '.join(dims)}))")
    return out


def _check(em: Emitter, cond: str, *parts) -> None:
    em.emit(f"if {cond}:")
    em.indent += 1
    em.raise_("RuntimeError", *parts)
    em.indent -= 1


def _static_conv_params(nd: int, stride, padding, dilation, groups):
    """Validate constant hyper-parameters the way eager does; NotLowered (so the interpreter
    raises PyTorch's error) when eager would reject them."""
    from ..._ops.nn_conv import _conv_params
    if not isinstance(groups, int) or isinstance(groups, bool) or groups <= 0:
        raise NotLowered(f"groups {groups!r}")
    try:
        _conv_params(nd, (1, 1) + (1,) * nd, stride, padding, dilation)
    except Exception as e:
        raise NotLowered(f"convolution parameters: {e}") from None


@lowers("conv1d", "conv2d")
def lower_conv(em: Emitter, n: ir.Node) -> None:
    """conv1d / conv2d (public: padding int, list, 'same' or 'valid'; optional bias)."""
    nd = 1 if n.op == "conv1d" else 2
    x, w, b, stride_v, pad_v, dil_v, groups_v = n.inputs
    has_b = not (em.is_const(b) and em.const(b) is None)
    d = float_operands(em, n, x, w, b if has_b else None)
    tx, tw = em.tensor(x), em.tensor(w)
    if tx.ndim not in (nd + 1, nd + 2) or tw.ndim != nd + 2 or \
            has_b and em.tensor(b).ndim != 1:
        raise NotLowered(f"op {n.op}: ranks")  # the interpreter raises PyTorch's error
    stride, padding, dilation, groups = (em.const(stride_v), em.const(pad_v),
                                         em.const(dil_v), em.const(groups_v))
    _static_conv_params(nd, stride, padding, dilation, groups)
    s = int_list(em, stride_v, nd, "stride")
    dl = int_list(em, dil_v, nd, "dilation")
    import_kernels(em, MODULE, "conv2d_forward")
    x4 = _as4(em, em.name(x), tx.ndim, nd, nd + 2)
    w4 = _as4(em, em.name(w), nd + 2, nd, nd + 2)
    ks = [f"{w4}.shape[{2 + i}]" for i in range(2)]
    if padding == "same":
        lo, hi = [], []
        for i in range(2):
            dd = dl[i - 2 + nd] if i >= 2 - nd else "1"
            tot = em.fresh("pt")
            em.emit(f"{tot} = {dd} * ({ks[i]} - 1)")
            lo.append(f"({tot} // 2)")
            hi.append(f"({tot} - {tot} // 2)")
    else:
        p = ["0"] * nd if padding == "valid" else int_list(em, pad_v, nd, "padding")
        lo = hi = (["0"] + p) if nd == 1 else p
    s2 = (["1"] + s) if nd == 1 else s
    d2 = (["1"] + dl) if nd == 1 else dl
    g = literal.integer(groups)
    _check(em, f"{w4}.shape[0] % {g} != 0", f"Given groups={groups}, expected weight to be "
           f"divisible by {groups} at dimension 0, but got weight of size [",
           (f"{w4}.shape[0]",), ", ", (f"{w4}.shape[1]",), ", ...] instead")
    _check(em, f"{x4}.shape[1] != {w4}.shape[1] * {g}",
           f"Given groups={groups}, weight of size [", (f"{w4}.shape[0]",), ", ",
           (f"{w4}.shape[1]",), ", ...], expected input[", (f"{x4}.shape[0]",), ", ",
           (f"{x4}.shape[1]",), ", ...] to have ", (f"{w4}.shape[1] * {g}",),
           " channels, but got ", (f"{x4}.shape[1]",), " channels instead")
    if has_b:
        bs = em.name(b)
        _check(em, f"{bs}.shape[0] != {w4}.shape[0]",
               "Given weight of size [", (f"{w4}.shape[0]",), ", ...], expected bias to be "
               "1-dimensional with ", (f"{w4}.shape[0]",), " elements, but got bias of size [",
               (f"{bs}.shape[0]",), "] instead")
    for i in range(2 - nd, 2):
        _check(em, f"{x4}.shape[{2 + i}] + {lo[i]} + {hi[i]} < {d2[i]} * ({ks[i]} - 1) + 1",
               "Calculated padded input size per channel: (",
               (f"{x4}.shape[{2 + i}] + {lo[i]} + {hi[i]}",), "). Kernel size: (",
               (f"{d2[i]} * ({ks[i]} - 1) + 1",), "). Kernel size can't be greater than actual "
               "input size")
    y = em.fresh("cy")
    em.emit(f"{y} = conv2d_forward({x4}, {w4}, {em.name(b) if has_b else 'None'}, {s2[0]}, "
            f"{s2[1]}, {lo[0]}, {lo[1]}, {hi[0]}, {hi[1]}, {d2[0]}, {d2[1]}, {g})")
    em.bind(n.outputs[0], _from4(em, y, tx.ndim, nd))


def _from4(em: Emitter, y: str, rank: int, nd: int) -> str:
    """The (N, O, H, W) result back in the caller's rank ((N, O, L) for 1-D, no batch dim for
    unbatched input)."""
    dims = [f"{y}.shape[{i}]" for i in range(4)]
    if nd == 1:
        dims = dims[:2] + dims[3:]
    if rank == nd + 1:
        dims = dims[1:]
    if len(dims) == 4:
        return y
    out = em.fresh("cy")
    em.emit(f"{out} = {y}.reshape(({', '.join(dims)},))")
    return out


def _internal_params(em: Emitter, n: ir.Node, nd: int, stride_v, pad_v, dil_v, groups_v):
    """2-D (stride, lo pads, hi pads, dilation, groups) expressions of the internal ops (flat
    lo/hi padding list, possibly run-time values in backward graphs)."""
    s = int_list(em, stride_v, nd, "stride")
    p = int_list(em, pad_v, 2 * nd, "padding")
    dl = int_list(em, dil_v, nd, "dilation")
    groups = em.const(groups_v)
    if not isinstance(groups, int) or isinstance(groups, bool) or groups <= 0:
        raise NotLowered(f"groups {groups!r}")
    lo, hi = p[0::2], p[1::2]
    if nd == 1:
        s, lo, hi, dl = ["1"] + s, ["0"] + lo, ["0"] + hi, ["1"] + dl
    for e in s + dl:
        _check(em, f"{e} <= 0", f"op {n.op}: non-positive stride or dilation")
    for e in lo + hi:
        _check(em, f"{e} < 0", f"op {n.op}: negative padding")
    return s, lo, hi, dl, literal.integer(groups)


@lowers("_conv_nd")
def lower_conv_nd(em: Emitter, n: ir.Node) -> None:
    """_conv_nd(input, weight, stride, padding (flat lo/hi), dilation, groups), batched."""
    x, w, stride_v, pad_v, dil_v, groups_v = n.inputs
    float_operands(em, n, x, w)
    nd = em.tensor(w).ndim - 2
    if nd not in (1, 2) or em.tensor(x).ndim != nd + 2:
        raise NotLowered(f"op {n.op}: ranks")
    s, lo, hi, dl, g = _internal_params(em, n, nd, stride_v, pad_v, dil_v, groups_v)
    import_kernels(em, MODULE, "conv2d_forward")
    x4 = _as4(em, em.name(x), nd + 2, nd, nd + 2)
    w4 = _as4(em, em.name(w), nd + 2, nd, nd + 2)
    y = em.fresh("cy")
    em.emit(f"{y} = conv2d_forward({x4}, {w4}, None, {s[0]}, {s[1]}, {lo[0]}, {lo[1]}, "
            f"{hi[0]}, {hi[1]}, {dl[0]}, {dl[1]}, {g})")
    em.bind(n.outputs[0], _from4(em, y, nd + 2, nd))


def _lower_conv_grad(em: Emitter, n: ir.Node, kernel: str, what: str, rank_of: int) -> None:
    """The two conv gradient ops: (a, b, sizes, stride, padding, dilation, groups) ->
    kernel(a4, b4, sizes..., stride, padding lo, dilation, groups); `sizes` (the input's or
    the kernel's spatial sizes, named `what`) are run-time ints, checked non-negative; the
    spatial rank is read from operand `rank_of` (the weight for input_grad, the input for
    weight_grad)."""
    a, b, size_v, stride_v, pad_v, dil_v, groups_v = n.inputs
    float_operands(em, n, a, b)
    nd = em.tensor(n.inputs[rank_of]).ndim - 2
    if nd not in (1, 2) or em.tensor(n.inputs[1 - rank_of]).ndim != nd + 2:
        raise NotLowered(f"op {n.op}: ranks")
    size = int_list(em, size_v, nd, what)
    s, lo, hi, dl, g = _internal_params(em, n, nd, stride_v, pad_v, dil_v, groups_v)
    size = (["1"] + size) if nd == 1 else size
    for e in size:
        _check(em, f"{e} < 0", f"op {n.op}: negative {what.replace('_', ' ')}")
    import_kernels(em, MODULE, kernel)
    a4 = _as4(em, em.name(a), nd + 2, nd, nd + 2)
    b4 = _as4(em, em.name(b), nd + 2, nd, nd + 2)
    y = em.fresh("cy")
    em.emit(f"{y} = {kernel}({a4}, {b4}, {size[0]}, {size[1]}, {s[0]}, {s[1]}, "
            f"{lo[0]}, {lo[1]}, {dl[0]}, {dl[1]}, {g})")
    em.bind(n.outputs[0], _from4(em, y, nd + 2, nd))


@lowers("_conv_nd_input_grad")
def lower_conv_input_grad(em: Emitter, n: ir.Node) -> None:
    """_conv_nd_input_grad(grad, weight, input_size, stride, padding, dilation, groups)."""
    _lower_conv_grad(em, n, "conv2d_input_grad", "input_size", rank_of=1)


@lowers("_conv_nd_weight_grad")
def lower_conv_weight_grad(em: Emitter, n: ir.Node) -> None:
    """_conv_nd_weight_grad(input, grad, kernel_size, stride, padding, dilation, groups)."""
    _lower_conv_grad(em, n, "conv2d_weight_grad", "kernel_size", rank_of=0)
