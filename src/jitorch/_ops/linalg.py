"""Matrix and vector products: matmul (`@`), mm, bmm, mv, dot, vdot, inner, outer/ger and the
fused add-products (addmm, addmv, addbmm, baddbmm).

The rest of the linear algebra family: kron, cross, vecdot, multi_dot and matrix_power in
`linalg_misc.py`; einsum/tensordot in `einsum.py`; triangular and diagonal ops in
`linalg_diag.py`; decompositions in `linalg_decomp.py` and `linalg_svd.py`; norms in
`linalg_norm.py`; shared checks in `_linalg_util.py`.

Products require operands of one dtype, as PyTorch does (no promotion), and support integer
dtypes but not bool; half types accumulate in float32. VJPs are written with these same ops.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor
from ..autograd.graph import plain_grad
from ._linalg_util import broadcast_shape, c_name, jt, matmul_arrays, no_bool, pt, scalar_for
from . import infer
from .registry import defop
from .batching import LOOP, MATMUL, OUTER

# why the compiler runs these ops in the interpreter (their declarations' interpreted=)
_NOT_YET = "no CPU lowering yet (matmul, mm, bmm, addmm are lowered)"

__all__ = ["matmul", "mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "ger", "addmm",
           "addmv", "addbmm", "baddbmm"]


def _sx(shape) -> str:
    return "x".join(map(str, shape))


def _mm_check(a, b, sa=None):
    if a.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_sx(sa or a.shape)} "
                           f"and {_sx(b.shape)})")
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {c_name(a)} != "
                           f"{c_name(b)}")
    no_bool(a, "addmm_impl_cpu_")


def _mv_check(a, v, rows=None):
    if a.shape[-1] != v.shape[0]:
        n = a.shape[0] if rows is None else rows
        raise RuntimeError(f"size mismatch, got input ({n}), mat ({n}x{a.shape[-1]}), vec "
                           f"({v.shape[0]})")
    if a.dtype != v.dtype:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {pt(v)}, "
                           f"{pt(a)}, and {pt(v)}")
    no_bool(a, "addmv_impl_cpu")


def _dot_check(a, b, name="dot"):
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src "
                           f"[{b.shape[0]}] to have the same number of elements, but got "
                           f"{a.shape[0]} and {b.shape[0]} elements respectively")
    if a.dtype != b.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {pt(a)} "
                           f"and {pt(b)}")
    no_bool(a, "dot")


def _bmm_check(a, b, batch):
    if a.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{batch}, {a.shape[-1]}] but got: [{batch}, {b.shape[-2]}].")
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected scalar type {pt(a)} but found {pt(b)}")
    no_bool(a, "bmm")


def _matmul_check(a, b):
    """PyTorch's matmul picks dot/mv/mm/bmm by rank; each path has its own error message."""
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{a.ndim}D and {b.ndim}D")
    if a.ndim == 1 and b.ndim == 1:
        _dot_check(a, b)
    elif b.ndim == 1:
        _mv_check(a, b, rows=int(np.prod(a.shape[:-1])))
    elif a.ndim <= 2 and b.ndim == 2:
        _mm_check(a, b, sa=(1,) + a.shape if a.ndim == 1 else None)
    elif b.ndim == 2:
        _mm_check(a, b, sa=(int(np.prod(a.shape[:-1])), a.shape[-1]))
    else:
        batch = broadcast_shape(a.shape[:-2], b.shape[:-2])
        _bmm_check(a, b, int(np.prod(batch)))


_F4, _F8 = np.dtype(np.float32), np.dtype(np.float64)  # (NumPy's own dtype instances)
_np_matmul = np.matmul


def _matmul(input, other):
    if input.ndim == 2 and other.ndim == 2:
        d = input.dtype
        if d is other.dtype and (d is _F4 or d is _F8 or d.kind == "f" and d.itemsize >= 4):
            k = input.shape[1]
            if k == len(other):
                # fast path: the common float mm needs no other checks. An outer product
                # (inner size 1: a Linear's weight gradient for one sample) is one multiply
                # per element, which np.matmul's K == 1 loop makes 3-10x slower, and its
                # 0 + a*b turns -0.0 into +0.0 (PyTorch keeps the product's sign)
                if k == 1:
                    return np.multiply(input, other)
                return _np_matmul(input, other)
    _matmul_check(input, other)
    return matmul_arrays(input, other)


def _drop(t: Tensor, dim: int) -> Tensor:
    """Remove a size-1 dim (a reshape, so it needs no squeeze op)."""
    s = list(t.shape)
    del s[dim]
    return t.reshape(s)


def _matmul_vjp(g, input, other, needs_input_grad=(True, True)):
    a, b = input, other
    need_a, need_b = needs_input_grad  # (as PyTorch: no product for an input without grad)
    d = g._dtype
    if plain_grad(g) and type(a) is Tensor and type(b) is Tensor and \
            g._data.ndim == 2 and a._data.ndim == 2 and b._data.ndim == 2 and \
            a._dtype is d and b._dtype is d:
        # a first-order backward of a 2-D product on the CPU (nothing records or watches): the
        # products below as matmul's impl computes them, without dispatch
        ga = g._data
        return (Tensor._make(_matmul(ga, b._data.T), d) if need_a else None,
                Tensor._make(_matmul(a._data.T, ga), d) if need_b else None)
    if a.ndim == 1 and b.ndim == 1:
        return g * b if need_a else None, g * a if need_b else None
    if a.ndim == 1:
        ga = _drop(g.unsqueeze(-2) @ b.mT, -2) if need_a else None
        gb = a.unsqueeze(-1) @ g.unsqueeze(-2) if need_b else None
        return ga, gb
    if b.ndim == 1:
        ga = g.unsqueeze(-1) @ b.unsqueeze(-2) if need_a else None
        gb = _drop(a.mT @ g.unsqueeze(-1), -1) if need_b else None
        return ga, gb
    return g @ b.mT if need_a else None, a.mT @ g if need_b else None


matmul = defop("matmul", _matmul, tensors=("input", "other"), kind="linalg",
               vjp=_matmul_vjp,
               jvp=lambda t_input, t_other, input, other: t_input @ other + input @ t_other,
               infer=infer.matmul,
               batch=MATMUL, autocast="lower")


def _mm(input, mat2):
    if input.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    _mm_check(input, mat2)
    return matmul_arrays(input, mat2)


mm = defop("mm", _mm, tensors=("input", "mat2"), kind="linalg",
           vjp=lambda g, input, mat2: (g.mm(mat2.mT), input.mT.mm(g)),
           jvp=lambda t_input, t_mat2, input, mat2: t_input.mm(mat2) + input.mm(t_mat2),
           infer=infer.fixed_rank(2),
           batch=MATMUL, autocast="lower")


def _bmm(input, mat2):
    if input.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if input.shape[0] != mat2.shape[0] or input.shape[2] != mat2.shape[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{input.shape[0]}, {input.shape[2]}] but got: "
                           f"[{mat2.shape[0]}, {mat2.shape[1]}].")
    _bmm_check(input, mat2, input.shape[0])
    return matmul_arrays(input, mat2)


bmm = defop("bmm", _bmm, tensors=("input", "mat2"), kind="linalg",
            vjp=lambda g, input, mat2: (g.bmm(mat2.mT), input.mT.bmm(g)),
            jvp=lambda t_input, t_mat2, input, mat2: t_input.bmm(mat2) + input.bmm(t_mat2),
            infer=infer.fixed_rank(3),
            batch=MATMUL, autocast="lower")


def _mv(input, vec):
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {input.ndim}, "
                           f"{vec.ndim}")
    _mv_check(input, vec)
    return matmul_arrays(input, vec)


mv = defop("mv", _mv, tensors=("input", "vec"), autocast={"cuda": "lower"}, kind="linalg",
           vjp=lambda g, input, vec: (g.unsqueeze(-1) * vec, input.mT.mv(g)),
           jvp=lambda t_input, t_vec, input, vec: t_input.mv(vec) + input.mv(t_vec),
           interpreted=_NOT_YET,
           batch=MATMUL)


def _dot(input, tensor):
    _dot_check(input, tensor)
    return matmul_arrays(input, tensor)


dot = defop("dot", _dot, tensors=("input", "tensor"), autocast={"cuda": "promote"}, kind="linalg",
            vjp=lambda g, input, tensor: (g * tensor, g * input),
            jvp=lambda t_input, t_tensor, input, tensor: t_input.dot(tensor) + input.dot(t_tensor),
            interpreted=_NOT_YET,
            batch=MATMUL)


def _vdot(input, other):
    _dot_check(input, other)
    return matmul_arrays(np.conj(input), other)


# complex autograd is not supported by the engine, so the real-case rule (no conj) is complete
vdot = defop("vdot", _vdot, tensors=("input", "other"), kind="linalg",
             vjp=lambda g, input, other: (g * other, g * input),
             jvp=lambda t_input, t_other, input, other: t_input.vdot(other) + input.vdot(t_other),
             interpreted=_NOT_YET,
             batch=LOOP)


def _inner(input, other):
    if input.ndim == 0 or other.ndim == 0:  # a scalar operand: plain (promoting) multiply
        dims = [jt(x) for x in (input, other) if x.ndim]
        zeros = [jt(x) for x in (input, other) if not x.ndim]
        d = dt.promote_tiers(dims, zeros, [])
        with np.errstate(all="ignore"):
            return np.multiply(input.astype(d.compute), other.astype(d.compute)).astype(d.np)
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(input.shape)} and {list(other.shape)}")
    if input.dtype != other.dtype:
        raise RuntimeError("both inputs should have same dtype")
    no_bool(input, "dot")
    a = input.reshape(-1, input.shape[-1])
    b = other.reshape(-1, other.shape[-1])
    return matmul_arrays(a, b.T).reshape(input.shape[:-1] + other.shape[:-1])


def _inner_vjp(g, input, other):
    if input.ndim == 0 or other.ndim == 0:
        return g * other, g * input  # autograd sums the broadcast away
    k = input.shape[-1]
    g2 = g.reshape(int(np.prod(input.shape[:-1])), int(np.prod(other.shape[:-1])))
    return ((g2 @ other.reshape(-1, k)).reshape(input.shape),
            (g2.mT @ input.reshape(-1, k)).reshape(other.shape))


inner = defop("inner", _inner, tensors=("input", "other"), kind="linalg", vjp=_inner_vjp,
              jvp=lambda t_input, t_other, input, other:
              t_input.inner(other) + input.inner(t_other), interpreted=_NOT_YET,
              batch=LOOP)


def _outer(input, vec2):
    for name, v in (("self", input), ("vec2", vec2)):
        if v.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {v.ndim}-D")
    d = dt.promote_types(dt.from_numpy_dtype(input.dtype), dt.from_numpy_dtype(vec2.dtype))
    with np.errstate(all="ignore"):
        return np.multiply.outer(input.astype(d.compute), vec2.astype(d.compute)).astype(d.np)


def _outer_vjp(g, input, vec2):
    return g.mv(vec2.to(g.dtype)), g.mT.mv(input.to(g.dtype))


def _outer_jvp(t_input, t_vec2, input, vec2):
    return t_input.outer(vec2) + input.outer(t_vec2)


outer = defop("outer", _outer, tensors=("input", "vec2"), kind="linalg", vjp=_outer_vjp,
              jvp=_outer_jvp, interpreted=_NOT_YET,
              batch=OUTER)
ger = defop("ger", _outer, tensors=("input", "vec2"), kind="linalg", vjp=_outer_vjp,
            jvp=_outer_jvp, interpreted=_NOT_YET,
            batch=OUTER)


# --- fused add-products: beta * input + alpha * (product) -------------------------------------
def _expand_to(x, shape):
    try:
        if np.broadcast_shapes(x.shape, shape) == tuple(shape):
            return np.broadcast_to(x, shape)
    except ValueError:
        pass
    # PyTorch's expand message, naming the first mismatching dim
    lead = len(shape) - x.ndim
    for i, s in enumerate(shape):
        cur = x.shape[i - lead] if i >= lead else 1
        if cur != 1 and cur != s:
            raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing "
                               f"size ({cur}) at non-singleton dimension {i}.  Target sizes: "
                               f"{list(shape)}.  Tensor sizes: {list(x.shape)}")
    raise RuntimeError(f"expand: the number of sizes provided ({len(shape)}) must be greater "
                       f"or equal to the number of dimensions in the tensor ({x.ndim})")


def _add_product(input, prod, beta, alpha):
    out = _expand_to(input, prod.shape)
    beta, alpha = scalar_for(beta, prod), scalar_for(alpha, prod)
    with np.errstate(all="ignore"):
        if alpha != 1:
            prod = (prod * alpha).astype(prod.dtype)
        if beta == 0:  # PyTorch ignores input (even NaN/inf) when beta is 0
            return np.array(prod, copy=True)
        scaled = out if beta == 1 else (out.astype(np.float32) * beta if dt.is_half_np(
            out.dtype) else out * beta)
        return (scaled + prod).astype(prod.dtype)


def _addmm(input, mat1, mat2, *, beta=1, alpha=1):
    if mat1.ndim != 2:
        raise RuntimeError(f"mat1 must be a matrix, got {mat1.ndim}-D tensor")
    if mat2.ndim != 2:
        raise RuntimeError(f"mat2 must be a matrix, got {mat2.ndim}-D tensor")
    _mm_check(mat1, mat2)
    if input.dtype != mat2.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {pt(input)} and "
                           f"{pt(mat2)}")
    return _add_product(input, matmul_arrays(mat1, mat2), beta, alpha)


def _scaled(g, c):
    return g if c == 1 else g * c


addmm = defop("addmm", _addmm, tensors=("input", "mat1", "mat2"), kind="linalg", inplace=True,
              vjp=lambda g, mat1, mat2, beta, alpha: (
                  _scaled(g, beta), _scaled(g.mm(mat2.mT), alpha),
                  _scaled(mat1.mT.mm(g), alpha)),
              jvp=lambda t_input, t_mat1, t_mat2, mat1, mat2, beta, alpha:
              _scaled(t_input, beta) + _scaled(t_mat1.mm(mat2) + mat1.mm(t_mat2), alpha),
              infer=infer.fixed_rank(2, first=1),
              batch=LOOP, autocast="lower")


def _addmv(input, mat, vec, *, beta=1, alpha=1):
    if mat.ndim != 2 or vec.ndim != 1 or input.ndim > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.ndim}, {mat.ndim}, "
                           f"{vec.ndim}")
    if not (input.dtype == mat.dtype == vec.dtype):
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {pt(input)}, "
                           f"{pt(mat)}, and {pt(vec)}")
    _mv_check(mat, vec)
    return _add_product(input, matmul_arrays(mat, vec), beta, alpha)


addmv = defop("addmv", _addmv, tensors=("input", "mat", "vec"),
              autocast={"cuda": "lower"}, kind="linalg", inplace=True,
              vjp=lambda g, mat, vec, beta, alpha: (
                  _scaled(g, beta), _scaled(g.unsqueeze(-1) * vec, alpha),
                  _scaled(mat.mT.mv(g), alpha)),
              jvp=lambda t_input, t_mat, t_vec, mat, vec, beta, alpha:
              _scaled(t_input, beta) + _scaled(t_mat.mv(vec) + mat.mv(t_vec), alpha),
              interpreted=_NOT_YET,
              batch=LOOP)


def _batch_check(batch1, batch2):
    for name, b in (("batch1", batch1), ("batch2", batch2)):
        if b.ndim != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    if batch1.shape[0] != batch2.shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got "
                           f"{batch1.shape[0]} and {batch2.shape[0]}")
    if batch1.shape[2] != batch2.shape[1]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({batch1.shape[1]}x"
                           f"{batch1.shape[2]} and {batch2.shape[1]}x{batch2.shape[2]})")


def _addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    _batch_check(batch1, batch2)
    if not (input.dtype == batch1.dtype == batch2.dtype):
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {pt(input)} and "
                           f"{pt(batch2)}")
    no_bool(input, "addbmm")
    prod = matmul_arrays(batch1, batch2)
    with np.errstate(all="ignore"):
        prod = prod.astype(np.float32).sum(0).astype(prod.dtype) if dt.is_half_np(
            prod.dtype) else prod.sum(0, dtype=prod.dtype)
    return _add_product(input, prod, beta, alpha)


def _addbmm_vjp(g, batch1, batch2, beta, alpha):
    gb = g.unsqueeze(0).expand((batch1.shape[0],) + tuple(g.shape))
    return _scaled(g, beta), _scaled(gb.bmm(batch2.mT), alpha), _scaled(batch1.mT.bmm(gb), alpha)


addbmm = defop("addbmm", _addbmm, tensors=("input", "batch1", "batch2"), kind="linalg",
               inplace=True, vjp=_addbmm_vjp,
               jvp=lambda t_input, t_batch1, t_batch2, batch1, batch2, beta, alpha:
               _scaled(t_input, beta)
               + _scaled((t_batch1.bmm(batch2) + batch1.bmm(t_batch2)).sum(0), alpha),
               interpreted=_NOT_YET,
               batch=LOOP, autocast="lower")


def _baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    _batch_check(batch1, batch2)
    if not (input.dtype == batch1.dtype == batch2.dtype):
        raise RuntimeError(f"Input dtypes must be the same, got: input {c_name(input)}, "
                           f"batch1: {c_name(batch1)}, batch2: {c_name(batch2)}")
    no_bool(input, "baddbmm")
    return _add_product(input, matmul_arrays(batch1, batch2), beta, alpha)


baddbmm = defop("baddbmm", _baddbmm, tensors=("input", "batch1", "batch2"), kind="linalg",
                inplace=True,
                vjp=lambda g, batch1, batch2, beta, alpha: (
                    _scaled(g, beta), _scaled(g.bmm(batch2.mT), alpha),
                    _scaled(batch1.mT.bmm(g), alpha)),
                jvp=lambda t_input, t_batch1, t_batch2, batch1, batch2, beta, alpha:
                _scaled(t_input, beta)
                + _scaled(t_batch1.bmm(batch2) + batch1.bmm(t_batch2), alpha), interpreted=_NOT_YET,
                batch=LOOP, autocast="lower")
