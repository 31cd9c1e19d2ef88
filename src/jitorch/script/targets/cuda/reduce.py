"""Reductions (sum, mean, prod, amax, amin, max/min of everything, the softmax shift
`_max_shift`) as numba.cuda kernels: a block per output element.

The host part, written into the entry: the number of reduced elements and of output elements;
an empty reduction (a reduced dim of size 0) calls the op's implementation on the device arrays
instead (library.py: eager's zeros and ones for sum and prod, NaN for mean, zeros for
`_max_shift`, eager's error for amax/amin/max/min); otherwise the output is allocated
(`launch.alloc`) and the kernel launched with a block per output element
(`launch.launch_blocks`).

The kernel: a block-stride loop over the output elements (the flat output index split into the
kept dims' indices); the block's threads stride over the reduced elements (the flat index over
the reduced dims, split the same way with the last dim fastest, so neighbouring threads read
neighbouring elements of a contiguous row), each accumulating in the result dtype (PyTorch's:
int64 for integer and bool sums and products, or `dtype=`); then a tree reduction in shared
memory (`cuda.shared.array`, `cuda.syncthreads()` between steps) down to thread 0, which writes
the result (a mean divides it by the count). Each thread starts from its first element and the
tree combines only the slots that hold one (a reduction shorter than the block), so no identity
is needed (amax's -inf would be a float64 constant in float32 code). amax/amin propagate NaN as
PyTorch does (a NaN wins). The input is read through its strides (Numba indexes by them), so a
non-contiguous input needs no copy. The source is canonical like kernel.py's (parameters
`p0, p1, ...` in a fixed order: the flat output, the input, the number of outputs, the number of
reduced elements, the sizes of the kept dims but the first, the sizes of the reduced dims but the
first; the block size as a literal), so its module is named by the hash of what it computes.

Not lowered (NotLowered names the op and "cuda"; the interpreter gives eager's result or
error): mean of an integer tensor or to an integer `dtype=` (eager raises), prod over a list of
dims (eager takes one), dims out of range, dims/keepdim/dtype that are not constants. A float
input reduced to an integer `dtype=` is a call of the implementation (library.py): NumPy's
float -> int cast checks its range in float64.
"""
from __future__ import annotations

from .... import _dtype as dt
from ... import ir
from ...codegen import NotLowered
from ...codegen.casts import cast
from ...codegen.emitter import Emitter, np_type
from ...codegen.lowering import lowers
from ...passes.types import norm_dims, reduction_dtype
from . import launch
from .kernel import KERNEL_HEAD, kernel_alias
from .library import lower_library

# node op -> what its kernel computes (max()/min() of everything and the softmax shift are amax
# and amin; the shift's 0 over an empty dim is the empty case's library call)
COMPUTES = {"sum": "sum", "mean": "mean", "prod": "prod", "amax": "amax", "amin": "amin",
            "max": "amax", "min": "amin", "_max_shift": "amax"}

_LAUNCH = "from jitorch.script.targets.cuda.launch import launch_blocks"


@lowers(*COMPUTES, target="cuda")
def lower_reduction(em: Emitter, n: ir.Node) -> None:
    op = COMPUTES[n.op]
    x = n.inputs[0]
    t = em.tensor(x)
    if n.op in ("max", "min"):
        if len(n.inputs) != 1:
            raise NotLowered(f"op {n.op} with {len(n.inputs)} inputs on cuda")
        dim, keepdim, dtype = None, False, None
    else:
        if len(n.inputs) < 3:
            raise NotLowered(f"op {n.op} without dim and keepdim on cuda")
        dim, keepdim = em.const(n.inputs[1]), em.const(n.inputs[2])
        dtype = em.const(n.inputs[3]) if len(n.inputs) > 3 else None
    if n.op == "prod" and isinstance(dim, (list, tuple)):
        raise NotLowered("op prod over a list of dims on cuda (eager takes one dim)")
    try:
        acc = reduction_dtype(op, t, dtype)
    except TypeError:  # infer.Unknown: eager raises
        raise NotLowered(f"op {n.op}: mean of an integer tensor on cuda")
    if op == "mean" and acc.category != dt.FLOAT:
        raise NotLowered(f"op {n.op}: mean to an integer dtype on cuda")
    if acc is not em.tensor(n.outputs[0]).dtype:
        raise NotLowered(f"op {n.op}: result dtype mismatch on cuda")
    try:
        dims = norm_dims(dim, t.ndim)
    except IndexError:
        raise NotLowered(f"op {n.op}: dim {dim} out of range on cuda")
    if t.dtype.category == dt.FLOAT and acc.category != dt.FLOAT:
        # a float input summed as integers (`dtype=torch.int32`, rare): NumPy's astype range
        # check (codegen/casts.py) compares in float64, which a float32 kernel must not do
        lower_library(em, n)
        return

    xs, r = em.name(x), t.ndim
    if r == 0:  # one element: its rank-1 view reduced over its one dim
        shape: list = []
        xs = em.fresh("x")
        em.emit(f"{xs} = {em.name(x)}.reshape(1)")
        r, dims = 1, (0,)
    else:
        shape = [f"{xs}.shape[{d}]" if d not in dims else "1"
                 for d in range(r) if keepdim or d not in dims]
    kept = [f"{xs}.shape[{d}]" for d in range(r) if d not in dims]
    red = [f"{xs}.shape[{d}]" for d in dims]
    cnt, nout, out = em.fresh("cnt"), em.fresh("nout"), em.fresh("red")
    em.emit(f"{cnt} = {' * '.join(red)}")
    em.emit(f"{nout} = {' * '.join(kept) or '1'}")
    em.emit(f"if {cnt} == 0:")  # eager's values and errors (module docstring)
    em.indent += 1
    lower_library(em, n)
    em.emit(f"{out} = {em.names[n.output.uid]}")
    em.indent -= 1
    em.emit("else:")
    em.indent += 1
    em.emit(f"{out} = alloc(({''.join(s + ', ' for s in shape)}), {np_type(acc)})")
    args = [f"{out}.reshape(-1)", xs, nout, cnt] + kept[1:] + red[1:]
    source = kernel_source(op, t.dtype, acc, r, [d for d in range(r) if d not in dims],
                           list(dims))
    emit_launch(em, source, nout, args)
    em.indent -= 1
    em.bind(n.output, out)


def emit_launch(em: Emitter, source: str, n: str, args: list) -> None:
    """Emit the launch of the kernel of `source` with a block for each of `n` units of work
    (launch.launch_blocks), its parameters `args` (host expressions, in order)."""
    em.global_line(_LAUNCH)
    em.emit(f"launch_blocks({kernel_alias(em, source)}, {n}, "
            f"({''.join(a + ', ' for a in args)}))")


def kernel_source(op: str, in_d: dt.dtype, acc: dt.dtype, rank: int, kept: list,
                  red: list) -> str:
    """The kernel module's source (parameters in the module docstring's order)."""
    threads = launch.BLOCK_THREADS  # the block size launch_blocks uses: a power of two
    kept_sizes = [f"p{4 + k}" for k in range(len(kept[1:]))]
    red_sizes = [f"p{4 + len(kept_sizes) + k}" for k in range(len(red[1:]))]
    n_params = 4 + len(kept_sizes) + len(red_sizes)
    lines = [f"sh = cuda.shared.array({threads}, {np_type(acc)})",
             "t = cuda.threadIdx.x",
             "nt = cuda.blockDim.x",
             "nv = min(p3, nt)",  # the slots that hold a partial result
             "for o in range(cuda.blockIdx.x, p2, cuda.gridDim.x):"]
    idx = {}
    _split(lines, 1, "o", "k", kept, kept_sizes, idx)
    lines.append("    if t < p3:")
    _split(lines, 2, "t", "r", red, red_sizes, idx)
    lines += ["        " + ln for ln in _load("acc", in_d, acc, rank, idx)]
    lines.append("        for j in range(t + nt, p3, nt):")
    _split(lines, 3, "j", "r", red, red_sizes, idx)
    lines += ["            " + ln for ln in _load("v", in_d, acc, rank, idx)]
    lines += ["            " + ln for ln in combine(op, acc, "acc", "v")]
    lines.append("        sh[t] = acc")
    lines.append("    cuda.syncthreads()")
    lines += ["    " + ln for ln in tree(op, acc, "sh", "nv", "w")]
    lines.append("    if t == 0:")
    res = f"sh[0] / {np_type(acc)}(p3)" if op == "mean" else "sh[0]"
    lines.append(f"        p0[o] = {res}")
    params = ", ".join(f"p{k}" for k in range(n_params))
    return KERNEL_HEAD + f"def kernel({params}):\n" + "".join(
        "    " + ln + "\n" for ln in lines)


def _split(lines: list, depth: int, flat: str, prefix: str, dims: list, sizes: list,
           idx: dict) -> None:
    """Split the flat index `flat` into an index per dim of `dims` (row-major: the last dim
    varies fastest; `sizes`: the sizes of the dims but the first), into `idx` (dim -> name)."""
    pad, rest = "    " * depth, flat
    for k in range(len(dims) - 1, 0, -1):
        lines.append(f"{pad}{prefix}{k} = {rest} % {sizes[k - 1]}")
        lines.append(f"{pad}q{prefix}{k} = {rest} // {sizes[k - 1]}")
        idx[dims[k]], rest = f"{prefix}{k}", f"q{prefix}{k}"
    if dims:
        idx[dims[0]] = rest


def _load(name: str, in_d: dt.dtype, acc: dt.dtype, rank: int, idx: dict) -> list:
    """Lines setting `name` to the input's element at `idx`, in the accumulation dtype."""
    load = f"p1[{', '.join(idx[d] for d in range(rank))}]"
    if in_d is acc:
        return [f"{name} = {load}"]
    return [f"{name} = {cast(load, in_d, acc)}"]  # (never float -> int: lower_reduction)


def tree(op: str, acc: dt.dtype, sh: str, nv: str, w: str) -> list:
    """Lines of the block's tree reduction of the shared array `sh` into `sh[0]` (thread `t`;
    the slots below `nv` hold partial results, each thread its own; `w`: a local name), a
    `cuda.syncthreads()` after each step. Unrolled over the block size (launch.BLOCK_THREADS)."""
    lines, s = [], launch.BLOCK_THREADS // 2
    while s:
        lines.append(f"if t < {s} and t + {s} < {nv}:")
        lines.append(f"    {w} = {sh}[t + {s}]")
        lines += ["    " + ln for ln in combine(op, acc, f"{sh}[t]", w)]
        lines.append("cuda.syncthreads()")
        s //= 2
    return lines


def combine(op: str, acc: dt.dtype, into: str, v: str) -> list:
    """Lines folding `v` into `into` (NaN wins for float amax/amin: `v != v`)."""
    if op in ("sum", "mean"):
        return [f"{into} = {into} + {v}"]
    if op == "prod":
        return [f"{into} = {into} * {v}"]
    cmp = ">" if op == "amax" else "<"
    nan = f" or {v} != {v}" if acc.category == dt.FLOAT else ""
    return [f"if {v} {cmp} {into}{nan}:", f"    {into} = {v}"]
