"""The one int64 array in which a CPU entry takes or returns a `List[int]`, as intrinsics.

Owns `_jt_pack_ints(tup)`: the int64 array of the ints of the tuple `tup`, and
`_jt_ints(arr, n)`: the first `n` (a literal) elements of the int64 array `arr`, which the
caller has checked to hold `n`, as a tuple. An autodiff forward returns its saved sizes in one
such array and its backward reads them from it (passes/autodiff_pack.py, program.py): one
value to box and unbox instead of ~60 ints, a narrower return tuple type.

Why intrinsics: `np.array((...), dtype=np.int64)` has Numba compile three functions of its own
per program and tuple type, and reading the array element by element (`arr[k]`) types and
lowers a getitem per element, which cost more than the ~60 int arguments it replaces; emitted
in place, the stores and loads are a few instructions each.
"""
from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.core.imputils import impl_ret_new_ref
from numba.extending import intrinsic

from .alloc import emit_empty

MODULE = "jitorch.script.targets.cpu.packed"
_ARRAY = types.Array(types.int64, 1, "C")


@intrinsic
def _jt_pack_ints(typingctx, tup):
    """A new 1-D int64 array of the ints in the tuple `tup`."""
    if not isinstance(tup, types.BaseTuple) or not len(tup) or \
            not all(isinstance(t, types.Integer) for t in tup):
        return None

    def codegen(context, builder, signature, args):
        n = context.get_constant(types.intp, len(tup))
        arr = emit_empty(context, builder, _ARRAY, [n])
        data = context.make_array(_ARRAY)(context, builder, arr).data
        for i, t in enumerate(tup):
            v = context.cast(builder, builder.extract_value(args[0], i), t, types.int64)
            builder.store(v, cgutils.gep_inbounds(builder, data, i))
        return impl_ret_new_ref(context, builder, _ARRAY, arr)
    return _ARRAY(tup), codegen


@intrinsic
def _jt_ints(typingctx, arr, n):
    """The tuple of the first `n` elements of `arr` (a C-contiguous 1-D int64 array the caller
    has checked to hold `n`)."""
    if arr != _ARRAY or not isinstance(n, types.IntegerLiteral):
        return None
    ret = types.UniTuple(types.int64, n.literal_value)

    def codegen(context, builder, signature, args):
        data = context.make_array(arr)(context, builder, args[0]).data
        vals = [builder.load(cgutils.gep_inbounds(builder, data, i)) for i in range(ret.count)]
        return context.make_tuple(builder, ret, vals)
    return ret(arr, n), codegen

