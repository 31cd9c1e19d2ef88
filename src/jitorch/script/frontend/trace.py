"""Tracing: run a function on real tensors while a dispatch mode records every op into the IR.

Owns `Tracer` (the dispatch mode), `trace_graph(fn, example_inputs)` and `TraceInfo` (how a
call's arguments map onto the graph's inputs and its flat outputs back onto the function's
result). Each registry op call runs eagerly (so values, dtypes and shapes are exact) and appends a
node whose inputs are all of the op's parameters in signature order (see ir/__init__.py).

Rules of a trace, as in PyTorch's tracer:
- Graph inputs are the tensor leaves of the example arguments (tensors inside tuples/lists
  included, flattened in order). Non-tensor arguments are STATIC: baked into the graph, and
  `TraceInfo.flatten_args` refuses a call that passes different values.
- Tensors the function did not receive and did not compute (factories, attributes of a traced
  object, `detach()`-free closures) become tensor constants.
- Results may be a tensor or (nested) tuples/lists/dicts of tensors (and plain values): the
  graph returns the tensor leaves, `TraceInfo.unflatten_outputs` rebuilds the structure.
- In-place ops are functionalised: `x.add_(y)` records the out-of-place `add` and REBINDS the
  Python tensor `x` to the new value; a write through a view (`x[0] = v`, `x[:, 1].mul_(2)`,
  `x.view(-1).fill_(0)`) also rebinds the view's base to `_index_put(base.reshape(-1), [pos],
  new.reshape(-1))` (the view's element positions are a constant of the trace), and other views
  of that base are re-derived from it when next used. Writes are observed through the version
  counter tensors share with their views (every in-place write bumps it), so every write path
  (`*_`, `copy_`, `fill_`, `__setitem__`, `out=`) is covered; a write whose new value is not a
  traced tensor (random `uniform_`, factory `out=`) binds the written data as a constant.
  Writes to the function's inputs are NOT propagated back to the caller by the compiled graph
  (a warning says so).
- A Python bool/int/float/list/ndarray taken from a traced tensor specialises the trace on
  data, as in PyTorch: `Tensor.__bool__`/`item()`/... call `check_data_dependence`, which warns
  PyTorch's `TracerWarning` ("Converting a tensor to a Python boolean might cause the trace to
  be incorrect...") at the user's line, and the trace records the path taken (the value is a
  constant). The conversions and the data they read are kept (`graph.trace_conversions`), so
  `check_trace` (`frontend/trace_check.py`) can name the one that diverged.
- A call of scripted code (a scripted function or module, another trace) is recorded as one
  `prim::CallFunction` of its graph (`frontend/trace_call.py`), never as a constant of its result:
  the scripted code's branches stay decided per call.
- Sizes read from a traced tensor (`x.size(0)`, `x.shape[0]`, and int arithmetic on them) are
  graph values where an op takes them (`view(x.size(0), -1)`: `frontend/trace_sizes.py`), as
  PyTorch records `aten::size`; so are the sizes of a factory call (`zeros(x.size(0), 3)`,
  `x.new_zeros(x.shape[0], 4)`, `zeros_like(x)`: `factory.note_factory`, which eager's
  factories call while a trace runs), and a traced tensor filled with one value (`fill_`,
  `zero_`) becomes `full_like` of it. A size turned into a Python number (`int(n)`, `len(x)`)
  or used where Python does not ask (slice bounds, `range(n)`) is baked in (a random factory's
  with a TracerWarning): such a trace is exact for its example's shapes; `jitorch.jit.script`
  is the shape-generic frontend.
"""
from __future__ import annotations

import sys
import threading
import warnings

import numpy as np

from ... import _creation, _device, _fork
from ... import _dtype as dt
from ... import _tensor
from ..._ops import registry
from ..._tensor import Tensor
from .. import ir
from . import trace_sizes


class TracerError(RuntimeError):
    pass


class TracerWarning(Warning):
    """`jitorch.jit.TracerWarning` (PyTorch's: a Warning, not a UserWarning): the trace may not
    generalise (a data-dependent conversion) or disagrees with eager on the check inputs."""


_state = threading.local()
_active_count = [0]  # tracers active in any thread: Tensor's data hook is installed while > 0
_count_lock = _fork.lock()


def active_tracer():
    return getattr(_state, "tracer", None)


def tensor_type(t: Tensor, symbolic: bool = False) -> ir.TensorType:
    shape = tuple(None if symbolic else s for s in t._data.shape)
    return ir.TensorType(t._dtype, shape, str(t._device), requires_grad=t._requires_grad or None)


def value_type(x) -> ir.Type:
    if isinstance(x, Tensor):
        return tensor_type(x)
    if isinstance(x, (bool, np.bool_)):
        return ir.BOOL
    if isinstance(x, (int, np.integer)):
        return ir.INT
    if isinstance(x, (float, np.floating)):
        return ir.FLOAT
    if isinstance(x, str):
        return ir.STR
    if x is None:
        return ir.NONE
    if isinstance(x, dt.dtype):
        return ir.DTYPE
    if isinstance(x, _device.device):
        return ir.DEVICE
    if isinstance(x, tuple):
        return ir.TupleType([value_type(e) for e in x])
    if isinstance(x, list):
        return ir.ListType(value_type(x[0]) if x else ir.ANY)
    return ir.ANY


def _user_loc() -> ir.SourceLoc | None:
    """The innermost frame outside jitorch: where the user's code called the op."""
    f = _user_frame()
    if f is None:
        return None
    import linecache
    text = linecache.getline(f.f_code.co_filename, f.f_lineno).rstrip("\n")
    return ir.SourceLoc(f.f_code.co_filename, f.f_lineno, 0, text)


class _Version(list):
    """A traced tensor's version counter (shared with its views): reports every in-place write
    to the active tracer, which rebinds the written tensor (see the module docstring). The
    write sites all do `t._version[0] += 1` right after writing `t._data`, with the written
    tensor as `self` (or `out`) and, when the new value is a tensor, `r`, in their frame."""

    __slots__ = ("orig",)

    def __setitem__(self, i, v):
        list.__setitem__(self, i, v)
        self.orig[i] = v  # the counter the tensor had before tracing keeps counting
        tr = active_tracer()
        if tr is not None:
            tr._on_write(self, sys._getframe(1))


class Tracer:
    """The dispatch mode that records ops. `values` maps id(tensor) -> Value."""

    def __init__(self, name: str):
        self.graph = ir.Graph(name)
        self.block = self.graph.block
        self.values: dict = {}
        self.versions: dict = {}  # id(tensor) -> version when bound (stale when it differs)
        self.by_data: dict = {}  # id(ndarray) -> tensor (finds `detach()`ed aliases)
        self.keep: list = []  # keeps traced tensors alive so their ids stay unique
        self.swapped: list = []  # (tensor, original version list), restored on exit
        self.inputs: set = set()  # ids of input tensors (writes to them warn)
        self.conversions: list = []  # (loc, kind, data read): data-dependent Python values
        self.shape_values: dict = {}  # traced value -> its `prim::GetAttr shape` (trace_sizes)

    # -- values ------------------------------------------------------------------------------
    def add_input(self, t, name: str) -> ir.Value:
        v = ir.Value(value_type(t), name)
        self.block.params.append(v)
        if isinstance(t, Tensor):
            self.inputs.add(id(t))
        self.bind(t, v)
        return v

    def bind(self, t, v: ir.Value) -> None:
        self.values[id(t)] = v
        self.keep.append(t)
        if isinstance(t, Tensor):
            ver = t._version
            if type(ver) is not _Version:
                nv = _Version(ver)
                nv.orig = ver
                self.swapped.append((t, ver))
                t._version = nv
            self.versions[id(t)] = t._version[0]
            self.by_data.setdefault(id(t._data), t)

    def constant(self, x, ty=None) -> ir.Value:
        if isinstance(x, np.generic):
            x = x.item()
        x = trace_sizes.plain(x)  # a baked size is a plain int in the graph
        n = ir.Node("prim::Constant", (), (ty or value_type(x),), attrs={"value": x})
        self.block.nodes.append(n)
        return n.output

    def value_of(self, x) -> ir.Value:
        if isinstance(x, Tensor):
            v = self.values.get(id(x))
            if v is None:
                alias = self.by_data.get(id(x._data))
                if alias is not None and alias._data.shape == x._data.shape:
                    v = self.value_of(alias)  # x.detach() (or .data) of a traced tensor
                    self.bind(x, v)
                    return v
                # not an input and not computed here: bake it in (a uniform one, such as
                # zeros(3, 4), as its factory node: frontend.factory.traced_factory)
                from .factory import traced_factory
                v = traced_factory(self, x) or self.constant(x)
                self.bind(x, v)
            elif self.versions.get(id(x)) != x._version[0]:
                v = self._refresh(x)
            return v
        if isinstance(x, (list, tuple)) and any(isinstance(e, Tensor) for e in x):
            vals = [self.value_of(e) for e in x]
            elem = vals[0].type
            if any(v.type != elem for v in vals):  # mixed shapes (cat): keep what they share
                ds = {getattr(v.type, "dtype", None) for v in vals}
                elem = ir.TensorType(ds.pop() if len(ds) == 1 else None, None)
            n = ir.Node("prim::ListConstruct", vals, (ir.ListType(elem),))
            self.block.nodes.append(n)
            return n.output
        v = trace_sizes.value_of(self, x)  # sizes read from traced tensors: graph values
        return v if v is not None else self.constant(x)

    # -- in-place writes -----------------------------------------------------------------------
    def _record(self, name: str, slots: tuple, attrs: dict):
        return self(registry.OPS[name], slots, attrs)

    def _refresh(self, x: Tensor) -> ir.Value:
        """x is stale: its base was written through another alias. Re-derive x as a view of
        the base's current value (replaying its view ops, which records them)."""
        base = x._base
        if base is None or x._view_spec is None:
            raise TracerError(
                "jitorch.jit.trace: a tensor was modified in place through an alias the tracer "
                "cannot follow; use jitorch.jit.script for this code")
        self.value_of(base)
        new = x._view_fn(base)
        v = self.values[id(new)]
        self.values[id(x)] = v
        self.versions[id(x)] = x._version[0]
        return v

    def _on_write(self, ver: _Version, frame) -> None:
        loc = frame.f_locals
        w = loc.get("self")
        if not isinstance(w, Tensor) or w._version is not ver:
            w = loc.get("out")
        if not isinstance(w, Tensor) or w._version is not ver:
            return  # not a write we can attribute; bound aliases will be found stale
        self.record_write(w, loc.get("r"))

    def record_write(self, w: Tensor, r) -> None:
        """`w` was written in place; `r` is the traced tensor holding its new value (else the
        written data becomes a constant): rebind w (and its base, through the view)."""
        base = w._base if w._base is not None else w
        if id(base) in self.inputs or id(w) in self.inputs:
            warnings.warn("jitorch.jit.trace: an input is modified in place; the traced graph "
                          "is functional and does not write to the caller's tensor",
                          TracerWarning, stacklevel=4)
        if isinstance(r, Tensor) and id(r) in self.values and r._data.shape == w._data.shape:
            new = r
            if r._dtype is not w._dtype:  # PyTorch casts the result to self's dtype
                new = self._record("_to_dtype", (r,), {"dtype": w._dtype})
        else:  # random fills, `fill_`, factory `out=`: the written data is input-independent
            new = Tensor._make(np.array(w._data, copy=True), w._dtype)
            self._uniform_write(w, new)
        if base is not w and id(base) in self.values:  # (an unseen base: w is an input view)
            new_base = self._scatter_into_base(base, w, new)
            self._rebind(base, new_base)
        self._rebind(w, new)

    def _uniform_write(self, w: Tensor, new: Tensor) -> None:
        """`new` (w's written data) holds one value everywhere (`fill_(v)`, `zero_()` of a
        traced tensor: `empty(x.shape).fill_(v)`): record it as `full_like(w, v)`, so its
        size follows w's in the graph instead of being baked into a constant."""
        old = self.values.get(id(w))
        a = new._data
        if old is None or not a.size or a.dtype.kind == "c":
            return
        first = a.reshape(-1)[0]
        if not (a == first).all():  # NaN never equals itself: stays a constant
            return
        ins = [old, self.constant(first.item()), self.constant(new._dtype),
               self.constant(new._device, ir.DEVICE)]
        n = ir.Node("full_like", ins, (tensor_type(new),), loc=_user_loc())
        self.block.nodes.append(n)
        self.bind(new, n.output)

    def _rebind(self, t: Tensor, src: Tensor) -> None:
        self.values[id(t)] = self.value_of(src)
        self.versions[id(t)] = t._version[0]

    def _scatter_into_base(self, base: Tensor, view: Tensor, new: Tensor) -> Tensor:
        """base with `view`'s elements replaced by `new`, as recorded ops: the view's element
        positions within base (row-major) are found once, eagerly, by replaying the view on an
        arange; then `_index_put` on the flattened base writes them."""
        fn = view._view_fn
        if fn is None:
            raise TracerError("jitorch.jit.trace: cannot trace an in-place write through this "
                              "alias (detach()/.data); use jitorch.jit.script")
        stack = registry._mode_state.stack
        registry._mode_state.stack = []
        try:
            pos = fn(Tensor._make(np.arange(base._data.size, dtype=np.int64)
                                  .reshape(base._data.shape)))
            idx = Tensor._make(np.ascontiguousarray(pos._data).reshape(-1))
        finally:
            registry._mode_state.stack = stack
        old = self.values[id(base)]  # the base's value before this write
        holder = Tensor._make(base._data, base._dtype)  # stands for the base's old value
        self.bind(holder, old)
        self.versions[id(holder)] = holder._version[0]
        flat = self._record("reshape", (holder,), {"shape": (-1,)})
        vals = self._record("reshape", (new,), {"shape": (-1,)})
        put = self._record("_index_put", (flat, [idx], vals),
                           {"adv": (0,), "accumulate": False})
        return self._record("reshape", (put,), {"shape": tuple(base._data.shape)})

    # -- the dispatch mode ---------------------------------------------------------------------
    def __call__(self, op, slots, attrs):
        by_name = dict(zip(op.tensors, slots))
        by_name.update(attrs)
        # inputs first: binding swaps version counters, which views made by this op then share
        inputs = [self.value_of(by_name[p]) for p in op.params]
        stack = registry._mode_state.stack
        registry._mode_state.stack = [m for m in stack if m is not self]
        try:
            outs = registry.dispatch(op, slots, attrs)
        finally:
            registry._mode_state.stack = stack
        multi = isinstance(outs, (tuple, list))
        outs_l = tuple(outs) if multi else (outs,)
        node = ir.Node(op.name, inputs, [value_type(o) for o in outs_l], loc=_user_loc())
        self.block.nodes.append(node)
        for o, v in zip(outs_l, node.outputs):
            if isinstance(o, Tensor):
                self.bind(o, v)
        return outs

    def __enter__(self):
        if active_tracer() is not None:
            raise TracerError("jitorch.jit.trace: nested tracing is not supported")
        _state.tracer = self
        with _count_lock:
            _active_count[0] += 1
            _tensor._data_hook = check_data_dependence
            if _active_count[0] == 1:
                trace_sizes.install()
                from .factory import note_factory
                _creation.trace_hook[0] = note_factory
        registry.push_mode(self)
        return self

    def __exit__(self, *exc):
        registry.pop_mode()
        _state.tracer = None
        with _count_lock:
            _active_count[0] -= 1
            if not _active_count[0]:
                _tensor._data_hook = None
                trace_sizes.uninstall()
                _creation.trace_hook[0] = None
        for t, ver in self.swapped:  # the tensors go back to their own counters
            if type(t._version) is _Version:
                t._version = ver


# what each conversion is called in PyTorch's warning ("Converting a tensor to a {}")
_CONVERSION_WORDS = {"bool": "Python boolean", "int": "Python integer", "float": "Python float",
                     "complex": "Python complex", "number (item())": "Python number",
                     "list (tolist())": "Python list", "NumPy array (numpy())": "NumPy array",
                     "int (as an index)": "Python index"}
# Tensor's conversions that call another one (float(t) reads t.item()): one warning, PyTorch's
_CONVERSION_DUNDERS = frozenset(("__bool__", "__float__", "__int__", "__complex__", "__index__"))


def check_data_dependence(t: Tensor, what: str) -> None:
    """Called by Tensor's Python conversions while a trace runs: a value read from a traced
    tensor's data becomes a constant of the trace (the branch taken is recorded), with
    PyTorch's TracerWarning at the user's line."""
    tr = active_tracer()
    if tr is None or id(t) not in tr.values:
        return
    caller = sys._getframe(2)  # frame 1 is the conversion; is it called by another one?
    if caller.f_code.co_name in _CONVERSION_DUNDERS and \
            caller.f_globals.get("__name__") == _tensor.__name__:
        return
    loc = _user_loc()
    words = _CONVERSION_WORDS.get(what, what)
    tr.conversions.append((loc, words, np.array(t._data, copy=True)))
    msg = (f"Converting a tensor to a {words} might cause the trace to be incorrect. We can't "
           "record the data flow of Python values, so this value will be treated as a constant "
           "in the future. This means that the trace might not generalize to other inputs!")
    frame = _user_frame()
    if frame is None:
        warnings.warn(msg, TracerWarning, stacklevel=3)
    else:  # attributed to the user's line, as PyTorch's warning is
        warnings.warn_explicit(msg, TracerWarning, frame.f_code.co_filename, frame.f_lineno,
                               module=frame.f_globals.get("__name__"),
                               registry=frame.f_globals.setdefault("__warningregistry__", {}),
                               module_globals=frame.f_globals)


def _user_frame():
    f = sys._getframe(1)
    while f is not None:
        mod = f.f_globals.get("__name__", "")
        if not (mod == "jitorch" or mod.startswith("jitorch.")) and not \
                f.f_code.co_filename.startswith("<jitorch"):
            return f
        f = f.f_back
    return None


# --- argument and result structure -------------------------------------------------------------
def _flatten(x, leaves: list):
    """Structure spec of x; tensor leaves appended to `leaves`. Non-tensors are kept in the spec
    (static values)."""
    if isinstance(x, Tensor):
        leaves.append(x)
        return ("T",)
    if type(x) in (tuple, list):
        return (type(x).__name__, tuple(_flatten(e, leaves) for e in x))
    if type(x) is dict:
        return ("dict", tuple((k, _flatten(v, leaves)) for k, v in x.items()))
    if isinstance(x, tuple) and hasattr(x, "_fields"):  # namedtuple (return_types.*)
        return ("named", type(x), tuple(_flatten(e, leaves) for e in x))
    return ("S", x)


def _unflatten(spec, it):
    kind = spec[0]
    if kind == "T":
        return next(it)
    if kind == "S":
        return spec[1]
    if kind == "tuple":
        return tuple(_unflatten(s, it) for s in spec[1])
    if kind == "list":
        return [_unflatten(s, it) for s in spec[1]]
    if kind == "dict":
        return {k: _unflatten(s, it) for k, s in spec[1]}
    return spec[1](*(_unflatten(s, it) for s in spec[2]))


def _same_static(a, b) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return a is b


def _check_spec(spec, x, path: str) -> None:
    """x has the structure and static values of spec (else a TypeError/ValueError)."""
    kind = spec[0]
    if kind == "T":
        if not isinstance(x, Tensor):
            raise TypeError(f"traced function: argument {path} must be a Tensor, not "
                            f"{type(x).__name__}")
    elif kind == "S":
        if not _same_static(spec[1], x):
            raise ValueError(f"traced function: argument {path} was {spec[1]!r} when traced "
                             f"and is {x!r} now; non-tensor arguments are static in a trace "
                             "(trace again, or use jitorch.jit.script)")
    elif kind == "dict":
        if type(x) is not dict or list(x) != [k for k, _ in spec[1]]:
            raise TypeError(f"traced function: argument {path} must be a dict with keys "
                            f"{[k for k, _ in spec[1]]}")
        for k, s in spec[1]:
            _check_spec(s, x[k], f"{path}[{k!r}]")
    else:
        subs = spec[1] if kind != "named" else spec[2]
        if not isinstance(x, (tuple, list)) or len(x) != len(subs):
            raise TypeError(f"traced function: argument {path} must be a sequence of "
                            f"{len(subs)} elements")
        for i, s in enumerate(subs):
            _check_spec(s, x[i], f"{path}[{i}]")


class TraceInfo:
    """How calls map onto a traced graph: `flatten_args(args) -> tensor list` (graph inputs,
    checking structure and static values) and `unflatten_outputs(flat) -> result`."""

    def __init__(self, in_spec, out_spec, arg_names):
        self.in_spec, self.out_spec, self.arg_names = in_spec, out_spec, arg_names

    @property
    def simple(self) -> bool:
        """Every argument is a tensor (graph inputs == call args)."""
        return all(s == ("T",) for s in self.in_spec[1])

    def flatten_args(self, args) -> list:
        args = tuple(args)
        n = len(self.in_spec[1])
        if len(args) != n:
            raise TypeError(f"traced function takes {n} argument(s) but {len(args)} were given")
        for i, (s, a) in enumerate(zip(self.in_spec[1], args)):
            _check_spec(s, a, self.arg_names[i] if i < len(self.arg_names) else f"#{i}")
        leaves: list = []
        _flatten(args, leaves)
        return leaves

    def unflatten_outputs(self, flat):
        return _unflatten(self.out_spec, iter(flat))


def _signature_names(fn) -> list:
    import inspect
    try:
        return list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return []


def trace_graph(fn, example_inputs, name: str | None = None):
    """Run `fn(*example_inputs)` under a tracer; returns (graph, eager outputs).

    `fn` may be a function or an object with `forward` (its tensor attributes become
    constants). The graph's inputs are the tensor leaves of the example inputs; its outputs are
    the tensor leaves of the result; `graph.trace_info` (a `TraceInfo`) maps between them."""
    if isinstance(example_inputs, (Tensor, dict)) or not isinstance(example_inputs,
                                                                    (tuple, list)):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs)
    call = fn
    if not callable(getattr(fn, "__code__", None)) and hasattr(fn, "forward") and \
            not isinstance(fn, type):
        call = fn.forward
    if name is None:
        name = getattr(call, "__name__", None) or type(fn).__name__
        if call is not fn:
            name = f"{type(fn).__name__}.forward"
        if not name.replace(".", "_").isidentifier():
            name = "traced"
    names = _signature_names(call)
    leaves: list = []
    in_spec = _flatten(example_inputs, leaves)
    tracer = Tracer(name)
    from ...autograd import grad_mode
    # no autograd while tracing: gradients of traced code come from the graph (autodiff pass),
    # and eager autograd's own bookkeeping ops (copy_slices on in-place writes) stay out of it
    with grad_mode.no_grad(), tracer:
        for i, x in enumerate(leaves):
            tracer.add_input(x, _leaf_name(in_spec, i, names))
        out = call(*example_inputs)
        out_leaves: list = []
        out_spec = _flatten(out, out_leaves)
        if not out_leaves:
            raise TracerError("jitorch.jit.trace: the traced function returned no tensors")
        tracer.block.returns = [tracer.value_of(o) for o in out_leaves]
    tracer.graph.trace_info = TraceInfo(in_spec, out_spec, names)
    tracer.graph.trace_conversions = tracer.conversions
    return tracer.graph, out


def _leaf_name(in_spec, i, names) -> str:
    """Input names: the parameter's name for a plain tensor argument, else `name_k`."""
    k = 0
    for j, s in enumerate(in_spec[1]):
        base = names[j] if j < len(names) else f"arg{j}"
        if s == ("T",):
            if k == i:
                return base
            k += 1
        else:
            count = _count_leaves(s)
            if k <= i < k + count:
                return f"{base}_{i - k}"
            k += count
    return f"arg{i}"


def _count_leaves(spec) -> int:
    kind = spec[0]
    if kind == "T":
        return 1
    if kind == "S":
        return 0
    if kind == "dict":
        return sum(_count_leaves(s) for _, s in spec[1])
    return sum(_count_leaves(s) for s in (spec[1] if kind != "named" else spec[2]))


def same_outputs(a, b) -> bool:
    """Whether a trace's outputs agree with eager's (`check_trace`): the same structure, and
    tensors of one shape and dtype with close values (floats) or equal ones."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_outputs(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(same_outputs(x, y) for x, y in zip(a, b))
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        x, y = a._data, b._data
        if x.shape != y.shape or a._dtype != b._dtype:
            return False
        if x.dtype.kind in "fc":
            return bool(np.allclose(x, y, rtol=1e-4, atol=1e-5, equal_nan=True))
        return bool(np.array_equal(x, y))
    try:
        return bool(a == b)
    except Exception:
        return False
