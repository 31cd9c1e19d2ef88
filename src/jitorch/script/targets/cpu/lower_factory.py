"""Lowering of tensor factory nodes (registry ops, `_ops/factories.py`) to NumPy calls and loops
inside the njit program.

Sizes and fill values are run-time values (`x.shape[0]`, a loop counter, an int argument):
the program is compiled per dtype/rank and a new size never recompiles. Every run-time
argument eager validates is validated here too, with eager's exception type and message
(negative sizes, arange's step and bounds, linspace's steps, eye's n/m), so the program never
allocates a nonsense shape. Results are fresh C-contiguous arrays. Dtypes the CPU backend does not
lower (complex, half) and `arange`/`linspace` of bool raise NotLowered: the interpreter runs
the eager factory, which raises or computes as eager does. So does a factory whose result is
not on the CPU (`device="cuda"`, the default device set elsewhere, `x.device` of such a result:
its type's device, passes/types.py `stamp_device`): every lowering here is registered through
`_lowers`, which checks that first; the `%device` input is otherwise not read.
"""
from __future__ import annotations

from .... import _dtype as dt
from ... import ir
from ...ir.values import data_info
from ...codegen import NotLowered, literal
from ...codegen.emitter import Emitter, np_type, typed_literal
from ...codegen.lowering import lowers


def _lowers(*names):
    """`lowers(*names, target="cpu")` for factories placing their result on the CPU; a factory
    making it on another device (or on one only known at run time) raises NotLowered."""
    def deco(lower):
        def checked(em: Emitter, n: ir.Node) -> None:
            t = n.output.type
            dev = n.inputs[len(n.inputs) - 1]  # %device, the last input of every factory
            if not em.is_const(dev):
                raise NotLowered(f"{n.op} on a device known only at run time")
            if not isinstance(t, ir.TensorType) or t.device != "cpu":
                raise NotLowered(f"{n.op} on device {getattr(t, 'device', '?')}: "
                                 "the CPU program makes CPU tensors")
            lower(em, n)
        checked.__name__ = lower.__name__
        return lowers(*names, target="cpu")(checked)
    return deco


def _tup(parts) -> str:
    return "(" + "".join(f"{p}, " for p in parts) + ")"


def _out_dtype(em: Emitter, n: ir.Node) -> dt.dtype:
    return em.tensor(n.output).dtype


def _size_parts(em: Emitter, v: ir.Value) -> tuple[list, bool]:
    """Run-time expressions for a size list, and whether any entry may be negative."""
    if em.is_const(v):
        c = em.const(v)
        c = list(c) if isinstance(c, (list, tuple)) else [c]
        if any(isinstance(x, bool) or not isinstance(x, int) for x in c):
            raise NotLowered(f"size {c!r} is not a list of ints")
        if any(x < 0 for x in c):
            raise NotLowered("negative size")  # the interpreter raises eager's error
        return [literal.integer(x) for x in c], False
    if v.uid in em.shapes:
        xs, rank = em.shapes[v.uid]
        return [f"{xs}.shape[{k}]" for k in range(rank)], False
    elems = em.tuples.get(v.uid) or em.lists.get(v.uid)
    if elems is None:
        raise NotLowered("size list of unknown length")
    for x in elems:
        if not isinstance(x.type, ir.IntType):
            raise NotLowered(f"size entry of type {x.type}")
    return [em.name(x) for x in elems], True


def _check_sizes(em: Emitter, parts: list, fname: str) -> None:
    """Eager's negative-size error (`_creation._check_sizes`), raised before allocating."""
    cond = " or ".join(f"{p} < 0" for p in parts)
    em.emit(f"if {cond}:")
    em.indent += 1
    if fname == "zeros":
        em.raise_("RuntimeError", "zeros: Dimension size must be non-negative.")
    else:
        # the first negative entry, then the whole list, as eager prints them
        first = em.fresh("neg")
        em.emit(f"{first} = 0")
        for p in reversed(parts):
            em.emit(f"if {p} < 0:")
            em.emit(f"    {first} = {p}")
        msg = ["Trying to create tensor with negative dimension ", (first,), ": ["]
        for k, p in enumerate(parts):
            msg += ([", "] if k else []) + [(p,)]
        em.raise_("RuntimeError", *msg, "]")
    em.indent -= 1


def _bind(em: Emitter, n: ir.Node, expr: str) -> str:
    out = em.fresh("f")
    em.emit(f"{out} = {expr}")
    em.bind(n.output, out)
    return out


EMPTY = object()  # the fill of `empty*`: zeros, or deterministic mode's value (_empty_fill)


def _empty_fill(d: dt.dtype):
    """What eager's `empty*` fill with now (`_determinism.empty_fill`): 0, or in deterministic
    mode NaN (floating, complex), the largest value (integers), True (bool). Read when the
    program is generated: switching the mode forgets every compiled specialisation."""
    from .... import _determinism
    if not _determinism.fills_empty():
        return 0
    if d is dt.bool:
        return "True"
    if d.category == dt.INT:
        import numpy as np
        return typed_literal(int(np.iinfo(d.np).max), d)
    return "np.nan"


def _filled(em: Emitter, n: ir.Node, parts: list, fill, d: dt.dtype) -> None:
    shape, ty = _tup(parts), np_type(d)
    if fill is EMPTY:
        fill = _empty_fill(d)
    if fill == 0:
        _bind(em, n, f"np.zeros({shape}, {ty})")
    elif fill == 1:
        _bind(em, n, f"np.ones({shape}, {ty})")
    else:
        _bind(em, n, f"np.full({shape}, {fill}, {ty})")  # arr.fill() rejects 0-d arrays


def _fill_expr(em: Emitter, v: ir.Value, d: dt.dtype) -> str:
    """A fill value converted to `d` with PyTorch's checked conversion, as eager's `full`."""
    from ...codegen.casts import checked_scalar
    return checked_scalar(em, v, d)


def _sized(fill):
    def lower(em: Emitter, n: ir.Node) -> None:
        d = _out_dtype(em, n)
        size = n.inputs[1] if n.op.startswith("new_") else n.inputs[0]
        parts, check = _size_parts(em, size)
        if check:
            base = n.op[4:] if n.op.startswith("new_") else n.op
            _check_sizes(em, parts, base)
        _filled(em, n, parts, fill, d)
    return lower


@_lowers("full", "new_full")
def lower_full(em: Emitter, n: ir.Node) -> None:
    d = _out_dtype(em, n)
    ins = n.inputs[1:] if n.op == "new_full" else n.inputs
    parts, check = _size_parts(em, ins[0])
    if check:
        _check_sizes(em, parts, "full")
    _filled(em, n, parts, _fill_expr(em, ins[1], d), d)


def _like(fill):
    def lower(em: Emitter, n: ir.Node) -> None:
        d = _out_dtype(em, n)
        x = n.inputs[0]
        r = em.tensor(x).ndim
        xs = em.name(x)
        parts = [f"{xs}.shape[{k}]" for k in range(r)]
        _filled(em, n, parts, fill if fill is not None else _fill_expr(em, n.inputs[1], d), d)
    return lower


def _float_expr(em: Emitter, v: ir.Value) -> str:
    return f"float({em.name(v)})"


@_lowers("arange")
def lower_arange(em: Emitter, n: ir.Node) -> None:
    d = _out_dtype(em, n)
    if d is dt.bool:
        raise NotLowered("arange of bool")  # eager raises NotImplementedError
    start, end, step = n.inputs[:3]
    s, e, st = em.name(start), em.name(end), em.name(step)
    em.emit(f"if {st} == 0:")
    em.emit("    " + _raise_line(em, "RuntimeError", "step must be nonzero"))
    floats = [v for v in (start, end) if isinstance(v.type, ir.FloatType)]
    if floats:
        cond = " or ".join(f"not np.isfinite({em.name(v)})" for v in (start, end))
        em.emit(f"if {cond}:")
        em.emit(f"    {_raise_line(em, 'RuntimeError', 'unsupported range: ? -> ?')}")
    em.emit(f"if not (({st} > 0 and {e} >= {s}) or ({st} < 0 and {e} <= {s})):")
    em.emit("    " + _raise_line(em, "RuntimeError",
                                 "upper bound and lower bound inconsistent with step sign"))
    cnt, out, i = em.fresh("n"), em.fresh("f"), em.fresh("i")
    if d is dt.int64:
        si, ei, sti = em.fresh("s"), em.fresh("s"), em.fresh("s")
        em.emit(f"{si}, {ei}, {sti} = int({s}), int({e}), int({st})")
        em.emit(f"if {sti} == 0:")
        em.emit("    " + _raise_line(em, "ValueError", "step must be nonzero"))
        # C++ division of operands of one sign (checked above): Python's floor division agrees
        em.emit(f"{cnt} = ({ei} - {si} + {sti} - (1 if {sti} > 0 else -1)) // {sti}")
        em.emit(f"{cnt} = max({cnt}, 0)")
        em.emit(f"{out} = np.empty(({cnt},), np.int64)")
        em.emit(f"for {i} in range({cnt}):")
        em.emit(f"    {out}[{i}] = {si} + {sti} * {i}")
    else:
        em.emit(f"{cnt} = max(int(math.ceil(({_float_expr(em, end)} - {_float_expr(em, start)})"
                f" / {_float_expr(em, step)})), 0)")
        em.emit(f"{out} = np.empty(({cnt},), {np_type(d)})")
        em.emit(f"for {i} in range({cnt}):")
        if d.category == dt.INT:
            em.emit(f"    {out}[{i}] = {np_type(d)}(int({s}) + int({st}) * {i})")
        else:
            em.emit(f"    {out}[{i}] = {np_type(d)}(float({s}) + float({st}) * {i})")
    em.bind(n.output, out)


def _raise_line(em: Emitter, exc: str, msg: str) -> str:
    em.exceptions.add(literal.exception(exc))
    return f"raise _{exc}({literal.text(msg)})"


@_lowers("linspace")
def lower_linspace(em: Emitter, n: ir.Node) -> None:
    d = _out_dtype(em, n)
    if d is dt.bool:
        raise NotLowered("linspace of bool")
    start, end, steps = n.inputs[:3]
    st = em.name(steps)
    em.emit(f"if {st} < 0:")
    em.emit("    " + _raise_line(em, "RuntimeError", "number of steps must be non-negative"))
    out, i, step = em.fresh("f"), em.fresh("i"), em.fresh("s")
    s, e = em.fresh("s"), em.fresh("s")
    if d.category == dt.INT:
        # the endpoints become the integer type first (truncated), the steps run in double
        em.emit(f"{s}, {e} = float(int({em.name(start)})), float(int({em.name(end)}))")
    else:
        em.emit(f"{s}, {e} = float({em.name(start)}), float({em.name(end)})")
    if d is dt.float32:  # eager rounds the endpoints to float32 first
        em.emit(f"{s}, {e} = float(np.float32({s})), float(np.float32({e}))")
    conv = f"{np_type(d)}(int(" if d.category == dt.INT else f"{np_type(d)}(("
    em.emit(f"{out} = np.empty(({st},), {np_type(d)})")
    em.emit(f"if {st} == 1:")
    em.emit(f"    {out}[0] = {conv}{s}))")
    em.emit(f"elif {st} > 1:")
    em.indent += 1
    if d is dt.float32:  # the step is a float32 value in eager
        em.emit(f"{step} = float(np.float32(np.float32({e} - {s}) / np.float32({st} - 1)))")
    else:
        em.emit(f"{step} = ({e} - {s}) / ({st} - 1)")
    em.emit(f"for {i} in range({st}):")
    em.emit(f"    if {i} < {st} // 2:")
    em.emit(f"        {out}[{i}] = {conv}{s} + {step} * {i}))")
    em.emit("    else:")
    em.emit(f"        {out}[{i}] = {conv}{e} - {step} * ({st} - 1 - {i})))")
    em.indent -= 1
    em.bind(n.output, out)


@_lowers("eye")
def lower_eye(em: Emitter, n: ir.Node) -> None:
    d = _out_dtype(em, n)
    nn, m = n.inputs[:2]
    a = em.name(nn)
    b = a if em.is_const(m) and em.const(m) is None else em.name(m)
    for name, x in (("n", a), ("m", b)):
        em.emit(f"if {x} < 0:")
        em.indent += 1
        em.raise_("RuntimeError", f"{name} must be greater or equal to 0, got ", (x,))
        em.indent -= 1
    out, i = _bind(em, n, f"np.zeros(({a}, {b}), {np_type(d)})"), em.fresh("i")
    em.emit(f"for {i} in range(min({a}, {b})):")
    em.emit(f"    {out}[{i}, {i}] = {typed_literal(1, d)}")


@_lowers("tensor", "new_tensor")
def lower_tensor(em: Emitter, n: ir.Node) -> None:
    d = _out_dtype(em, n)
    data = n.inputs[1] if n.op == "new_tensor" else n.inputs[0]
    info = data_info(data)
    if info is None:
        raise NotLowered("tensor() data of unknown structure")
    shape, leaves = info
    ty = np_type(d)
    if len(leaves) > 4096:
        raise NotLowered("tensor() data too large to embed")
    for x in leaves:
        if not isinstance(x, ir.Value) and d.category == dt.INT and isinstance(x, float):
            raise NotLowered("float data of an integer tensor")  # eager checks the range
    out = _bind(em, n, f"np.empty({literal.value(tuple(shape))}, {ty})")
    flat = em.fresh("fl")
    em.emit(f"{flat} = {out}.reshape(-1)" if shape else f"{flat} = {out}.reshape((1,))")
    for k, x in enumerate(leaves):
        if isinstance(x, ir.Value):
            if d.category == dt.INT and isinstance(x.type, ir.FloatType):
                raise NotLowered("float data of an integer tensor")
            if d.category == dt.INT and isinstance(x.type, ir.IntType):
                _check_int_leaf(em, em.name(x), d)
            em.emit(f"{flat}[{k}] = {ty}({em.name(x)})")
        else:
            if d.category == dt.INT and isinstance(x, int) and not isinstance(x, bool):
                _check_int_leaf(em, x, d)
            em.emit(f"{flat}[{k}] = {typed_literal(x, d)}")


def _check_int_leaf(em: Emitter, x, d: dt.dtype) -> None:
    """eager `tensor(data, dtype=d)`'s range check of an int (`_creation._range_check`: an
    unsigned type takes -max..max, negatives wrapping): a failing one raises where it is."""
    import numpy as np
    info = np.iinfo(d.np)
    lo = -info.max if info.min == 0 else info.min
    if isinstance(x, int):
        if lo <= x <= info.max:
            return
        cond = "True"
    elif d is dt.int64:  # a run-time int is an int64
        return
    else:
        cond = f"{x} < {lo} or {x} > {info.max}"
    em.emit(f"if {cond}:")
    em.indent += 1
    em.raise_("RuntimeError", f"value cannot be converted to type {d.name} without overflow")
    em.indent -= 1


@_lowers("scalar_tensor")
def lower_scalar_tensor(em: Emitter, n: ir.Node) -> None:
    d = _out_dtype(em, n)
    v = _fill_expr(em, n.inputs[0], d)
    out = _bind(em, n, f"np.empty((1,), {np_type(d)})")
    em.emit(f"{out}[0] = {v}")
    em.bind(n.output, f"{out}.reshape(())")


_lowers("zeros", "new_zeros")(_sized(0))
_lowers("empty", "new_empty")(_sized(EMPTY))
_lowers("ones", "new_ones")(_sized(1))
_lowers("zeros_like")(_like(0))
_lowers("empty_like")(_like(EMPTY))
_lowers("ones_like")(_like(1))
_lowers("full_like")(_like(None))
