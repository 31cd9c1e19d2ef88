"""Views that generated CPU code takes of arrays it has already checked, as intrinsics.

Owns `_jt_flat(x, n)`: the 1-D C-contiguous view of the `n` elements of `x`, an array the
caller has checked to be C-contiguous with `n` elements (lower_elementwise.py's flat loop). The
view shares `x`'s memory and owner and keeps its writability, so a loop may store through it.
And `_jt_expand(x, shape)`: `np.broadcast_to(x, shape)` (read-only, strides 0 on broadcast
dims) for a shape the caller has checked against `x` (lower_elementwise.py's operands;
lower_shape.py's expand uses `_jt_expand_checked`, below, which checks it itself); Numba's
`broadcast_to` overload and its `_can_broadcast` check compiled per rank cost 0.5 CPU-s of an
MLP train step.

Why an intrinsic rather than `np.ascontiguousarray(x).reshape(n)` (what the flat loop used):
Numba compiles its `ascontiguousarray` overload once per array type a program passes (0.4 of
the 12 CPU-s that an MLP train step took to compile; bench/compile_profile.py), and a kernel
types and lowers the overload's call and its copy branch, which never runs there. An intrinsic
is a few instructions emitted in place: no function of its own to compile.

And `_jt_dense(x)`: the 1-D C-contiguous elements of an array `x` of any rank: its own memory
where it is C-contiguous, else a copy. It lets an
elementwise kernel whose operands all have the loop's rank carry one flat loop over
`_jt_expand`ed operands instead of the flat loop and a strided loop nest
(lower_elementwise.py): Numba compiled the nest ~0.1-0.2 CPU-s per kernel (issue 17). An
intrinsic too (its contiguity test, view and copy loop emitted in place, the allocation by
alloc.emit_empty), not an njit function: as one, Numba typed, lowered and optimised it once
per dtype and process (~0.2 CPU-s, a quarter of the first-ever compile of a one-group
program such as bench/compile_time.py's gelu) and then linked and optimised it again inside
every caller; the machine code of the contiguous case is the same test and view.

And `_jt_reshape(x, shape, infer)` (the same dense-or-copy code, reshaped to `shape`, checking
the sizes itself) and `_jt_expand_checked(x, shape)` (`_jt_expand` with PyTorch's expand check):
a reshape or expand is then one intrinsic call in a program's entry instead of a kernel per
(rank, sizes) pattern (7 + 2 of a CNN train step's 37 kernels, 30-85 ms CPU each to compile;
issue 17). Their failures raise RaiseInInterpreter: the interpreter raises eager's exact error.
"""
from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.core.imputils import impl_ret_borrowed, impl_ret_new_ref
from numba.extending import intrinsic

from .alloc import emit_empty, make_array, populate_array

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
    return _expand_typer(x, shape, False)


@intrinsic
def _jt_expand_checked(typingctx, x, shape):
    """`_jt_expand` that checks `shape` itself (PyTorch's expand rules: each size non-negative,
    equal to x's or x's is 1) and raises RaiseInInterpreter where it does not fit (the
    interpreter raises eager's exact error): lower_shape.py's expand is then one intrinsic call
    in the entry instead of a kernel per (rank, sizes) pattern (issue 17)."""
    return _expand_typer(x, shape, True)


def _expand_typer(x, shape, check):
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
        if check:
            from ...kernels.signals import RaiseInInterpreter
            one, bad = context.get_constant(types.intp, 1), cgutils.false_bit
            for d in range(nt):
                bad = builder.or_(bad, builder.icmp_signed("<", sizes[d], zero))
                j = d - (nt - r)
                if j >= 0:
                    bad = builder.or_(bad, builder.and_(
                        builder.icmp_signed("!=", src_shape[j], one),
                        builder.icmp_signed("!=", src_shape[j], sizes[d])))
            with builder.if_then(bad, likely=False):
                context.call_conv.return_user_exc(builder, RaiseInInterpreter, ())
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


@intrinsic
def _jt_dense(typingctx, x):
    """The dense elements of `x`, an array of any rank: a 1-D view of its memory where it is
    C-contiguous, else a copy in C order (alloc.emit_empty's allocation)."""
    if not isinstance(x, types.Array):
        return None
    ret = x.copy(ndim=1, layout="C")
    sig = ret(x)

    def codegen(context, builder, signature, args):
        src = make_array(x)(context, builder, args[0])
        sizes, strides = _geometry(context, builder, src, x.ndim)
        return impl_ret_new_ref(context, builder, ret,
                                _emit_dense(context, builder, ret, src, sizes, strides))
    return sig, codegen


@intrinsic(prefer_literal=True)
def _jt_reshape(typingctx, x, shape, infer):
    """`x` reshaped to `shape` (a tuple of ints; the one at index `infer`, a literal, is
    inferred from x's size, none where it is -1): a view of x's memory where x is
    C-contiguous, else a C-contiguous copy. Sizes that do not fit x's size (a negative one,
    an inferred one that is not a whole number) raise RaiseInInterpreter: the interpreter
    raises PyTorch's exact error. One intrinsic, emitted in place, instead of a kernel per
    (rank, sizes) pattern with Numba's `ascontiguousarray` overload compiled into each."""
    if not isinstance(x, types.Array) or not isinstance(shape, types.BaseTuple) or \
            not all(isinstance(t, types.Integer) for t in shape) or \
            not isinstance(infer, types.IntegerLiteral):
        return None
    k, at = len(shape), infer.literal_value
    if not -1 <= at < k:
        return None
    ret = x.copy(ndim=k, layout="C")
    flat = x.copy(ndim=1, layout="C")
    sig = ret(x, shape, infer)

    def codegen(context, builder, signature, args):
        from ...kernels.signals import RaiseInInterpreter
        intp = context.get_value_type(types.intp)
        src = make_array(x)(context, builder, args[0])
        sizes, strides = _geometry(context, builder, src, x.ndim)
        want = [context.cast(builder, v, t, types.intp)
                for v, t in zip(cgutils.unpack_tuple(builder, args[1], k), shape)]
        n = intp(1)
        for v in sizes:
            n = builder.mul(n, v)
        known, bad = intp(1), cgutils.false_bit
        for d, v in enumerate(want):
            if d != at:
                bad = builder.or_(bad, builder.icmp_signed("<", v, intp(0)))
                known = builder.mul(known, v)
        if at >= 0:  # (known == 0: PyTorch cannot infer the size; the guard keeps srem defined)
            zero = builder.icmp_signed("==", known, intp(0))
            safe = builder.select(zero, intp(1), known)
            bad = builder.or_(bad, builder.or_(
                zero, builder.icmp_signed("!=", builder.srem(n, safe), intp(0))))
            want[at] = builder.sdiv(n, safe)
        else:
            bad = builder.or_(bad, builder.icmp_signed("!=", n, known))
        with builder.if_then(bad, likely=False):
            context.call_conv.return_user_exc(builder, RaiseInInterpreter, ())
        if x.layout == "C":  # C-contiguous by its type (a kernel's output): no test, no copy
            dense = src
            context.nrt.incref(builder, x, args[0])
        else:
            dense = make_array(flat)(context, builder,
                                     _emit_dense(context, builder, flat, src, sizes, strides))
        out = make_array(ret)(context, builder)
        cstrides, step = [], dense.itemsize
        for v in reversed(want):
            cstrides.append(step)
            step = builder.mul(step, v)
        populate_array(out, data=dense.data, shape=want, strides=cstrides[::-1],
                       itemsize=dense.itemsize, meminfo=dense.meminfo, parent=dense.parent)
        return impl_ret_new_ref(context, builder, ret, out._getvalue())
    return sig, codegen


def _geometry(context, builder, src, r):
    """The sizes and element strides (lists of intp values, at least one each: a 0-d array is
    one element) of the array `src` of rank `r`: _emit_dense's operands."""
    if not r:
        return [context.get_constant(types.intp, 1)], [context.get_constant(types.intp, 0)]
    return (cgutils.unpack_tuple(builder, src.shape, r),
            [builder.sdiv(v, src.itemsize) for v in cgutils.unpack_tuple(builder, src.strides, r)])


def _emit_dense(context, builder, ret, src, sizes, strides):
    """The 1-D C-contiguous array (type `ret`, a new reference) of the elements of the array
    whose data is `src`'s and whose sizes and element strides are the lists `sizes`, `strides`
    (any equal lengths >= 1): a view of `src`'s memory where they are C-contiguous, else a copy
    (alloc.emit_empty's allocation). _jt_dense's and _jt_reshape's code."""
    intp = context.get_value_type(types.intp)
    r = len(sizes)
    # C-contiguous: each dimension of size != 1 has the stride of the dims after it
    n, expect, contiguous = intp(1), intp(1), cgutils.true_bit
    for d in range(r - 1, -1, -1):
        n = builder.mul(n, sizes[d])
        counts = builder.icmp_signed("!=", sizes[d], intp(1))
        ok = builder.icmp_signed("==", strides[d], expect)
        contiguous = builder.and_(contiguous, builder.or_(builder.not_(counts), ok))
        expect = builder.select(counts, builder.mul(expect, sizes[d]), expect)
    result = cgutils.alloca_once(builder, context.get_value_type(ret))
    with builder.if_else(contiguous, likely=True) as (view, copy):
        with view:  # src's memory, n elements (as _jt_flat), a new reference
            out = make_array(ret)(context, builder)
            populate_array(out, data=src.data, shape=[n], strides=[src.itemsize],
                           itemsize=src.itemsize, meminfo=src.meminfo, parent=src.parent)
            context.nrt.incref(builder, ret, out._getvalue())
            builder.store(out._getvalue(), result)
        with copy:  # strides are non-negative (jitorch has no negative-step view)
            arr = emit_empty(context, builder, ret, [n])
            builder.store(arr, result)
            dst = make_array(ret)(context, builder, arr)
            inner, step = sizes[r - 1], strides[r - 1]
            nonempty = builder.icmp_signed(">", n, intp(0))
            with builder.if_then(nonempty, likely=True):
                with cgutils.for_range(builder, builder.sdiv(n, inner)) as rows:
                    rem, off = rows.index, intp(0)
                    for d in range(r - 2, -1, -1):
                        off = builder.add(off, builder.mul(builder.srem(rem, sizes[d]),
                                                           strides[d]))
                        rem = builder.sdiv(rem, sizes[d])
                    base = builder.mul(rows.index, inner)
                    with cgutils.for_range(builder, inner) as cols:
                        j = cols.index
                        v = builder.load(builder.gep(
                            src.data, [builder.add(off, builder.mul(j, step))]))
                        builder.store(v, builder.gep(dst.data, [builder.add(base, j)]))
    return builder.load(result)


def use(em, name: str) -> str:
    """`name`, imported into `em`'s module once."""
    return em.import_name(MODULE, name)
