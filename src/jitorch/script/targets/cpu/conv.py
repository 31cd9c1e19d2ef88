"""The convolution kernels that generated programs call (`conv2d_forward`, `conv2d_input_grad`,
`conv2d_weight_grad`): njit(nogil), disk-cached, typed per dtype only (operands C-contiguous);
every size is a run-time value. targets/cpu/lower_conv.py lowers conv ops to calls of them
(`from jitorch.script.targets.cpu.conv import ...`: the program cache hashes this file into the
program's name); the calls go through symbols (kernels/kernel_call.library), so each is compiled
once per dtype and process, not again inside each kernel that calls it. The kernels multiply
through blas.py's `mm_into` by its symbol (strided operands, accumulating, compiled once per
dtype and shared with the programs' matrix products; Numba's `np.dot` compiled a function per
operand layout) and allocate with alloc.py's intrinsics (no NumPy overload compiled per array
type); `source_stamp.follow` below keys this file's disk cache on alloc.py too.

Method (stride 1, the common case): the padded input of a sample lives on a grid of width
Wp = W + pads, and output pixel (y, z) is grid column y*Wp + z; then every im2col row is ONE
contiguous run of the padded plane (a vectorised copy, no per-pixel bounds logic), a chunk of
samples sits side by side in one (Cg*K, chunk*span) buffer, and one gemm per group gives the
outputs, copied out of the grid with the bias added. The input gradient is the same forward
convolution of the gradient with the flipped, transposed kernel (cropped where a pad would be
negative), the weight gradient sums grad @ cols^T over the chunks on the grid. Other strides
use a general im2col (clipped row segments). Each method is a kernel of its own
(`_unit_stride`, `_strided`), so that a program whose strides are constants compiles only the
one it needs.
The kernels re-check the relations they index by and bound every read and write by the arrays'
own sizes (never out of bounds).
"""
from __future__ import annotations

from numba import njit, types

from ...kernels import kernel_call, source_stamp
from . import alloc
from .alloc import _jt_clear, _jt_empty, _jt_zeros
from .blas import mm_into_by_symbol as _mm

__all__ = ["conv2d_forward", "conv2d_input_grad", "conv2d_weight_grad"]

# Generated code reaches these through symbols only
_OPTS = dict(nogil=True, error_model="numpy", fastmath={"reassoc", "contract"}, cache=True,
             **kernel_call.NATIVE_ONLY)
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
def _out_size(size, pad_total, k, s, d):
    return (size + pad_total - d * (k - 1) - 1) // s + 1


@njit(**_OPTS)
def _chunk(nb, per_sample):
    """Samples per gemm: about CHUNK elements of im2col buffer (L2-sized), at least one."""
    return max(1, min(nb, CHUNK // max(per_sample, 1)))


@njit(**_OPTS)
def _grad_grid(gy, kh, kw, dh, dw, ph, pw, h_in, w_in, og, kk):
    """The stride-1 weight gradient's padded grid for gy (N, O, oh, ow): (Hp, Wp, span,
    samples per chunk, the chunk's gradient-grid buffer (zeros), its im2col buffer). The grid
    holds every output pixel's window and every input pixel, whatever the sizes (a gradient of
    another size than the forward's is summed where it falls)."""
    nb, oh, ow = gy.shape[0], gy.shape[2], gy.shape[3]
    hp = max(oh + (kh - 1) * dh, ph + h_in)
    wp = max(ow + (kw - 1) * dw, pw + w_in)
    span = (oh - 1) * wp + ow
    bc = _chunk(nb, kk * span)
    return (hp, wp, span, bc, _jt_zeros(og * bc * span, gy.dtype),
            _jt_empty(kk * bc * span, gy.dtype))


@njit(**_OPTS)
def _chunk_views(gbuf, cbuf, og, kk, m, span, bc):
    """The (og, m*span) gradient grid and (kk, m*span) im2col of a chunk of m samples; a
    chunk smaller than the first moves the rows, so the gap columns are cleared again."""
    if m != bc:
        _jt_clear(gbuf)
    return (gbuf[:og * m * span].reshape((og, m * span)),
            cbuf[:kk * m * span].reshape((kk, m * span)))


@njit(**_OPTS)
def _forward_start(x, w, b, has_b, sh, sw, ph, pw, ph_hi, pw_hi, dh, dw, groups):
    """The forward's checks and its output y: (y, oh, ow, done); `done` when there is nothing
    to convolve (an empty kernel or batch) and y already holds the result (the bias, or 0)."""
    nb, c, h_in, w_in = x.shape
    o, cg, kh, kw = w.shape
    if groups <= 0 or cg * groups != c or o % groups != 0:
        raise ValueError("conv2d_forward: channels do not match the weight and groups")
    if has_b:
        if b.shape[0] != o:
            raise ValueError("conv2d_forward: bias size does not match the weight")
    if sh <= 0 or sw <= 0:
        raise ValueError("conv2d_forward: non-positive stride")
    oh = _out_size(h_in, ph + ph_hi, kh, sh, dh)
    ow = _out_size(w_in, pw + pw_hi, kw, sw, dw)
    if oh < 1 or ow < 1:
        raise ValueError("conv2d_forward: kernel larger than the padded input")
    y = _jt_empty((nb, o, oh, ow), x.dtype)
    if cg * kh * kw != 0 and nb != 0:
        return y, oh, ow, False
    zero = x.dtype.type(0)
    for n in range(nb):
        for k in range(o):
            y[n, k] = b[k] if has_b else zero
    return y, oh, ow, True


@njit(**_OPTS)
def _forward_unit_stride(x, w, b, has_b, sh, sw, ph, pw, ph_hi, pw_hi, dh, dw, groups):
    """y = conv(x, w) + b for stride 1 (sh == sw == 1, checked), on the padded grid: output
    (y, z) at column y*Wp + z, every im2col row one run; a chunk of samples side by side makes
    one larger gemm. (b read only when has_b: (O,), else any 1-D array of x's dtype, so that
    one compile serves both; pads lo (ph, pw) / hi (ph_hi, pw_hi).)"""
    if sh != 1 or sw != 1:
        raise ValueError("conv2d_forward_unit_stride: a stride other than 1")
    y, oh, ow, done = _forward_start(x, w, b, has_b, sh, sw, ph, pw, ph_hi, pw_hi, dh, dw,
                                     groups)
    if done:
        return y
    nb, _, h_in, w_in = x.shape
    o, cg, kh, kw = w.shape
    og = o // groups
    kk = cg * kh * kw
    zero = x.dtype.type(0)
    w2 = w.reshape((o, kk))
    hp, wp = h_in + ph + ph_hi, w_in + pw + pw_hi
    span = (oh - 1) * wp + ow
    bc = _chunk(nb, kk * span)
    xp = _jt_zeros((cg, hp, wp), x.dtype)
    cbuf = _jt_empty(kk * bc * span, x.dtype)
    tbuf = _jt_empty(og * bc * span, x.dtype)
    for n0 in range(0, nb, bc):
        m = min(bc, nb - n0)
        cols = cbuf[:kk * m * span].reshape((kk, m * span))
        tmp = tbuf[:og * m * span].reshape((og, m * span))
        for g in range(groups):
            for q in range(m):
                _pad_into(x, n0 + q, g * cg, cg, xp, ph, pw)
                _grid_cols(xp, cols, kh, kw, dh, dw, span, q * span)
            _mm(w2[g * og:(g + 1) * og], cols, tmp, False)
            for q in range(m):
                for k in range(og):
                    bv = b[g * og + k] if has_b else zero
                    for yy in range(oh):
                        dst = y[n0 + q, g * og + k, yy]
                        base = q * span + yy * wp
                        t = tmp[k, base:base + ow]
                        for z in range(ow):
                            dst[z] = t[z] + bv
    return y


@njit(**_OPTS)
def _forward_strided(x, w, b, has_b, sh, sw, ph, pw, ph_hi, pw_hi, dh, dw, groups):
    """y = conv(x, w) + b for any stride: a general im2col per sample and group."""
    y, oh, ow, done = _forward_start(x, w, b, has_b, sh, sw, ph, pw, ph_hi, pw_hi, dh, dw,
                                     groups)
    if done:
        return y
    nb = x.shape[0]
    o, cg, kh, kw = w.shape
    og = o // groups
    kk = cg * kh * kw
    w2 = w.reshape((o, kk))
    big_l = oh * ow
    y3 = y.reshape((nb, o, big_l))
    cols = _jt_empty((kk, big_l), x.dtype)
    for n in range(nb):
        for g in range(groups):
            _im2col(x, n, g * cg, cg, cols, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw)
            _mm(w2[g * og:(g + 1) * og], cols, y3[n, g * og:(g + 1) * og], False)
            if has_b:
                for k in range(og):
                    bv = b[g * og + k]
                    dst = y3[n, g * og + k]
                    for z in range(big_l):
                        dst[z] += bv
    return y


@njit(**_OPTS)
def _forward(x, w, b, has_b, sh, sw, ph, pw, ph_hi, pw_hi, dh, dw, groups):
    """The forward for strides known only at run time: the unit-stride kernel or the strided
    one (each through its symbol: this compiles both)."""
    if sh == 1 and sw == 1:
        return conv2d_forward_unit_stride(x, w, b, has_b, sh, sw, ph, pw, ph_hi, pw_hi, dh,
                                          dw, groups)
    return conv2d_forward_strided(x, w, b, has_b, sh, sw, ph, pw, ph_hi, pw_hi, dh, dw,
                                  groups)


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
def _input_grad_check(gy, w, sh, sw, groups):
    """The input gradient's checks of the relations both methods index by."""
    o = gy.shape[1]
    if groups <= 0 or w.shape[0] != o or o % groups != 0:
        raise ValueError("conv2d_input_grad: channels do not match the weight and groups")
    if sh <= 0 or sw <= 0:
        raise ValueError("conv2d_input_grad: non-positive stride")


@njit(**_OPTS)
def _input_grad_unit_stride(gy, w, h_in, w_in, sh, sw, ph, pw, dh, dw, groups):
    """dx (N, C, h_in, w_in) of y = conv(x, w) given gy (N, O, oh, ow), stride 1 (checked):
    the forward convolution of gy with the flipped, transposed kernel, padded by
    lo = (k-1)*d - p before and hi = p + size - out after (both (k-1)*d - p for the gradient of
    a forward of these sizes). A negative pad (p > (k-1)*d, or a gradient of another size) is
    taken as 0 and the rows or columns it adds are cropped, so every size takes this path."""
    _input_grad_check(gy, w, sh, sw, groups)
    if sh != 1 or sw != 1:
        raise ValueError("conv2d_input_grad_unit_stride: a stride other than 1")
    nb, o, oh, ow = gy.shape
    cg, kh, kw = w.shape[1], w.shape[2], w.shape[3]
    og = o // groups
    c = cg * groups
    if nb == 0 or og == 0 or c == 0 or kh == 0 or kw == 0 or oh == 0 or ow == 0 or \
            h_in == 0 or w_in == 0:
        return _jt_zeros((nb, c, h_in, w_in), gy.dtype)
    lo_h, lo_w = (kh - 1) * dh - ph, (kw - 1) * dw - pw
    hi_h, hi_w = ph + h_in - oh, pw + w_in - ow
    wt = _jt_empty((c, og, kh, kw), gy.dtype)
    for g in range(groups):
        for k in range(og):
            for q in range(cg):
                for i in range(kh):
                    for j in range(kw):
                        wt[g * cg + q, k, i, j] = w[g * og + k, q, kh - 1 - i, kw - 1 - j]
    # (through the symbol: the forward's one compile per dtype, not a second copy)
    z = conv2d_forward_unit_stride(gy, wt, _jt_empty(0, gy.dtype), False, 1, 1,
                                   lo_h if lo_h > 0 else 0, lo_w if lo_w > 0 else 0,
                                   hi_h if hi_h > 0 else 0, hi_w if hi_w > 0 else 0,
                                   dh, dw, groups)
    at_h, at_w = -lo_h if lo_h < 0 else 0, -lo_w if lo_w < 0 else 0
    if at_h == 0 and at_w == 0 and z.shape[2] == h_in and z.shape[3] == w_in:
        return z
    dx = _jt_empty((nb, c, h_in, w_in), gy.dtype)
    for n in range(nb):
        for q in range(c):
            for i in range(h_in):
                src = z[n, q, at_h + i, at_w:at_w + w_in]
                dst = dx[n, q, i]
                for j in range(w_in):
                    dst[j] = src[j]
    return dx


@njit(**_OPTS)
def _input_grad_strided(gy, w, h_in, w_in, sh, sw, ph, pw, dh, dw, groups):
    """dx (N, C, h_in, w_in) of y = conv(x, w) given gy (N, O, oh, ow), any stride: W^T @ gy
    per sample and group, added back by the adjoint of the general im2col."""
    _input_grad_check(gy, w, sh, sw, groups)
    nb, o, oh, ow = gy.shape
    cg, kh, kw = w.shape[1], w.shape[2], w.shape[3]
    og = o // groups
    kk = cg * kh * kw
    dx = _jt_zeros((nb, cg * groups, h_in, w_in), gy.dtype)
    if kk == 0 or nb == 0 or oh == 0 or ow == 0:
        return dx
    w2 = w.reshape((o, kk))
    big_l = oh * ow
    g3 = gy.reshape((nb, o, big_l))
    cols = _jt_empty((kk, big_l), gy.dtype)
    for n in range(nb):
        for g in range(groups):
            _mm(w2[g * og:(g + 1) * og].T, g3[n, g * og:(g + 1) * og], cols, False)
            _col2im_add(cols, dx, n, g * cg, cg, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw)
    return dx


@njit(**_OPTS)
def _input_grad(gy, w, h_in, w_in, sh, sw, ph, pw, dh, dw, groups):
    """The input gradient for strides known only at run time (compiles both kernels)."""
    if sh == 1 and sw == 1:
        return conv2d_input_grad_unit_stride(gy, w, h_in, w_in, sh, sw, ph, pw, dh, dw, groups)
    return conv2d_input_grad_strided(gy, w, h_in, w_in, sh, sw, ph, pw, dh, dw, groups)


@njit(**_OPTS)
def _weight_grad_start(x, gy, sh, sw, groups):
    """The weight gradient's checks; -> (O / groups, C / groups)."""
    nb, c = x.shape[0], x.shape[1]
    nb2, o = gy.shape[0], gy.shape[1]
    if groups <= 0 or nb2 != nb or c % groups != 0 or o % groups != 0:
        raise ValueError("conv2d_weight_grad: batch or channels do not match")
    if sh <= 0 or sw <= 0:
        raise ValueError("conv2d_weight_grad: non-positive stride")
    return o // groups, c // groups


@njit(**_OPTS)
def _weight_grad_unit_stride(x, gy, kh, kw, sh, sw, ph, pw, dh, dw, groups):
    """dw (O, C / groups, kh, kw) of y = conv(x, w) given gy (N, O, oh, ow), stride 1
    (checked): grad @ cols^T on the forward's padded grid, summed over chunks of samples."""
    og, cg = _weight_grad_start(x, gy, sh, sw, groups)
    if sh != 1 or sw != 1:
        raise ValueError("conv2d_weight_grad_unit_stride: a stride other than 1")
    nb, _, h_in, w_in = x.shape
    o, oh, ow = gy.shape[1], gy.shape[2], gy.shape[3]
    kk = cg * kh * kw
    dw_ = _jt_zeros((o, kk), x.dtype)
    if kk == 0 or nb == 0 or oh == 0 or ow == 0:
        return dw_.reshape((o, cg, kh, kw))
    hp, wp, span, bc, gbuf, cbuf = _grad_grid(gy, kh, kw, dh, dw, ph, pw, h_in, w_in, og, kk)
    xp = _jt_zeros((cg, hp, wp), x.dtype)
    for n0 in range(0, nb, bc):
        m = min(bc, nb - n0)
        gg, cols = _chunk_views(gbuf, cbuf, og, kk, m, span, bc)
        for g in range(groups):
            for q in range(m):
                _pad_into(x, n0 + q, g * cg, cg, xp, ph, pw)
                _grid_cols(xp, cols, kh, kw, dh, dw, span, q * span)
                _grid_grad(gy, n0 + q, g * og, og, gg, wp, q * span)
            _mm(gg, cols.T, dw_[g * og:(g + 1) * og], True)
    return dw_.reshape((o, cg, kh, kw))


@njit(**_OPTS)
def _weight_grad_strided(x, gy, kh, kw, sh, sw, ph, pw, dh, dw, groups):
    """dw (O, C / groups, kh, kw) of y = conv(x, w) given gy (N, O, oh, ow), any stride:
    grad @ cols^T with the general im2col, per sample and group."""
    og, cg = _weight_grad_start(x, gy, sh, sw, groups)
    nb = x.shape[0]
    o, oh, ow = gy.shape[1], gy.shape[2], gy.shape[3]
    kk = cg * kh * kw
    dw_ = _jt_zeros((o, kk), x.dtype)
    if kk == 0 or nb == 0 or oh == 0 or ow == 0:
        return dw_.reshape((o, cg, kh, kw))
    big_l = oh * ow
    g3 = gy.reshape((nb, o, big_l))
    cols = _jt_empty((kk, big_l), x.dtype)
    for n in range(nb):
        for g in range(groups):
            _im2col(x, n, g * cg, cg, cols, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw)
            _mm(g3[n, g * og:(g + 1) * og], cols.T, dw_[g * og:(g + 1) * og], True)
    return dw_.reshape((o, cg, kh, kw))


@njit(**_OPTS)
def _weight_grad(x, gy, kh, kw, sh, sw, ph, pw, dh, dw, groups):
    """The weight gradient for strides known only at run time (compiles both kernels)."""
    if sh == 1 and sw == 1:
        return conv2d_weight_grad_unit_stride(x, gy, kh, kw, sh, sw, ph, pw, dh, dw, groups)
    return conv2d_weight_grad_strided(x, gy, kh, kw, sh, sw, ph, pw, dh, dw, groups)


# --- what generated kernels call -----------------------------------------------------------------
def _bias_any_layout(argtys: tuple) -> tuple:
    """The bias (argument 2 of `_forward`) as an 'A' array: a program's bias of any layout, and
    the empty one passed without a bias, share the forward's one compile per dtype."""
    b = argtys[2]
    if not isinstance(b, types.Array):
        return argtys
    return argtys[:2] + (types.Array(b.dtype, b.ndim, "A"),) + argtys[3:]


# Through symbols (kernels/kernel_call.library): each is compiled once per dtype and process (or
# loaded from its disk cache), never linked into (and optimised again inside) every kernel that
# calls it; the unit-stride input gradient calls the unit-stride forward. Operands are the
# C-contiguous 4-D arrays lower_conv.py passes; `conv2d_forward*(x, w, b, has_b, ...)`. Each op
# has three: `_unit_stride` and `_strided` (what lower_conv.py calls when the strides are
# constants: a stride-1 CNN never compiles the general im2col; its first-ever train step
# compile, 24.2 -> 19.2 CPU-s, bench/RESULTS.md "Convolutions by method") and the plain name,
# which picks one at run time.
conv2d_forward_unit_stride = kernel_call.library(_forward_unit_stride, _bias_any_layout)
conv2d_forward_strided = kernel_call.library(_forward_strided, _bias_any_layout)
conv2d_forward = kernel_call.library(_forward, _bias_any_layout)
conv2d_input_grad_unit_stride = kernel_call.library(_input_grad_unit_stride)
conv2d_input_grad_strided = kernel_call.library(_input_grad_strided)
conv2d_input_grad = kernel_call.library(_input_grad)
conv2d_weight_grad_unit_stride = kernel_call.library(_weight_grad_unit_stride)
conv2d_weight_grad_strided = kernel_call.library(_weight_grad_strided)
conv2d_weight_grad = kernel_call.library(_weight_grad)

# alloc.py's intrinsics are emitted into these kernels: their disk cache follows that file too
source_stamp.follow(globals(), alloc)

# native-only functions (no Python entry point): a Python call raises instead of crashing
kernel_call.refuse_python_calls(globals())
