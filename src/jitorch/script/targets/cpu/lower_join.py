"""Lowering of `cat` and `stack` on the CPU target.

Tensors of one rank and the output's dtype are joined by copy loop nests after PyTorch's size
check (`_cat_loops`), not `np.concatenate`, whose Numba implementation compiled once per tuple of
array types (~0.25 CPU-s each, e.g. once per chunk's backward: issue 17); mixed dtypes and
`stack` use NumPy's functions.
"""
from __future__ import annotations

from ... import ir
from ...codegen import NotLowered
from ...codegen.emitter import Emitter, np_type
from ...codegen.lowering import lowers
from .lower_list import copy_into_slice
from .lower_shape import _norm, _tup


@lowers("cat", "stack", target="cpu")
def lower_cat(em: Emitter, n: ir.Node) -> None:
    lst, dim = n.inputs
    if lst.uid not in em.lists:
        raise NotLowered(f"op {n.op}: the tensor list is not built in the graph")
    vals = em.lists[lst.uid]
    out_t = em.tensor(n.outputs[0])
    ranks = {em.tensor(v).ndim for v in vals}
    if len(ranks) != 1 or 0 in ranks and n.op == "cat":
        raise NotLowered(f"op {n.op}: tensors of different ranks")
    r = ranks.pop()
    d = _norm(em.const(dim), r + (1 if n.op == "stack" else 0), n.op)
    if n.op == "cat" and all(em.tensor(v).dtype is out_t.dtype for v in vals):
        _cat_loops(em, n, [em.name(v) for v in vals], r, d, out_t)
        return
    names = []
    for v in vals:
        nm = em.name(v)
        if em.tensor(v).dtype is not out_t.dtype:
            nm = f"{nm}.astype({np_type(out_t.dtype)})"
        names.append(nm)
    out = em.fresh("v")
    fn = "np.concatenate" if n.op == "cat" else "np.stack"
    em.emit(f"{out} = {fn}({_tup(names)}, {d})")
    em.bind(n.outputs[0], out)


def _cat_loops(em: Emitter, n: ir.Node, names: list, r: int, d: int, out_t) -> None:
    """cat of arrays of one rank and the output's dtype: PyTorch's size check, then one copy
    nest per array into the output. Not `np.concatenate`: Numba compiled its implementation
    (~0.25 CPU-s) for each tuple of array types, e.g. once per chunk's backward."""
    first = names[0]
    for i, nm in enumerate(names[1:], 1):
        for k in range(r):
            if k == d:
                continue
            em.emit(f"if {nm}.shape[{k}] != {first}.shape[{k}]:")
            em.indent += 1
            em.raise_("RuntimeError", f"Sizes of tensors must match except in dimension {d}. "
                      "Expected size ", (f"{first}.shape[{k}]",), " but got size ",
                      (f"{nm}.shape[{k}]",), f" for tensor number {i} in the list.")
            em.indent -= 1
    lens = [f"{nm}.shape[{d}]" for nm in names]
    out = em.fresh("v")
    shape = [f"({' + '.join(lens)})" if k == d else f"{first}.shape[{k}]" for k in range(r)]
    em.emit(f"{out} = np.empty({_tup(shape)}, {np_type(out_t.dtype)})")
    for j, nm in enumerate(names):  # each part into its slice of the output along d
        copy_into_slice(em, out, d, f"({' + '.join(lens[:j]) or '0'})", nm, r)
    em.bind(n.outputs[0], out)
