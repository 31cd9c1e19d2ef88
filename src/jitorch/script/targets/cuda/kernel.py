"""An elementwise group (prim::Fused, or one lone elementwise op) as a numba.cuda kernel.

The host part, written into the entry's Emitter: the group's operand value checks, its
broadcast shape (checked with PyTorch's message) and each tensor input's 0/1 multipliers (0 on
its size-1 dims: broadcasting by stride 0), its outputs allocated through `launch.alloc`, and
one launch (`launch.launch`) over the number of elements.

The kernel: a grid-stride loop over the flat index `k` of the broadcast shape, which it splits
into one index per dim; each tensor input is read as `x[i0 * m0, i1 * m1]` (Numba indexes
through the array's own strides, so a non-contiguous input needs no copy), the members are
the registry's scalar templates (codegen/elementwise.py) in the CUDA spelling (spelling.py),
each output is written through its own multipliers. Its source is canonical (parameters
`p0, p1, ...` in a fixed order: outputs, tensor inputs, scalar inputs, the element count, the
loop sizes, the inputs' and the outputs' multipliers; locals from the kernel's own counter;
constants as literals), so the module that holds it is named by the hash of what it computes
(kernels/cache.py) and two programs computing the same group share it.
"""
from __future__ import annotations

import numba_cuda

from ... import ir
from ...codegen import NotLowered, literal, operand_checks
from ...codegen.elementwise import (dependencies, group_inputs, group_rank, loads, loop_shape,
                                    members, output_shape)
from ...codegen.emitter import Emitter, np_type

# the head of every kernel module (reduce.py too); the compiler of the kernel is part of what
# the module's name hashes
KERNEL_IMPORTS = f"# numba-cuda {numba_cuda.__version__}\nimport math\nimport numpy as np\n" \
    "from numba import cuda\n"
KERNEL_HEAD = KERNEL_IMPORTS + "\n\n@cuda.jit\n"  # (then the kernel's `def`)


def lower_group(em: Emitter, block: ir.Block, inputs: list, outputs: list) -> None:
    """Emit the host part of the group into `em` and import its kernel into the entry."""
    operand_checks.scalar_checks(em, block, inputs)
    rank = group_rank(em, block)
    tensor_in, local = group_inputs(em, block, inputs, rank)
    deps = dependencies(block)
    sizes, mult = loop_shape(em, tensor_in, rank)
    outs = []
    for r in block.returns:
        t = em.tensor(r)
        o = em.fresh("out")
        shape, om = output_shape(em, r, tensor_in, deps, sizes, rank)
        em.emit(f"{o} = alloc(({''.join(s + ', ' for s in shape)}), {np_type(t.dtype)})")
        outs.append((o, om))
    total = em.fresh("nt")
    em.emit(f"{total} = {' * '.join(sizes) if sizes else '1'}")
    source, args = kernel_source(em, block, tensor_in, local, total, sizes, mult, outs, rank)
    em.emit(f"launch({kernel_alias(em, source)}, {total}, ({''.join(a + ', ' for a in args)}))")
    for (o, _), v in zip(outs, outputs):
        em.bind(v, o)


def kernel_source(em, block, tensor_in, local, total, sizes, mult, outs, rank):
    """(the kernel module's source, the entry's expressions for its parameters in order)."""
    ke = Emitter(em.target)
    ke.consts = dict(em.consts)  # compile-time constants stay literals
    args: list = []

    def param(host_expr: str) -> str:
        args.append(host_expr)
        return literal.Ident(f"p{len(args) - 1}")

    o_names = [param(o) for o, _ in outs]
    k_in = [(p, param(x), r) for p, x, r in tensor_in]
    k_local = {uid: (param(e), d) for uid, (e, d) in local.items()}
    n = param(total)
    k_sizes = [param(s) for s in sizes]
    k_mult = {p.uid: [param(m) for m in mult[p.uid]] for p, _, _ in tensor_in}
    o_mult = [None if om is None else [param(m) for m in om] for _, om in outs]
    k = ke.fresh("k")
    ke.emit(f"for {k} in range(cuda.grid(1), {n}, cuda.gridsize(1)):")
    ke.indent += 1
    idx, rest = [None] * rank, k
    for d in range(rank - 1, 0, -1):  # row-major: the last dim varies fastest
        i, q = ke.fresh("i"), ke.fresh("q")
        ke.emit(f"{i} = {rest} % {k_sizes[d]}")
        ke.emit(f"{q} = {rest} // {k_sizes[d]}")
        idx[d], rest = i, q
    if rank:
        idx[0] = rest
    loads(ke, k_in, k_local, k_mult, idx, rank)
    members(ke, block.nodes, k_local)
    for o, om, r in zip(o_names, o_mult, block.returns):
        if r.uid not in k_local:
            raise NotLowered("fused group returns a value it does not compute")
        if not rank:
            ix = "()"
        elif om is None:
            ix = ", ".join(idx)
        else:
            ix = ", ".join(f"{i} * {m}" for i, m in zip(idx, om))
        ke.emit(f"{o}[{ix}] = {k_local[r.uid][0]}")
    if ke.globals or ke.helpers or ke.exceptions or ke.scripted_raises:
        raise NotLowered("a cuda kernel needs module-level names (helpers, raises)")
    params = ", ".join(f"p{j}" for j in range(len(args)))
    return KERNEL_HEAD + f"def kernel({params}):\n" + "\n".join(ke.lines) + "\n", args


def kernel_alias(em: Emitter, source: str) -> str:
    """The entry's name for the kernel of `source`, importing its module once per entry (the
    target loads kernel modules before the entry: kernels/cache.load_program)."""
    from ...kernels import cache
    module = cache.module_name(cache.prepare_source(source))
    alias = literal.Ident("_k" + module[len(cache.MODULE_PREFIX):][:16])
    if module not in em.kernels:
        em.kernels[module] = source
        em.globals.append(f"from {module} import kernel as {alias}")
    return alias
