"""CPU lowering of index writes: `_index_write(x, values, basic, cast_check)` and
`_select_write(x, values, dim, index)` (an int index known at run time).

The frontend expresses every in-place write (`x[i, 1:3] = v`, `x.copy_(y)`, `x.fill_(s)`, the
dtype-keeping result of `x.add_(y)`) as this functional op: a copy of x with `x[basic] = values`
applied, values broadcast like `Tensor.__setitem__` (leading size-1 dims dropped, then expanded)
and cast to x's dtype. The generated code copies x, takes the written region as a basic-index
view of the copy (int indices checked against the size with PyTorch's IndexError), checks that
the values broadcast to the region (RuntimeError otherwise) and writes them with one loop nest.
When the whole of x is written by a tensor of its dtype and rank that this program computed, and
the sizes already match, the result is that tensor itself (no copy: generated code never writes
into an array it did not allocate for the write).

`basic` entries: int (a selected dim), (start, stop, step) with a positive step (slices clamp
like Python's), None (a new axis: it adds a size-1 dim to the region, which changes nothing that
is written, so it is dropped).
"""
from __future__ import annotations

from .... import _dtype as dt
from ... import ir
from ...codegen import NotLowered, casts, literal
from ...codegen.emitter import Emitter
from ...codegen.lowering import lowers
from .lower_shape import _RunTime, _int_index, _norm

_VIEWS = frozenset({"_index_view", "select", "view", "reshape", "transpose", "permute", "t",
                    "expand", "narrow", "unsqueeze", "squeeze", "flatten", "contiguous",
                    "view_as", "reshape_as", "expand_as", "broadcast_to", "ravel"})


@lowers("_index_write", target="cpu")
def lower_index_write(em: Emitter, n: ir.Node) -> None:
    x, vals, basic_v, check_v = n.inputs
    basic = em.const(basic_v)
    if not isinstance(basic, tuple):
        raise NotLowered(f"_index_write with index {basic!r}")
    _write(em, n, basic, em.const(check_v))


@lowers("_select_write", target="cpu")
def lower_select_write(em: Emitter, n: ir.Node) -> None:
    """`_select_write(x, values, dim, index)`: a write at a run-time index of one dim."""
    x, vals, dim_v, index = n.inputs
    d = _norm(em.const(dim_v), em.tensor(x).ndim, "_select_write")
    if em.tensor(x).ndim == 0:
        raise NotLowered("select of a 0-d tensor")  # the interpreter raises the IndexError
    if em.is_const(index):
        i = em.const(index)
        if isinstance(i, bool) or not isinstance(i, int):
            raise NotLowered(f"_select_write with index {i!r}")
    elif isinstance(index.type, ir.IntType):
        i = _RunTime(em.name(index))
    else:
        raise NotLowered(f"_select_write with an index of type {index.type}")
    # attrs["inplace"]: a loop's `hs[t] = h` proven safe to write into x's own array
    # (passes/autodiff_control_ops.mark_inplace_writes)
    _write(em, n, ((None, None, None),) * d + (i,), False, bool(n.attrs.get("inplace")))


def _write(em: Emitter, n: ir.Node, basic, check, inplace: bool = False) -> None:
    x, vals = n.inputs[0], n.inputs[1]
    xt = em.tensor(x)
    tensor_vals = isinstance(vals.type, ir.TensorType)
    vt = em.tensor(vals) if tensor_vals else None
    if tensor_vals and check and not dt.can_cast(vt.dtype, xt.dtype):
        raise NotLowered("in-place result cast refused (the interpreter raises PyTorch's error)")
    xs = em.name(x)
    out = em.fresh("w")
    vs = em.name(vals)
    fast = (not inplace and tensor_vals and not basic and vt.dtype is xt.dtype and
            vt.ndim == xt.ndim
            and vals.node is not None and vals.node.op not in _VIEWS
            and not vals.node.op.startswith("prim::"))
    if fast:  # x.add_(y): y already is x's new value when the sizes match
        em.emit(f"if {vs}.shape == {xs}.shape:")
        em.indent += 1
        em.emit(f"{out} = {vs}")
        em.indent -= 1
        em.emit("else:")
        em.indent += 1
    em.emit(f"{out} = {xs}" if inplace else f"{out} = {xs}.copy()")
    parts, region, j = [], [], 0
    for b in basic:
        if b is None:
            continue
        if j >= xt.ndim:
            raise NotLowered("too many indices")  # the interpreter raises the IndexError
        if isinstance(b, bool):
            raise NotLowered(f"index element {b!r}")
        if isinstance(b, (int, _RunTime)):
            parts.append(_int_index(em, out, j, b if isinstance(b, _RunTime) else
                                    literal.integer(b)))
        elif isinstance(b, tuple) and len(b) == 3 and (b[2] is None or b[2] > 0) and all(
                p is None or isinstance(p, int) and not isinstance(p, bool) for p in b):
            parts.append(":".join("" if p is None else literal.integer(p) for p in b))
            region.append(j)
        else:
            raise NotLowered(f"index element {b!r}")
        j += 1
    rank = len(region) + xt.ndim - j
    if rank == 0:
        target = f"{out}[{', '.join(parts)}]" if parts else f"{out}[()]"
        reg = None
    elif parts:
        reg = em.fresh("r")
        em.emit(f"{reg} = {out}[{', '.join(parts)}]")
    else:
        reg = out
    if not tensor_vals:  # a Python number: PyTorch's checked conversion (casts.py)
        val = casts.checked_scalar(em, vals, xt.dtype)
        _fill(em, reg, target if rank == 0 else None, rank, lambda idx: val)
    else:
        _write_tensor(em, reg, target if rank == 0 else None, rank, vs, vt, xt.dtype)
    if fast:
        em.indent -= 1
    em.bind(n.outputs[0], out)


def _write_tensor(em: Emitter, reg, target, rank: int, vs: str, vt: ir.TensorType, dt_x):
    """reg[...] = vals (cast to dt_x like NumPy's astype), broadcast with PyTorch's rules;
    the checks first."""
    vr = vt.ndim
    strip = max(vr - rank, 0)

    def shape_txt():  # "[a, b]" of the values' run-time sizes, as raise_ parts
        if not vr:
            return ("[]",)
        return ("[", *sum((((f"{vs}.shape[{d}]",), ", ") for d in range(vr)), ())[:-1], "]")
    for d in range(strip):  # leading dims beyond the region's rank must be 1
        em.emit(f"if {vs}.shape[{d}] != 1:")
        em.indent += 1
        em.raise_("RuntimeError", "shape mismatch: value tensor of shape ", *shape_txt(),
                  " cannot be broadcast to the indexing result")
        em.indent -= 1
    lead = rank - (vr - strip)
    flags = []
    for i in range(vr - strip):
        d, rd = strip + i, lead + i
        em.emit(f"if {vs}.shape[{d}] != 1 and {vs}.shape[{d}] != {reg}.shape[{rd}]:")
        em.indent += 1
        em.raise_("RuntimeError", "shape mismatch: value tensor of shape ", *shape_txt(),
                  " cannot be broadcast to indexing result of shape [",
                  *sum((((f"{reg}.shape[{k}]",), ", ") for k in range(rank)), ())[:-1], "]")
        em.indent -= 1
        f = em.fresh("b")
        em.emit(f"{f} = int({vs}.shape[{d}] != 1)")
        flags.append(f)

    def value(idx):
        vi = ["0"] * strip + [f"{idx[lead + i]} * {flags[i]}" for i in range(vr - strip)]
        load = f"{vs}[{', '.join(vi)}]" if vi else f"{vs}[()]"
        if not casts.needs_name(vt.dtype, dt_x):
            return casts.cast(load, vt.dtype, dt_x)
        e = em.fresh("e")  # a float element stored as an integer reads it three times
        em.emit(f"{e} = {load}")
        return casts.cast(e, vt.dtype, dt_x)
    _fill(em, reg, target, rank, value)


def _fill(em: Emitter, reg, target, rank: int, value) -> None:
    """A loop nest over reg's dims assigning value(index names) to each element."""
    if rank == 0:
        em.emit(f"{target} = {value([])}")
        return
    idx = [em.fresh("i") for _ in range(rank)]
    for d, i in enumerate(idx):
        em.emit(f"for {i} in range({reg}.shape[{d}]):")
        em.indent += 1
    em.emit(f"{reg}[{', '.join(idx)}] = {value(idx)}")
    em.indent -= rank
