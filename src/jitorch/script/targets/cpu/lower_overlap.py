"""The shared-memory check a program runs at the top of its entry (script/runtime/alias.py's rule).

Owns `overlap_check`: for a program that writes to an argument, the emitted check gives every
tensor argument the program reads (each element of a tensor list too) a row of byte bounds and
raises `ArgumentsOverlap` (the runtime then runs the call in place, as eager) when a written
argument overlaps another argument or itself. The helpers are njit functions emitted into the
program's module; the check costs ~30 ns for two tensors (bench/alias_check.py).
"""
from __future__ import annotations

from ... import ir
from ...codegen.emitter import Emitter


_OVERLAP_HELPERS = '''
@numba.njit(nogil=True, cache=False)
def _jt_rows(n):
    return np.empty((3, n), np.int64)


@numba.njit(nogil=True, cache=False)
def _jt_put(sp, k, x, w):
    """Column k of sp: x's byte bounds [lo, hi) ([0, 0) when empty) and whether it is written.
    Returns True when x is written and two of its elements may share bytes (alias.self_overlap:
    dims of size > 1 by increasing |stride|, each at least the extent of those before)."""
    sp[2, k] = w
    if x.size == 0:
        sp[0, k] = 0
        sp[1, k] = 0
        return False
    lo = np.int64(x.ctypes.data)
    hi = lo + np.int64(x.itemsize)
    for j in range(x.ndim):
        ext = np.int64((x.shape[j] - 1) * x.strides[j])
        if ext < 0:
            lo += ext
        else:
            hi += ext
    sp[0, k] = lo
    sp[1, k] = hi
    if not w or x.size < 2 or x.flags.c_contiguous or x.flags.f_contiguous:
        return False
    for j in range(x.ndim):
        if x.shape[j] < 2:
            continue
        s = abs(x.strides[j])
        need = x.itemsize
        for m in range(x.ndim):
            t = abs(x.strides[m])
            if m != j and x.shape[m] > 1 and (t < s or (t == s and m < j)):
                need += (x.shape[m] - 1) * t
        if s < need:
            return True
    return False


@numba.njit(nogil=True, cache=False)
def _jt_meet(sp):
    """Does a written column of sp overlap another? Pairwise for up to 16 (measured faster
    than sorting there: bench/alias_check.py), else a sweep in start order keeping the
    furthest end of all columns and of written columns seen so far."""
    n = sp.shape[1]
    if n <= 16:
        for i in range(n):
            for j in range(i + 1, n):
                if (sp[2, i] or sp[2, j]) and sp[0, i] < sp[1, j] and sp[0, j] < sp[1, i]:
                    return True
        return False
    order = np.argsort(sp[0])
    far_all = np.int64(0)
    far_w = np.int64(0)
    for q in range(n):
        r = order[q]
        lo = sp[0, r]
        hi = sp[1, r]
        if lo == hi:
            continue
        if lo < far_w or (sp[2, r] and lo < far_all):
            return True
        far_all = max(far_all, hi)
        if sp[2, r]:
            far_w = max(far_w, hi)
    return False
'''


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
        if line not in em.globals:
            em.globals.append(line)
        em.globals.append(_OVERLAP_HELPERS)
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
