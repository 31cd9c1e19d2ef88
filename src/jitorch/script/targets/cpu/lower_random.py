"""CPU lowering of the random ops that draw from jitorch's Philox stream (jitorch/_philox.py):
`_dropout_mask` (F.dropout's mask, _ops/nn_misc.py) becomes a fresh array filled by
`fill_dropout_mask`, the library kernel that reads and advances the default generator's
(seed, offset) at run time, so a compiled call draws the mask an eager call would draw there.

Lowered: float32/float64 masks on the CPU with a constant p in (0, 1) (what F.dropout's body
passes: p = 0 and p = 1 never draw). Anything else raises NotLowered naming the op, and the
interpreter runs the eager op, which draws from the same stream.
"""
from __future__ import annotations

from .... import _dtype as dt
from .... import _philox
from ... import ir
from ...codegen import NotLowered
from ...codegen.emitter import Emitter, np_type, typed_literal
from ...codegen.lowering import lowers
from .lower_conv import import_kernels


@lowers("_dropout_mask", target="cpu")
def lower_dropout_mask(em: Emitter, n: ir.Node) -> None:
    x, p = n.inputs
    em.tensor(x)
    t = em.tensor(n.output)
    if t.dtype not in (dt.float32, dt.float64) or t.device != "cpu":
        raise NotLowered(f"op {n.op}: a {t.dtype} mask on {t.device} (float32/float64 masks "
                         "on the CPU are lowered)")
    if not em.is_const(p):
        raise NotLowered(f"op {n.op}: p known only at run time")
    pv = em.const(p)
    if isinstance(pv, bool) or not isinstance(pv, (int, float)) or not 0.0 < pv < 1.0:
        raise NotLowered(f"op {n.op}: p={pv!r} (0 < p < 1 is lowered)")
    import_kernels(em, _philox.__name__, "fill_dropout_mask")
    out = em.fresh("dm")
    em.emit(f"{out} = np.empty({em.name(x)}.shape, {np_type(t.dtype)})")
    # (typed values, not literals: a literal int would make Numba compile the kernel per p)
    em.emit(f"fill_dropout_mask({out}.reshape({out}.size), "
            f"{typed_literal(_philox.dropout_threshold(pv), dt.int64)}, "
            f"{typed_literal(_philox.dropout_scale(pv), t.dtype)})")
    em.bind(n.output, out)
