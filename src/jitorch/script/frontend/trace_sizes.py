"""Sizes read from traced tensors as graph values: what PyTorch's tracer records as `aten::size`.

Owns `TracedInt`, `install()`/`uninstall()` (frontend/trace.py's Tracer calls them when the
first tracer of the process starts and the last one ends) and `value_of(tracer, x)`, the
tracer's rule for an op argument holding such sizes.

While a trace runs, `t.shape`, `t.size()` and `t.size(d)` of a tensor the tracer knows return
`TracedInt`s: Python ints (eager code, NumPy and the op layer use them unchanged) that remember
where they came from, the tensor's size in dim d, or int arithmetic (`+ - * // %`, unary `-`)
on such sizes and plain ints. When one reaches a recorded op (`x.view(x.size(0), -1)`,
`reshape(x.shape[0], 2, -1)`, `zeros(b * 2, 3)`) the tracer emits its recipe, `prim::GetAttr
shape` + `prim::ScalarOp getitem` (+ the ScalarOps of its arithmetic), the nodes scripted code
compiles `x.size(0)` to, so the trace runs on other sizes. Nodes are emitted on first use only
(a size read and never used costs nothing). A TracedInt of another (or a finished) trace is
a plain constant.

Where PyTorch's trace bakes a size in, so does this one, with PyTorch's TracerWarning at the
user's line: `int(n)` / `float(n)` of a traced size ("Converting a tensor to a Python
integer"), `len(x)` of a traced tensor ("Using len to get tensor shape"). What Python does
with an int subclass without asking it (`range(n)`, slicing, comparisons) bakes the value
silently. Eager code outside a trace never sees a TracedInt: the Tensor methods are swapped
only while a trace is active (eager's `shape`/`size` stay free of any check).
"""
from __future__ import annotations

import sys
import warnings

from ... import _tensor
from .. import ir

_SIZE_LIST = ir.ListType(ir.INT)


class TracedInt(int):
    """An int read from a traced tensor's shape (or computed from such ints): see the module
    docstring. `_tracer` is the trace it belongs to, `_recipe` how to compute it in the graph:
    ("size", tensor value, dim) or ("op", scalar op name, operands)."""

    def value(self, tracer) -> ir.Value | None:
        """Its graph value in `tracer`'s graph (emitted once), or None when it is not of it."""
        if self.__dict__.get("_tracer") is not tracer:
            return None
        v = self.__dict__.get("_value")
        if v is not None:
            return v
        kind, *rest = self._recipe
        if kind == "size":
            tv, dim = rest
            shape = tracer.shape_values.get(tv)
            if shape is None:  # one shape read per traced value
                shape = _emit(tracer, "prim::GetAttr", [tv], _SIZE_LIST, {"name": "shape"})
                tracer.shape_values[tv] = shape
            v = _emit(tracer, "prim::ScalarOp", [shape, tracer.constant(dim)], ir.INT,
                      {"fn": "getitem"})
        else:
            fn, operands = rest
            ins = [o.value(tracer) if isinstance(o, TracedInt) else None for o in operands]
            ins = [v if v is not None else tracer.constant(int(o) if isinstance(o, int) else o)
                   for v, o in zip(ins, operands)]
            v = _emit(tracer, "prim::ScalarOp", ins, ir.INT, {"fn": fn})
        self._value = v
        return v

    def __int__(self):
        _warn_baked(self, "Python integer")
        return int.__int__(self)

    def __float__(self):
        _warn_baked(self, "Python float")
        return int.__float__(self)


def _make(value: int, tracer, recipe) -> TracedInt:
    t = int.__new__(TracedInt, value)
    t._tracer, t._recipe, t._value = tracer, recipe, None
    return t


def _emit(tracer, op, inputs, ty, attrs) -> ir.Value:
    from .trace import _user_loc
    n = ir.Node(op, inputs, (ty,), attrs=attrs, loc=_user_loc())
    tracer.block.nodes.append(n)
    return n.output


def _arith(name: str, reflected: bool = False):
    slot = getattr(int, f"__{'r' if reflected else ''}{name}__")

    def method(self, other):
        r = slot(self, other)
        if r is NotImplemented or type(r) is not int:  # a float, a Tensor: not a size
            return r
        tr = self.__dict__.get("_tracer")
        from .trace import active_tracer
        if tr is None or active_tracer() is not tr:
            return r
        return _make(r, tr, ("op", name, (other, self) if reflected else (self, other)))
    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    return method


for _name in ("add", "sub", "mul", "floordiv", "mod"):  # int -> int ops (ScalarOp names)
    setattr(TracedInt, f"__{_name}__", _arith(_name))
    setattr(TracedInt, f"__r{_name}__", _arith(_name, reflected=True))


def _neg(self):
    tr = self.__dict__.get("_tracer")
    from .trace import active_tracer
    r = int.__neg__(self)
    return r if tr is None or active_tracer() is not tr else _make(r, tr, ("op", "neg", (self,)))


TracedInt.__neg__ = _neg


def _from_user(frame) -> bool:
    mod = frame.f_globals.get("__name__", "")
    return not (mod == "jitorch" or mod.startswith("jitorch."))


def _warn_baked(t: TracedInt, words: str) -> None:
    """PyTorch's TracerWarning for a traced size turned into a Python number by user code (the
    op layer's own int() of a size is no conversion the user wrote: no warning)."""
    from .trace import active_tracer
    tr = t.__dict__.get("_tracer")
    frame = sys._getframe(2)
    if tr is None or active_tracer() is not tr or not _from_user(frame):
        return
    _warn_at(frame, f"Converting a tensor to a {words} might cause the trace to be incorrect. "
             "We can't record the data flow of Python values, so this value will be treated "
             "as a constant in the future. This means that the trace might not generalize to "
             "other inputs!")


def _warn_at(frame, msg: str) -> None:
    from .trace import TracerWarning
    warnings.warn_explicit(msg, TracerWarning, frame.f_code.co_filename, frame.f_lineno,
                           module=frame.f_globals.get("__name__"),
                           registry=frame.f_globals.setdefault("__warningregistry__", {}),
                           module_globals=frame.f_globals)


def value_of(tracer, x) -> ir.Value | None:
    """The graph value of an op argument holding traced sizes (a TracedInt, or a tuple/list
    with some), or None when it holds none (the tracer makes it a constant)."""
    if isinstance(x, TracedInt):
        return x.value(tracer)
    if type(x) in (tuple, list, _tensor.Size) and any(
            isinstance(e, TracedInt) and e.value(tracer) is not None for e in x):
        vals = []
        for e in x:
            v = e.value(tracer) if isinstance(e, TracedInt) else None
            vals.append(v if v is not None else tracer.constant(
                int(e) if isinstance(e, int) and not isinstance(e, bool) else e))
        if type(x) is list:
            return _emit(tracer, "prim::ListConstruct", vals, ir.ListType(ir.INT), {})
        return _emit(tracer, "prim::TupleConstruct", vals, ir.TupleType([v.type for v in vals]),
                     {})
    return None


def plain(x):
    """x with its TracedInts (in tuples and lists too) as plain ints: a constant's value."""
    if isinstance(x, TracedInt):
        return int.__int__(x)
    if type(x) in (tuple, list, _tensor.Size) and any(isinstance(e, TracedInt) for e in x):
        return type(x)(plain(e) for e in x)
    return x


# --- the Tensor methods swapped in while a trace is active --------------------------------------
def _traced(t) -> tuple:
    from .trace import active_tracer
    tr = active_tracer()
    v = None if tr is None else tr.values.get(id(t))
    return tr, v


def _shape_of(t):
    tr, v = _traced(t)
    s = t._data.shape
    if v is None:
        return _tensor.Size(s)
    return _tensor.Size(_make(n, tr, ("size", v, d)) for d, n in enumerate(s))


def _size(self, dim=None):
    if dim is None:
        return _shape_of(self)
    tr, v = _traced(self)
    n = _ORIG["size"](self, dim)
    if v is None:
        return n
    return _make(n, tr, ("size", v, _tensor._wrap_dim(dim, self._data.ndim)))


def _len(self):
    n = _ORIG["__len__"](self)
    tr, v = _traced(self)
    frame = sys._getframe(1)
    if v is not None and _from_user(frame):
        _warn_at(frame, "Using len to get tensor shape might cause the trace to be incorrect. "
                 "Recommended usage would be tensor.shape[0]. Passing a tensor of different "
                 "shape might lead to errors or silently give incorrect results.")
    return n


_ORIG: dict = {}
_SWAPS = {"shape": property(_shape_of), "size": _size, "__len__": _len}


def install() -> None:
    """Swap the traced forms in (called under trace.py's count lock, first tracer)."""
    T = _tensor.Tensor
    for k, f in _SWAPS.items():
        _ORIG[k] = T.__dict__[k]
        setattr(T, k, f)


def uninstall() -> None:
    """Put eager's methods back (last tracer)."""
    T = _tensor.Tensor
    for k in _SWAPS:
        if k in _ORIG:
            setattr(T, k, _ORIG.pop(k))
