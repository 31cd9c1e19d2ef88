"""The backward graph: nodes recorded by ops, leaf accumulators, tensor hooks.

Owns `Node` (one per differentiable op call: its VJP rule, what it saved, where its input
gradients go), `AccumulateGrad` (the sink that writes a leaf's `.grad`), and `record`, which
dispatch calls after an op ran with an input that requires grad. Per op, a generated recorder
builds the node and a generated applier runs it (`Node.apply` written out); both compute what
the generic `_record_any` / `Node.apply` compute, which ops with shape-only slots keep.

Invariants: a node's `next_edges[i]` is `(node, output_nr)` for the i-th flattened tensor input,
or None when that input does not require grad (and then `in_meta[i]`, the shape and dtype its
gradient is fitted to, is None too). Saved tensors remember their version at save time;
unpacking a tensor modified in place since raises PyTorch's RuntimeError. A saved *output*
(`result`) is kept as PyTorch's SavedVariable keeps one: its data, dtype and version counter
without its grad_fn (`saved_output`), so a node and its output form no reference cycle and a
graph is freed by reference counting, not by the cyclic garbage collector; the engine gives the
rule the output with its grad_fn back (`restored_output`) only when create_graph needs it; a
multi-output op whose rule reads only some outputs declares them (`extra={"result_read": ...}`)
and only those are saved (max(dim): its indices, as PyTorch).
An op whose declaration marks its rule as computing on arrays too (`extra={"array_vjp": True}`,
_ops/_util.py's ON_ARRAYS) has it run on the arrays by its applier in a first-order CPU backward
(`_array_call`): no op dispatched, as the first-order branches of other rules (`plain_grad`).
"""
from __future__ import annotations

import itertools
import weakref

import numpy as np

from .. import _dtype as dt, _profiling
from .._code_cache import compile_cached
from .._device import CPU, on_device as _on_device, placed as _placed
from .._device.transfer import data_copy as _data_copy, full as _full, \
    grads_device as _grads_device
from .._tensor import Tensor
from . import grad_mode
from .rule_args import rule_kwargs

_seq = itertools.count()

_FREED_MSG = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward.")


_PLAIN = {int, float, bool, str, type(None)}  # saved values that are never tensors


def _holds_tensor(v) -> bool:
    if isinstance(v, (list, tuple)):  # (a loop: an index's few ints cost no generator)
        for x in v:
            if type(x) not in _PLAIN and _holds_tensor(x):
                return True
        return False
    return isinstance(v, Tensor)


class Node:
    """A backward function: `apply(grads of outputs) -> grads of inputs`."""

    __slots__ = ("op", "attrs", "next_edges", "saved", "versions", "in_meta", "out_meta",
                 "multi", "seq", "pre_hooks", "hooks", "tensor_hooks", "retains", "freed",
                 "custom", "_metadata", "__weakref__")

    def __init__(self):
        self.seq = next(_seq)
        self.pre_hooks = None
        self.hooks = None
        self.tensor_hooks = None  # output_nr -> [hook]
        self.retains = None  # output_nr -> weakref(tensor)
        self.freed = False
        self.saved = None
        self.versions = ()
        self.custom = None
        self.multi = False  # the op returned a tuple/list: its rule gets a tuple of grads
        self._metadata = None

    @property
    def metadata(self) -> dict:
        """`Node.metadata`: a dict for the user's annotations, made on first use (a node per
        op call must stay cheap)."""
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def name(self) -> str:
        return _backward_name(self.op.name)

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"

    @property
    def next_functions(self):
        return tuple((e[0], e[1]) if e is not None else (None, 0) for e in self.next_edges)

    def register_hook(self, fn):
        self.hooks = (self.hooks or []) + [fn]
        return _RemovableHandle(self, "hooks", fn)

    def register_prehook(self, fn):
        self.pre_hooks = (self.pre_hooks or []) + [fn]
        return _RemovableHandle(self, "pre_hooks", fn)

    # -- saved tensors ---------------------------------------------------------------------------
    def unpack(self):
        if self.freed:
            raise RuntimeError(_FREED_MSG)
        for (t, v) in self.versions:
            if t._version[0] != v:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by "
                    f"an inplace operation: [{t.type()} [{', '.join(map(str, t.shape))}]]"
                    f"{_output_desc(t, self)}, is at version {t._version[0]}; expected version "
                    f"{v} instead. Hint: the backtrace further above can point at the operation "
                    "that failed to compute its gradient.")
        saved = self.saved
        if grad_mode._state.enabled and "result" in saved:  # create_graph: see `with_result`
            return with_result(self, saved)
        return saved

    def release(self):
        # as PyTorch frees only saved *tensors*: a rule that needs only metadata (a dtype, a
        # shape) keeps it and can run again (autocast's shared weight casts do)
        if not self.versions:  # (a loop, not any() over a generator: once per node)
            saved = self.saved
            if saved is None:
                return
            names = _MAYBE_TENSORS.get(self.op)
            if names is None:  # saved shapes and dtypes are never tensors: not searched
                # (less the attrs its declaration says never hold one: `extra={"plain_attrs":
                # (...)}`, e.g. a basic index's ints and slices: no search per node)
                plain = getattr(self.op, "extra", None) or {}
                plain = plain.get("plain_attrs", ())
                names = _MAYBE_TENSORS[self.op] = tuple(
                    n for kind, n in getattr(self.op, "vjp_params", None) or
                    [("attr", k) for k in saved]
                    if kind in ("attr", "slot", "result") and not (kind == "attr" and n in plain))
            for n in names:
                v = saved.get(n)
                if type(v) not in _PLAIN and _holds_tensor(v):  # (a number: no call)
                    break
            else:
                return
        self.freed = True
        self.saved = None
        self.versions = ()

    def apply(self, grads: list):
        """grads: one entry per output (None where no gradient arrived)."""
        op = self.op
        for i, g in enumerate(grads):
            if g is None:
                shape, d = self.out_meta[i]
                if d.category >= dt.FLOAT:  # on the device the others are on
                    grads[i] = _full(shape, 0, d, _grads_device(grads))
            elif g._dtype.category == dt.COMPLEX and not op.extra.get("complex_grad"):
                _no_complex(op.name)  # VJPs written for complex
        saved = self.unpack() if op.vjp_params else None
        g = tuple(grads) if self.multi else grads[0]
        kwargs = {}
        if saved is not None:
            kwargs = saved
            if op.vjp_params[-1][0] == "needs":  # (see _rule_params; not added to `saved`)
                kwargs = dict(saved)
                kwargs["needs_input_grad"] = tuple([e is not None for e in self.next_edges])
        dev = _placed[0] and _grads_device(grads)
        if dev and dev is not CPU:  # the rule's own constants and zeros are made there too
            with _on_device(dev):
                return self._normalize(op.vjp(g, **kwargs))
        res = op.vjp(g, **kwargs)
        return self._normalize(res)

    def _normalize(self, res):
        op = self.op
        if len(op.tensors) == 1:
            res = (res,)
        flat = flatten_slots(op, res)
        out = []
        for g, meta, edge in zip(flat, self.in_meta, self.next_edges):
            if edge is None or g is None or meta is None:
                out.append(None)
            elif type(g) is Tensor and g._data.shape == meta[0] and g._dtype is meta[1]:
                out.append(g)  # already the input's shape and dtype: nothing to fit
            else:
                out.append(_fit_any(g, meta))
        return out


def _fit_any(g, meta) -> Tensor:
    """`_fit` of a VJP's result (a Tensor, or a NumPy array or number: wrapped first)."""
    if not isinstance(g, Tensor):
        g = Tensor._make(np.asarray(g, meta[1].np), meta[1])
    return _fit(g, meta)


def _fit(g: Tensor, meta) -> Tensor:
    """Reduce a broadcast gradient to its input's shape and cast it to the input's dtype."""
    shape, d = meta
    if g._data.shape != shape:
        gs = g._data.shape
        lead = len(gs) - len(shape)
        dims = _FIT_DIMS.get((gs, shape))  # (a program fits few distinct pairs of shapes)
        if dims is None:
            dims = tuple(range(lead)) + tuple(
                i + lead for i, s in enumerate(shape) if s == 1 and gs[i + lead] != 1)
            if len(_FIT_DIMS) < _ONES_MAX:
                _FIT_DIMS[(gs, shape)] = dims
        if lead >= 0 and type(g) is Tensor and g._dtype is d and d in SUM_DTYPES and \
                g._device is _CPU_DEV and not ops_needed():
            # the `sum` and `reshape` below on the arrays (nothing records, nothing casts,
            # nothing watches): the sum op's own impl, no dispatch
            a = g._data
            if dims:
                # the sum op's impl for a float32/64 ndarray over sorted, wrapped dims is this
                # one reduce (reduce.py's `_sum`): called as it calls it, without its checks
                a = np.add.reduce(a, axis=dims, keepdims=True) if type(a) is np.ndarray \
                    else _sum_op().impl(a, dims, True)
            if lead:
                a = a.reshape(shape)
            if a.shape == shape:
                return Tensor._make(a, d)
        if dims:
            g = g.sum(dim=dims, keepdim=True)
        if lead:
            g = g.reshape(shape)
        if g._data.shape != shape:
            g = g.expand(shape) if g.numel() == 1 else g.reshape(shape)
    if g._dtype is not d:
        if g._dtype.category == dt.COMPLEX and d.category != dt.COMPLEX:
            from .._ops.complex_ops import real
            g = real(g)  # a real input's gradient is the real part (PyTorch's convention)
        g = g.to(d)
    return g


_FIT_DIMS: dict = {}  # (gradient shape, input shape) -> the dims `_fit` sums over
_CPU_DEV = Tensor._device  # (the class default: a tensor on another device sets its own)
SUM_DTYPES = (dt.float32, dt.float64)  # summed in their own dtype by `add` / `sum`, as NumPy
_REG = []  # [jitorch._ops.registry, the sum op] (imported at first use: they import autograd)


def _sum_op():
    if not _REG:
        from .._ops import registry
        _REG.extend((registry, registry.OPS["sum"]))
    return _REG[1]


def ops_needed() -> bool:
    """Gradient arithmetic in the engine must take the ops: grad mode is on (create_graph), or
    a profiler, autocast, dispatch mode (vmap, a tracer), device placement or forward-AD level
    is active (they must see the ops, or the ops them)."""
    return grad_mode._state.enabled or _profiling.slow[0] != 0  # (the fast path's one switch)


def plain_grad(g) -> bool:
    """`g` is a CPU tensor on a NumPy array and nothing must see the ops (`ops_needed`): a VJP
    may compute its result on the array with its ops' impls, without their dispatch."""
    return type(g) is Tensor and g._device is _CPU_DEV and type(g._data) is np.ndarray and \
        not ops_needed()


def _no_complex(name):
    raise NotImplementedError(
        f"jitorch: autograd through complex tensors is not implemented yet (op '{name}')")


class AccumulateGrad(Node):
    """Writes (or adds to) a leaf's `.grad`."""

    __slots__ = ("variable", "post_hooks")

    def __init__(self, variable: Tensor):
        super().__init__()
        self.variable = variable
        self.post_hooks = None  # Tensor.register_post_accumulate_grad_hook: fn(variable)
        self.next_edges = ()
        # (the shared meta: a recorder reads a leaf's meta here, `in_meta_of`'s tuple)
        self.out_meta = meta_one(variable._data.shape, variable._dtype)

    def name(self):
        return "AccumulateGrad"

    def accumulate(self, g: Tensor, create_graph: bool, owned: bool = False):
        """`owned`: `g` is the engine's own fan-in sum (referenced nowhere else): a fresh
        `.grad` of the same layout takes it instead of a copy."""
        var = self.variable
        # (only a BatchedTensor has `_vlevel`: a plain tensor skips the failing attribute lookup)
        if type(g) is not Tensor and getattr(g, "_vlevel", 0):  # per-sample: not one .grad
            raise RuntimeError("vmap: backward() into a tensor that is not vmapped over is not "
                               "supported inside vmap; use jitorch.func.grad / vjp instead")
        if g._dtype is not var._dtype:
            g = g.to(var._dtype)
        if var._grad is None:
            # PyTorch's layout contract: a fresh .grad of a dense parameter has the parameter's
            # strides (a Linear weight's grad arrives transposed from its matmul VJP)
            if create_graph:
                var._grad = g
            elif owned and type(g) is Tensor and g._device is _CPU_DEV and \
                    type(g._data) is np.ndarray and g._data.strides == var._data.strides:
                var._grad = g
            elif g._device is _CPU_DEV:  # `_data_copy` on the CPU, without its device lookups
                var._grad = Tensor._make(np.array(g._data, order=_layout(var._data)), g._dtype)
            else:
                var._grad = _data_copy(g, _layout(var._data))
        elif create_graph or var._grad._requires_grad:
            var._grad = var._grad + g
        else:
            var._grad._data += g._data
            var._grad._version[0] += 1
        if self.post_hooks:
            for hook in list(self.post_hooks):
                hook(var)


def _layout(a: np.ndarray) -> str:
    return "C" if a.flags.c_contiguous else "F" if a.flags.f_contiguous else "K"


class _AccumOp:
    name = "AccumulateGrad"


def _backward_name(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.strip("_").split("_")) + "Backward0"


def _output_desc(t: Tensor, node=None) -> str:
    fn = t._grad_fn
    if fn is None and node is not None and _is_saved_output(t, node.saved):
        fn = node  # a saved output (`saved_output`): its grad_fn is the node that saved it
    if fn is None:
        return ""
    return f", which is output {t._output_nr} of {fn.name()}"


def _is_saved_output(t, saved) -> bool:
    r = saved.get("result") if saved else None
    return r is t or (type(r) is tuple and any(x is t for x in r))


# --- saved outputs --------------------------------------------------------------------------------
_new = object.__new__


def saved_output(o, nr: int = 0):
    """What a node saves of its output `o` (its `nr`-th): a tensor on the same data, dtype and
    version counter (an in-place change of `o` is still caught) without `o`'s grad_fn, as
    PyTorch's SavedVariable saves an output without its grad_fn: the node keeps no reference
    back to itself. Tensor subclasses (vmap's batched tensors) are kept as they are."""
    if type(o) is not Tensor:
        return o
    t = _same_data(o)
    if nr:
        t._output_nr = nr
    return t


def _same_data(o):
    """A plain tensor on `o`'s data, dtype, version counter and device, without autograd state."""
    t = _new(Tensor)
    t._data = o._data
    t._dtype = o._dtype
    t._version = o._version
    if o._device is not _CPU_DEV:
        t._device = o._device
    return t


def saved_outputs(outs, read=None) -> tuple:
    """`saved_output` of each of a multi-output op's outputs (its rule indexes them); a CPU
    tensor's `_same_data` inline (max(dim) in a Python loop saves two per call). `read`: the
    positions the rule reads (its declaration's `extra["result_read"]`), None for all; the
    others are saved as None, so no version of theirs is checked (PyTorch's max(dim) saves only
    its indices: its values may be changed in place before backward)."""
    r = []
    k = 0
    for o in outs:
        if read is not None and k not in read:
            r.append(None)
        elif type(o) is Tensor and o._device is _CPU_DEV:
            t = _new(Tensor)
            t._data = o._data
            t._dtype = o._dtype
            t._version = o._version
            if k:
                t._output_nr = k
            r.append(t)
        else:
            r.append(saved_output(o, k) if isinstance(o, Tensor) else o)
        k += 1
    return tuple(r)


def restored_output(r, node):
    """A saved output as a tensor whose grad_fn is `node` (made per unpack, held by no node):
    a rule run under create_graph differentiates through it into `node` (tanh's VJP reads its
    result: its second derivative flows through it)."""
    if type(r) is not Tensor or r._grad_fn is not None or r._dtype.category < dt.FLOAT:
        return r
    t = _same_data(r)
    t._requires_grad = True
    t._grad_fn = node
    t._output_nr = r._output_nr
    return t


def with_result(node, saved: dict) -> dict:
    """`saved` with its `result` restored (`restored_output`): the rule's arguments under
    create_graph."""
    saved = dict(saved)
    r = saved["result"]
    saved["result"] = tuple([restored_output(x, node) for x in r]) if type(r) is tuple else \
        restored_output(r, node)
    return saved


def flatten_slots(op, values):
    """`values` (one per tensor slot of `op`) with each list slot's items in its place: one per
    input edge of the op's node."""
    if not op.lists:
        return values
    flat = []
    for name, v in zip(op.tensors, values):
        if name in op.lists:
            flat.extend(v)
        else:
            flat.append(v)
    return flat


def edge_of(t: Tensor):
    """Where gradient for `t` goes: its grad_fn output, or its (shared) accumulator."""
    if t._grad_fn is not None:
        return (t._grad_fn, t._output_nr)
    acc = t._accum() if t._accum is not None else None
    if acc is None:
        acc = AccumulateGrad(t)
        t._accum = weakref.ref(acc)
    return (acc, 0)


# Interned metas. Every node keeps `(shape, dtype)` tuples for its outputs and inputs; a program
# has few distinct ones, so each is made once and shared by all nodes (as `((shape, dtype),)`, a
# one-output node's `out_meta`). Each object a live node holds is one more allocation counted
# towards the cyclic garbage collector's next pass and one more object its passes walk: a CRF
# loop's graph holds ~900 nodes, and fresh metas were 4 of the ~10 objects per node.
_ONES: dict = {}  # (shape, dtype) -> ((shape, dtype),): its key is the meta itself
_ONES_MAX = 16384  # distinct metas kept (beyond them metas are made per node)


def meta_one(shape: tuple, d) -> tuple:
    """The shared `((shape, d),)`: a one-output node's `out_meta` (its item: the meta)."""
    key = (shape, d)
    w = _ONES.get(key)
    if w is None:
        w = (key,)
        if len(_ONES) < _ONES_MAX:
            _ONES[key] = w
    return w


def in_meta_of(t: Tensor):
    """`(shape, dtype)` of an input that gets a gradient: the tuple its producer's node keeps
    for it when that still describes it (one tuple alive for both nodes, not two: each object a
    node keeps alive costs the garbage collector's generational passes over the graph). Inputs
    that get no gradient keep no meta (None): only gradients are fitted to it."""
    shape = t._data.shape
    n = t._grad_fn
    if n is not None:
        outs = n.out_meta
        nr = t._output_nr
        if nr < len(outs):
            m = outs[nr]
            if m is not None and m[1] is t._dtype and m[0] == shape:
                return m
    return meta_one(shape, t._dtype)[0]


def record(op, slots, attrs, outs) -> None:
    """Attach a backward node to `outs` if any input requires grad."""
    rec = _RECORDERS.get(op)
    if rec is None:
        rec = _RECORDERS[op] = _make_recorder(op)
    if rec is not False:
        return rec(slots, attrs, outs)
    _record_any(op, slots, attrs, outs)


# Per-op recorders: `record`'s work written out for one op's slots and its VJP's parameters
# (no generic loops over slot names, no `rule_kwargs` per call: ~2x cheaper per node). A list
# slot (cat's `tensors`, `_index`'s `indices`) is a loop over its items, one edge each, as
# `flatten_slots` places them. Ops with shape-only slots, and VJPs asking a list slot's dtype,
# keep the generic `_record_any`; both build the same node.
_RECORDERS: dict = {}  # op -> its recorder, or False (the generic path)


def _make_recorder(op):
    """`record`'s recorder of `op` (its positional form as its `positional`), or False."""
    made = _make_recorders(op)
    if not made:
        return False
    made[0].positional = made[1]
    return made[0]


def positional_recorder(op):
    """`op`'s recorder taking `(*slots, *attrs in op.attrs' order, outs)` positionally, or None
    (an op `record` runs generically): what the registry's generated fast path calls directly,
    without the slots tuple, the attrs dict and `record`'s lookup of a call."""
    rec = _RECORDERS.get(op)
    if rec is None:
        rec = _RECORDERS[op] = _make_recorder(op)
    return rec.positional if rec is not False else None


def clear_recorders() -> None:
    """Forget every recorder made (`record`'s and those the registry's fast paths hold): the
    next calls make them again, with `_make_recorder` as it then is (tests patch it)."""
    from .._ops.registry import reset_fast_recorders  # (the registry imports this module)
    _RECORDERS.clear()
    reset_fast_recorders()


def _make_recorders(op):
    """`(rec(slots, attrs, outs), rec(*slots, *attrs, outs))`: one body under two headers, or
    False (the generic path)."""
    if op.shape_only:
        return False
    ts = op.tensors
    n = len(ts)
    idx = {name: i for i, name in enumerate(ts)}
    lists = {i for i, name in enumerate(ts) if name in op.lists}
    src = []  # the body; the headers are put before it at the end
    for i in range(n):
        if i in lists:  # any item that requires grad
            src += [f"    _r{i} = False",
                    f"    for _x in _s{i}:",
                    f"        if isinstance(_x, _T) and _x._requires_grad:",
                    f"            _r{i} = True",
                    f"            break"]
        else:
            src.append(f"    _r{i} = isinstance(_s{i}, _T) and _s{i}._requires_grad")
    # the node is made without `Node.__init__` (a call): every slot is set here, as it sets them
    src += [f"    if not ({' or '.join(f'_r{i}' for i in range(n))}):",
            "        return",
            "    node = _new(_Node)",
            "    node.seq = _next(_seq)",
            "    node.op = _op",
            "    node.pre_hooks = node.hooks = node.tensor_hooks = node.retains = None",
            "    node.custom = node._metadata = None",
            "    node.freed = False"]
    # an edge as `edge_of` makes it and a meta as `in_meta_of` finds it, inline for an input
    # with history (two calls per edge saved); a leaf's edge and meta take the calls
    for i in range(n):
        if i not in lists:
            src += [f"    if _r{i}:",
                    f"        _n = _s{i}._grad_fn",
                    "        if _n is None:",  # a leaf: its live accumulator's edge and meta
                    f"            _w = _s{i}._accum",
                    "            _a = _w() if _w is not None else None",
                    "            if _a is None:",
                    f"                _e{i} = _edge(_s{i})",
                    f"                _a = _e{i}[0]",
                    "            else:",
                    f"                _e{i} = (_a, 0)",
                    f"            _m{i} = _a.out_meta[0]",
                    f"            if _m{i}[1] is not _s{i}._dtype or _m{i}[0] != _s{i}._data.shape:",
                    f"                _m{i} = _meta(_s{i})",
                    "        else:",
                    f"            _k = _s{i}._output_nr",
                    f"            _e{i} = (_n, _k)",
                    "            _o = _n.out_meta",
                    f"            _m{i} = _o[_k] if _k < len(_o) else None",
                    f"            if _m{i} is None or _m{i}[1] is not _s{i}._dtype or "
                    f"_m{i}[0] != _s{i}._data.shape:",
                    f"                _m{i} = _meta(_s{i})",
                    "    else:",
                    f"        _e{i} = _m{i} = None"]
    if not lists and n == 1:  # (its meta's shared one-tuple: no tuple made per node)
        src += ["    node.next_edges = (_e0,)",
                "    node.in_meta = (_ones_get(_m0) or _one(*_m0)) if _m0 is not None else "
                "(None,)"]
    elif not lists:
        src += ["    node.next_edges = (" + "".join(f"_e{i}, " for i in range(n)) + ")",
                "    node.in_meta = (" + "".join(f"_m{i}, " for i in range(n)) + ")"]
    else:  # one edge and meta per item of a list slot, in slot order
        src += ["    _E = []", "    _M = []"]
        for i in range(n):
            if i not in lists:
                src += [f"    _E.append(_e{i})", f"    _M.append(_m{i})"]
                continue
            # (an item with history: its edge and meta inline, as for a tensor slot above;
            # a leaf's take the calls)
            src += [f"    for _x in _s{i}:",
                    "        if isinstance(_x, _T) and _x._requires_grad:",
                    "            _n = _x._grad_fn",
                    "            if _n is None:",
                    "                _E.append(_edge(_x))",
                    "                _M.append(_meta(_x))",
                    "            else:",
                    "                _k = _x._output_nr",
                    "                _E.append((_n, _k))",
                    "                _o = _n.out_meta",
                    "                _mm = _o[_k] if _k < len(_o) else None",
                    "                if _mm is None or _mm[1] is not _x._dtype or "
                    "_mm[0] != _x._data.shape:",
                    "                    _mm = _meta(_x)",
                    "                _M.append(_mm)",
                    "        else:",
                    "            _E.append(None)",
                    "            _M.append(None)"]
        src += ["    node.next_edges = tuple(_E)", "    node.in_meta = tuple(_M)"]
    src += ["    if type(outs) is _T:",  # one output (most ops): no loop over outputs
            "        node.multi = False",
            "        _k = (outs._data.shape, outs._dtype)",
            "        node.out_meta = _ones_get(_k) or _one(*_k)",
            "        outs_l = None",
            "    else:",
            "        node.multi = _mu = isinstance(outs, (tuple, list))",
            "        outs_l = outs if _mu else (outs,)",
            "        _ml = []",  # (a loop: no comprehension's frame; the interned metas read inline)
            "        for o in outs_l:",
            "            _k = (o._data.shape, o._dtype)",
            "            _ml.append((_ones_get(_k) or _one(*_k))[0])",
            "        node.out_meta = tuple(_ml)"]
    vers_expr = "()"
    saved_expr = "None"
    if op.vjp_params:
        items, vers = [], []
        # (each entry of vers as one version pair and the condition for it to be the whole
        # entry: a saved slot that is a tensor, a result that is one tensor)
        pairs, conds = [], []
        for kind, name in op.vjp_params:
            if kind == "attr":
                if name not in op.attrs:  # (no such rule: the generic path)
                    return False
                items.append(f"{name!r}: _a{op.attrs.index(name)}")
            elif kind == "slot" and idx[name] in lists:  # the list as given; each tensor's version
                i = idx[name]
                items.append(f"{name!r}: _s{i}")
                vers.append(f"    for _t in _s{i}:\n"
                            f"        if isinstance(_t, _T):\n"
                            f"            vs.append((_t, _t._version[0]))")
            elif kind == "slot":
                i = idx[name]
                items.append(f"{name!r}: _s{i}")
                vers.append(f"    if isinstance(_s{i}, _T):\n"
                            f"        vs.append((_s{i}, _s{i}._version[0]))")
                pairs.append(f"(_s{i}, _s{i}._version[0]), ")
                conds.append(f"isinstance(_s{i}, _T)")
            elif kind == "result":  # kept without its grad_fn (see `saved_output`)
                src += ["    _ro = _keep(outs) if outs_l is None else _keep_all(outs_l, _read) "
                        "if node.multi else outs"]
                items.append(f"{name!r}: _ro")
                vers.append("    for _t in (_ro if outs_l is not None else (_ro,)):\n"
                            "        if isinstance(_t, _T):\n"
                            "            vs.append((_t, _t._version[0]))")
                pairs.append("(_ro, _ro._version[0]), ")
                conds.append("outs_l is None")
            elif kind == "shape" and idx[name] in lists:  # one shape per item
                items.append(f"{name + '_shape'!r}: tuple([_x._data.shape for _x in "
                             f"_s{idx[name]}])")
            elif kind == "dtype" and idx[name] in lists:  # (no such rule: the generic path)
                return False
            elif kind == "shape":
                i = idx[name]
                # (the meta's own shape tuple where there is one: one object less alive)
                items.append(f"{name + '_shape'!r}: _m{i}[0] if _m{i} is not None else "
                             f"_s{i}._data.shape if isinstance(_s{i}, _T) else ()")
            elif kind == "dtype":
                items.append(f"{name + '_dtype'!r}: _s{idx[name]}._dtype")
            elif kind == "needs":  # nothing saved: Node.apply passes it
                continue
            else:  # not a VJP parameter kind: the generic path raises as before
                return False
        if vers and len(pairs) == len(vers):  # every saved slot and result a tensor (the
            # common call): the tuple made at once, without the list
            src += ["    if " + " and ".join(conds) + ":",
                    "        vs = (" + "".join(pairs) + ")",
                    "    else:",
                    "        vs = []"] + ["    " + v.replace("\n", "\n    ") for v in vers] + [
                    "        vs = tuple(vs)"]
            vers_expr = "vs"
        elif vers:
            src += ["    vs = []"] + vers
            vers_expr = "tuple(vs)"
        saved_expr = "{" + ", ".join(items) + "}"
    src += [f"    node.versions = {vers_expr}",
            f"    node.saved = {saved_expr}",
            "    if outs_l is None:",
            "        if outs._dtype.category >= _FLOAT:",
            "            outs._requires_grad = True",
            "            outs._grad_fn = node",
            "            outs._output_nr = 0",
            "        return",
            "    for k, o in enumerate(outs_l):",
            "        if o._dtype.category >= _FLOAT:",
            "            o._requires_grad = True",
            "            o._grad_fn = node",
            "            o._output_nr = k"]
    ns = {"_T": Tensor, "_Node": Node, "_op": op, "_edge": edge_of, "_FLOAT": dt.FLOAT,
          "_new": object.__new__, "_next": next, "_seq": _seq, "_meta": in_meta_of,
          "_one": meta_one, "_ones_get": _ONES.get, "_keep": saved_output,
          "_keep_all": saved_outputs, "_read": op.extra.get("result_read")}
    na = len(op.attrs)
    slots = "".join(f"_s{i}, " for i in range(n))
    attrs = "".join(f"_a{j}, " for j in range(na))
    # the dict form unpacks what the positional one is given (only the attrs the rule saves)
    used = {f"_a{op.attrs.index(name)}" for kind, name in op.vjp_params if kind == "attr"}
    head = ["def rec(slots, attrs, outs):", f"    {slots}= slots"] + [
        f"    _a{j} = attrs[{a!r}]" for j, a in enumerate(op.attrs) if f"_a{j}" in used]
    text = "\n".join(src) + "\n"
    exec(compile_cached("\n".join(head) + "\n" + text + f"def recp({slots}{attrs}outs):\n" + text,
                        f"<jitorch recorder {op.name}>"), ns)
    return ns["rec"], ns["recp"]


# Per-op appliers: `Node.apply` (and `_normalize`) written out for one op's tensor slots and
# VJP parameters, as the recorders are: no loops over one-item lists, no calls to unpack or
# flatten. The engine runs a plain node (no `custom`) with its op's applier; a node whose grads
# or results leave the common case (several outputs, a missing gradient, a device, another count
# of results) runs `Node.apply`: both compute the same. An op with list slots gets the same
# applier up to its VJP's call; `_normalize` then places each item's gradient (their number is
# known only per call).
_APPLIERS: dict = {}  # op -> its applier


def applier(op):
    app = _APPLIERS.get(op)
    if app is None:
        app = _APPLIERS[op] = _make_applier(op)
    return app


def _make_applier(op):
    n = len(op.tensors)
    src = ["def app(node, grads):",
           "    if _placed[0] or node.multi or len(grads) != 1:",
           "        return _apply(node, grads)",
           "    g = grads[0]",
           "    if g is None:",
           "        return _apply(node, grads)"]
    if not op.extra.get("complex_grad") and not op.extra.get("array_vjp"):
        src += _complex_check(op, "    ")  # (an array_vjp op's: where its arrays did not serve)
    if op.vjp_params:
        src += ["    if node.freed:",
                "        node.unpack()  # raises PyTorch's error",
                "    for _t, _v in node.versions:  # (`unpack`'s check inline: no call)",
                "        if _t._version[0] != _v:",
                "            node.unpack()  # raises PyTorch's error",
                "    kw = node.saved"]
        if any(kind == "result" for kind, _ in op.vjp_params):
            src += ["    if _grad_state.enabled:  # create_graph: the output with its grad_fn",
                    "        kw = _with_result(node, kw)"]
        if op.vjp_params[-1][0] == "needs":  # (passed beside the saved values: no dict copy)
            src += ["    _ne = node.next_edges",
                    "    _needs = (" + "".join(f"_ne[{i}] is not None, " for i in range(n)) + ")"
                    if not op.lists else
                    "    _needs = tuple([e is not None for e in _ne])"]
            src += _array_call(op, "    res = _vjp(g, **kw, needs_input_grad=_needs)")
        else:
            src += _array_call(op, "    res = _vjp(g, **kw)")
    else:
        src += _array_call(op, "    res = _vjp(g)")
    names = "".join(f"_g{i}, " for i in range(n))
    if op.lists:
        src.append("    return node._normalize(res)")
    elif n == 1:
        src.append("    _g0 = res")
    else:
        src += [f"    if type(res) is not tuple or len(res) != {n}:",
                "        return node._normalize(res)",
                f"    {names}= res"]
    if not op.lists:
        src += [f"    {''.join(f'_e{i}, ' for i in range(n))}= node.next_edges",
                f"    {''.join(f'_m{i}, ' for i in range(n))}= node.in_meta"]
        for i in range(n):  # as `_normalize`: the input's shape and dtype, else fitted
            src += [f"    if _e{i} is None or _g{i} is None:",
                    f"        _g{i} = None",
                    f"    elif type(_g{i}) is not _T or _g{i}._data.shape != _m{i}[0] or "
                    f"_g{i}._dtype is not _m{i}[1]:",
                    f"        _g{i} = _fit_any(_g{i}, _m{i})"]
        src.append(f"    return [{names}]")
    ns = {"_T": Tensor, "_apply": Node.apply, "_placed": _placed, "_COMPLEX": dt.COMPLEX,
          "_no_complex": _no_complex, "_vjp": op.vjp, "_fit_any": _fit_any,
          "_grad_state": grad_mode._state, "_with_result": with_result, "_CPU": _CPU_DEV,
          "_nd": np.ndarray, "_asarray": np.asarray, "_SUM": SUM_DTYPES,
          "_slow": _profiling.slow, "_MISS": _MISS}
    exec(compile_cached("\n".join(src) + "\n", f"<jitorch applier {op.name}>"), ns)
    return ns["app"]


_MISS = object()  # (an applier's result not made yet)


def _array_call(op, call: str) -> list:
    """The applier's lines that run an `array_vjp` op's rule on the arrays (its declaration's
    `extra={"array_vjp": True}`: the rule is written in operators and methods that NumPy arrays
    and tensors share, so it computes on both): in a first-order CPU backward (`plain_grad`)
    where the gradient and every saved tensor are float32/float64 of one dtype, the rule runs on
    their arrays, as its ops' impls would compute it, without their dispatch; its one result
    (an op of one tensor slot) or tuple of results, each None or an array (a NumPy scalar) of
    the gradient's dtype, are wrapped; anything else (a result in another dtype, another count
    of results) runs the rule on the tensors below. Nothing for other ops."""
    if not op.extra.get("array_vjp"):
        return [call]
    if op.lists:  # (its rule's results hold lists: not wrapped here)
        raise ValueError(f"op '{op.name}': array_vjp is for ops without list slots")
    # `plain_grad(g)` inline (no call per node), then the saved tensors' dtype and arrays; the
    # rule called positionally (its parameters in `vjp_params` order)
    src = ["    res = _MISS",
           "    if type(g) is _T and type(g._data) is _nd and g._dtype in _SUM and "
           "g._device is _CPU and not _grad_state.enabled and _slow[0] == 0:  # `_array_call`"]
    cond, args = [], ["g._data"]
    for k, (kind, name) in enumerate(op.vjp_params):
        if kind in ("slot", "result"):
            src.append(f"        _v{k} = kw[{name!r}]")
            cond.append(f"type(_v{k}) is _T and _v{k}._dtype is g._dtype and "
                        f"type(_v{k}._data) is _nd")
            args.append(f"_v{k}._data")
        elif kind == "needs":
            args.append("_needs")
        else:  # an attr, or a slot's saved shape or dtype (`shape`: `<slot>_shape`)
            args.append(f"kw[{name if kind == 'attr' else f'{name}_{kind}'!r}]")
    src.append(f"        if {' and '.join(cond)}:" if cond else
               "        if True:  # (no saved tensor)")
    src.append(f"            _r = _vjp({', '.join(args)})")
    # each result None or an array (a NumPy scalar: a 0-d one) of g's dtype, then wrapped
    n = len(op.tensors)
    outs = ["_r"] if n == 1 else [f"_r{i}" for i in range(n)]
    if n > 1:
        src += [f"            if type(_r) is tuple and len(_r) == {n}:",
                f"                {', '.join(outs)}, = _r"]
    ind = "            " if n == 1 else "                "
    for o in outs:
        src += [f"{ind}if {o} is not None and type({o}) is not _nd:",
                f"{ind}    {o} = _asarray({o})"]
    ok = " and ".join(f"({o} is None or {o}.dtype is g._data.dtype)" if n > 1 else
                      f"{o} is not None and {o}.dtype is g._data.dtype" for o in outs)
    made = ", ".join(f"None if {o} is None else _T._make({o}, g._dtype)" for o in outs)
    src += [f"{ind}if {ok}:",
            f"{ind}    res = {'_T._make(_r, g._dtype)' if n == 1 else f'({made})'}"]
    # the rule on the tensors where the arrays did not serve (only there can g be complex: the
    # arrays serve float32/float64 alone)
    return src + ["    if res is _MISS:"] + (
        [] if op.extra.get("complex_grad") else _complex_check(op, "        ")) + ["    " + call]


def _complex_check(op, ind: str) -> list:
    """An applier's lines that raise for a complex gradient of an op whose VJP is not written
    for complex (`Node.apply`'s check)."""
    return [f"{ind}if g._dtype.category == _COMPLEX:", f"{ind}    _no_complex({op.name!r})"]


def _record_any(op, slots, attrs, outs) -> None:
    """`record` for any op (list slots, shape-only slots)."""
    flat = flatten_slots(op, slots)
    # a slot read for its shape only has no edge (ops with shape-only slots have no list slots)
    live = flat if not op.shape_only else [
        None if n in op.shape_only else t for n, t in zip(op.tensors, flat)]
    for t in live:
        if isinstance(t, Tensor) and t._requires_grad:
            break
    else:
        return
    node = Node()
    node.op = op
    node.next_edges = tuple([edge_of(t) if isinstance(t, Tensor) and t._requires_grad else None
                             for t in live])
    node.in_meta = tuple([in_meta_of(t) if e is not None else None
                          for t, e in zip(flat, node.next_edges)])
    node.multi = multi = isinstance(outs, (tuple, list))
    outs_l = outs if multi else (outs,)
    node.out_meta = tuple([meta_one(o._data.shape, o._dtype)[0] for o in outs_l])
    if op.vjp_params:
        saved = rule_kwargs(op, op.vjp_params, slots, attrs, outs)
        if "result" in saved:  # kept without its grad_fn (see `saved_output`)
            saved["result"] = saved_outputs(outs_l, op.extra.get("result_read")) if multi \
                else saved_output(outs)
        names = _SAVED_TENSORS.get(op)
        if names is None:
            names = _SAVED_TENSORS[op] = tuple(n for kind, n in op.vjp_params
                                               if kind in ("slot", "result"))
        if names:
            versions = []
            for name in names:  # saved tensors remember their version
                v = saved[name]
                for t in (v if isinstance(v, (list, tuple)) else (v,)):
                    if isinstance(t, Tensor):
                        versions.append((t, t._version[0]))
            node.versions = tuple(versions)
        node.saved = saved
    for k, o in enumerate(outs_l):
        if o._dtype.category >= dt.FLOAT:
            o._requires_grad = True
            o._grad_fn = node
            o._output_nr = k


# op -> the names of its saved values that may hold a tensor (`Node.release` searches only them)
_MAYBE_TENSORS: dict = {}
_SAVED_TENSORS: dict = {}  # op -> the names of its VJP's saved tensors (slots and `result`)


# --- tensor hooks -------------------------------------------------------------------------------
class _RemovableHandle:
    def __init__(self, owner, attr, fn, key=None):
        self.owner, self.attr, self.fn, self.key = owner, attr, fn, key

    def remove(self):
        hooks = getattr(self.owner, self.attr)
        if self.key is not None:
            hooks = hooks.get(self.key, [])
        if hooks and self.fn in hooks:
            hooks.remove(self.fn)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def register_tensor_hook(t: Tensor, hook):
    if not t._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if t._grad_fn is None:
        acc, _ = edge_of(t)
        t._hooks = acc  # keep the accumulator (and so its hooks) alive with the tensor
        acc.tensor_hooks = acc.tensor_hooks or {}
        acc.tensor_hooks.setdefault(0, []).append(hook)
        return _RemovableHandle(acc, "tensor_hooks", hook, 0)
    node = t._grad_fn
    node.tensor_hooks = node.tensor_hooks or {}
    node.tensor_hooks.setdefault(t._output_nr, []).append(hook)
    return _RemovableHandle(node, "tensor_hooks", hook, t._output_nr)


def register_post_accumulate_grad_hook(t: Tensor, hook):
    """`hook(t)` runs each time backward has accumulated a gradient into leaf `t`'s `.grad`."""
    if t._grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    if not t._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    acc, _ = edge_of(t)
    t._hooks = acc  # keep the accumulator (and so its hooks) alive with the tensor
    if acc.post_hooks is None:
        acc.post_hooks = []
    acc.post_hooks.append(hook)
    return _RemovableHandle(acc, "post_hooks", hook)


def retain_grad(t: Tensor) -> None:
    if not t._requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if t._grad_fn is None or t._retains_grad:
        return
    node = t._grad_fn
    node.retains = node.retains or {}
    node.retains[t._output_nr] = weakref.ref(t)
    t._retains_grad = True
