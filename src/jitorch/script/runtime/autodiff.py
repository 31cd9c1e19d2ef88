"""The runtime side of autodiff: a scripted call with inputs that require grad.

Owns `build(sf, arg_types, static, args)` -> (`AutodiffEntry` | None, reason). The entry runs a
compiled (or, per program, interpreted) forward that also returns the saved values, then hangs
ONE node on the eager tape (`grad_node.attach`) whose backward runs the backward program.

Choices (see passes/autodiff.py): differentiation happens on the specialised graph before
fusion (`_pre_fusion`); the forward program is shape-generic. Sizes the VJP rules read are
run-time values saved by the forward, so one backward serves every size with the same 0/1/many
pattern (`Differentiated.key_kind == "pattern"`); backward programs are cached per `shape_key`
(that pattern, or exact shapes where differentiate could not make the backward size-generic)
and built lazily at the first backward for the key. Another pattern may save other sizes (a
size-1 dim is no run-time value): when its saved layout differs, it gets its own forward.
A target whose entries hold a `List[int]` as one array gets the saved int scalars packed into
one such list (passes/autodiff_pack.py).
The forward returns only the saved values that are not graph inputs (`_without_inputs`):
`run` inserts the inputs it holds among them for the backward (fewer values crossing a compiled
entry's boundary, each of which costs compile time). When `passes.autodiff` or `grad_node` is
missing, or the graph is not differentiable, `build` returns the reason and the caller
interprets the graph with eager autograd (correct, not compiled).
"""
from __future__ import annotations

import time

from ... import _fork
from ..._tensor import Tensor
from ...autograd import grad_mode
from .. import ir
from . import programs, stats
from ..kernels import compile_gc
from ..kernels.signals import RaiseInInterpreter
from .entry import _boundary, _Entry


def _differentiate(base: ir.Graph, args, **kw):
    """autodiff.differentiate, its forward and backward on `base`'s device: the program runs
    on the one device of its arguments, so both pick that device's target (passes/types.py).
    Random ops in its example runs (dropout masks) leave the generator as it was."""
    from ..passes import autodiff, types as _types
    from ... import _philox
    with _philox.scratch():  # its example runs draw no numbers from the user's stream
        d = autodiff.differentiate(base, args, **kw)
    device = _types.one_device([p.type for p in base.block.params])
    _types.place_traced_factories(device, d.backward)
    _types.stamp_device(device, d.forward, d.backward)
    if _packs_ints(device):
        from ..passes.autodiff_pack import pack_saved_ints
        d = pack_saved_ints(d)
    d.forward = _without_inputs(d)
    return d


def _packs_ints(device: str) -> bool:
    """Does the target of `device` take the saved int scalars as one list (codegen/target.py)?"""
    from ..codegen import NotLowered
    from ..codegen.target import get_target
    try:
        return get_target(device).packs_saved_ints
    except (NotLowered, ImportError, NotImplementedError):  # (interpreted: nothing crosses)
        return False


def _without_inputs(d) -> ir.Graph:
    """`d.forward` returning only the saved values that are not graph inputs: `run` hands
    the inputs it holds to the backward itself (every array a compiled entry returns costs
    compile time, its boxing and a wider return aggregate; issue 17)."""
    n = len(d.output_requires_grad)
    rets = d.forward.block.returns
    keep = rets[:n] + [r for r, i in zip(rets[n:], d.saved_inputs) if i is None]
    if len(keep) == len(rets):
        return d.forward
    return ir.Graph(d.forward.name, ir.Block(d.forward.block.params, d.forward.block.nodes,
                                             keep))


def _fed(d) -> tuple:
    """(position among the saved values, graph input index) of the saved values that are
    graph inputs, by position: the forward does not return them (_without_inputs)."""
    return tuple((k, i) for k, i in enumerate(d.saved_inputs) if i is not None)


class _Held:
    """The wrap of a saved input: the caller's own value (see AutodiffEntry.run)."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __call__(self, _raw):
        return self.value


def _pre_fusion(graph: ir.Graph, arg_types, static=None) -> ir.Graph:
    """Specialise and run the generic passes that come before autodiff (not fusion)."""
    from ..passes import types as _types
    from ..passes import pipeline
    g = _types.specialize(graph, arg_types, static)
    return pipeline.run(g, passes=pipeline.BEFORE_AUTODIFF)


class AutodiffEntry:
    how = "compiled"
    reason = None
    plan_key = None  # its key in the plan cache (runtime/plans.py), where it has one

    def __init__(self, sf, base: ir.Graph, d, fwd_entry, arg_types, static=None):
        self.base, self.d, self.fwd, self.arg_types = base, d, fwd_entry, arg_types
        self.static = static
        self.fwds: dict = {}  # shape key -> forward entry, for keys whose saved layout differs
        self.forward = fwd_entry
        self.n_out = len(d.output_requires_grad)  # (one per output of the graph)
        self.bwd: dict = {}
        self.diffs = {d.shape_key: d}
        self.fed: dict = {}  # shape key -> _fed(its Differentiated)
        self.lock = _fork.lock()
        self.name = sf.name
        self.first = True

    def source(self) -> str:
        parts = []
        if self.fwd.kind == "interpreted":
            parts.append(f"# forward runs interpreted: {self.fwd.reason}\n")
        else:
            parts.append("# forward\n" + self.fwd.source)
        for k, e in self.bwd.items():
            if e.kind == "interpreted":
                parts.append(f"# backward for shapes {k} runs interpreted: {e.reason}\n")
            else:
                parts.append(f"# backward for shapes {k}\n" + e.source)
        return "\n".join(parts)

    def run(self, args, sf):
        from . import grad_node
        # the backward is keyed by what its graph depends on: the 0/1/many pattern of the
        # input shapes when differentiate() found it size-generic, else the exact shapes
        sk = self.d.key_of(args)
        fwd = self.fwd if sk == self.d.shape_key else self._forward_for(sk, args)
        n = self.n_out
        saved_wraps = xs = None
        with grad_mode.no_grad():
            if fwd is self.fwd and self.first and self.fwd.kind == "compiled":
                outs, how = programs.first_call(self.fwd, args)
                if outs is None:
                    outs = self.fwd.run(args)
                self.how, self.first = how, False
            elif _direct(fwd):
                # the program on boundary values; only the outputs become Tensors: the saved
                # values stay as the program returned them (arrays, sizes), which is what the
                # backward program takes (wrapping ~20 of them per call, to unwrap them again
                # at backward, was a third of this boundary's cost on an MLP)
                xs = [a._data if type(a) is Tensor else _boundary(a) for a in args]
                res = fwd.call(xs)
                if type(res) is not tuple:
                    res = (res,)
                wraps = fwd.wraps
                outs = [w(r) for w, r in zip(wraps[:n], res[:n])]
                outs += res[n:]
                saved_wraps = list(wraps[n:])
            else:
                outs = fwd.run(args)
        outputs, saved = list(outs[:n]), list(outs[n:])
        inputs = list(args)
        d = self.diffs.get(sk, self.d)
        fed = self.fed.get(sk)
        if fed is None:
            fed = self.fed[sk] = _fed(d)
        for k, i in fed:  # (ascending k: each lands at its position)
            if xs is None:
                saved.insert(k, inputs[i])
            else:  # raw values, as the forward program got them
                saved.insert(k, xs[i])
                saved_wraps.insert(k, _Held(inputs[i]))
        entry = self

        def run_backward(grads):
            bw = entry._backward_for(sk, inputs)
            with grad_mode.no_grad():
                return bw.run_saved(list(grads), saved, saved_wraps)

        return grad_node.attach(
            outputs, inputs, run_backward, saved=d.saved_to_check(inputs, outputs),
            name=sf.name, differentiable=d.output_requires_grad,
            # create_graph=True (higher order) re-runs the graph eagerly to build a tape
            create_graph_backward=grad_node.recompute_backward(self._base_of, inputs))

    def _base_of(self) -> ir.Graph:
        """The pre-fusion graph (called only for create_graph: a plan-cache entry,
        runtime/plans.py, derives it then)."""
        return self.base

    def _diff_for(self, sk, args):
        """The Differentiated for shape key `sk` (derived once per key, with the example's
        choice of symbolic sizes so saved layouts stay comparable). Holds self.lock."""
        d = self.diffs.get(sk)
        if d is None:
            d = self.diffs[sk] = _differentiate(self.base, args, symbolic=self.d.symbolic)
        return d

    def _forward_for(self, sk, args):
        """The forward for another shape key: the example's program when the key saves the
        same values (the usual case), else one built for it."""
        e = self.fwds.get(sk)
        if e is not None:
            return e
        with self.lock:
            e = self.fwds.get(sk)
            if e is not None:
                return e
            t0 = time.perf_counter()
            with compile_gc.raised():
                d = self._diff_for(sk, args)
                if d.layout == self.d.layout and d.n_saved == self.d.n_saved:
                    e = self.fwd
                else:
                    types = [programs._symbolic(v.type) for v in d.forward.inputs]
                    e, how = programs.build_entry(d.forward, types, self.static)
                    e = _LazyFirst(e, self.name + ".forward", f"saved layout of shapes {sk}",
                                   time.perf_counter() - t0)
            self.fwds[sk] = e
            return e

    def _backward_for(self, sk, args):
        e = self.bwd.get(sk)
        if e is not None:
            return e
        with self.lock:
            e = self.bwd.get(sk)
            if e is not None:
                return e
            t0 = time.perf_counter()
            with compile_gc.raised():
                d = self._diff_for(sk, args)
                types = [programs._symbolic(v.type) for v in d.backward.inputs]
                e, how = programs.build_entry(d.backward, types)
            dt_s = time.perf_counter() - t0
            why = f"shapes {sk}"
            if d.extra.get("sizes"):  # one backward per exact shape: say why
                why += f" ({d.extra['sizes']})"
            e = _LazyFirst(e, self.name + ".backward", why, dt_s)
            if e.kind == "interpreted":
                reason = f"backward: {e.reason}"
                stats.record_compile(dt_s, how="interpreted", reason=reason)
                stats.log_compile(e.name, e.why, "interpreted", dt_s, reason)
            self.bwd[sk] = e
        if sk == self.d.shape_key and self.plan_key is not None:
            from . import plans  # the example's backward: part of the plan's record
            plans.store_autodiff(self.plan_key, self)
        return e


def _direct(e) -> bool:
    """Can `e` (a forward or backward entry) be called on boundary values: a compiled program
    (not one compiling in the background: script/runtime/tiers.py, whose `run` switches it)?"""
    return isinstance(e, _Entry) and e.kind == "compiled" and e.fn is not None and \
        getattr(e, "pending", None) is None


class _LazyFirst:
    """A backward entry whose first run is where Numba compiles (or loads from disk): the
    compile is counted and logged then, with the time spent building it before."""

    def __init__(self, entry, name, why, build_s):
        self.entry, self.name, self.why, self.build_s = entry, name, why, build_s
        self.first = entry.kind == "compiled"
        self.lock = _fork.lock()

    kind = property(lambda self: self.entry.kind)
    reason = property(lambda self: self.entry.reason)
    source = property(lambda self: self.entry.source)

    def run_saved(self, grads, saved, saved_wraps=None):
        """`run(grads + saved)`; `saved_wraps` given: `saved` are the forward program's raw
        values (see AutodiffEntry.run), passed to a compiled backward as they are and made
        Tensors (`saved_wraps`) only for the other paths (first call, interpreter)."""
        if saved_wraps is None:
            return self.run(grads + saved)
        e = self.entry
        if not self.first and _direct(e):
            try:
                res = e.call([g._data if type(g) is Tensor else _boundary(g) for g in grads]
                             + saved)
            except RaiseInInterpreter:  # the checked path below runs it in the interpreter
                pass
            else:
                if type(res) is not tuple:
                    res = (res,)
                return [w(r) for w, r in zip(e.wraps, res)]
        return self.run(grads + [w(v) for w, v in zip(saved_wraps, saved)])

    def run(self, args):
        if self.first:
            with self.lock:
                if self.first:
                    t0 = time.perf_counter()
                    with compile_gc.raised():
                        outs, how = programs.first_call(self.entry, args)
                    if outs is None:
                        outs = self.entry.run(args)
                    dt_s = self.build_s + time.perf_counter() - t0
                    self.entry.build_s += dt_s
                    reason = self.entry.reason and f"backward: {self.entry.reason}"
                    stats.record_compile(dt_s, how=how, reason=reason)
                    stats.log_compile(self.name, self.why, how, dt_s, reason)
                    self.first = False
                    return outs
        try:
            return self.entry.run(args)
        except RaiseInInterpreter as e:  # codegen/__init__.py: the interpreter runs it
            signal = e  # (run outside the handler: its error does not chain the program's)
        from ..ir import interpreter
        outs = interpreter.run_graph(self.entry.graph, list(args))
        stats.record_rerun(self.name, signal)
        return outs


def build(sf, arg_types, static, args):
    """-> (AutodiffEntry, None) or (None, reason to interpret with eager autograd)."""
    from ..passes import autodiff
    try:
        base = _pre_fusion(sf.graph, arg_types, static)
        d = _differentiate(base, args)
    except autodiff.NotDifferentiable as e:
        return None, f"autodiff: interpreted ({e})"
    except Exception as e:
        if programs._strict():
            raise
        return None, f"autodiff: interpreted (internal error: {type(e).__name__}: {e})"
    fwd_types = [programs._symbolic(v.type) for v in d.forward.inputs]
    fwd, how = programs.build_entry(d.forward, fwd_types, static)
    ad = AutodiffEntry(sf, base, d, fwd, arg_types, static)
    if fwd.kind == "interpreted":
        ad.how = "interpreted"
        ad.reason = f"autodiff forward interpreted: {fwd.reason}"
    return ad, None
