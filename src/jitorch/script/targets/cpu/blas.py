"""Matrix products for generated CPU programs: a register-tiled small-M kernel, BLAS, loops.

Owns `mm_into(a, b, c, accumulate)` (c = a @ b, or c += a @ b) and `matmul2(a, b)` (a new
C-contiguous result), njit functions that `lower_linalg.py` calls from inside the generated
program (they run without the GIL). 2-D operands of any strides; the caller has checked the
inner dims; `c` is (M, N) of any strides (a temporary when BLAS cannot write it). Per call,
from the run-time sizes and strides:

- float32/float64 with M <= SMALL_M and a unit column stride in `b` (x @ W with W stored
  (in, out), row-major or a row slice): `_small`, a micro-kernel written in LLVM vector IR
  (`_make_tile`): an R x (V vectors) tile of C stays in registers while k runs, each step one
  masked vector load per B vector, R broadcasts of A, R*V FMAs; no packing. The tile is sized for
  the host at import: AVX-512 6 x 4 vectors of 16 floats (24 of the 32 zmm registers),
  AVX2/FMA 6 x 2 x 8, else SSE width. K runs in blocks of KC so that the B panel stays in L1.
  The kernel and the BLAS path work on addresses and strides (typed only by dtype: compiled
  once per dtype, `cache=True`); only the thin entry points are typed per layout, and
  generated kernels call those through symbols with float operands as 'A' arrays
  (`mm_into_by_symbol`, `matmul2_by_symbol`: compiled once per dtype, never inside a kernel).
  Measured single-threaded (2-core Sapphire Rapids, SciPy's OpenBLAS 0.3.30 SkylakeX kernel,
  quiet machine): (32, 784) @ (784, 256) 101-115 us vs 158-221 us for `np.dot` (OpenBLAS
  packs all of W on every call; PyTorch's MKL: 82-107 us), (32, 128) @ (128, 512) 30-38 vs
  48-71 us, M=1 about even (9.7-12 vs 8.6-12.8 us); at M=128 OpenBLAS's packed kernel wins
  (460 vs 713 us), hence SMALL_M.
- other float operands: BLAS `?gemm` (or `?gemv` when M == 1) through Numba's own helper
  `numba_xxgemm`/`numba_xxgemv` (the SciPy cython_blas functions `np.dot` uses), passing
  transposes and leading dimensions so a transposed view (x @ W.t(), nn.Linear's layout) is
  not copied; only an operand with no unit stride is copied.
- integer dtypes: plain loops (BLAS has no integer product), wrapping like PyTorch.

Masked loads/stores make every edge exact: no element outside the operands is ever read or
written. Sizes are checked by the caller; `mm_into` only trusts a.shape[1] == b.shape[0] and
c.shape == (M, N), which it asserts cheaply anyway (a wrong call raises instead of corrupting).
`SOURCE_HASH` keys code caches on this file (Numba's cache does not follow callee files).
"""
from __future__ import annotations

import hashlib

import llvmlite.binding as llb
import numpy as np
from llvmlite import ir as llir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from ...kernels import kernel_call, source_stamp
from . import alloc
from .alloc import _jt_empty  # an intrinsic: no np.empty overload compiled per type

with open(__file__, "rb") as _f:
    SOURCE_HASH = hashlib.sha1(_f.read()).hexdigest()[:16]

__all__ = ["mm_into", "matmul2", "mm_into_by_symbol", "matmul2_by_symbol", "SOURCE_HASH",
           "SMALL_M"]

_FEAT = llb.get_host_cpu_features()
if _FEAT.get("avx512f"):
    VBITS, VMAX = 512, 4
elif _FEAT.get("avx2") and _FEAT.get("fma"):
    VBITS, VMAX = 256, 2
else:
    VBITS, VMAX = 128, 2
RMAX = 6
KC = 128          # k block: a KC x (VMAX vectors) panel of B is 32 KiB for float32 on AVX-512
SMALL_M = 48      # rows up to which the tiled kernel beats OpenBLAS (measured: 32 yes, 128 no)

_I1, _I32, _I64 = llir.IntType(1), llir.IntType(32), llir.IntType(64)
_OPTS = dict(nogil=True, error_model="numpy")


def _splat(builder, vt, scalar):
    n = vt.count
    v = builder.insert_element(llir.Constant(vt, None), scalar, _I32(0))
    return builder.shuffle_vector(v, v, llir.Constant(llir.VectorType(_I32, n), [0] * n))


def _make_tile(R: int, V: int, full: bool = False):
    """An intrinsic computing one C tile: rows i0..i0+R-1, columns j0..j0+ncols-1 (ncols <=
    V * lanes), over k in [k0, k1): C (+)= A @ B with A[i, k] at a[i*sa0 + k*sa1], B[k, j] at
    b[k*sb0 + j], C[i, j] at c[i*sc0 + j] (element offsets, from the arrays' data pointers).
    `first` starts from zero instead of C. Columns past ncols are masked off; `full`: a tile
    whose every column is in range (ncols == V * lanes), with constant all-true masks that LLVM
    turns into plain loads and stores. AVX2's masked store (vmaskmov) is microcoded on AMD:
    one thread on a 2-core AMD EPYC (Zen 3), (64, 97) @ (97, 256) (the LSTM step) measured 70
    us masked against 41 full, (64, 256) @ (256, 64) 46 against 26."""

    @intrinsic
    def tile(typingctx, a, b, c, sa0, sa1, sb0, sc0, i0, j0, ncols, k0, k1, first, zero):
        if zero not in (types.float32, types.float64):
            return None
        sig = types.void(a, b, c, sa0, sa1, sb0, sc0, i0, j0, ncols, k0, k1, first, zero)
        fbits = 32 if zero == types.float32 else 64
        lanes = VBITS // fbits

        def codegen(context, builder, sig_, args):
            tys = sig_.args
            ft = context.get_value_type(tys[13])
            vt = llir.VectorType(ft, lanes)
            mt = llir.VectorType(_I1, lanes)
            vp = vt.as_pointer()
            mod = builder.module
            sfx = f"v{lanes}f{fbits}"
            fma = cgutils.get_or_insert_function(
                mod, llir.FunctionType(vt, [vt, vt, vt]), f"llvm.fma.{sfx}")
            mload = cgutils.get_or_insert_function(
                mod, llir.FunctionType(vt, [vp, _I32, mt, vt]), f"llvm.masked.load.{sfx}.p0{sfx}")
            mstore = cgutils.get_or_insert_function(
                mod, llir.FunctionType(llir.VoidType(), [vt, vp, _I32, mt]),
                f"llvm.masked.store.{sfx}.p0{sfx}")
            align = _I32(fbits // 8)

            def data(i):
                return builder.inttoptr(context.cast(builder, args[i], tys[i], types.int64),
                                        ft.as_pointer())

            def i64(i):
                return context.cast(builder, args[i], tys[i], types.int64)
            pa, pb, pc = data(0), data(1), data(2)
            sa0_, sa1_, sb0_, sc0_, i0_, j0_, nc_, k0_, k1_ = [i64(i) for i in range(3, 12)]
            first_ = context.cast(builder, args[12], tys[12], types.boolean)
            lane_ids = llir.Constant(llir.VectorType(_I64, lanes), list(range(lanes)))
            lt = llir.VectorType(_I64, lanes)
            masks = [llir.Constant(mt, [1] * lanes) if full else
                     builder.icmp_signed("<", lane_ids,
                                         _splat(builder, lt, builder.sub(nc_, _I64(v * lanes))))
                     for v in range(V)]
            zero = llir.Constant(vt, [0.0] * lanes)
            cptr = [[builder.bitcast(builder.gep(pc, [builder.add(
                builder.add(builder.mul(builder.add(i0_, _I64(r)), sc0_), j0_),
                _I64(v * lanes))]), vp) for v in range(V)] for r in range(R)]
            init = [[builder.select(first_, zero, builder.call(
                mload, [cptr[r][v], align, masks[v], zero])) for v in range(V)] for r in range(R)]
            arow = [builder.mul(builder.add(i0_, _I64(r)), sa0_) for r in range(R)]
            pre = builder.block
            hdr = builder.append_basic_block("tile.hdr")
            body = builder.append_basic_block("tile.body")
            done = builder.append_basic_block("tile.done")
            builder.branch(hdr)
            builder.position_at_end(hdr)
            kphi = builder.phi(_I64)
            kphi.add_incoming(k0_, pre)
            acc = [[builder.phi(vt) for _ in range(V)] for _ in range(R)]
            for r in range(R):
                for v in range(V):
                    acc[r][v].add_incoming(init[r][v], pre)
            builder.cbranch(builder.icmp_signed("<", kphi, k1_), body, done)
            builder.position_at_end(body)
            brow = builder.add(builder.mul(kphi, sb0_), j0_)
            bv = [builder.call(mload, [builder.bitcast(builder.gep(
                pb, [builder.add(brow, _I64(v * lanes))]), vp), align, masks[v], zero])
                for v in range(V)]
            ka = builder.mul(kphi, sa1_)
            new = []
            for r in range(R):
                s = builder.load(builder.gep(pa, [builder.add(arow[r], ka)]))
                sv = _splat(builder, vt, s)
                new.append([builder.call(fma, [sv, bv[v], acc[r][v]]) for v in range(V)])
            end = builder.block
            kphi.add_incoming(builder.add(kphi, _I64(1)), end)
            for r in range(R):
                for v in range(V):
                    acc[r][v].add_incoming(new[r][v], end)
            builder.branch(hdr)
            builder.position_at_end(done)
            for r in range(R):
                for v in range(V):
                    builder.call(mstore, [acc[r][v], cptr[r][v], align, masks[v]])
            return context.get_dummy_value()
        return sig, codegen
    return tile


# Tile intrinsics: full width with RMAX, 2 and 1 rows (row remainders; the first two also
# unmasked, for panels with every column in range), one vector wide for narrow column panels,
# and double width for a single row (M == 1: twice the FMA chains).
# `_small` calls them directly: each emits its LLVM in place (a real call per tile measured 40%
# slower; an inline="always" njit wrapper around each cost ~0.05 CPU-s of typing and
# inlining), and `_small` is compiled once per dtype whatever the operands' layouts (and
# cached on disk).
_TF, _TF2, _TF1 = _make_tile(RMAX, VMAX), _make_tile(2, VMAX), _make_tile(1, VMAX)
_TN, _TN1, _TR = _make_tile(RMAX, 1), _make_tile(1, 1), _make_tile(1, 2 * VMAX)
_TFF, _TF2F = _make_tile(RMAX, VMAX, True), _make_tile(2, VMAX, True)
_OPTS["cache"] = True
# Functions only njit code calls (directly or through a kernel_call symbol)
_INTERNAL = dict(_OPTS, **kernel_call.NATIVE_ONLY)


def _int_select(op):
    """An intrinsic min/max of two integers as one compare and select, in int64: Numba's
    builtin min/max compile an overload function each (~0.02 CPU-s apiece, first use)."""
    @intrinsic
    def pick(typingctx, a, b):
        if not (isinstance(a, types.Integer) and isinstance(b, types.Integer)):
            return None

        def codegen(context, builder, sig, args):
            x, y = (context.cast(builder, v, t, types.int64) for v, t in zip(args, sig.args))
            return builder.select(builder.icmp_signed(op, y, x), y, x)
        return types.int64(a, b), codegen
    return pick


_imin, _imax = _int_select("<"), _int_select(">")


@njit(**_INTERNAL)
def _small(pa, pb, pc, sa0, sa1, sb0, sc0, m, n, k, accumulate, z):
    """c (+)= a @ b by register tiles, on addresses and element strides (B and C have unit
    column strides): typed only by the dtype of `z`, so compiled once per dtype."""
    lanes = VBITS // (8 * _itemsize(z))
    if m == 1:
        w = 2 * VMAX * lanes
        for j0 in range(0, n, w):
            _TR(pa, pb, pc, sa0, sa1, sb0, sc0, 0, j0, _imin(w, n - j0), 0, k, not accumulate, z)
        return
    w = VMAX * lanes
    for j0 in range(0, n, w):
        nc = _imin(w, n - j0)
        for k0 in range(0, _imax(k, 1), KC):
            k1 = _imin(k, k0 + KC)
            first = k0 == 0 and not accumulate
            i0 = 0
            if nc <= lanes:
                while i0 + RMAX <= m:
                    _TN(pa, pb, pc, sa0, sa1, sb0, sc0, i0, j0, nc, k0, k1, first, z)
                    i0 += RMAX
                while i0 < m:
                    _TN1(pa, pb, pc, sa0, sa1, sb0, sc0, i0, j0, nc, k0, k1, first, z)
                    i0 += 1
            else:
                full = nc == w  # every column in range: the unmasked tiles (_make_tile)
                while i0 + RMAX <= m:
                    if full:
                        _TFF(pa, pb, pc, sa0, sa1, sb0, sc0, i0, j0, nc, k0, k1, first, z)
                    else:
                        _TF(pa, pb, pc, sa0, sa1, sb0, sc0, i0, j0, nc, k0, k1, first, z)
                    i0 += RMAX
                while i0 + 2 <= m:
                    if full:
                        _TF2F(pa, pb, pc, sa0, sa1, sb0, sc0, i0, j0, nc, k0, k1, first, z)
                    else:
                        _TF2(pa, pb, pc, sa0, sa1, sb0, sc0, i0, j0, nc, k0, k1, first, z)
                    i0 += 2
                if i0 < m:
                    _TF1(pa, pb, pc, sa0, sa1, sb0, sc0, i0, j0, nc, k0, k1, first, z)


# Called by symbol from _float_mm: its tiles are the heaviest LLVM of the library, optimised
# and turned into machine code once (linked, they went through O3 and codegen a second time
# inside _float_mm).
_small_by_symbol = kernel_call.library(_small)


@intrinsic
def _itemsize(typingctx, z):
    size = 4 if z == types.float32 else 8

    def codegen(context, builder, sig, args):
        return context.get_constant(types.intp, size)
    return types.intp(z), codegen


# --- BLAS through Numba's helper library (the functions np.dot calls) ---------------------------

_CH = llir.IntType(8)
_VP = llir.IntType(8).as_pointer()


def _blas_kind(dtype) -> int:
    return ord("s" if dtype == types.float32 else "d")


def _blas_codegen(name, flags, ptrs):
    """Codegen calling Numba's helper `name` (numba_xxgemm / numba_xxgemv): argument i is a
    transpose flag (bool -> 'n'/'t') if i in `flags`, an address if i in `ptrs`, a scalar passed
    by pointer (alpha, beta) if its type is a float, else an int; the last argument is the
    dtype marker `z` (a zero of the element type), not passed."""

    def codegen(context, builder, sig_, vals):
        tys = sig_.args
        ip = context.get_value_type(types.intp)
        dt = tys[-1]
        lltys, out = [_CH], [_CH(_blas_kind(dt))]
        for i in range(len(tys) - 1):
            ty, v = tys[i], vals[i]
            if i in flags:
                t = context.cast(builder, v, ty, types.boolean)
                out.append(builder.select(t, _CH(ord("t")), _CH(ord("n"))))
                lltys.append(_CH)
            elif i in ptrs:
                out.append(builder.inttoptr(context.cast(builder, v, ty, types.intp), _VP))
                lltys.append(_VP)
            elif isinstance(ty, types.Float):
                slot = cgutils.alloca_once_value(builder, context.cast(builder, v, ty, dt))
                out.append(builder.bitcast(slot, _VP))
                lltys.append(_VP)
            else:
                out.append(context.cast(builder, v, ty, types.intp))
                lltys.append(ip)
        fn = cgutils.get_or_insert_function(builder.module, llir.FunctionType(_I32, lltys),
                                            name)
        _check_return(context, builder, builder.call(fn, out))
        return context.get_dummy_value()
    return codegen


@intrinsic
def _gemm(typingctx, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, z):
    """Fortran (column-major) ?gemm on addresses a, b, c; `z` gives the dtype."""
    if z not in (types.float32, types.float64):
        return None
    return (types.void(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, z),
            _blas_codegen("numba_xxgemm", (0, 1), (6, 8, 11)))


@intrinsic
def _gemv(typingctx, ta, m, n, alpha, a, lda, x, beta, y, z):
    """Fortran ?gemv with unit increments on addresses a, x, y; `z` gives the dtype."""
    if z not in (types.float32, types.float64):
        return None
    return (types.void(ta, m, n, alpha, a, lda, x, beta, y, z),
            _blas_codegen("numba_xxgemv", (0,), (4, 6, 8)))


def _check_return(context, builder, res):
    # the helper fails only when SciPy's BLAS cannot be found: np.dot aborts the same way
    from numba.np.linalg import check_blas_return, ensure_blas
    ensure_blas()
    check_blas_return(context, builder, res)


@intrinsic
def _lead(typingctx, rows, cols, s0, s1):
    """(transposed, leading dim) of a (rows, cols) operand with element strides s0, s1 as a
    row-major BLAS operand, or (False, -1) when it has no unit stride (it must be copied).
    Emitted in place (a few compares and selects): as a Numba function it cost ~0.05 CPU-s."""
    ret = types.Tuple((types.boolean, types.int64))

    def codegen(context, builder, sig, args):
        r, c, a0, a1 = (context.cast(builder, v, t, types.int64)
                        for v, t in zip(args, sig.args))

        def cmp(op, x, y):
            return builder.icmp_signed(op, x, y)

        def at_least_one(x):
            return builder.select(cmp("<", x, _I64(1)), _I64(1), x)
        rows_major = builder.and_(builder.or_(cmp("==", a1, _I64(1)), cmp("<=", c, _I64(1))),
                                  cmp(">=", a0, at_least_one(c)))
        cols_major = builder.and_(builder.or_(cmp("==", a0, _I64(1)), cmp("<=", r, _I64(1))),
                                  cmp(">=", a1, at_least_one(r)))
        scalar = builder.and_(cmp("<=", r, _I64(1)), cmp("<=", c, _I64(1)))
        ld = builder.select(rows_major, a0, builder.select(
            cols_major, a1, builder.select(scalar, _I64(1), _I64(-1))))
        trans = builder.and_(builder.not_(rows_major), cols_major)
        return context.make_tuple(builder, ret, [trans, ld])
    return ret(rows, cols, s0, s1), codegen


@njit(**_INTERNAL)
def _loops(a, b, c, accumulate):
    """c (+)= a @ b for integer dtypes: i-k-j order, the j loop contiguous in b and c.
    Products wrap in the element type, as PyTorch's integer matmul does."""
    m, k = a.shape
    n = b.shape[1]
    for i in range(m):
        if not accumulate:
            for j in range(n):
                c[i, j] = 0
        for p in range(k):
            s = a[i, p]
            for j in range(n):
                c[i, j] += s * b[p, j]


@intrinsic
def _ld(typingctx, addr, off, z):
    """The element at element offset `off` from address `addr` (dtype of `z`)."""
    def codegen(context, builder, sig, args):
        ft = context.get_value_type(z)
        p = builder.inttoptr(context.cast(builder, args[0], addr, types.int64), ft.as_pointer())
        return builder.load(builder.gep(p, [context.cast(builder, args[1], off, types.int64)]))
    return z(addr, off, z), codegen


@intrinsic
def _st(typingctx, addr, off, v):
    """Store `v` at element offset `off` from address `addr`."""
    def codegen(context, builder, sig, args):
        ft = context.get_value_type(v)
        p = builder.inttoptr(context.cast(builder, args[0], addr, types.int64), ft.as_pointer())
        builder.store(args[2], builder.gep(p, [context.cast(builder, args[1], off,
                                                                     types.int64)]))
        return context.get_dummy_value()
    return types.void(addr, off, v), codegen


@njit(**_INTERNAL)
def _copy(src, s0, s1, dst, d0, d1, m, n, z):
    # (m, n) elements between addresses with element strides; once per dtype, any layout
    for i in range(m):
        for j in range(n):
            _st(dst, i * d0 + j * d1, _ld(src, i * s0 + j * s1, z))


# Called by symbol from _float_mm: compiled once, not optimised again inside it (linked, it
# cost _float_mm's compile ~0.04 CPU-s more)
_copy_s = kernel_call.library(_copy)


@njit(**_INTERNAL)
def _float_mm(pa, a0, a1, pb, b0, b1, pc, c0, c1, m, n, k, accumulate, z):
    """c (+)= a @ b on addresses and byte strides, m, n > 0: typed only by the dtype of `z`, so
    it compiles once per dtype whatever the layouts."""
    isz = _itemsize(z)
    if a0 % isz or a1 % isz or b0 % isz or b1 % isz or c0 % isz or c1 % isz:
        raise ValueError("mm_into: strides must be multiples of the item size")
    # element strides from here on
    a0, a1, b0, b1, c0, c1 = a0 // isz, a1 // isz, b0 // isz, b1 // isz, c0 // isz, c1 // isz
    # a unit stride typed int64: a literal 1 types _copy's argument as Literal[int](1), one
    # more compile of _copy per argument position it appears in
    one = np.int64(1)
    if k == 0:
        if not accumulate:  # c = 0: copied from one zero (source strides 0)
            zt = _jt_empty(isz, np.int8)
            _st(zt.ctypes.data, 0, z)
            _copy_s(zt.ctypes.data, 0 * one, 0 * one, pc, c0, c1, m, n, z)
            return zt.size
        return 0
    c_rows = c1 == 1 or n == 1
    if m <= SMALL_M and c_rows and (b1 == 1 or n == 1):
        _small_by_symbol(pa, pb, pc, a0, a1, b0, c0, m, n, k, accumulate, z)
        return 0
    ta, lda = _lead(m, k, a0, a1)
    ta_ = _jt_empty(0, np.int8)  # keeps a copied operand alive until BLAS has run
    tb_ = _jt_empty(0, np.int8)
    if lda < 0:
        ta_ = _jt_empty(m * k * isz, np.int8)
        _copy_s(pa, a0, a1, ta_.ctypes.data, k, one, m, k, z)
        pa, a0, a1 = ta_.ctypes.data, k, one
        ta, lda = False, _imax(1, k)
    tb, ldb = _lead(k, n, b0, b1)
    if ldb < 0:
        tb_ = _jt_empty(k * n * isz, np.int8)
        _copy_s(pb, b0, b1, tb_.ctypes.data, n, one, k, n, z)
        pb = tb_.ctypes.data
        tb, ldb = False, _imax(1, n)
    # BLAS needs C with a unit column stride and ldc >= n, else it writes a new array
    direct = c_rows and c0 >= _imax(1, n)
    t = _jt_empty(0 if direct else m * n * isz, np.int8)
    pt, ldc = pc, c0
    if not direct:
        pt, ldc = t.ctypes.data, _imax(1, n)
        if accumulate:
            _copy_s(pc, c0, c1, pt, n, one, m, n, z)
    beta = 1.0 if accumulate else 0.0
    if m == 1 and (a1 == 1 or k <= 1):
        # y(n) = B^T x; B as column-major is (n x k) when row-major, (k x n) when transposed
        if tb:
            _gemv(True, k, n, 1.0, pb, ldb, pa, beta, pt, z)
        else:
            _gemv(False, n, k, 1.0, pb, ldb, pa, beta, pt, z)
    else:
        # row-major C = A B is column-major C^T = B^T A^T: BLAS's A is our b, its B our a
        _gemm(tb, ta, n, m, k, 1.0, pb, ldb, pa, lda, beta, pt, ldc, z)
    if not direct:
        _copy_s(pt, n, one, pc, c0, c1, m, n, z)
    # returned so that the copies stay alive until after the BLAS calls that read them through
    # addresses (Numba frees an array after its last use)
    return ta_.size + tb_.size + t.size


# The float path, called through a symbol (kernels/kernel_call.py): compiled once per dtype and
# process, never linked into (and optimised again inside) each kernel that multiplies, nor once
# more per layout of the typed entry points below.
_float_mm_by_symbol = kernel_call.library(_float_mm)


_FLOAT_MM_ARGS = (types.uintp, types.intp, types.intp) * 3 + (types.intp,) * 3


@intrinsic
def _kernel(typingctx, a, b, c, accumulate):
    """c (+)= a @ b. Float operands of one dtype: their addresses, byte strides and sizes are
    handed to the float path's symbol in place (an overload here was one more Numba function
    compiled, ~0.07 CPU-s, per dtype and layout); other dtypes: `_loops`."""
    z = c.dtype
    sig = types.void(a, b, c, accumulate)
    if z not in (types.float32, types.float64) or a.dtype != z or b.dtype != z:
        def loops(context, builder, sig_, args):
            context.compile_internal(builder, _loops.py_func, sig_, args)
            return context.get_dummy_value()
        return sig, loops
    inner_sig, inner = _float_mm_by_symbol.typing(*_FLOAT_MM_ARGS, types.boolean, z)

    def codegen(context, builder, sig_, args):
        arrs = [cgutils.create_struct_proxy(t)(context, builder, value=v)
                for t, v in zip(sig_.args[:3], args[:3])]
        vals = []
        for arr in arrs:
            vals.append(builder.ptrtoint(arr.data, context.get_value_type(types.uintp)))
            vals += cgutils.unpack_tuple(builder, arr.strides, 2)
        (m, k), (_, n) = (cgutils.unpack_tuple(builder, arrs[i].shape, 2) for i in (0, 2))
        vals += [m, n, k, context.cast(builder, args[3], sig_.args[3], types.boolean),
                 context.get_constant(z, 0)]
        inner(context, builder, inner_sig, vals)
        return context.get_dummy_value()
    return sig, codegen


@njit(**_OPTS)
def mm_into(a, b, c, accumulate):
    """c = a @ b (accumulate: c += a @ b) for 2-D a (M, K), b (K, N), c (M, N)."""
    m, k = a.shape
    n = b.shape[1]
    if b.shape[0] != k or c.shape[0] != m or c.shape[1] != n:
        raise ValueError("mm_into: operand shapes do not match")
    if m == 0 or n == 0:
        return
    _kernel(a, b, c, accumulate)


@njit(**_OPTS)
def matmul2(a, b):
    """A new C-contiguous a @ b for 2-D operands."""
    if b.shape[0] != a.shape[1]:
        raise ValueError("mm_into: operand shapes do not match")
    c = _jt_empty((a.shape[0], b.shape[1]), a.dtype)
    if c.size != 0:
        _kernel(a, b, c, False)
    return c


def _float_any_layout(argtys: tuple) -> tuple:
    """Float operands of any layout as 'A' arrays (the float path reads addresses and strides
    at run time: one compile per dtype serves every layout); integer operands keep their
    types (their loops are faster typed as contiguous)."""
    arrays = [t for t in argtys if isinstance(t, types.Array)]
    if any(t.dtype not in (types.float32, types.float64) for t in arrays):
        return argtys
    return tuple(types.Array(t.dtype, t.ndim, "A") if isinstance(t, types.Array) else t
                 for t in argtys)


# What generated kernels call (lower_linalg.py): the entry points through symbols, so their code
# (and the float path's) is never linked into a kernel, and a new layout of a kernel compiles the
# kernel alone. Cached with the symbols they call (numba_cache.EntryCache).
mm_into_by_symbol = kernel_call.library(mm_into, _float_any_layout)
matmul2_by_symbol = kernel_call.library(matmul2, _float_any_layout)

# alloc.py's `_jt_empty` is emitted into these functions: their disk cache follows that file too
source_stamp.follow(globals(), alloc)

# native-only functions (no Python entry point): a Python call raises instead of crashing
kernel_call.refuse_python_calls(globals())
