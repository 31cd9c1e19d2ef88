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
"""
from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array

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


def import_line(name: str = "_jt_flat") -> str:
    return f"from {MODULE} import {name}"


def use(em, name: str) -> str:
    """`name`, imported into `em`'s module once."""
    line = import_line(name)
    if line not in em.globals:
        em.globals.append(line)
    return name
