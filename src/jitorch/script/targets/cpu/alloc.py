"""Array allocation for generated programs: NumPy-speed large outputs inside njit.

Owns `_jt_empty(shape, dtype)` and `_jt_zeros(shape, dtype)`, intrinsics called instead of
`np.empty` / `np.zeros`, the `_jt_ones` / `_jt_full` functions called instead of `np.ones` /
`np.full` (`rewrite()` edits the body of a generated entry or kernel; module_text.py applies
it), `_jt_clear(a)` (`a[...] = 0`), and the `madvise` binding they use. The library kernels
(blas.py, conv.py, pool.py) call them too.

Why: Numba's `np.empty` gets its memory from `malloc`, which serves big blocks with a fresh
`mmap` every call, so filling a 40 MB output takes one page fault per 4 KiB page. NumPy's
allocator asks the kernel for transparent huge pages on blocks of 4 MiB or more
(`madvise(MADV_HUGEPAGE)` from the first page boundary on, numpy/_core/src/multiarray/alloc.c),
which makes the same fill 2x faster where `/sys/kernel/mm/transparent_hugepage/enabled` is
`madvise` (the common distribution default). We do the same, from inside the njit program, before
the first write to the block (NUMBA_NOTES.md "Allocation"). The advice is a hint: its return value
is ignored (kernels without THP answer EINVAL, which is harmless), so behaviour never changes.

`madvise` is called through an LLVM declaration of the symbol `jitorch_madvise`, which this
module registers with llvmlite (`add_symbol`) at import, pointing at libc's `madvise`. A symbol
rather than a ctypes function pointer keeps the programs cacheable on disk (a ctypes pointer is a
"dynamic global" that disables Numba's cache). Generated programs import this module, so the
symbol exists before any cached program is linked. Where libc has no `madvise` (not Linux), the
symbol points at a no-op `cfunc`.
"""
from __future__ import annotations

import ctypes
import re
import sys

import numba
from llvmlite import binding as _llb
from llvmlite import ir as _llir
from numba import types
from numba.core import cgutils
from numba.core.imputils import impl_ret_new_ref
from numba.extending import intrinsic

from ...kernels import kernel_call

HUGE_MIN_BYTES = 1 << 22   # NumPy's threshold for asking for huge pages
_MADV_HUGEPAGE = 14        # <sys/mman.h>, Linux
_SYMBOL = "jitorch_madvise"
MODULE = "jitorch.script.targets.cpu.alloc"


def _madvise_address() -> int:
    if sys.platform.startswith("linux"):
        try:
            return ctypes.cast(ctypes.CDLL(None).madvise, ctypes.c_void_p).value
        except (OSError, AttributeError):
            pass

    @numba.cfunc(types.int32(types.uintp, types.uintp, types.int32))
    def _noop(addr, length, advice):  # pragma: no cover - non-Linux only
        return 0
    _madvise_address.keep = _noop  # the cfunc's code must outlive this call
    return _noop.address


_llb.add_symbol(_SYMBOL, _madvise_address())


def _madvise_fn(builder):
    i64 = _llir.IntType(64)
    fnty = _llir.FunctionType(_llir.IntType(32), [i64, i64, _llir.IntType(32)])
    return cgutils.get_or_insert_function(builder.module, fnty, _SYMBOL)


@intrinsic
def _madvise(typingctx, addr, length, advice):
    """int32 madvise(uintp addr, uintp length, int32 advice), libc's (or a no-op)."""
    sig = types.int32(types.uintp, types.uintp, types.int32)

    def codegen(context, builder, signature, args):
        return builder.call(_madvise_fn(builder), args)
    return sig, codegen


def _advise_huge(context, builder, data, nbytes):
    """Emit: ask for huge pages for the `nbytes` bytes at `data` (a fresh, still untouched
    block) when they are 4 MiB or more, from the first page boundary on."""
    intp = context.get_value_type(types.intp)
    big = builder.icmp_signed(">=", nbytes, intp(HUGE_MIN_BYTES))
    with builder.if_then(big, likely=False):
        p = builder.ptrtoint(data, intp)
        off = builder.and_(builder.neg(p), intp(4095))  # (4096 - p % 4096) % 4096
        builder.call(_madvise_fn(builder), [builder.add(p, off), builder.sub(nbytes, off),
                                            _llir.IntType(32)(_MADV_HUGEPAGE)])


def _allocation(shape, dtype):
    """The array type `np.empty(shape, dtype)` makes, and the shape's integer types; None when
    `shape` is not an integer or a tuple of integers or `dtype` not a NumPy number or bool type
    (or an array's dtype)."""
    if isinstance(shape, types.Integer):
        sizes_t = (shape,)
    elif isinstance(shape, types.BaseTuple) and all(isinstance(t, types.Integer) for t in shape):
        sizes_t = tuple(shape)
    else:
        return None
    if not isinstance(dtype, types.DTypeSpec) or \
            not isinstance(dtype.dtype, (types.Number, types.Boolean)):
        return None
    return types.Array(dtype.dtype, len(sizes_t), "C"), sizes_t


def _allocator(name: str, zeroed: bool):
    """The typing of `_jt_empty` (zeroed False) or `_jt_zeros` (True)."""
    def typing(typingctx, shape, dtype):
        made = _allocation(shape, dtype)
        if made is None:
            return None
        ret, sizes_t = made

        def codegen(context, builder, signature, args):
            vals = [args[0]] if isinstance(shape, types.Integer) else \
                cgutils.unpack_tuple(builder, args[0], len(sizes_t))
            sizes = [context.cast(builder, v, t, types.intp) for v, t in zip(vals, sizes_t)]
            return impl_ret_new_ref(context, builder, ret,
                                    emit_empty(context, builder, ret, sizes, zeroed))
        return ret(shape, dtype), codegen
    typing.__name__ = typing.__qualname__ = name
    return typing


# `np.empty(shape, dtype)` (C order, Numba's alignment, NumPy's ValueErrors for negative and
# too large sizes) that asks for huge pages when 4 MiB or more; `shape` an integer or a tuple of
# integers, `dtype` a NumPy number or bool type (or an array's dtype).
# An intrinsic, not Numba's `np.empty`: the allocation (the NRT call NumPy's overload makes) is
# emitted into the caller. Numba compiles its overload once per array type a program allocates
# (13 compiles, 0.7 CPU-s, of an MLP train step; bench/compile_profile.py); the first-ever
# compile of bench/compile_time.py's mlp_train went from 9.9 to 9.6 CPU-s, encoder1's from 26.9
# to 26.0, with the same per-call cost.
_jt_empty = intrinsic(_allocator("_jt_empty", zeroed=False))
# `np.zeros(shape, dtype)` the same way: `_jt_empty`'s block, then one memset (all-zero bytes
# are 0 of every number and bool type). Numba's `np.zeros` compiles its overload and a fill per
# array type (~0.05 CPU-s each; a CNN train step compiled 5 of them and 4 fills in its library)
_jt_zeros = intrinsic(_allocator("_jt_zeros", zeroed=True))


@intrinsic
def _jt_clear(typingctx, arr):
    """`arr[...] = 0` for a C-contiguous array: one memset (Numba's slice assignment compiles
    its broadcasting machinery per array type)."""
    if not isinstance(arr, types.Array) or arr.layout != "C" or \
            not isinstance(arr.dtype, (types.Number, types.Boolean)):
        return None

    def codegen(context, builder, signature, args):
        a = make_array(arr)(context, builder, value=args[0])
        nbytes = builder.mul(a.nitems, a.itemsize)
        cgutils.memset(builder, a.data, nbytes, 0)
        return context.get_dummy_value()
    return types.void(arr), codegen


def emit_empty(context, builder, ret, sizes, zeroed: bool = False):
    """Emit `_jt_empty`'s allocation of a C-contiguous array of type `ret` with the intp
    `sizes` (`zeroed`: its bytes set to 0, `_jt_zeros`); returns the array value, a new
    reference (views.py's `_jt_dense` and `_jt_reshape` emit it too)."""
    intp = context.get_value_type(types.intp)
    datatype = context.get_data_type(ret.dtype)
    itemsize = intp(context.get_abi_sizeof(datatype))
    n, bad, neg = intp(1), cgutils.false_bit, cgutils.false_bit
    for s in sizes:
        neg = builder.or_(neg, builder.icmp_signed("<", s, intp(0)))
        m = builder.smul_with_overflow(n, s)
        n, bad = builder.extract_value(m, 0), builder.or_(bad, builder.extract_value(m, 1))
    m = builder.smul_with_overflow(n, itemsize)
    nbytes, bad = builder.extract_value(m, 0), builder.or_(bad, builder.extract_value(m, 1))
    with builder.if_then(neg, likely=False):
        context.call_conv.return_user_exc(builder, ValueError,
                                          ("negative dimensions not allowed",))
    with builder.if_then(bad, likely=False):  # NumPy's message (as Numba's np.empty)
        context.call_conv.return_user_exc(
            builder, ValueError, ("array is too big; `arr.size * arr.dtype.itemsize` is "
                                  "larger than the maximum possible size.",))
    align = context.get_preferred_array_alignment(ret.dtype)
    meminfo = context.nrt.meminfo_alloc_aligned(builder, nbytes, align)
    with builder.if_then(cgutils.is_null(builder, meminfo), likely=False):
        context.call_conv.return_user_exc(builder, MemoryError, ("out of memory",))
    data = builder.bitcast(context.nrt.meminfo_data(builder, meminfo),
                           datatype.as_pointer())
    _advise_huge(context, builder, data, nbytes)
    if zeroed:
        cgutils.memset(builder, data, nbytes, 0)
    strides = [itemsize] if sizes else []  # C order: the last dimension's is the itemsize
    for s in reversed(sizes[1:]):
        strides.insert(0, builder.mul(strides[0], s))
    out = make_array(ret)(context, builder)
    populate_array(out, data=data, shape=cgutils.pack_array(builder, sizes, ty=intp),
                   strides=cgutils.pack_array(builder, strides, ty=intp),
                   itemsize=itemsize, meminfo=meminfo)
    return out._getvalue()


# Numba's array builders for the lowerings here and in views.py, imported when a program compiles:
# programs import these modules, and importing numba.np.arrayobj was ~0.03 s of every warm start
# (which compiles nothing)
def make_array(array_type):
    from numba.np.arrayobj import make_array as make
    return make(array_type)


def populate_array(array, **fields):
    from numba.np.arrayobj import populate_array as populate
    return populate(array, **fields)


# called from njit code only
_OPTS = dict(nogil=True, cache=True, **kernel_call.NATIVE_ONLY)


@numba.njit(**_OPTS)
def _fill_flat(flat, value):
    # a loop, not `flat[:] = value`: Numba's slice setitem compiles its slicing and broadcast
    # machinery for every dtype and rank (~0.1 CPU-s each); this loop vectorises the same
    for k in range(flat.size):
        flat[k] = value


@numba.njit(**_OPTS)
def _jt_ones(shape, dtype):
    a = _jt_empty(shape, dtype)
    _fill_flat(a.reshape(a.size), dtype(1))
    return a


@numba.njit(**_OPTS)
def _jt_full(shape, fill, dtype):
    a = _jt_empty(shape, dtype)
    _fill_flat(a.reshape(a.size), fill)
    return a


# a string literal (left as it is: a message may quote a call) or an allocation call
_CALL = re.compile(r"""('(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*")|\bnp\.(empty|zeros|ones|full)\(""")


def rewrite(lines: list) -> tuple:
    """Route NumPy allocation calls in generated lines through this module; returns
    (new lines, sorted names used): `np.empty/zeros/ones/full(` become
    `_jt_empty/zeros/ones/full(`, which ask for huge pages before the first write."""
    used = set()

    def _use(kind: str) -> str:
        used.add("_jt_" + kind)
        return f"_jt_{kind}("
    out = []
    for ln in lines:
        if "np." in ln:
            ln = _CALL.sub(lambda m: m.group(1) or _use(m.group(2)), ln)
        out.append(ln)
    return out, sorted(used)


def import_line(names) -> str:
    return f"from {MODULE} import {', '.join(names)}"

# native-only functions (no Python entry point): a Python call raises instead of crashing
kernel_call.refuse_python_calls(globals())
