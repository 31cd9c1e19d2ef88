"""The shared-memory check a program runs at the top of its entry (script/runtime/alias.py's rule).

Owns `overlap_check`: for a program that writes to an argument, the emitted check gives every
tensor argument the program reads (each element of a tensor list too) a row of byte bounds and
raises `ArgumentsOverlap` (the runtime then runs the call in place, as eager) when a written
argument overlaps another argument or itself. The helpers are overlap_lib.py's, called through symbols
(compiled once per process, not again in each program's module); the check costs ~30 ns for
two tensors (bench/alias_check.py).
"""
from __future__ import annotations

from ... import ir
from ...codegen.emitter import Emitter

LIBRARY = "jitorch.script.targets.cpu.overlap_lib"


def overlap_check(em: Emitter, graph: ir.Graph, written):
    """None when the program writes no argument; else a function that, given the entry's
    argument names, emits the check at the top of the entry: every tensor argument the program
    reads (each element of a tensor list) gets a row of byte bounds, and a written one that
    overlaps another or itself raises `ArgumentsOverlap` before anything else runs."""
    from ...ir.util import used_inputs
    from . import lower_list
    written = set(written or ())
    used = used_inputs(graph)  # an argument the program never reads may share memory
    kinds = []  # per input: "t" (tensor), "l" (tensor list: a tuple argument) or None
    for i, p in enumerate(graph.inputs):
        t = p.type
        kinds.append(None if i not in used else "t" if isinstance(t, ir.TensorType) else
                     "l" if lower_list.is_tensor_list(t) else None)
    if not any(kinds[i] for i in written if i < len(kinds)):
        return None

    def emit(arg_names):  # (a list argument's name: its unpacked native list, fast to walk)
        line = "from jitorch.script.kernels.signals import ArgumentsOverlap"
        em.global_line(line)
        line = f"from {LIBRARY} import rows as _jt_rows, put as _jt_put, meet as _jt_meet"
        em.global_line(line)
        plain = [i for i, k in enumerate(kinds) if k == "t"]
        lists = [i for i, k in enumerate(kinds) if k == "l"]
        rows, bad, k = em.fresh("ov"), em.fresh("ovb"), em.fresh("ovk")
        count = "".join(f" + len({arg_names[i]})" for i in lists)
        em.emit(f"{rows} = _jt_rows({len(plain)}{count})")
        em.emit(f"{bad} = False")
        for r, i in enumerate(plain):
            em.emit(f"{bad} = _jt_put({rows}, {r}, {arg_names[i]}, {i in written}) or {bad}")
        if lists:
            e = em.fresh("ove")
            em.emit(f"{k} = {len(plain)}")
            for i in lists:
                em.emit(f"for {e} in {arg_names[i]}:")
                em.indent += 1
                em.emit(f"{bad} = _jt_put({rows}, {k}, {e}, {i in written}) or {bad}")
                em.emit(f"{k} += 1")
                em.indent -= 1
        em.emit(f"if {bad} or _jt_meet({rows}):")
        em.indent += 1
        em.emit("raise ArgumentsOverlap()")
        em.indent -= 1
    return emit
