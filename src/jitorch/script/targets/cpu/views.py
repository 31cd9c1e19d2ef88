"""Views that generated CPU code takes of arrays it has already checked, as intrinsics: `_jt_flat`.

Owns `_jt_flat(x, n)`: the 1-D C-contiguous view of the `n` elements of `x`, an array the
caller has checked to be C-contiguous with `n` elements (lower_elementwise.py's flat loop). The
view shares `x`'s memory and owner and keeps its writability, so a loop may store through it.

Why an intrinsic rather than `np.ascontiguousarray(x).reshape(n)` (what the flat loop used):
Numba compiles its `ascontiguousarray` overload once per array type a program passes (0.4 of
the 12 CPU-s that an MLP train step took to compile; bench/compile_profile.py), and a kernel
types and lowers the overload's call and its copy branch, which never runs there. An intrinsic
is a few instructions emitted in place: no function of its own to compile.
"""
from __future__ import annotations

from numba import types
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


def import_line() -> str:
    return f"from {MODULE} import _jt_flat"
