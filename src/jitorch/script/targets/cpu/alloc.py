"""Array allocation for generated programs: NumPy-speed large outputs inside njit.

Owns `_jt_huge(array)` (wrapped around a generated program's `np.empty(...)` calls) and the
`_jt_zeros` / `_jt_ones` / `_jt_full` functions called instead of `np.zeros` / `np.ones` /
`np.full` (`rewrite()` edits a program's entry body; `cpu.generate` applies it), and the `madvise`
binding they use. `_jt_empty` is the same for hand-written callers.

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
import numpy as np
from llvmlite import binding as _llb
from llvmlite import ir as _llir
from numba import types
from numba.core import cgutils
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic

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


@intrinsic
def _madvise(typingctx, addr, length, advice):
    """int32 madvise(uintp addr, uintp length, int32 advice), libc's (or a no-op)."""
    sig = types.int32(types.uintp, types.uintp, types.int32)

    def codegen(context, builder, signature, args):
        i64 = _llir.IntType(64)
        fnty = _llir.FunctionType(_llir.IntType(32), [i64, i64, _llir.IntType(32)])
        fn = cgutils.get_or_insert_function(builder.module, fnty, _SYMBOL)
        return builder.call(fn, args)
    return sig, codegen


_OPTS = dict(nogil=True, cache=True)


@intrinsic
def _jt_huge(typingctx, a):
    """Ask for huge pages for a fresh, still untouched, array of 4 MiB or more; returns a.

    An intrinsic, not an njit function: its dozen instructions are emitted into the caller.
    As a function it was compiled once per array type a program allocates (dtype x rank: ten
    Numba compiles, 0.8 CPU-s, on an MLP train step; bench/compile_profile.py)."""
    if not isinstance(a, types.Array):
        return None
    sig = a(a)

    def codegen(context, builder, signature, args):
        ary = context.make_array(a)(context, builder, args[0])
        intp = context.get_value_type(types.intp)
        nb = builder.mul(ary.nitems, ary.itemsize)
        big = builder.icmp_signed(">=", nb, intp(HUGE_MIN_BYTES))
        with builder.if_then(big, likely=False):
            p = builder.ptrtoint(ary.data, intp)
            off = builder.and_(builder.neg(p), intp(4095))  # (4096 - p % 4096) % 4096
            i64 = _llir.IntType(64)
            fnty = _llir.FunctionType(_llir.IntType(32), [i64, i64, _llir.IntType(32)])
            fn = cgutils.get_or_insert_function(builder.module, fnty, _SYMBOL)
            builder.call(fn, [builder.add(p, off), builder.sub(nb, off),
                              _llir.IntType(32)(_MADV_HUGEPAGE)])
        return impl_ret_borrowed(context, builder, a, args[0])
    return sig, codegen


@numba.njit(**_OPTS)
def _jt_empty(shape, dtype):
    return _jt_huge(np.empty(shape, dtype))


@numba.njit(**_OPTS)
def _jt_zeros(shape, dtype):
    a = _jt_huge(np.empty(shape, dtype))
    a.reshape(a.size)[:] = dtype(0)  # reshape: fill() and [:] reject 0-d arrays
    return a


@numba.njit(**_OPTS)
def _jt_ones(shape, dtype):
    a = _jt_huge(np.empty(shape, dtype))
    a.reshape(a.size)[:] = dtype(1)
    return a


@numba.njit(**_OPTS)
def _jt_full(shape, fill, dtype):
    a = _jt_huge(np.empty(shape, dtype))
    a.reshape(a.size)[:] = fill
    return a


_CALL = re.compile(r"\bnp\.(empty|zeros|ones|full)\(")


def _close(line: str, start: int) -> int:
    """Index just after the parenthesis closing the one before `start`, or -1 (unbalanced, or a
    string literal in the arguments: then the call is left alone)."""
    depth = 1
    for i in range(start, len(line)):
        c = line[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
        elif c in "'\"":
            return -1
    return -1


def rewrite(lines: list) -> tuple:
    """Route NumPy allocation calls in generated lines through this module; returns
    (new lines, sorted names used). `np.empty(...)` becomes `_jt_huge(np.empty(...))` (the
    source keeps its `np.empty(` calls, which tests count); `np.zeros/ones/full(` become
    `_jt_zeros/ones/full(`, which advise before filling."""
    used = set()
    out = []
    for ln in lines:
        if "np." not in ln:
            out.append(ln)
            continue
        pos, parts = 0, []
        for m in _CALL.finditer(ln):
            if m.start() < pos:
                continue  # inside a call already wrapped
            if m.group(1) == "empty":
                end = _close(ln, m.end())
                if end < 0:
                    continue
                parts.append(ln[pos:m.start()] + "_jt_huge(" + ln[m.start():end] + ")")
                used.add("_jt_huge")
                pos = end
            else:
                parts.append(ln[pos:m.start()] + f"_jt_{m.group(1)}(")
                used.add(f"_jt_{m.group(1)}")
                pos = m.end()
        out.append("".join(parts) + ln[pos:])
    return out, sorted(used)


def import_line(names) -> str:
    return f"from {MODULE} import {', '.join(names)}"
