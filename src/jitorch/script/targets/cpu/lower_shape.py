"""Lowering of shape ops to NumPy array methods Numba supports.

Views stay views where Numba can express them (transpose/permute, basic slicing, unsqueeze via
`None` indexing, expand as `np.broadcast_to` would: views.py's `_jt_expand_checked`);
reshape/flatten/ravel/reshape_as are views.py's `_jt_reshape` (a view of a C-contiguous array, else
a copy). Those, `x.T` and unsqueeze are lowered in the program's entry (one intrinsic call or an
expression), never as kernels of their own (`in_entry`, which kernel.is_compute reads): a kernel per
(rank, sizes) pattern cost 20-85 ms CPU to compile (issue 17). `view`/`view_as` go through
`np.ascontiguousarray` (free on C arrays; Numba cannot reshape a non-contiguous array). A view op
(registry `view=True`: `view`, `view_as`) first checks that the input's strides allow the view, as
eager does (`check_viewable`: PyTorch's computeStride), and raises PyTorch's error otherwise; its
result may then be a contiguous copy, which holds the same values (programs never write through a
view: writes are functional in the IR). Sizes the IR fixed at trace time (a reshape target, an
integer index) are checked at run time with PyTorch's message, so a call with other sizes fails
cleanly instead of reading out of bounds. `select` takes a run-time index too (`x[i]` in a loop),
and `chunk` is lowered when a `prim::ListUnpack` consumes it (the unpack knows how many views to
emit).
"""
from __future__ import annotations

from ... import ir
from ...codegen import NotLowered, literal
from ...codegen.emitter import Emitter, np_type
from ...codegen.lowering import lowers
from . import views


def _tup(parts) -> str:
    return "(" + "".join(f"{p}, " for p in parts) + ")"


def _norm(dim: int, rank: int, op: str) -> int:
    r = max(rank, 1)
    if not isinstance(dim, int) or not -r <= dim < r:
        raise NotLowered(f"op {op}: dim {dim!r} out of range")
    return dim % r


def _runtime_sizes(em: Emitter, v: ir.Value):
    """Expressions for a size list built from run-time ints (`prim::ListConstruct(%n, 4)`, as
    the frontend gives for `x.view(n, 4)` and autodiff for backward reshapes); None when the
    list is a constant."""
    if em.is_const(v):
        return None
    items = em.lists.get(v.uid, em.tuples.get(v.uid))
    if items is None:
        raise NotLowered(f"value {v} must be a constant")
    return [_int_expr(em, e, "size") for e in items]


def _int_expr(em: Emitter, v: ir.Value, what: str) -> str:
    """The expression of an int that is a constant or a run-time value."""
    if em.is_const(v):
        c = em.const(v)
        if isinstance(c, bool) or not isinstance(c, int):
            raise NotLowered(f"{what} {c!r}")
        return literal.integer(c)
    if isinstance(v.type, ir.IntType):
        return em.name(v)
    raise NotLowered(f"{what} of type {v.type}")


def _offset_expr(em: Emitter, v: ir.Value, what: str) -> str:
    """`_int_expr` of an int that only offsets or bounds an index (narrow's start and length):
    a constant one is a kernel's parameter (`Emitter.run_time`)."""
    e = _int_expr(em, v, what)
    return em.run_time(e) if em.is_const(v) else e


_VIEWABLE = '''
@numba.njit(nogil=True, cache=False)
def _jt_viewable(x, shape):
    """PyTorch's computeStride as a test: can x, with its strides, be viewed as `shape` (sizes
    whose product is x.size) without a copy? Strides in bytes work as well as in elements."""
    if x.size == 0 or x.ndim == 0:
        return True
    view_d = len(shape) - 1
    chunk = x.strides[x.ndim - 1]
    tn = 1
    vn = 1
    for td in range(x.ndim - 1, -1, -1):
        tn *= x.shape[td]
        if td == 0 or (x.shape[td - 1] != 1 and x.strides[td - 1] != tn * chunk):
            while view_d >= 0 and (vn < tn or shape[view_d] == 1):
                vn *= shape[view_d]
                view_d -= 1
            if vn != tn:
                return False
            if td > 0:
                chunk = x.strides[td - 1]
                tn = 1
                vn = 1
    return view_d == -1
'''

_NOT_VIEWABLE = ("view size is not compatible with input tensor's size and stride (at least one "
                 "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")


def check_viewable(em: Emitter, n: ir.Node, xs: str, parts) -> None:
    """For a view op (the registry's `view=True`; reshape-like ops copy instead): raise eager's
    RuntimeError when array `xs` cannot be viewed with sizes `parts` (expressions whose product
    was checked to be its size). C-contiguous arrays always can."""
    if not _is_view(n) or not parts:  # (a 0-d view of one element: always)
        return
    em.global_line(_VIEWABLE)
    em.emit(f"if not {xs}.flags.c_contiguous and not _jt_viewable({xs}, {_tup(parts)}):")
    em.indent += 1
    em.raise_("RuntimeError", _NOT_VIEWABLE)
    em.indent -= 1


def _is_view(n: ir.Node) -> bool:
    from ...._ops.registry import OPS
    op = OPS.get(n.op)
    return op is not None and op.view is True


_RESHAPES = ("reshape", "view", "flatten", "ravel", "view_as", "reshape_as")
_EXPANDS = ("expand", "broadcast_to", "expand_as")


def in_entry(n: ir.Node) -> bool:
    """Whether `n` is lowered in the program's entry, never as a kernel of its own
    (kernel.is_compute): a reshape that is no view op (`_reshaped`: one intrinsic call), an
    expand (`_expand_to`: one intrinsic call), and the views that are expressions (`x.T` or
    the identity of a transpose of rank <= 2, unsqueeze of a tensor of rank >= 1). A kernel
    per (rank, sizes) pattern cost 20-85 ms CPU to compile, and 7 + 2 of a CNN train step's 37
    kernels were such reshapes and expands (issue 17)."""
    op = n.op
    if op not in _RESHAPES + _EXPANDS + ("transpose", "t", "permute", "unsqueeze"):
        return False
    t = n.inputs[0].type
    r = t.ndim if isinstance(t, ir.TensorType) else None
    if op in _RESHAPES:  # (a view op's stride check, check_viewable, stays in a kernel)
        return not _is_view(n) and (op != "flatten" or bool(r))  # (0-d flatten: a line)
    if op in _EXPANDS:
        return True
    if op == "unsqueeze":
        return bool(r)  # (0-d: a reshape line)
    return r is not None and r <= 2  # transpose, t, permute: `x.T` or x itself (_permute)


def _reshaped(em: Emitter, n: ir.Node, xs: str, parts, infer: int = -1) -> bool:
    """Bind `n`'s output to `xs` reshaped to `parts` (size expressions; the one at `infer`,
    if not -1, inferred) through views.py's `_jt_reshape`, which checks the sizes itself (in
    the entry: in_entry). False (nothing done) for a view op (`view`, `view_as`)."""
    if _is_view(n):
        return False
    out = em.fresh("v")
    em.emit(f"{out} = {views.use(em, '_jt_reshape')}({xs}, {_tup(parts)}, "
            f"{literal.integer(infer)})")
    em.bind(n.outputs[0], out)
    return True


def _lower_reshape_runtime(em: Emitter, n: ir.Node, parts: list) -> None:
    """reshape to sizes some of which are run-time ints (non-negative, or -1 when constant)."""
    xs = em.name(n.inputs[0])
    if parts.count("-1") > 1:
        raise NotLowered("reshape: only one dimension can be inferred")
    if _reshaped(em, n, xs, parts, parts.index("-1") if "-1" in parts else -1):
        return
    src, k = em.fresh("rs"), em.fresh("s")
    em.emit(f"{src} = np.ascontiguousarray({xs})")
    for p in parts:
        if not p.lstrip("-").isdigit():
            em.emit(f"if {p} < 0:")
            em.indent += 1
            em.raise_("RuntimeError", "invalid shape dimension ", (p,))
            em.indent -= 1
    known = [p for p in parts if p != "-1"]
    em.emit(f"{k} = {' * '.join(known) if known else '1'}")
    if "-1" in parts:
        em.emit(f"if {k} == 0 or {src}.size % {k} != 0:")
        parts = [f"{src}.size // {k}" if p == "-1" else p for p in parts]
    else:
        em.emit(f"if {src}.size != {k}:")
    em.indent += 1
    em.raise_("RuntimeError", "shape '[...]' is invalid for input of size ", (f"{src}.size",))
    em.indent -= 1
    check_viewable(em, n, xs, parts)
    out = em.fresh("v")
    em.emit(f"{out} = {src}.reshape({_tup(parts)})")
    em.bind(n.outputs[0], out)


@lowers("reshape", "view", target="cpu")
def lower_reshape(em: Emitter, n: ir.Node) -> None:
    x = n.inputs[0]
    em.tensor(x)
    rt = _runtime_sizes(em, n.inputs[1])
    if rt is not None:
        _lower_reshape_runtime(em, n, rt)
        return
    shape = list(em.const(n.inputs[1]))
    for s in shape:
        literal.integer(s)  # sizes are ints: `known` below is pasted into the program
    xs = em.name(x)
    if shape.count(-1) > 1:
        raise NotLowered("reshape: only one dimension can be inferred")
    if _reshaped(em, n, xs, [literal.integer(s) for s in shape],
                 shape.index(-1) if -1 in shape else -1):
        return
    src = em.fresh("rs")
    em.emit(f"{src} = np.ascontiguousarray({xs})")
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    txt = "[" + ", ".join(map(str, shape)) + "]"
    if -1 in shape:
        cond = f"{src}.size % {literal.integer(known)} != 0" if known else "True"
        em.emit(f"if {cond}:")
        em.indent += 1
        em.raise_("RuntimeError", f"shape '{txt}' is invalid for input of size ", (f"{src}.size",))
        em.indent -= 1
        parts = [f"{src}.size // {literal.integer(known)}" if s == -1 else literal.integer(s)
                 for s in shape]
    else:
        em.emit(f"if {src}.size != {literal.integer(known)}:")
        em.indent += 1
        em.raise_("RuntimeError", f"shape '{txt}' is invalid for input of size ", (f"{src}.size",))
        em.indent -= 1
        parts = [literal.integer(s) for s in shape]
    check_viewable(em, n, xs, parts)
    out = em.fresh("v")
    em.emit(f"{out} = {src}.reshape({_tup(parts)})")
    em.bind(n.outputs[0], out)


@lowers("flatten", target="cpu")
def lower_flatten(em: Emitter, n: ir.Node) -> None:
    x = n.inputs[0]
    r = em.tensor(x).ndim
    xs = em.name(x)
    if r == 0:
        out = em.fresh("v")
        em.emit(f"{out} = {xs}.reshape((1,))")
        em.bind(n.outputs[0], out)
        return
    s, e = _norm(em.const(n.inputs[1]), r, "flatten"), _norm(em.const(n.inputs[2]), r, "flatten")
    if s > e:
        raise NotLowered("flatten: start_dim after end_dim")
    parts = [f"{xs}.shape[{d}]" for d in range(s)]
    parts.append(" * ".join(f"{xs}.shape[{d}]" for d in range(s, e + 1)))
    parts += [f"{xs}.shape[{d}]" for d in range(e + 1, r)]
    _reshaped(em, n, xs, parts)  # (flatten is no view op: always lowered there)


def _permute(em: Emitter, n: ir.Node, perm) -> None:
    xs = em.name(n.inputs[0])
    out = em.fresh("v")
    if list(perm) == list(range(len(perm))):
        em.bind(n.outputs[0], xs)
        return
    # 2-d: the x.T view. Higher ranks: a copy loop into a C array. Numba's transpose with an
    # axes tuple costs ~5 s of typing on first use in a process (np.transpose more), and the
    # copy leaves a contiguous operand for the loops and reshapes that usually follow.
    if list(perm) == [1, 0]:  # an expression, no line: used in place, never a kernel (issue 17)
        # (a backward's transpose of a transposed weight is the weight itself, of the same
        # Numba type: no `.T.T` for Numba to type and lower)
        em.bind(n.outputs[0], xs[:-2] if xs.endswith(".T") else f"{xs}.T")
        return
    r = len(perm)
    d = em.tensor(n.outputs[0]).dtype
    em.emit(f"{out} = np.empty({_tup(f'{xs}.shape[{p}]' for p in perm)}, {np_type(d)})")
    idx = [em.fresh("i") for _ in range(r)]
    base = em.indent
    for k in range(r):  # loop in input order: contiguous reads
        em.emit(f"for {idx[k]} in range({xs}.shape[{k}]):")
        em.indent += 1
    oix = ", ".join(idx[p] for p in perm)
    em.emit(f"{out}[{oix}] = {xs}[{', '.join(idx)}]")
    em.indent = base
    em.bind(n.outputs[0], out)


@lowers("transpose", target="cpu")
def lower_transpose(em: Emitter, n: ir.Node) -> None:
    r = em.tensor(n.inputs[0]).ndim
    if r == 0:
        em.bind(n.outputs[0], em.name(n.inputs[0]))
        return
    d0, d1 = _norm(em.const(n.inputs[1]), r, "transpose"), _norm(em.const(n.inputs[2]), r,
                                                                 "transpose")
    perm = list(range(r))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    _permute(em, n, perm)


@lowers("t", target="cpu")
def lower_t(em: Emitter, n: ir.Node) -> None:
    r = em.tensor(n.inputs[0]).ndim
    if r > 2:
        raise NotLowered("t() of a tensor with more than 2 dims")
    _permute(em, n, [1, 0] if r == 2 else list(range(r)))


@lowers("permute", target="cpu")
def lower_permute(em: Emitter, n: ir.Node) -> None:
    r = em.tensor(n.inputs[0]).ndim
    perm = [_norm(d, r, "permute") for d in em.const(n.inputs[1])]
    if sorted(perm) != list(range(r)):
        raise NotLowered("permute: dims are not a permutation")
    _permute(em, n, perm)


@lowers("unsqueeze", target="cpu")
def lower_unsqueeze(em: Emitter, n: ir.Node) -> None:
    r = em.tensor(n.inputs[0]).ndim
    d = _norm(em.const(n.inputs[1]), r + 1, "unsqueeze")
    xs = em.name(n.inputs[0])
    out = em.fresh("v")
    if r == 0:
        em.emit(f"{out} = {xs}.reshape((1,))")
    else:
        parts = [":"] * r
        parts.insert(d, "None")
        # an expression, no line: used in place, never a kernel of its own (issue 17)
        em.bind(n.outputs[0], f"{xs}[{', '.join(parts)}]")
        return
    em.bind(n.outputs[0], out)


def _expand_to(em: Emitter, xs: str, r: int, target: list, out: str) -> None:
    """broadcast_to with PyTorch's check; target entries are expressions (or -1). One call of
    views.py's `_jt_expand_checked`, which checks the sizes itself (in the entry: in_entry)."""
    nt = len(target)
    if nt < r:
        raise NotLowered("expand: fewer sizes than dims")
    parts = []
    for d, s in enumerate(target):
        j = d - (nt - r)
        if s == "-1":
            if j < 0:
                raise NotLowered("expand: -1 for a new leading dim")
            parts.append(f"{xs}.shape[{j}]")
        elif s.lstrip("-").isdigit() and int(s) < 0:
            raise NotLowered("expand: a negative size")
        else:
            parts.append(s)
    em.emit(f"{out} = {views.use(em, '_jt_expand_checked')}({xs}, {_tup(parts)})")


@lowers("expand", "broadcast_to", target="cpu")
def lower_expand(em: Emitter, n: ir.Node) -> None:
    r = em.tensor(n.inputs[0]).ndim
    out = em.fresh("v")
    rt = _runtime_sizes(em, n.inputs[1])
    _expand_to(em, em.name(n.inputs[0]), r,
               rt if rt is not None else [literal.integer(s) for s in em.const(n.inputs[1])],
               out)
    em.bind(n.outputs[0], out)


@lowers("expand_as", target="cpu")
def lower_expand_as(em: Emitter, n: ir.Node) -> None:
    r = em.tensor(n.inputs[0]).ndim
    ro = em.tensor(n.inputs[1]).ndim
    os_ = em.name(n.inputs[1])
    out = em.fresh("v")
    _expand_to(em, em.name(n.inputs[0]), r, [f"{os_}.shape[{d}]" for d in range(ro)], out)
    em.bind(n.outputs[0], out)


def contiguous_expr(em: Emitter, v: ir.Value) -> str:
    """A C-contiguous array holding `v`'s values. `np.ascontiguousarray` turns a 0-d array into
    shape (1,), so a 0-d value (always contiguous) is used as it is."""
    xs = em.name(v)
    return xs if em.tensor(v).ndim == 0 else f"np.ascontiguousarray({xs})"


@lowers("contiguous", target="cpu")
def lower_contiguous(em: Emitter, n: ir.Node) -> None:
    out = em.fresh("v")
    em.emit(f"{out} = {contiguous_expr(em, n.inputs[0])}")
    em.bind(n.outputs[0], out)


@lowers("_to_dtype", target="cpu")
def lower_to_dtype(em: Emitter, n: ir.Node) -> None:
    t = em.tensor(n.inputs[0])
    d = em.tensor(n.outputs[0]).dtype
    xs = em.name(n.inputs[0])
    if d is t.dtype:
        em.bind(n.outputs[0], xs)
        return
    from ...codegen.casts import cast_array  # NumPy's astype, float -> int defined as NumPy's
    em.bind(n.outputs[0], cast_array(em, xs, t.ndim, t.dtype, d))


def _int_index(em: Emitter, xs: str, j: int, idx) -> str:
    """A checked, normalised integer index into dim j (PyTorch's IndexError otherwise).
    `idx` is an int, or a `_RunTime` expression of an int."""
    k = em.fresh("ix")
    em.emit(f"{k} = {idx} if {idx} >= 0 else {idx} + {xs}.shape[{j}]")
    em.emit(f"if {k} < 0 or {k} >= {xs}.shape[{j}]:")
    em.indent += 1
    shown = (str(idx),) if isinstance(idx, _RunTime) else f"{idx}"
    em.raise_("IndexError", "index ", shown, f" is out of bounds for dimension {j} with size ",
              (f"{xs}.shape[{j}]",))
    em.indent -= 1
    return k


class _RunTime(str):
    """An index known only at run time: the expression of a Python int."""


def _index(em: Emitter, n: ir.Node, spec) -> None:
    """spec: per input dim an int, a (start, stop, step) tuple, or None (a new axis)."""
    x = n.inputs[0]
    r = em.tensor(x).ndim
    xs = em.name(x)
    parts, j = [], 0
    for b in spec:
        if b is None:
            parts.append("None")
        elif isinstance(b, bool) or b is Ellipsis:
            raise NotLowered(f"index element {b!r}")
        elif isinstance(b, (int, _RunTime)):
            if j >= r:
                raise NotLowered("too many indices")
            parts.append(_int_index(em, xs, j, b if isinstance(b, _RunTime) else
                                    literal.integer(b)))
            j += 1
        elif isinstance(b, tuple) and len(b) == 3:
            if j >= r:
                raise NotLowered("too many indices")
            st, sp, step = b
            if step is not None and not isinstance(step, _RunTime) and \
                    int(literal.integer(step)) <= 0:
                raise NotLowered("slice step must be positive")
            parts.append(":".join("" if p is None else p if isinstance(p, _RunTime) else
                                  literal.integer(p) for p in (st, sp, step)))
            j += 1
        else:
            raise NotLowered(f"index element {b!r}")
    out_t = em.tensor(n.outputs[0])
    out = em.fresh("v")
    if out_t.ndim == 0:  # Numba gives a scalar: keep a 0-d array (a copy)
        em.emit(f"{out} = np.empty((), {np_type(out_t.dtype)})")
        em.emit(f"{out}[()] = {xs}[{', '.join(parts)}]")
    elif not parts:
        em.bind(n.outputs[0], xs)
        return
    else:
        em.emit(f"{out} = {xs}[{', '.join(parts)}]")
    em.bind(n.outputs[0], out)


@lowers("_index_view", target="cpu")
def lower_index_view(em: Emitter, n: ir.Node) -> None:
    _index(em, n, list(em.const(n.inputs[1])))


@lowers("select", target="cpu")
def lower_select(em: Emitter, n: ir.Node) -> None:
    r = em.tensor(n.inputs[0]).ndim
    d = _norm(em.const(n.inputs[1]), r, "select")
    i = n.inputs[2]
    if em.is_const(i):
        idx = em.const(i)
        if isinstance(idx, bool) or not isinstance(idx, int):
            raise NotLowered(f"select with index {idx!r}")
    elif isinstance(i.type, ir.IntType):
        idx = _RunTime(em.name(i))
    else:
        raise NotLowered(f"select with an index of type {i.type}")
    _index(em, n, [(None, None, None)] * d + [idx])


@lowers("chunk", target="cpu")
def lower_chunk(em: Emitter, n: ir.Node) -> None:
    """Recorded only: a following prim::ListUnpack (which knows the count) emits the views."""
    r = em.tensor(n.inputs[0]).ndim
    chunks = em.const(n.inputs[1])
    if r == 0 or isinstance(chunks, bool) or not isinstance(chunks, int) or chunks <= 0:
        raise NotLowered("chunk of a 0-d tensor or with a bad count")  # the interpreter raises
    d = _norm(em.const(n.inputs[2]), r, "chunk")
    em.chunks[n.outputs[0].uid] = (em.name(n.inputs[0]), r, d, literal.integer(chunks))


def unpack_chunks(em: Emitter, rec, outputs) -> None:
    xs, r, d, chunks = rec
    k = len(outputs)
    size, cs, cnt = em.fresh("n"), em.fresh("cs"), em.fresh("cnt")
    em.emit(f"{size} = {xs}.shape[{d}]")
    em.emit(f"{cs} = -(-{size} // {chunks})")
    em.emit(f"{cnt} = {chunks} if {size} == 0 else -(-{size} // {cs})")
    em.emit(f"if {cnt} > {k}:")  # Python's messages, as eager unpacking gives them
    em.indent += 1
    em.raise_("ValueError", f"too many values to unpack (expected {k})")
    em.indent -= 1
    em.emit(f"if {cnt} < {k}:")
    em.indent += 1
    em.raise_("ValueError", f"not enough values to unpack (expected {k}, got ", (cnt,), ")")
    em.indent -= 1
    for c, o in enumerate(outputs):
        lo = em.fresh("lo")
        em.emit(f"{lo} = min({c} * {cs}, {size})")
        parts = [":"] * d + [f"{lo}:min({lo} + {cs}, {size})"]
        v = em.fresh("v")
        em.emit(f"{v} = {xs}[{', '.join(parts)}]")
        em.bind(o, v)


@lowers("narrow", target="cpu")
def lower_narrow(em: Emitter, n: ir.Node) -> None:
    """x.narrow(dim, start, length); start and length may be run-time ints (checked)."""
    r = em.tensor(n.inputs[0]).ndim
    d = _norm(em.const(n.inputs[1]), r, "narrow")
    xs = em.name(n.inputs[0])
    bounds = [_offset_expr(em, v, "narrow bound") for v in n.inputs[2:4]]
    start, length = em.fresh("ns"), bounds[1]
    # PyTorch wraps a negative start once (start + size); anything still out of range raises
    em.emit(f"{start} = {bounds[0]} if {bounds[0]} >= 0 else {bounds[0]} + {xs}.shape[{d}]")
    em.emit(f"if {start} < 0 or {length} < 0 or {start} + {length} > {xs}.shape[{d}]:")
    em.indent += 1
    em.raise_("IndexError", "narrow(): start (", (start,), ") + length (", (length,),
              ") exceeds dimension size (", (f"{xs}.shape[{d}]",), ").")
    em.indent -= 1
    _index(em, n, [(None, None, None)] * d + [(_RunTime(start), _RunTime(f"{start} + {length}"),
                                               None)])


@lowers("_narrow_backward", target="cpu")
def lower_narrow_backward(em: Emitter, n: ir.Node) -> None:
    """The VJP of narrow/chunk/split: zeros of the input's shape, the grad written at
    [start, start + grad.shape[dim]) along dim (shapes checked, then a loop nest into that
    slice: an array-to-array slice assignment compiles Numba's broadcasting setitem, with its
    string formatting of error messages, 1.6-2.2 CPU-s per kernel on an encoder's backward)."""
    g = n.inputs[0]
    r = em.tensor(g).ndim
    parts = _runtime_sizes(em, n.inputs[1])
    if parts is None:
        parts = [literal.integer(c) for c in em.const(n.inputs[1])]
    if len(parts) != r:
        raise NotLowered("_narrow_backward: rank mismatch")
    d = _norm(em.const(n.inputs[2]), r, "_narrow_backward")
    start = _offset_expr(em, n.inputs[3], "narrow start")
    gs = em.name(g)
    out_t = em.tensor(n.outputs[0])
    out = em.fresh("nb")
    em.emit(f"{out} = np.zeros({_tup(parts)}, {np_type(out_t.dtype)})")
    checks = [f"{start} < 0", f"{start} + {gs}.shape[{d}] > {out}.shape[{d}]"] + [
        f"{gs}.shape[{k}] != {out}.shape[{k}]" for k in range(r) if k != d]
    em.emit(f"if {' or '.join(checks)}:")
    em.indent += 1
    msg = ["narrow backward: grad of shape ["]
    for k in range(r):
        msg += [(f"{gs}.shape[{k}]",), ", " if k < r - 1 else "] does not fit the input"]
    em.raise_("RuntimeError", *msg)
    em.indent -= 1
    from .lower_list import copy_into_slice
    copy_into_slice(em, out, d, start, gs, r)
    em.bind(n.outputs[0], out)


@lowers("ravel", target="cpu")
def lower_ravel(em: Emitter, n: ir.Node) -> None:
    em.tensor(n.inputs[0])
    xs = em.name(n.inputs[0])
    _reshaped(em, n, xs, [f"{xs}.size"])  # (ravel is no view op: always lowered there)


@lowers("view_as", "reshape_as", target="cpu")
def lower_reshape_as(em: Emitter, n: ir.Node) -> None:
    em.tensor(n.inputs[0])
    ro = em.tensor(n.inputs[1]).ndim
    xs, os_ = em.name(n.inputs[0]), em.name(n.inputs[1])
    if _reshaped(em, n, xs, [f"{os_}.shape[{d}]" for d in range(ro)]):
        return
    src, out = em.fresh("rs"), em.fresh("v")
    em.emit(f"{src} = np.ascontiguousarray({xs})")
    em.emit(f"if {src}.size != {os_}.size:")
    em.indent += 1
    em.raise_("RuntimeError", "shape '[...]' is invalid for input of size ", (f"{src}.size",))
    em.indent -= 1
    parts = [f"{os_}.shape[{d}]" for d in range(ro)]
    check_viewable(em, n, xs, parts)
    em.emit(f"{out} = {src}.reshape({_tup(parts)})")
    em.bind(n.outputs[0], out)
