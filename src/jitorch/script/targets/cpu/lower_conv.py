"""Lowering of convolutions (conv1d/2d and the internal `_conv_nd`, `_conv_nd_input_grad`,
`_conv_nd_weight_grad` ops of `_ops/nn_conv.py`, which conv's VJPs are written with) to calls of
the njit kernels of targets/cpu/conv.py (method there). 1-D convolutions are 2-D ones with a height
of 1; unbatched inputs get a batch of 1. float32/float64 are lowered; other dtypes go to the
interpreter.

Sizes: the program checks PyTorch's user-facing relations (channels vs weight and groups, bias
length, kernel vs padded input) with PyTorch's messages; the kernels re-check the relations they
index by.
"""
from __future__ import annotations

from .... import _dtype as dt
from ... import ir
from ...codegen import NotLowered, literal
from ...codegen.emitter import Emitter
from ...codegen.lowering import lowers

_FLOATS = (dt.float32, dt.float64)
MODULE = "jitorch.script.targets.cpu.conv"  # the kernels the generated code imports


def import_kernels(em: Emitter, module: str, names: str) -> None:
    """The program imports `names` from `module` (whose hash then keys its cache name); the
    node's code is a call of that library (conv.py, pool.py), which kernel.py lowers in the
    entry where no loop surrounds it (`library_call`)."""
    line = f"from {module} import {names}"
    em.global_line(line)
    em.library_call = True


def int_list(em: Emitter, v: ir.Value, n: int, what: str) -> list:
    """`n` expressions for an int-or-list argument: a constant (an int repeats, as PyTorch's
    expand_param_if_needed) or a list built from run-time ints (backward graphs)."""
    if em.is_const(v):
        c = em.const(v)
        if isinstance(c, bool):
            raise NotLowered(f"{what} {c!r}")
        if isinstance(c, int):
            return [literal.integer(c)] * n
        if not isinstance(c, (tuple, list)) or not all(
                isinstance(e, int) and not isinstance(e, bool) for e in c):
            raise NotLowered(f"{what} {c!r}")
        c = list(c) * n if len(c) == 1 else list(c)
        if len(c) != n:
            raise NotLowered(f"{what} {c!r}: expected {n} values")
        return [literal.integer(e) for e in c]
    from .lower_shape import _runtime_sizes
    parts = _runtime_sizes(em, v)
    if len(parts) == 1:
        parts = parts * n
    if len(parts) != n:
        raise NotLowered(f"{what}: expected {n} values")
    return parts


def float_operands(em: Emitter, n: ir.Node, *vals) -> dt.dtype:
    """The common float dtype of tensor operands (None values skipped), else NotLowered."""
    d = None
    for v in vals:
        if v is None:
            continue
        t = em.tensor(v)
        if t.dtype not in _FLOATS or (d is not None and t.dtype is not d):
            raise NotLowered(f"op {n.op}: operands of dtype {t.dtype} (float32/float64 of one "
                             "dtype are lowered)")
        d = t.dtype
    return d


def _as4(em: Emitter, xs: str, rank: int, nd: int, batched_rank: int) -> str:
    """A C-contiguous 4-D (N, C, H, W) version of an (N, C, *) / (C, *) array expression."""
    out = em.fresh("cv")
    em.emit(f"{out} = np.ascontiguousarray({xs})")
    lead = [] if rank == batched_rank else ["1"]
    dims = lead + [f"{out}.shape[{i}]" for i in range(rank)]
    if nd == 1:
        dims = dims[:-1] + ["1", dims[-1]]
    if dims != [f"{out}.shape[{i}]" for i in range(4)]:
        em.emit(f"{out} = {out}.reshape(({', '.join(dims)}))")
    return out


def kernel_name(em: Emitter, op: str, stride_v: ir.Value, strides: list) -> str:
    """conv.py's kernel of `op` (conv2d_forward, ...) for 2-D stride expressions `strides` (of
    stride argument `stride_v`): the unit-stride or the strided one when the strides are
    constants, so that only that method is compiled; else the one that picks at run time."""
    if not em.is_const(stride_v):
        return op
    return op + ("_unit_stride" if all(int(e) == 1 for e in strides) else "_strided")


def _check(em: Emitter, cond: str, *parts) -> None:
    em.emit(f"if {cond}:")
    em.indent += 1
    em.raise_("RuntimeError", *parts)
    em.indent -= 1


def _static_conv_params(nd: int, stride, padding, dilation, groups):
    """Validate constant hyper-parameters the way eager does; NotLowered (so the interpreter
    raises PyTorch's error) when eager would reject them."""
    from ...._ops.nn_conv import _conv_params
    if not isinstance(groups, int) or isinstance(groups, bool) or groups <= 0:
        raise NotLowered(f"groups {groups!r}")
    try:
        _conv_params(nd, (1, 1) + (1,) * nd, stride, padding, dilation)
    except Exception as e:
        raise NotLowered(f"convolution parameters: {e}") from None


@lowers("conv1d", "conv2d", target="cpu")
def lower_conv(em: Emitter, n: ir.Node) -> None:
    """conv1d / conv2d (public: padding int, list, 'same' or 'valid'; optional bias)."""
    nd = 1 if n.op == "conv1d" else 2
    x, w, b, stride_v, pad_v, dil_v, groups_v = n.inputs
    has_b = not (em.is_const(b) and em.const(b) is None)
    d = float_operands(em, n, x, w, b if has_b else None)
    tx, tw = em.tensor(x), em.tensor(w)
    if tx.ndim not in (nd + 1, nd + 2) or tw.ndim != nd + 2 or \
            has_b and em.tensor(b).ndim != 1:
        raise NotLowered(f"op {n.op}: ranks")  # the interpreter raises PyTorch's error
    stride, padding, dilation, groups = (em.const(stride_v), em.const(pad_v),
                                         em.const(dil_v), em.const(groups_v))
    _static_conv_params(nd, stride, padding, dilation, groups)
    s = int_list(em, stride_v, nd, "stride")
    dl = int_list(em, dil_v, nd, "dilation")
    s2 = (["1"] + s) if nd == 1 else s
    kernel = kernel_name(em, "conv2d_forward", stride_v, s2)
    import_kernels(em, MODULE, kernel)
    x4 = _as4(em, em.name(x), tx.ndim, nd, nd + 2)
    w4 = _as4(em, em.name(w), nd + 2, nd, nd + 2)
    ks = [f"{w4}.shape[{2 + i}]" for i in range(2)]
    if padding == "same":
        lo, hi = [], []
        for i in range(2):
            dd = dl[i - 2 + nd] if i >= 2 - nd else "1"
            tot = em.fresh("pt")
            em.emit(f"{tot} = {dd} * ({ks[i]} - 1)")
            lo.append(f"({tot} // 2)")
            hi.append(f"({tot} - {tot} // 2)")
    else:
        p = ["0"] * nd if padding == "valid" else int_list(em, pad_v, nd, "padding")
        lo = hi = (["0"] + p) if nd == 1 else p
    d2 = (["1"] + dl) if nd == 1 else dl
    g = literal.integer(groups)
    _check(em, f"{w4}.shape[0] % {g} != 0", f"Given groups={groups}, expected weight to be "
           f"divisible by {groups} at dimension 0, but got weight of size [",
           (f"{w4}.shape[0]",), ", ", (f"{w4}.shape[1]",), ", ...] instead")
    _check(em, f"{x4}.shape[1] != {w4}.shape[1] * {g}",
           f"Given groups={groups}, weight of size [", (f"{w4}.shape[0]",), ", ",
           (f"{w4}.shape[1]",), ", ...], expected input[", (f"{x4}.shape[0]",), ", ",
           (f"{x4}.shape[1]",), ", ...] to have ", (f"{w4}.shape[1] * {g}",),
           " channels, but got ", (f"{x4}.shape[1]",), " channels instead")
    if has_b:
        bs = em.name(b)
        _check(em, f"{bs}.shape[0] != {w4}.shape[0]",
               "Given weight of size [", (f"{w4}.shape[0]",), ", ...], expected bias to be "
               "1-dimensional with ", (f"{w4}.shape[0]",), " elements, but got bias of size [",
               (f"{bs}.shape[0]",), "] instead")
    for i in range(2 - nd, 2):
        _check(em, f"{x4}.shape[{2 + i}] + {lo[i]} + {hi[i]} < {d2[i]} * ({ks[i]} - 1) + 1",
               "Calculated padded input size per channel: (",
               (f"{x4}.shape[{2 + i}] + {lo[i]} + {hi[i]}",), "). Kernel size: (",
               (f"{d2[i]} * ({ks[i]} - 1) + 1",), "). Kernel size can't be greater than actual "
               "input size")
    y = em.fresh("cy")
    em.emit(f"{y} = {kernel}({x4}, {w4}, {_bias(em, b if has_b else None, d)}, "
            f"{s2[0]}, {s2[1]}, {lo[0]}, {lo[1]}, {hi[0]}, {hi[1]}, {d2[0]}, {d2[1]}, {g})")
    em.bind(n.outputs[0], _from4(em, y, tx.ndim, nd))


def _bias(em: Emitter, b, d: dt.dtype) -> str:
    """The bias and has-bias arguments of conv.py's forward: without a bias an empty array of
    the dtype, so that a convolution with and one without a bias call the same compile."""
    if b is not None:
        return f"{em.name(b)}, True"
    return f"np.empty(0, {literal.dtype(d)}), False"


def _from4(em: Emitter, y: str, rank: int, nd: int) -> str:
    """The (N, O, H, W) result back in the caller's rank ((N, O, L) for 1-D, no batch dim for
    unbatched input)."""
    dims = [f"{y}.shape[{i}]" for i in range(4)]
    if nd == 1:
        dims = dims[:2] + dims[3:]
    if rank == nd + 1:
        dims = dims[1:]
    if len(dims) == 4:
        return y
    out = em.fresh("cy")
    em.emit(f"{out} = {y}.reshape(({', '.join(dims)},))")
    return out


def _internal_params(em: Emitter, n: ir.Node, nd: int, stride_v, pad_v, dil_v, groups_v):
    """2-D (stride, lo pads, hi pads, dilation, groups) expressions of the internal ops (flat
    lo/hi padding list, possibly run-time values in backward graphs)."""
    s = int_list(em, stride_v, nd, "stride")
    p = int_list(em, pad_v, 2 * nd, "padding")
    dl = int_list(em, dil_v, nd, "dilation")
    groups = em.const(groups_v)
    if not isinstance(groups, int) or isinstance(groups, bool) or groups <= 0:
        raise NotLowered(f"groups {groups!r}")
    lo, hi = p[0::2], p[1::2]
    if nd == 1:
        s, lo, hi, dl = ["1"] + s, ["0"] + lo, ["0"] + hi, ["1"] + dl
    for e in s + dl:
        _check(em, f"{e} <= 0", f"op {n.op}: non-positive stride or dilation")
    for e in lo + hi:
        _check(em, f"{e} < 0", f"op {n.op}: negative padding")
    return s, lo, hi, dl, literal.integer(groups)


@lowers("_conv_nd", target="cpu")
def lower_conv_nd(em: Emitter, n: ir.Node) -> None:
    """_conv_nd(input, weight, stride, padding (flat lo/hi), dilation, groups), batched."""
    x, w, stride_v, pad_v, dil_v, groups_v = n.inputs
    d = float_operands(em, n, x, w)
    nd = em.tensor(w).ndim - 2
    if nd not in (1, 2) or em.tensor(x).ndim != nd + 2:
        raise NotLowered(f"op {n.op}: ranks")
    s, lo, hi, dl, g = _internal_params(em, n, nd, stride_v, pad_v, dil_v, groups_v)
    kernel = kernel_name(em, "conv2d_forward", stride_v, s)
    import_kernels(em, MODULE, kernel)
    x4 = _as4(em, em.name(x), nd + 2, nd, nd + 2)
    w4 = _as4(em, em.name(w), nd + 2, nd, nd + 2)
    y = em.fresh("cy")
    em.emit(f"{y} = {kernel}({x4}, {w4}, {_bias(em, None, d)}, {s[0]}, {s[1]}, "
            f"{lo[0]}, {lo[1]}, {hi[0]}, {hi[1]}, {dl[0]}, {dl[1]}, {g})")
    em.bind(n.outputs[0], _from4(em, y, nd + 2, nd))


def _lower_conv_grad(em: Emitter, n: ir.Node, kernel: str, what: str, rank_of: int) -> None:
    """The two conv gradient ops: (a, b, sizes, stride, padding, dilation, groups) ->
    kernel(a4, b4, sizes..., stride, padding lo, dilation, groups); `sizes` (the input's or
    the kernel's spatial sizes, named `what`) are run-time ints, checked non-negative; the
    spatial rank is read from operand `rank_of` (the weight for input_grad, the input for
    weight_grad)."""
    a, b, size_v, stride_v, pad_v, dil_v, groups_v = n.inputs
    float_operands(em, n, a, b)
    nd = em.tensor(n.inputs[rank_of]).ndim - 2
    if nd not in (1, 2) or em.tensor(n.inputs[1 - rank_of]).ndim != nd + 2:
        raise NotLowered(f"op {n.op}: ranks")
    size = int_list(em, size_v, nd, what)
    s, lo, hi, dl, g = _internal_params(em, n, nd, stride_v, pad_v, dil_v, groups_v)
    size = (["1"] + size) if nd == 1 else size
    for e in size:
        _check(em, f"{e} < 0", f"op {n.op}: negative {what.replace('_', ' ')}")
    kernel = kernel_name(em, kernel, stride_v, s)
    import_kernels(em, MODULE, kernel)
    a4 = _as4(em, em.name(a), nd + 2, nd, nd + 2)
    b4 = _as4(em, em.name(b), nd + 2, nd, nd + 2)
    y = em.fresh("cy")
    em.emit(f"{y} = {kernel}({a4}, {b4}, {size[0]}, {size[1]}, {s[0]}, {s[1]}, "
            f"{lo[0]}, {lo[1]}, {dl[0]}, {dl[1]}, {g})")
    em.bind(n.outputs[0], _from4(em, y, nd + 2, nd))


@lowers("_conv_nd_input_grad", target="cpu")
def lower_conv_input_grad(em: Emitter, n: ir.Node) -> None:
    """_conv_nd_input_grad(grad, weight, input_size, stride, padding, dilation, groups)."""
    _lower_conv_grad(em, n, "conv2d_input_grad", "input_size", rank_of=1)


@lowers("_conv_nd_weight_grad", target="cpu")
def lower_conv_weight_grad(em: Emitter, n: ir.Node) -> None:
    """_conv_nd_weight_grad(input, grad, kernel_size, stride, padding, dilation, groups)."""
    _lower_conv_grad(em, n, "conv2d_weight_grad", "kernel_size", rank_of=0)
