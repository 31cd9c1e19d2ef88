"""Views that generated CPU code takes of arrays it has already checked, as intrinsics.

Owns `_jt_flat(x, n)`: the 1-D C-contiguous view of the `n` elements of `x`, an array the
caller has checked to be C-contiguous with `n` elements (lower_elementwise.py's flat loop). The
view shares `x`'s memory and owner and keeps its writability, so a loop may store through it.
And `_jt_expand(x, shape)`: `np.broadcast_to(x, shape)` (read-only, strides 0 on broadcast
dims) for a shape the caller has checked against `x` with PyTorch's rules and messages
(lower_shape.py's expand: each size non-negative, equal to x's or x's is 1); Numba's
`broadcast_to` overload and its `_can_broadcast` check compiled per rank cost 0.5 CPU-s of an
MLP train step.

Why an intrinsic rather than `np.ascontiguousarray(x).reshape(n)` (what the flat loop used):
Numba compiles its `ascontiguousarray` overload once per array type a program passes (0.4 of
the 12 CPU-s that an MLP train step took to compile; bench/compile_profile.py), and a kernel
types and lowers the overload's call and its copy branch, which never runs there. An intrinsic
is a few instructions emitted in place: no function of its own to compile.

And `_jt_dense(b, g)`: the 1-D C-contiguous elements of an array given as a 1-D view at its
first element (`_jt_flat(e, 1)`) and its geometry `g = _jt_geom(e)` (sizes and element strides
padded to MAX_RANK): the array's own memory where it is C-contiguous, else a copy. Its types
are one per dtype, so Numba compiles it once per dtype for all kernels and ranks. It lets an
elementwise kernel whose operands all have the loop's rank carry one flat loop over
`_jt_expand`ed operands instead of the flat loop and a strided loop nest
(lower_elementwise.py): Numba compiled the nest ~0.1-0.2 CPU-s per kernel (issue 17).
"""
from __future__ import annotations

import numba
from numba import types
from numba.core import cgutils
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array

from .alloc import _jt_empty

MODULE = "jitorch.script.targets.cpu.views"


@intrinsic
def _jt_flat(typingctx, x, n):
    if not isinstance(x, types.Array) or not isinstance(n, types.Integer):
        return None
    ret = x.copy(ndim=1, layout="C")
    sig = ret(x, n)

    def codegen(context, builder, signature, args):
        src = make_array(x)(context, builder, args[0])
        out = make_array(ret)(context, builder)
        size = context.cast(builder, args[1], n, types.intp)
        populate_array(out, data=src.data, shape=[size], strides=[src.itemsize],
                       itemsize=src.itemsize, meminfo=src.meminfo, parent=src.parent)
        return impl_ret_borrowed(context, builder, ret, out._getvalue())
    return sig, codegen


@intrinsic
def _jt_expand(typingctx, x, shape):
    if not isinstance(x, types.Array) or not isinstance(shape, types.BaseTuple) or \
            len(shape) < x.ndim or not all(isinstance(s, types.Integer) for s in shape):
        return None
    nt, r = len(shape), x.ndim
    ret = types.Array(x.dtype, nt, "A", readonly=True)  # (as Numba's broadcast_to)
    sig = ret(x, shape)

    def codegen(context, builder, signature, args):
        src = make_array(x)(context, builder, args[0])
        out = make_array(ret)(context, builder)
        sizes = [context.cast(builder, v, t, types.intp)
                 for v, t in zip(cgutils.unpack_tuple(builder, args[1], nt), shape)]
        src_shape = cgutils.unpack_tuple(builder, src.shape, r)
        src_strides = cgutils.unpack_tuple(builder, src.strides, r)
        zero = context.get_constant(types.intp, 0)
        strides = []
        for d in range(nt):  # a new leading dim, or x's size 1 broadcast: stride 0
            j = d - (nt - r)
            if j < 0:
                strides.append(zero)
            else:
                same = builder.icmp_signed("==", src_shape[j], sizes[d])
                strides.append(builder.select(same, src_strides[j], zero))
        populate_array(out, data=src.data, shape=sizes, strides=strides,
                       itemsize=src.itemsize, meminfo=src.meminfo, parent=src.parent)
        return impl_ret_borrowed(context, builder, ret, out._getvalue())
    return sig, codegen


MAX_RANK = 8  # _jt_geom's length: operands of a higher rank keep the strided nest


@intrinsic
def _jt_geom(typingctx, x):
    if not isinstance(x, types.Array) or x.ndim > MAX_RANK:
        return None
    r = x.ndim
    ret = types.UniTuple(types.intp, 2 * MAX_RANK)
    sig = ret(x)

    def codegen(context, builder, signature, args):
        a = make_array(x)(context, builder, args[0])
        one = context.get_constant(types.intp, 1)
        zero = context.get_constant(types.intp, 0)
        shape = cgutils.unpack_tuple(builder, a.shape, r)
        strides = [builder.sdiv(s, a.itemsize) for s in cgutils.unpack_tuple(builder, a.strides, r)]
        pad = MAX_RANK - r  # leading dims of size 1
        vals = [one] * pad + list(shape) + [zero] * pad + strides
        return context.make_tuple(builder, ret, vals)
    return sig, codegen


@numba.njit(nogil=True, cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _jt_dense(b, g):
    """The dense elements of the array whose first element `b` starts at and whose geometry is
    `g` (_jt_geom: MAX_RANK sizes, then MAX_RANK strides in elements)."""
    n, expect, contiguous = 1, 1, True
    for d in range(MAX_RANK - 1, -1, -1):
        n *= g[d]
        if g[d] != 1:
            contiguous = contiguous and g[MAX_RANK + d] == expect
            expect *= g[d]
    if contiguous:
        return _jt_flat(b, n)
    # a copy. Strides are non-negative (jitorch has no negative-step view).
    out = _jt_empty(n, b.dtype)  # (alloc.py's intrinsic: no np.empty overload to compile)
    if n == 0:
        return out
    span = 1
    for d in range(MAX_RANK):
        span += (g[d] - 1) * g[MAX_RANK + d]
    src = _jt_flat(b, span)
    inner, step = g[MAX_RANK - 1], g[2 * MAX_RANK - 1]
    for q in range(n // inner):
        rem, off = q, 0
        for d in range(MAX_RANK - 2, -1, -1):
            off += (rem % g[d]) * g[MAX_RANK + d]
            rem //= g[d]
        for j in range(inner):
            out[q * inner + j] = src[off + j * step]
    return out


def import_line(name: str = "_jt_flat") -> str:
    return f"from {MODULE} import {name}"


def use(em, name: str) -> str:
    """`name`, imported into `em`'s module once."""
    line = import_line(name)
    if line not in em.globals:
        em.globals.append(line)
    return name
