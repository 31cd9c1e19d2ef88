"""Lowering of pooling (max_pool1d/2d with or without indices, avg_pool1d/2d,
adaptive_avg_pool1d/2d) and of their gradient ops (`_max_pool_nd_backward`,
`_avg_pool_nd_backward`, `_adaptive_avg_t` of `_ops/nn_pool.py`) to calls of the njit kernels of
targets/cpu/pool.py (imported by the generated program, whose cache name that file's hash keys).

Hyper-parameters must be constants (PyTorch's checks run at lowering time through the eager
helpers: a bad value leaves the node to the interpreter, which raises PyTorch's error); sizes
are checked in the program with PyTorch's messages. float32/float64 are lowered.
"""
from __future__ import annotations

from ... import ir
from ...codegen import NotLowered, literal
from ...codegen.emitter import Emitter
from .lower_conv import float_operands, import_kernels, int_list
from ...codegen.lowering import lowers

MODULE = "jitorch.script.targets.cpu.pool"  # the kernels the generated code imports


def _import(em: Emitter, names: str) -> None:
    """`names` of pool.py, the kernels called through their symbols (pool.py's `*_by_symbol`)
    under their own names."""
    import_kernels(em, MODULE, ", ".join(m if m == "pool_out_size" else f"{m}_by_symbol as {m}"
                                         for m in names.split(", ")))


def _check(em: Emitter, cond: str, *parts) -> None:
    em.emit(f"if {cond}:")
    em.indent += 1
    em.raise_("RuntimeError", *parts)
    em.indent -= 1


def _planes(em: Emitter, xs: str, rank: int, nd: int) -> tuple:
    """(3-D (R, H, W) C-contiguous expression, [lead size exprs], [spatial size exprs])."""
    c = em.fresh("pc")
    em.emit(f"{c} = np.ascontiguousarray({xs})")
    lead = [f"{c}.shape[{i}]" for i in range(rank - nd)]
    sp = [f"{c}.shape[{i}]" for i in range(rank - nd, rank)]
    r = em.fresh("pr")
    em.emit(f"{r} = {' * '.join(lead) if lead else '1'}")
    hw = (["1"] + sp) if nd == 1 else sp
    x3 = em.fresh("px")
    em.emit(f"{x3} = {c}.reshape(({r}, {hw[0]}, {hw[1]}))")
    return x3, lead, sp


def _unplanes(em: Emitter, y3: str, lead: list, nd: int) -> str:
    out = em.fresh("py")
    dims = lead + ([f"{y3}.shape[2]"] if nd == 1 else [f"{y3}.shape[1]", f"{y3}.shape[2]"])
    em.emit(f"{out} = {y3}.reshape(({', '.join(dims)},))")
    return out


def _nd(op: str) -> int:
    return 1 if "1d" in op else 2


def _input(em: Emitter, n: ir.Node, x: ir.Value, nd: int, name: str):
    """Checks of the pooled input (rank statically, empty non-batch dims at run time)."""
    float_operands(em, n, x)
    t = em.tensor(x)
    if t.ndim not in (nd + 1, nd + 2):
        raise NotLowered(f"op {n.op}: rank {t.ndim}")  # the interpreter raises PyTorch's error
    xs = em.name(x)
    dims = [f"{xs}.shape[{i}]" for i in range(t.ndim)]
    parts = [f"{name}: " if nd == 1 else "", f"Expected {nd + 1}D or {nd + 2}D (batch mode) "
             "tensor with optional 0 dim batch size for input, but got:["]
    for i, dd in enumerate(dims):
        parts += [(dd,), ", " if i + 1 < len(dims) else "]"]
    first = 0 if t.ndim == nd + 1 else 1
    _check(em, " or ".join(f"{dd} == 0" for dd in dims[first:]), *parts)
    return t, xs


def _static(nd, fn, *args):
    """The checked hyper-parameters, as int literals (literal.py)."""
    try:
        vals = fn(nd, *args)
    except Exception as e:  # eager raises PyTorch's error for these: let the interpreter
        raise NotLowered(f"pooling parameters: {e}") from None
    return tuple([literal.integer(e) for e in v] for v in vals)


def _out_sizes(em: Emitter, xs: str, lead, sp, k, s, p, d, ceil: bool, name: str) -> list:
    """Output sizes, checked >= 1 with PyTorch's message."""
    out = []
    for i in range(len(sp)):
        o = em.fresh("po")
        em.emit(f"{o} = pool_out_size({sp[i]}, {k[i]}, {s[i]}, {p[i]}, {d[i]}, {ceil})")
        out.append(o)
    c = [(lead[-1],), "x"] if lead else []
    parts = ["Given input size: ("] + c
    for i, e in enumerate(sp):
        parts += [(e,), "x" if i + 1 < len(sp) else ""]
    parts += ["). Calculated output size: ("] + c
    for i, e in enumerate(out):
        parts += [(e,), "x" if i + 1 < len(out) else ""]
    parts += ["). Output size is too small"]
    _check(em, " or ".join(f"{o} < 1" for o in out), *parts)
    return out


def _two(v: list, nd: int, fill: int) -> list:
    return [str(fill)] + [str(e) for e in v] if nd == 1 else [str(e) for e in v]


@lowers("max_pool1d", "max_pool2d", "max_pool1d_with_indices", "max_pool2d_with_indices",
        target="cpu")
def lower_max_pool(em: Emitter, n: ir.Node) -> None:
    from ...._ops.nn_pool import _pool_params
    nd = _nd(n.op)
    x, k_v, s_v, p_v, d_v, ceil_v = n.inputs
    name = f"max_pool{nd}d"
    t, xs = _input(em, n, x, nd, name)
    k, s, p, d = _static(nd, _pool_params, em.const(k_v), em.const(s_v), em.const(p_v),
                         em.const(d_v))
    ceil = bool(em.const(ceil_v))
    _import(em, "pool_out_size")
    x3, lead, sp = _planes(em, xs, t.ndim, nd)
    o = _out_sizes(em, xs, lead, sp, k, s, p, d, ceil, name)
    o = (["1"] + o) if nd == 1 else o
    k2, s2, p2, d2 = _two(k, nd, 1), _two(s, nd, 1), _two(p, nd, 0), _two(d, nd, 1)
    want = len(n.outputs) == 2
    y3, i3 = em.fresh("py"), em.fresh("pi")
    if _takes_2x2(k2, s2, p2, d2, ceil, want):
        _import(em, "max_pool2d_forward_2x2")
        em.emit(f"{y3} = max_pool2d_forward_2x2({x3}, {o[0]}, {o[1]})")
        em.bind(n.outputs[0], _unplanes(em, y3, lead, nd))
        return
    _import(em, "max_pool2d_forward")
    em.emit(f"{y3}, {i3} = max_pool2d_forward({x3}, {o[0]}, {o[1]}, {k2[0]}, {k2[1]}, "
            f"{s2[0]}, {s2[1]}, {p2[0]}, {p2[1]}, {d2[0]}, {d2[1]}, {want})")
    em.bind(n.outputs[0], _unplanes(em, y3, lead, nd))
    if want:
        em.bind(n.outputs[1], _unplanes(em, i3, lead, nd))


@lowers("_max_pool_nd_backward", target="cpu")
def lower_max_pool_backward(em: Emitter, n: ir.Node) -> None:
    g, x, k_v, s_v, p_v, d_v, ceil_v = n.inputs
    float_operands(em, n, g, x)
    k = em.const(k_v)
    nd = len(k) if isinstance(k, (tuple, list)) else 0
    tg, tx = em.tensor(g), em.tensor(x)
    if nd not in (1, 2) or tg.ndim != tx.ndim or tx.ndim not in (nd + 1, nd + 2):
        raise NotLowered(f"op {n.op}: ranks")
    k, s, p, d = (int_list(em, v, nd, w) for v, w in ((k_v, "kernel_size"), (s_v, "stride"),
                                                       (p_v, "padding"), (d_v, "dilation")))
    ceil = bool(em.const(ceil_v))
    _import(em, "pool_out_size")
    x3, lead, sp = _planes(em, em.name(x), tx.ndim, nd)
    g3, _, gsp = _planes(em, em.name(g), tg.ndim, nd)
    for i in range(nd):
        _check(em, f"{gsp[i]} != pool_out_size({sp[i]}, {k[i]}, {s[i]}, {p[i]}, {d[i]}, "
               f"{ceil}) or {g3}.shape[0] != {x3}.shape[0]",
               f"op {n.op}: the gradient's sizes do not match the pooled input's")
    k2, s2, p2, d2 = _two(k, nd, 1), _two(s, nd, 1), _two(p, nd, 0), _two(d, nd, 1)
    y3 = em.fresh("py")
    if _takes_2x2(k2, s2, p2, d2, ceil, False):
        _import(em, "max_pool2d_backward_2x2")
        em.emit(f"{y3} = max_pool2d_backward_2x2({g3}, {x3})")
    else:
        _import(em, "max_pool2d_backward")
        em.emit(f"{y3} = max_pool2d_backward({g3}, {x3}, {k2[0]}, {k2[1]}, {s2[0]}, "
                f"{s2[1]}, {p2[0]}, {p2[1]}, {d2[0]}, {d2[1]})")
    em.bind(n.outputs[0], _unplanes(em, y3, lead, nd))


def _takes_2x2(k2: list, s2: list, p2: list, d2: list, ceil: bool, want_idx: bool) -> bool:
    """Whether constant parameters make the pool one of pool.py's `max_pool2d_*_2x2`."""
    from .pool import takes_2x2
    vals = k2 + s2 + p2 + d2
    return all(v.lstrip("-").isdigit() for v in vals) and \
        takes_2x2(*map(int, vals), ceil, want_idx)


def _divisor(em: Emitter, v) -> str:
    dv = None if v is None else em.const(v)
    if dv is None:
        return "0"
    if isinstance(dv, bool) or not isinstance(dv, int) or dv == 0:
        raise NotLowered(f"divisor_override {dv!r}")  # eager raises for 0
    return literal.integer(dv)


@lowers("avg_pool1d", "avg_pool2d", target="cpu")
def lower_avg_pool(em: Emitter, n: ir.Node) -> None:
    from ...._ops.nn_pool import _pool_params
    nd = _nd(n.op)
    if nd == 1:
        x, k_v, s_v, p_v, ceil_v, cip_v = n.inputs
        div_v = None
    else:
        x, k_v, s_v, p_v, ceil_v, cip_v, div_v = n.inputs
    name = f"avg_pool{nd}d"
    t, xs = _input(em, n, x, nd, name)
    k, s, p, _ = _static(nd, _pool_params, em.const(k_v), em.const(s_v), em.const(p_v), 1)
    ceil, cip, div = bool(em.const(ceil_v)), bool(em.const(cip_v)), _divisor(em, div_v)
    _import(em, "pool_out_size, avg_pool2d_forward")
    x3, lead, sp = _planes(em, xs, t.ndim, nd)
    o = _out_sizes(em, xs, lead, sp, k, s, p, (1,) * nd, ceil, name)
    o = (["1"] + o) if nd == 1 else o
    k2, s2, p2 = _two(k, nd, 1), _two(s, nd, 1), _two(p, nd, 0)
    y3 = em.fresh("py")
    em.emit(f"{y3} = avg_pool2d_forward({x3}, {o[0]}, {o[1]}, {k2[0]}, {k2[1]}, {s2[0]}, "
            f"{s2[1]}, {p2[0]}, {p2[1]}, {cip}, {div})")
    em.bind(n.outputs[0], _unplanes(em, y3, lead, nd))


@lowers("_avg_pool_nd_backward", target="cpu")
def lower_avg_pool_backward(em: Emitter, n: ir.Node) -> None:
    g, size_v, k_v, s_v, p_v, ceil_v, cip_v, div_v = n.inputs
    float_operands(em, n, g)
    k = em.const(k_v)
    nd = len(k) if isinstance(k, (tuple, list)) else 0
    tg = em.tensor(g)
    if nd not in (1, 2) or tg.ndim not in (nd + 1, nd + 2):
        raise NotLowered(f"op {n.op}: ranks")
    size = int_list(em, size_v, nd, "input_size")
    k, s, p = (int_list(em, v, nd, w) for v, w in ((k_v, "kernel_size"), (s_v, "stride"),
                                                    (p_v, "padding")))
    ceil, cip, div = bool(em.const(ceil_v)), bool(em.const(cip_v)), _divisor(em, div_v)
    _import(em, "pool_out_size, avg_pool2d_backward")
    g3, lead, gsp = _planes(em, em.name(g), tg.ndim, nd)
    for i in range(nd):
        _check(em, f"{size[i]} < 1 or {gsp[i]} != pool_out_size({size[i]}, {k[i]}, {s[i]}, "
               f"{p[i]}, 1, {ceil})",
               f"op {n.op}: the gradient's sizes do not match the pooled input's")
    k2, s2, p2, sz = _two(k, nd, 1), _two(s, nd, 1), _two(p, nd, 0), _two(size, nd, 1)
    y3 = em.fresh("py")
    em.emit(f"{y3} = avg_pool2d_backward({g3}, {sz[0]}, {sz[1]}, {k2[0]}, {k2[1]}, {s2[0]}, "
            f"{s2[1]}, {p2[0]}, {p2[1]}, {cip}, {div})")
    em.bind(n.outputs[0], _unplanes(em, y3, lead, nd))


@lowers("adaptive_avg_pool1d", "adaptive_avg_pool2d", target="cpu")
def lower_adaptive_avg(em: Emitter, n: ir.Node) -> None:
    nd = _nd(n.op)
    x, out_v = n.inputs
    name = f"adaptive_avg_pool{nd}d"
    float_operands(em, n, x)
    t = em.tensor(x)
    if t.ndim not in (nd + 1, nd + 2):
        raise NotLowered(f"op {n.op}: rank {t.ndim}")
    osz = em.const(out_v)
    osz = [osz] * nd if isinstance(osz, int) or osz is None else list(osz)
    if len(osz) == 1 and nd > 1:
        osz = osz * nd
    if len(osz) != nd or any(o is not None and (isinstance(o, bool) or not isinstance(o, int)
                                                or o < 0) for o in osz):
        raise NotLowered(f"op {n.op}: output_size {osz!r}")
    xs = em.name(x)
    dims = [f"{xs}.shape[{i}]" for i in range(t.ndim)]
    parts = [f"{name}(): Expected input to have non-zero size for non-batch dimensions, but "
             "input has sizes ["]
    for i, dd in enumerate(dims):
        parts += [(dd,), ", " if i + 1 < len(dims) else "] with an empty dimension"]
    first = 0 if t.ndim == nd + 1 else 1
    _check(em, " or ".join(f"{dd} == 0" for dd in dims[first:]), *parts)
    _import(em, "adaptive_avg_pool2d_forward")
    x3, lead, sp = _planes(em, xs, t.ndim, nd)
    o = [sp[i] if osz[i] is None else literal.integer(osz[i]) for i in range(nd)]
    o = (["1"] + o) if nd == 1 else o
    y3 = em.fresh("py")
    em.emit(f"{y3} = adaptive_avg_pool2d_forward({x3}, {o[0]}, {o[1]})")
    em.bind(n.outputs[0], _unplanes(em, y3, lead, nd))


@lowers("_adaptive_avg_t", target="cpu")
def lower_adaptive_avg_t(em: Emitter, n: ir.Node) -> None:
    g, size_v = n.inputs
    float_operands(em, n, g)
    size = em.const(size_v) if em.is_const(size_v) else None
    nd = len(size) if size is not None else len(em.lists.get(size_v.uid, ()))
    tg = em.tensor(g)
    if nd not in (1, 2) or tg.ndim not in (nd + 1, nd + 2):
        raise NotLowered(f"op {n.op}: ranks")
    sz = int_list(em, size_v, nd, "input_size")
    for e in sz:
        _check(em, f"{e} < 0", f"op {n.op}: negative input size")
    _import(em, "adaptive_avg_pool2d_backward")
    g3, lead, _ = _planes(em, em.name(g), tg.ndim, nd)
    sz = (["1"] + sz) if nd == 1 else sz
    y3 = em.fresh("py")
    em.emit(f"{y3} = adaptive_avg_pool2d_backward({g3}, {sz[0]}, {sz[1]})")
    em.bind(n.outputs[0], _unplanes(em, y3, lead, nd))
