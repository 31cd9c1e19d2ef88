"""Arguments that share memory, at the boundary of a scripted function that writes to them.

The IR writes arguments functionally (frontend/alias.py): a write makes the argument's new value,
and the runtime copies it into the caller's tensor after the call. That is eager's result only
while no written argument shares memory with another argument or with itself: `f(a, a)`,
overlapping views `f(x[1:], x[:-1])`, a list element that is also another argument, an argument
whose own elements share memory (stride 0, as `empty_strided((3, 4), (0, 1))` makes). Eager sees
a write through one name in every other; the functional program does not.

Such a call runs here instead: the interpreter over the frontend's graph with every write done in
place, in the memory of the tensor written, by eager's own indexing ops (`run_in_place`). Each
SSA value then is the tensor eager would hold, views included, so reads after a write see it
through every alias, as in eager. The graph's "new value" of a written argument is then the
argument itself (or a view of it): the runtime's write-back skips what shares its memory.
Under autograd an op that reads a tensor written later reads a copy (`_ReadsCopies`: what eager's
in-place ops do for their own rule), so the values autograd saved stay at their version. A write
inside `with no_grad():` goes through `_no_grad_target(x)`, here an alias of x's memory without
autograd (`_untracked`), and `_no_grad_write(old, new)` is `old` itself: the tensor written keeps
its history, as eager's write under no_grad.

Owns the detection too. `overlap(args, written)` is the Python-side check, for the tiers that are
not plain compiled programs (interpreted, autodiff): byte bounds of every tensor argument (list
elements included), then a sweep in start order, plus a conservative test for a written tensor
whose elements may share bytes. Compiled programs run the same test themselves, in nanoseconds
(targets/cpu/lower_overlap.py `overlap_check`), and raise `ArgumentsOverlap`, which sends the
call here.
Read-only sharing (two arguments that overlap, neither written) needs nothing.
"""
from __future__ import annotations

import weakref

import numpy as np

try:
    from numpy.lib.array_utils import byte_bounds
except ImportError:  # NumPy < 2
    byte_bounds = np.byte_bounds

from ..._tensor import Tensor
from .. import ir


# --- detection ---------------------------------------------------------------------------------

def _span(a: np.ndarray):
    """[lo, hi) byte bounds of a's (one or more) elements."""
    return byte_bounds(a)


def self_overlap(a: np.ndarray) -> bool:
    """May two elements of `a` share bytes? False is certain; True may be a false alarm.

    Sufficient test for disjoint elements: take the dims of size > 1 in increasing |stride|
    (ties by position); each stride must be at least the itemsize plus the extent of the dims
    before it. Contiguous arrays pass at once; a stride-0 dim of size > 1 always fails."""
    if a.size < 2 or a.flags.c_contiguous or a.flags.f_contiguous:
        return False
    dims = [(abs(s), n) for s, n in zip(a.strides, a.shape) if n > 1]
    dims.sort(key=lambda d: d[0])  # stable: ties keep their order
    need = a.itemsize
    for s, n in dims:
        if s < need:
            return True
        need += (n - 1) * s
    return False


def overlap(args, written, used=None) -> bool:
    """Does a written argument (index in `written`; a list counts with all its elements) share
    memory with any other tensor argument or element the function uses (`used`: indices; None:
    all), or may its own elements share bytes? A few tensors are compared pairwise with NumPy's
    byte-bounds test (`np.may_share_memory`); many get their bounds swept in start order."""
    arrs = []  # (array, written)
    for i, a in enumerate(args):
        if used is not None and i not in used:
            continue
        w = i in written
        items = (a,) if isinstance(a, Tensor) else a if isinstance(a, (list, tuple)) else ()
        for t in items:
            if isinstance(t, Tensor):
                d = t._data
                if w and self_overlap(d):
                    return True
                arrs.append((d, w))
    n = len(arrs)
    if n <= 8:
        for i in range(n):
            x, wx = arrs[i]
            for j in range(i + 1, n):
                y, wy = arrs[j]
                if (wx or wy) and np.may_share_memory(x, y):
                    return True
        return False
    spans = sorted((*_span(d), w) for d, w in arrs if d.size)
    far_all = far_w = 0  # furthest end of all spans / of written spans so far
    for lo, hi, w in spans:
        if lo < far_w or (w and lo < far_all):
            return True
        if hi > far_all:
            far_all = hi
        if w and hi > far_w:
            far_w = hi
    return False


# --- the in-place run --------------------------------------------------------------------------

def run_in_place(graph, args) -> list:
    """Run the frontend's `graph` on `args` with its writes done in place (see module doc);
    returns its outputs (results, then the written arguments' final values)."""
    from ..ir import interpreter
    return interpreter.run_graph(_in_place_graph(graph), list(args))


_TWINS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _in_place_graph(graph):
    """A copy of `graph` whose write nodes write in place (called functions' graphs too)."""
    twin = _TWINS.get(graph)
    if twin is None:
        from ..ir.util import clone_graph
        twin = clone_graph(graph)
        _rewrite(twin.block)
        _TWINS[graph] = twin
    return twin


def _rewrite(block) -> None:
    from ..._ops.registry import OPS
    from ..frontend.alias import ViewWrite
    from ..frontend.index import SetItem
    for n in block.nodes:
        for b in n.blocks:
            _rewrite(b)
        op = OPS.get(n.op)
        if n.op in _NO_GRAD_WRITES:
            n.op, n.attrs = "prim::PythonOp", {"fn": _NO_GRAD_WRITES[n.op], "name": n.op}
        elif op is not None and not op.view and op.kind != "factory" and \
                n.op not in ("_index_write", "_select_write"):
            container = len(n.outputs) == 1 and isinstance(
                n.outputs[0].type, (ir.TupleType, ir.ListType, ir.AnyType))
            n.attrs = {"fn": _ReadsCopies(n.op, len(n.outputs), container), "name": n.op}
            n.op = "prim::PythonOp"
        elif n.op == "_index_write":
            n.op, n.attrs = "prim::PythonOp", {"fn": _write_index, "name": "_index_write"}
        elif n.op == "_select_write":
            n.op, n.attrs = "prim::PythonOp", {"fn": _write_select, "name": "_select_write"}
        elif n.op == "prim::PythonOp" and isinstance(n.attrs.get("fn"), ViewWrite):
            n.attrs = dict(n.attrs, fn=_ViewWriteInPlace(n.attrs["fn"].op))
        elif n.op == "prim::PythonOp" and isinstance(n.attrs.get("fn"), SetItem):
            n.attrs = dict(n.attrs, fn=_SetItemInPlace(n.attrs["fn"]))
        elif n.op == "prim::CallFunction" and n.attrs.get("fn") is not None:
            n.attrs = dict(n.attrs, fn=_in_place_graph(n.attrs["fn"]))


class _ReadsCopies:
    """A registry op that, when autograd records it, reads copies of its tensor inputs: a
    tensor it saves for the backward may be written in place afterwards (eager's in-place ops
    hand their rule a copy the same way). Without autograd it is the op itself. Results are
    shaped as the interpreter shapes a registry op's."""

    def __init__(self, op: str, n_out: int, container: bool):
        self.op, self.n_out, self.container = op, n_out, container
        self.__qualname__ = op

    def __call__(self, *vals):
        from ...autograd import grad_mode
        from ..ir.interpreter import call_registry_op
        if grad_mode._state.enabled and any(isinstance(v, Tensor) and v._requires_grad
                                            for v in vals):
            vals = [v.clone() if isinstance(v, Tensor) else v for v in vals]
        r = call_registry_op(self.op, list(vals))
        if isinstance(r, list) and self.n_out > 1:
            return tuple(r)
        if isinstance(r, tuple) and self.n_out == 1 and not self.container:
            return r[0]
        return r


def _untracked(x, memory_format=None):
    """`_no_grad_target` in place: x's memory, as a tensor without autograd (writes through it
    are allowed and record nothing; it shares x's version counter)."""
    t = Tensor._make(x._data, x._dtype)
    t._version = x._version
    return t


def _keep_old(old, new):
    """`_no_grad_write` in place: `new` was written into old's memory; old keeps its history."""
    return old


_NO_GRAD_WRITES = {"_no_grad_target": _untracked, "_no_grad_write": _keep_old}


def _write_index(x, values, basic, cast_check=False):
    """`_index_write` in place: `x[basic] = values` in x's memory, through Tensor.__setitem__
    (eager's broadcasting, casting, autograd and version counter); returns x itself."""
    from ..._ops.indexing import _np_basic
    from ..._ops.index_write import _check_basic, _check_cast
    _check_basic(tuple(x.shape), basic)
    if cast_check:
        v = values._data if hasattr(values, "_data") else np.asarray(values)
        _check_cast(v.dtype, x._data.dtype)
    x[_np_basic(basic)] = values
    return x


def _write_select(x, values, dim, index):
    """`_select_write` in place: x.select(dim, index) overwritten with values; returns x."""
    x.select(int(dim), int(index))[...] = values
    return x


class _ViewWriteInPlace:
    """frontend.alias.ViewWrite in place: the view of `base` overwritten with `new`."""

    def __init__(self, op: str):
        self.op = op
        self.__qualname__ = f"write_through_{op}"

    def __call__(self, base, new, *rest):
        from ..._ops.registry import OPS
        OPS[self.op].fn(base, *rest).copy_(new)
        return base


class _SetItemInPlace:
    """frontend.index.SetItem in place for tensors (a list stays a copy: the runtime writes
    list arguments back element by element)."""

    def __init__(self, fn):
        self.fn = fn
        self.__qualname__ = "setitem"

    def __call__(self, x, *rest):
        if not hasattr(x, "_data"):
            return self.fn(x, *rest)
        x[self.fn.build(rest[:-1])] = rest[-1]
        return x
