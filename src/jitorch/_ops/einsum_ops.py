"""einsum and tensordot.

`einsum` parses PyTorch's three call forms (equation + operands, equation + list, and the
sublist form) into a normalised spec — a tuple of integer label lists per operand plus the output
labels, with ellipsis dims given labels of their own — and calls the internal op `_einsum`.
Labels of size 1 broadcast against other operands, as in PyTorch. Gradients are einsums too:
the VJP for operand i contracts the incoming gradient with the other operands (diagonal labels
are rebuilt with identity matrices, labels summed away inside operand i with ones), so
higher-order gradients work. `tensordot` is an op whose rules reuse einsum's.
"""
from __future__ import annotations

import numpy as np

from .. import _autocast
from .. import _dtype as dt
from .._tensor import Tensor
from ._linalg_util import const, no_bool, pt
from ._util import wrap_dim
from .registry import _write_out, defop
from .batching import EINSUM, LOOP

# why the compiler runs these ops in the interpreter (their declarations' interpreted=)
_NOT_YET = "no CPU lowering yet (matmul, mm, bmm are lowered)"

__all__ = ["einsum", "tensordot"]

_ELL = 52  # labels 0..51 are letters (A-Z then a-z, PyTorch's order); 52+ are ellipsis dims


def _label(ch: str) -> int:
    return ord(ch) - ord("A") if ch <= "Z" else ord(ch) - ord("a") + 26


def _letter(k: int) -> str:
    return chr(ord("A") + k) if k < 26 else chr(ord("a") + k - 26)


def _parse_terms(equation: str):
    """Split into per-operand label lists (None marks '...') and the output (None: implicit)."""
    terms, cur, out, seen_arrow = [], [], None, False
    i, n = 0, len(equation)
    while i < n:
        ch = equation[i]
        if ch == " ":
            pass
        elif ch == ".":
            if equation[i:i + 3] != "...":
                raise RuntimeError(f"einsum(): found '.' for operand {len(terms)} that is not "
                                   "part of any ellipsis")
            if None in cur:
                raise RuntimeError(f"einsum(): found '.' for operand {len(terms)} for which "
                                   "an ellipsis was already found")
            cur.append(None)
            i += 2
        elif ch == "," and not seen_arrow:
            terms.append(cur)
            cur = []
        elif ch == "-" and not seen_arrow and equation[i + 1:i + 2] == ">":
            terms.append(cur)
            cur, seen_arrow = [], True
            i += 1
        elif ch.isascii() and ch.isalpha():
            cur.append(_label(ch))
        else:
            raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation "
                               "string, subscripts must be in [a-zA-Z]")
        i += 1
    if seen_arrow:
        out = cur
    else:
        terms.append(cur)
    return terms, out


def _make_spec(terms, out, shapes):
    """Expand ellipses, check ranks, and build the (inputs, output) label spec."""
    if len(terms) > len(shapes):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the "
                           "equation")
    if len(terms) < len(shapes):
        raise RuntimeError("einsum(): more operands were provided than specified in the "
                           "equation")
    ell = 0
    for k, (t, s) in enumerate(zip(terms, shapes)):
        nl = len([x for x in t if x is not None])
        if None in t:
            if nl > len(s):
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({nl}) "
                                   f"is more than the number of dimensions ({len(s)}) for "
                                   f"operand {k}")
            ell = max(ell, len(s) - nl)
        elif nl != len(s):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({nl}) does "
                               f"not match the number of dimensions ({len(s)}) for operand {k} "
                               "and no ellipsis was given")
    ins = []
    for t, s in zip(terms, shapes):
        k = len(s) - len([x for x in t if x is not None])
        lab = []
        for x in t:
            lab.extend(range(_ELL + ell - k, _ELL + ell) if x is None else [x])
        ins.append(tuple(lab))
    all_ell = tuple(range(_ELL, _ELL + ell))
    if out is None:
        counts = {}
        for lab in ins:
            for x in lab:
                counts[x] = counts.get(x, 0) + 1
        res = all_ell + tuple(sorted(x for x, c in counts.items() if c == 1 and x < _ELL))
    else:
        res = []
        present = {x for lab in ins for x in lab}
        for x in out:
            if x is None:
                res.extend(all_ell)
                continue
            if x in res:
                raise RuntimeError(f"einsum(): output subscript {_letter(x)} appears more than "
                                   "once in the output")
            if x not in present:
                raise RuntimeError(f"einsum(): output subscript {_letter(x)} does not appear in "
                                   "the equation for any input operand")
            res.append(x)
        res = tuple(res)
    return tuple(ins), res


def _sizes(spec, shapes) -> dict:
    sizes = {}
    for k, (lab, s) in enumerate(zip(spec[0], shapes)):
        own = {}
        for x, n in zip(lab, s):
            if x in own and own[x] != n:
                raise RuntimeError(f"einsum(): subscript {_letter(x)} is repeated for operand {k} "
                                   f"but the sizes don't match, {n} != {own[x]}")
            own[x] = n
        for x, n in own.items():
            prev = sizes.get(x)
            if prev is None or prev == 1:
                sizes[x] = n
            elif n != 1 and n != prev:
                if x >= _ELL:
                    j = sorted(y for y in lab if y >= _ELL).index(x)
                    raise RuntimeError(f"einsum(): dimension {j} covered by ellipsis in operand "
                                       f"{k}has size {n} which does not broadcast with previously "
                                       f"seen ellipsis with size {prev} for the respective "
                                       "dimension")
                raise RuntimeError(f"einsum(): subscript {_letter(x)} has size {n} for operand "
                                   f"{k} which does not broadcast with previously seen size "
                                   f"{prev}")
    return sizes


def _einsum_impl(operands, spec):
    ins, out = spec
    shapes = [a.shape for a in operands]
    sizes = _sizes(spec, shapes)
    d0 = operands[0].dtype
    for a in operands[1:]:
        if a.dtype != d0:
            raise RuntimeError(f"expected scalar type {pt(operands[0])} but found {pt(a)}")
    summed = {x for lab in ins for x in lab} - set(out)
    res_dt = d0
    if len(operands) == 1 and summed and d0.kind in "biu":
        res_dt = np.dtype(np.int64)  # a one-operand reduction is a sum: ints accumulate in int64
    elif d0 == np.bool_ and summed:
        no_bool(operands[0], "bmm")
    compute = np.float32 if dt.is_half_np(d0) else (
        np.int64 if d0 == np.bool_ else res_dt)
    ids = {x: i for i, x in enumerate(sorted(sizes))}  # NumPy wants labels in [0, 52)
    args = []
    for a, lab in zip(operands, ins):
        target = tuple(sizes[x] for x in lab)
        if a.shape != target:
            a = np.broadcast_to(a, target)
        args.extend((a.astype(compute, copy=False), [ids[x] for x in lab]))
    args.append([ids[x] for x in out])
    with np.errstate(all="ignore"):
        r = np.einsum(*args, optimize=len(operands) > 2)
    return np.asarray(r).astype(res_dt if d0 != np.bool_ or summed else np.bool_)


def _einsum_vjp(g, operands, spec):
    ins, out = spec
    sizes = _sizes(spec, [t.shape for t in operands])
    grads = []
    for i, t in enumerate(operands):
        if not t.requires_grad:
            grads.append(None)
            continue
        grads.append(_einsum_grad(g, operands, ins, out, sizes, i))
    return grads


def _einsum_grad(g, operands, ins, out, sizes, i):
    """d/d operand i: contract g with the other operands onto operand i's labels."""
    others = [k for k in range(len(operands)) if k != i]
    fresh = max([x for lab in ins for x in lab] + [_ELL + 64]) + 1
    tensors = [g] + [operands[k] for k in others]
    labs = [tuple(out)] + [ins[k] for k in others]
    target, seen = [], set()
    for x in ins[i]:
        if x in seen:  # a repeated label: a diagonal; rebuild it with an identity matrix
            tensors.append(const(np.eye(sizes[x]), g))
            labs.append((x, fresh))
            target.append(fresh)
            fresh += 1
        else:
            seen.add(x)
            target.append(x)
    elsewhere = {x for lab in labs for x in lab}
    for x in dict.fromkeys(ins[i]):
        if x not in elsewhere:  # summed inside operand i only: its gradient is broadcast
            tensors.append(const(np.ones(sizes[x]), g))
            labs.append((x,))
    return _einsum(tensors, (tuple(labs), tuple(target)))


def _einsum_jvp(t_operands, operands, spec):
    r = None
    for i, t in enumerate(t_operands):
        if not t._data.any():
            continue  # a zero tangent contributes nothing
        ops = list(operands)
        ops[i] = t
        term = _einsum(ops, spec)
        r = term if r is None else r + term
    if r is None:
        return _einsum(list(t_operands), spec)
    return r


_einsum = defop("_einsum", _einsum_impl, tensors=(), lists=("operands",), kind="linalg",
                method=False, vjp=_einsum_vjp, jvp=_einsum_jvp, interpreted=_NOT_YET,
                batch=EINSUM)


@_autocast.policy({"cuda": "lower"})
def einsum(*args, out=None):
    """`einsum(equation, *operands)`, `einsum(equation, [operands])` or the sublist form
    `einsum(op1, [0, 1], op2, [1, 2], [0, 2])`."""
    if not args:
        raise TypeError("einsum(): must specify the equation string and at least one operand, "
                        "or at least one operand and its subscripts list")
    if isinstance(args[0], str):
        equation, ops = args[0], args[1:]
        if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
            ops = tuple(ops[0])
    else:
        equation, ops = _sublist_equation(args)
    for k, t in enumerate(ops):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {k} in argument 1, but got "
                            f"{type(t).__name__}")
    terms, outl = _parse_terms(equation)
    spec = _make_spec(terms, outl, [t.shape for t in ops])
    r = _einsum(list(ops), spec)
    return r if out is None else _write_out(out, r)


def _sublist_equation(args):
    ops, subs = list(args[0::2]), list(args[1::2])
    out = None
    if len(subs) < len(ops):  # an odd count: the last item is the output sublist
        out = ops.pop()

    def text(sub):
        s = ""
        for x in sub:
            if x is Ellipsis:
                s += "..."
            elif isinstance(x, (int, np.integer)) and 0 <= x < 52:
                s += _letter(int(x))
            else:
                raise RuntimeError("einsum(): expected subscript to be within the range [0, 52), "
                                   f"but got {x}")
        return s
    eq = ",".join(text(s) for s in subs)
    if out is not None:
        eq += "->" + text(out)
    return eq, tuple(ops)


# --- tensordot --------------------------------------------------------------------------------
def _norm_dims(dims, na: int, nb: int):
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, (int, np.integer)) and not isinstance(dims, bool):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(na, nb):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        return tuple(range(na - dims, na)), tuple(range(dims))
    if not isinstance(dims, (list, tuple)) or len(dims) != 2:
        raise RuntimeError("tensordot expects dims to be an int or a pair of lists of dims")
    da, db = dims
    for pos, d in (("self", da), ("other", db)):
        if not isinstance(d, (list, tuple)):
            raise TypeError(f"tensordot(): argument 'dims_{pos}' (position 3) must be tuple of "
                            f"ints, not {type(d).__name__}")
    da, db = list(da), list(db)
    if len(da) != len(db):
        raise RuntimeError(f"both dimension lists should have same length, got {len(da)} and "
                           f"{len(db)}")
    return tuple(wrap_dim(d, na) for d in da), tuple(wrap_dim(d, nb) for d in db)


def _tensordot_spec(na, nb, dims):
    da, db = _norm_dims(dims, na, nb)
    la = tuple(range(na))
    lb = [None] * nb
    for x, y in zip(da, db):
        lb[y] = x
    nxt = na
    for k in range(nb):
        if lb[k] is None:
            lb[k] = nxt
            nxt += 1
    free_a = tuple(x for x in la if x not in da)
    free_b = tuple(lb[k] for k in range(nb) if k not in db)
    return (la, tuple(lb)), free_a + free_b, da, db


def _tensordot(a, b, dims=2):
    spec_in, out, da, db = _tensordot_spec(a.ndim, b.ndim, dims)
    for x, y in zip(da, db):
        if a.shape[x] != b.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[x]} in dim {x} and second has size {b.shape[y]} in "
                               f"dim {y}")
    if a.dtype != b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    no_bool(a, "addmm_impl_cpu_")
    compute = np.float32 if dt.is_half_np(a.dtype) else a.dtype
    with np.errstate(all="ignore"):
        r = np.tensordot(a.astype(compute, copy=False), b.astype(compute, copy=False),
                         axes=(list(da), list(db)))
    return np.asarray(r).astype(a.dtype)


def _tensordot_vjp(g, a, b, dims):
    spec_in, out, _, _ = _tensordot_spec(a.ndim, b.ndim, dims)
    ops = [a, b]
    sizes = _sizes((spec_in, out), [a.shape, b.shape])
    return tuple(_einsum_grad(g, ops, spec_in, out, sizes, i) if t.requires_grad else None
                 for i, t in enumerate(ops))


def _tensordot_jvp(t_a, t_b, a, b, dims):
    return tensordot(t_a, b, dims) + tensordot(a, t_b, dims)


tensordot = defop("tensordot", _tensordot, tensors=("a", "b"),
                  autocast={"cuda": "promote"}, kind="linalg", method=False,
                  vjp=_tensordot_vjp, jvp=_tensordot_jvp,
                  interpreted="no CPU lowering yet (matmul, mm, bmm are lowered)",
                  batch=LOOP)
