"""One specialisation of a scripted function and its call path across the boundary.

Owns `_Entry` (a compiled program or an interpreted graph), how boundary values select a
program's Numba overload (`_bkey`: per array dtype, rank and C-contiguity, never sizes or
strides; `_nb_signature`: 'C' or 'A' array types), calling an overload's entry point directly,
and wrapping outputs into Tensors (`_wrapper`, `_wrap`). `runtime/functions.py` decides which entry
runs. Every call of a program passes what it raises through `_failed`: the one place where a
compiled program's exceptions (its checks', NumPy's or Numba's) become `ProgramFailed`, which
the runtime answers by running the call in the interpreter (kernels/signals.py).
"""
from __future__ import annotations

import functools

import numpy as np

from ... import _dtype as dt
from ..._device.backends import backend_of
from ..._tensor import Tensor
from ..ir import graph_to_python
from .. import ir
from ..kernels.signals import RaiseInInterpreter, program_failed

_new = object.__new__


class NotReady(RaiseInInterpreter):
    """The overload for this call's boundary types is compiling in the background
    (runtime/tiers.py): the caller runs this call in the interpreter, as for any
    RaiseInInterpreter."""


class _Entry:
    """One specialisation: a compiled program or an interpreted graph.

    A compiled entry calls its Numba dispatcher's overloads through their entry points (the
    compiled functions' CPython wrappers), one per boundary key (`_bkey`: per array its dtype,
    rank and whether it is C-contiguous), compiled on first use for the normalised types of
    `_nb_signature`. An entry point unboxes arrays without checking their types, which is safe
    here because the boundary key fixes every array's dtype and rank and an 'A' overload
    reads any strides; read-only arrays may be passed to the writable overload because
    programs never write to their inputs (writes to arguments are functional in the IR, and
    the in-place list writes of targets/cpu/lower_list.py are refused for read-only tensors by
    `ScriptFunction._refuse_writes`)."""

    __slots__ = ("kind", "fn", "graph", "source", "out_types", "reason", "wraps", "autodiff",
                 "eps", "checks_overlap", "origin", "pending", "build_s", "worker_s", "interpret")

    def __init__(self, kind, graph, *, fn=None, source=None, out_types=None, reason=None,
                 autodiff=None, checks_overlap=False, origin=None):
        self.kind, self.graph, self.fn, self.source = kind, graph, fn, source
        self.out_types, self.reason, self.autodiff = out_types, reason, autodiff
        self.wraps = [_wrapper(t) for t in out_types or ()]
        self.eps: dict = {}  # boundary key -> entry point (or the dispatcher itself)
        # the program checks that its written arguments share no memory
        # (targets/cpu/lower_overlap.py)
        self.checks_overlap = checks_overlap
        # runtime/tiers.py: (program source, njit options, entry name) for the compile worker; while
        # the worker compiles, `pending` is (job, signature, boundary key) and the entry runs
        # interpreted
        self.origin, self.pending = origin, None
        self.build_s = 0.0  # seconds spent building it in this process (stats)
        self.worker_s = (0.0, 0.0)  # the compile worker's (wall, CPU) seconds for it
        # the interpreter tier on `graph`: walked once, then run as Python source
        self.interpret = graph_to_python.Runner(graph)

    def run(self, args):
        """Run with Tensors/scalars in; returns the list of outputs (Tensors/scalars)."""
        if self.kind == "interpreted":
            if self.pending is None:
                return self.interpret(args)
            if not _switch(self):
                return _stand_in(self.interpret(args), args)
        res = self.call([a._data if type(a) is Tensor else _boundary(a) for a in args])
        if type(res) is not tuple:
            res = (res,)
        return [w(r) for w, r in zip(self.wraps, res)]

    def call(self, xs):
        """The program on boundary values `xs` (arrays as they are, scalars, tuples of arrays)."""
        bk = _bkey(xs)
        ep = self.eps.get(bk)
        if ep is None:
            ep = self._overload(xs, bk)
        try:
            return ep(*xs)
        except Exception as e:  # the interpreter reruns the call for eager's located error
            _failed(e)

    def _overload(self, xs, bk):
        """The entry point for a boundary key not seen yet: compiled (or loaded) now, or a
        stand-in that raises NotReady while the compile worker builds it (runtime/tiers.py)."""
        if self.origin is not None:
            from . import tiers
            ep = tiers.overload(self, xs, bk)
            if ep is not None:
                self.eps[bk] = ep
                return ep
        ep = self.eps[bk] = _entry_point(self.fn, xs)
        return ep

    def runner(self, args, tuple_out: bool):
        """An unrolled call for `args` (all tensors) of a compiled entry, returning what the
        ScriptFunction returns (the per-call path: no list comprehensions, no zip, no list of
        outputs). It calls the entry point of the overload for these arguments' boundary key
        directly, skipping the dispatcher's type matching (about half of a small call's cost);
        the fast key it is stored under (`_make_fast_key`) fixes each tensor's dtype, rank and
        C-contiguity, and the array dtypes are checked by identity here (a Tensor's array
        could differ from its dtype, e.g. in byte order): anything else takes `call`."""
        n_args = len(args)
        xs = [a._data for a in args]
        bk = _bkey(xs)
        ep = self.eps.get(bk)
        if ep is None:
            ep = self._overload(xs, bk)
        if getattr(ep, "compiling", False):
            ep = ep.ready()  # NotReady until the worker is done: no runner for a stand-in
        conv = "".join(f"    x{i} = a[{i}]._data\n" for i in range(n_args))
        xl = ", ".join(f"x{i}" for i in range(n_args))
        ns = {"_ep": ep, "_call": self.call, "_failed": _failed}
        ns.update({f"_d{i}": x.dtype for i, x in enumerate(xs)})
        same = " and ".join(f"x{i}.dtype is _d{i}" for i in range(n_args)) or "True"
        call = (f"    if {same}:\n        try:\n            r = _ep({xl})\n"
                "        except Exception as e:\n            _failed(e)\n"
                f"    else:\n        r = _call([{xl}])\n")
        ns.update({f"_w{k}": w for k, w in enumerate(self.wraps)})
        outs = [f"_w{k}(r[{k}])" for k in range(len(self.wraps))]
        ret = outs[0] if len(outs) == 1 and not tuple_out else \
            f"({''.join(o + ', ' for o in outs)})"
        exec(f"def run(a):\n{conv}{call}    if type(r) is not tuple:\n"
             f"        r = (r,)\n    return {ret}\n", ns)
        return ns["run"]


def _failed(e: Exception):
    """Raise what the boundary raises for `e`, raised by a program (kernels/signals.py:
    ProgramFailed, so that the interpreter reruns the call and raises eager's error at the
    user's line; a signal or a Numba compile error as it is)."""
    f = program_failed(e)
    if f is e:
        raise e
    raise f from e


def _stand_in(outs, args):
    """Outputs of the interpreter standing in for a program that compiles, laid out as the
    program's will most likely be: a computed array C-contiguous (the program writes fresh
    arrays), a view of an input as it is (the program returns such views too). What they feed
    (an autodiff backward's saved values) then gets compiled for the layouts it will see once
    the program runs; where the guess is wrong, that overload is compiled later as well
    (`_Entry._overload`), never wrong values."""
    ins = [a._data for a in args if isinstance(a, Tensor)]
    out = []
    for o in outs:
        if type(o) is Tensor and not o._data.flags.c_contiguous and not o._requires_grad \
                and not any(np.may_share_memory(o._data, x) for x in ins):
            o = Tensor._make(np.ascontiguousarray(o._data), o._dtype)
        out.append(o)
    return out


def _switch(entry) -> bool:
    from . import tiers  # imported already: only tiers.start makes an entry pending
    return tiers.switch(entry)


def _bkey(xs) -> tuple:
    """What selects a program's overload for boundary values `xs`: per array (dtype, rank,
    C-contiguous), per tuple of arrays the same for each element plus whether all are
    C-contiguous, per other value its type. Sizes and strides are not part of it."""
    key = []
    for x in xs:
        t = type(x)
        if t is np.ndarray:
            key.append((x.dtype, x.ndim, x.flags.c_contiguous))
        elif t is tuple and x and type(x[0]) is np.ndarray:
            key.append((tuple([(e.dtype, e.ndim) for e in x]),
                        all([e.flags.c_contiguous for e in x])))
        else:
            key.append(t)
    return tuple(key)


def _layout_type(t, c: bool):
    """Numba type `t` with its arrays typed C-contiguous (c) or strided ('A'), writable."""
    from numba.core import types as nbt
    if isinstance(t, nbt.Array):
        return nbt.Array(t.dtype, t.ndim, "C" if c else "A")
    if isinstance(t, nbt.UniTuple):
        return nbt.UniTuple(_layout_type(t.dtype, c), t.count)
    if isinstance(t, nbt.Tuple):  # (elements that differed only in read-only: a UniTuple)
        return nbt.BaseTuple.from_types([_layout_type(e, c) for e in t.types])
    return t


def _nb_signature(fn, xs) -> tuple:
    """The Numba argument types a program is compiled for on boundary values `xs`: typeof's,
    with every array typed 'C' when it (or every element of its tuple) is C-contiguous and
    'A' otherwise (an 'F' or read-only array gets no overload of its own)."""
    from ..kernels.array_types import array_type
    sig = []
    for x in xs:
        t = array_type(x)  # (a plain array without Numba's typeof, see array_types.py)
        if t is None:
            t = fn.typeof_pyval(x)
        if type(x) is np.ndarray:
            t = _layout_type(t, x.flags.c_contiguous)
        elif type(x) is tuple and x and type(x[0]) is np.ndarray:
            t = _layout_type(t, all(e.flags.c_contiguous for e in x))
        sig.append(t)
    return tuple(sig)


def _entry_point(fn, xs):
    """The entry point of `fn`'s overload for `xs` (`_nb_signature`), compiled (or loaded from
    Numba's disk cache) now if needed; `fn` itself where it is not a Numba dispatcher (tests
    feed plain Python programs) or where typeof cannot type a value (the dispatcher then
    raises its own error)."""
    if getattr(fn, "overloads", None) is None or getattr(fn, "typeof_pyval", None) is None:
        return fn
    try:
        sig = _nb_signature(fn, xs)
    except Exception:  # noqa: BLE001 - a value Numba cannot type: let the dispatcher say so
        return fn
    cres = fn.overloads.get(sig)
    ep = getattr(cres, "entry_point", None)
    if ep is None:
        from ..kernels.numba_cache import compile_program
        ep = compile_program(fn, sig)
    return ep


def _wrapper(ty):
    """A function that turns a program's output into the value of IR type `ty` (the hot case,
    an array of the right dtype, makes a Tensor without any conversion)."""
    if isinstance(ty, ir.TensorType) and ty.dtype is not None and ty.device != "cpu":
        return functools.partial(_on_device, d=ty.dtype, dev=_device(ty.device))
    if isinstance(ty, ir.TensorType) and ty.dtype is not None:
        d = ty.dtype
        npd = d.np

        def wrap_tensor(x, _nd=np.ndarray):
            # identity first: NumPy's builtin dtypes are singletons, `!=` costs ~30% of a wrap
            if type(x) is not _nd or (x.dtype is not npd and x.dtype != npd):
                x = np.asarray(x).astype(npd, copy=False)
            t = _new(Tensor)
            t._data, t._dtype, t._version = x, d, [0]
            return t
        return wrap_tensor
    return functools.partial(_wrap, ty=ty)


def _interp(entry: _Entry) -> bool:
    if entry.autodiff is not None:
        return entry.autodiff.fwd.kind == "interpreted"
    return entry.kind == "interpreted"


def _boundary(a):
    """A non-Tensor argument as the program takes it (a list/tuple of tensors: a tuple of their
    arrays, which Numba unboxes cheaply, targets/cpu/lower_list.py; a list of ints: an int64
    array)."""
    if isinstance(a, Tensor):
        return a._data
    if isinstance(a, (tuple, list)) and a and isinstance(a[0], Tensor):
        return tuple([t._data for t in a])
    if type(a) is list and a and type(a[0]) is int:
        # a List[int] (an autodiff forward's saved sizes, interpreted or wrapped): one array,
        # as a program takes it (targets/cpu/program.py)
        return np.array(a, dtype=np.int64)
    return a


def _device(name: str):
    from ..._device import as_device
    return as_device(name)


def _on_device(x, d, dev):
    """A device program's output array (made on `dev`: kept there, never through the host) as
    a Tensor of dtype `d` (None: the array's) on `dev`, its memory accounted for there."""
    if d is None:
        d = dt.from_numpy_dtype(x.dtype)
    elif x.dtype != d.np:
        x = x.astype(d.np)
    t = Tensor._make(x, d)
    t._device = dev
    backend_of(dev).adopt(x, dev.index)
    return t


def _wrap(x, ty):
    if isinstance(ty, ir.TensorType) and ty.device != "cpu":
        return _on_device(x, ty.dtype, _device(ty.device))
    if isinstance(ty, ir.TensorType):
        arr = x if type(x) is np.ndarray else np.asarray(x)
        d = ty.dtype if ty.dtype is not None else dt.from_numpy_dtype(arr.dtype)
        if arr.dtype != d.np:
            arr = arr.astype(d.np)
        return Tensor._make(arr, d)
    if isinstance(ty, ir.TupleType):
        return tuple(_wrap(e, t) for e, t in zip(x, ty.elems))
    if isinstance(ty, ir.ListType):
        return [_wrap(e, ty.elem) for e in x]
    if isinstance(ty, ir.BoolType):
        return bool(x)
    if isinstance(ty, ir.IntType):
        return int(x)
    if isinstance(ty, ir.FloatType):
        return float(x)
    if isinstance(ty, ir.OptionalType):
        return None if x is None else _wrap(x, ty.elem)
    return x
