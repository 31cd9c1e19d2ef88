"""The runtime: `ScriptFunction`, per-call specialisation, the in-memory compile cache.

Owns what happens at a scripted/traced function's boundary (the only place the GIL is needed):
1. arguments are bound (defaults, keywords) and checked against the graph's input types, with
   PyTorch-like TypeErrors;
2. the specialisation key is computed: per tensor (dtype, ndim, requires_grad when grad mode is
   on), per scalar its type, per static argument its value. Sizes are never part of it, so a new
   batch size never compiles;
3. a key miss builds the specialisation under a lock held for that key only (8 threads making
   the same first call build once; other keys proceed): `passes.types.specialize` ->
   `passes.pipeline.run` -> the target's `generate` -> `cache.load_module` (disk cache), and the
   first call runs inside the lock. That is when the program's Numba overload is made: loaded
   from Numba's disk cache when it is there, else (JITORCH_COMPILE=background, the default)
   compiled by the compile worker process while the calls run interpreted, switching to the
   program when it is ready (runtime/tiers.py, runtime/compile_worker.py), or (JITORCH_COMPILE=sync)
   compiled in the call;
4. tensors enter as the NumPy arrays they are (no copy: a strided, expanded or read-only array is
   read through its strides). The program's Numba overload is chosen by the arrays' (dtype,
   rank, layout) with the layout normalised to 'C' or 'A' (a Fortran-ordered or read-only array
   takes the 'A' / writable overload: the program never writes its inputs, see `runtime/entry.py`),
   and called through its entry point; outputs become Tensors of the graph's dtypes;
5. a function that writes to its arguments (`graph.mutated_inputs`) gets eager's result even
   when arguments share memory (`f(a, a)`, overlapping views, a stride-0 argument): such a call
   runs in place in the interpreter (`runtime/alias.py`); compiled programs detect it themselves
   (targets/cpu/lower_overlap.py), other tiers are checked here before they run.
Where a graph cannot be lowered (`codegen.NotLowered`, a Numba typing error, a missing compiler
part) the specialisation runs the IR interpreter instead and the reason is recorded
(`jitorch.jit.stats()`, `fn.code`, JITORCH_LOG=compile). With grad mode on and an input that
requires grad, `passes.autodiff` + `grad_node` give a compiled forward/backward pair that is one
node on the eager tape; without them (or when the graph is not differentiable) the interpreter
runs the graph with eager autograd recording the tape.

Env: JITORCH_STRICT=1 re-raises internal compiler errors instead of falling back (for the
compiler's own tests); JITORCH_LOG=compile logs compiles (see runtime/stats.py).
"""
from __future__ import annotations

import functools
import time

import numpy as np

from ... import _autocast, _fork, _settings, _threads
from ..._ops.registry import _mode_state
from ..._profiling import autocast_hook as _autocast_hook
from ..._tensor import Tensor
from ...autograd import grad_mode
from ...autograd.inplace import check_inplace_allowed, check_writable, rebase_history
from .. import ir
from ..frontend.trace import _active_count as _tracers, active_tracer as _active_tracer
from ..ir import graph_to_python, interpreter
from ..ir.util import used_inputs
from ..kernels import compile_gc
from ..kernels.signals import ArgumentsOverlap, ProgramFailed, RaiseInInterpreter
from . import alias, stats, tiers
from .keys import _any_rg, _arg_type, _describe_key_part, _make_fast_key, _other_key, \
    _type_name
from .programs import build_entry, first_call
from .entry import NotReady, _Entry, _interp
from .function_info import FunctionInfo

_gstate = grad_mode._state
_counters = stats._c
_new = object.__new__


_PLAIN = (ir.IntType, ir.FloatType, ir.BoolType, ir.StrType, ir.NoneType)  # hold no tensor


AUTOCAST_REASON = ("inside jitorch.autocast: runs interpreted with autocast's casts (bfloat16 and "
                   "float16 are not lowered on CPU yet)")


# --- the callable ---------------------------------------------------------------------------------
class ScriptFunction(FunctionInfo):
    """A scripted or traced function: callable like the original, compiled per signature.

    `.graph`: the frontend's IR; `.code`: the generated source of the last specialisation (or why
    it runs interpreted); `.graph_for(*args)`: the optimised graph used for these arguments;
    `.__wrapped__`: the Python function."""

    def __init__(self, graph: ir.Graph, fn=None, *, name: str | None = None,
                 static_args=(), defaults=None, signature=None, kind: str = "script",
                 tuple_out: bool = False, owner=None):
        self.graph = graph
        # calls run interpreted (autocast, while a program compiles): walked once, then as
        # Python source (ir/graph_to_python.py)
        self._interpret = graph_to_python.Runner(graph)
        self.__wrapped__ = fn
        self.name = name or graph.name
        self.__name__ = self.name
        self.__qualname__ = getattr(fn, "__qualname__", self.name)
        self.__doc__ = getattr(fn, "__doc__", None)
        self.__module__ = getattr(fn, "__module__", __name__)
        self.kind = kind
        self.owner = owner
        self._tuple_out = tuple_out
        self.python_ops = ()  # Python callables the program calls (they take the GIL)
        self._inputs = list(graph.inputs)
        self._names = [v.name or f"arg{i}" for i, v in enumerate(self._inputs)]
        self._types = [v.type for v in self._inputs]
        self._static = set(static_args or ())
        self._defaults = dict(defaults or {})
        self._signature = signature
        self._cache: dict = {}
        self._locks: dict = {}
        self._lock = _fork.lock()
        self._last: _Entry | None = None
        self._last_key = None
        # per input: how to check it and what its key part is (precomputed: the hot path)
        self._kinds = [self._kind_of(n, t) for n, t in zip(self._names, self._types)]
        self._all_tensors = all(k == "tensor" for k in self._kinds)
        self._fast: dict = {}  # flat key -> unrolled runner of a compiled entry (all tensors)
        self._fast_key = _make_fast_key(len(self._kinds)) if self._all_tensors else None
        # in-place writes to arguments (frontend/alias.py): the graph's last outputs are the
        # final values of these inputs, written back into the caller's tensors after a call
        self._mutated = tuple(getattr(graph, "mutated_inputs", None) or ())
        # of those, the ones written only inside `with no_grad():` (eager's rules for such a
        # write: a leaf that requires grad may be written, and the write records no history)
        self._no_grad = frozenset(getattr(graph, "no_grad_writes", None) or ())
        # nothing it returns or writes can carry a gradient (no tensor among its results, every
        # write inside `with no_grad():`: the hand-written SGD step): it is specialised and runs
        # as it does without grad mode, with no autodiff pair to build or run
        results = graph.outputs[:len(graph.outputs) - len(self._mutated)]
        self._grads = not (self._mutated and self._no_grad.issuperset(self._mutated) and all(
            isinstance(v.type, _PLAIN) for v in results))
        self._ret_alias = dict(getattr(graph, "return_aliases", None) or {})
        # inputs the graph uses (a use in any branch counts): an unused argument may share
        # memory with a written one (alias.overlap ignores it)
        self._read = used_inputs(graph) if self._mutated else ()
        if self._mutated:
            self._fast_key = None
        stats.register_function(self)

    def _kind_of(self, name, t):
        if name in self._static:
            return "static"
        if isinstance(t, ir.TensorType):
            return "tensor"
        for cls, k in ((ir.BoolType, "bool"), (ir.IntType, "int"), (ir.FloatType, "float"),
                       (ir.StrType, "str")):
            if isinstance(t, cls):
                return k
        if isinstance(t, ir.OptionalType) and isinstance(t.elem, ir.TensorType):
            return "opt_tensor"
        return "other"

    def __repr__(self):
        return f"<jitorch.jit.ScriptFunction {self.name}>"

    def __get__(self, obj, objtype=None):  # scripted methods bind like functions
        return self if obj is None else functools.partial(self, obj)

    # -- arguments ---------------------------------------------------------------------------
    def _bind(self, args, kwargs):
        n = len(self._names)
        if len(args) > n:
            raise TypeError(f"{self.name}() expected at most {n} argument(s) but received "
                            f"{len(args) + len(kwargs)} argument(s). Declaration: "
                            f"{self._declaration()}")
        out = list(args)
        for name in self._names[len(args):]:
            if name in kwargs:
                out.append(kwargs.pop(name))
            elif name in self._defaults:
                out.append(self._defaults[name])
            else:
                raise TypeError(f"{self.name}() missing value for argument '{name}'. "
                                f"Declaration: {self._declaration()}")
        if kwargs:
            k = next(iter(kwargs))
            if k in self._names:
                raise TypeError(f"{self.name}() got multiple values for argument '{k}'. "
                                f"Declaration: {self._declaration()}")
            raise TypeError(f"{self.name}() got an unexpected keyword argument '{k}'. "
                            f"Declaration: {self._declaration()}")
        return out

    def _declaration(self) -> str:
        parts = []
        for n, t in zip(self._names, self._types):
            d = f"{n}: {_type_name(t)}"
            if n in self._defaults:
                d += f"={self._defaults[n]!r}"
            parts.append(d)
        return f"{self.name}({', '.join(parts)})"

    def _bad(self, i, a, want):
        raise TypeError(f"{self.name}() Expected a value of type '{want}' for argument "
                        f"'{self._names[i]}' but instead found type '{type(a).__name__}'.\n"
                        f"Position: {i}\nValue: {a!r}\nDeclaration: {self._declaration()}")

    def _key(self, args):
        """(key, need_grad) for a bound argument list (numbers in `args` are converted)."""
        grad_on = _gstate.enabled and self._grads
        if self._all_tensors:  # the common case, kept short: it runs on every call
            try:
                if grad_on:
                    key = tuple([("T", a._dtype, a._data.ndim, a._requires_grad,
                                  a._data.flags.c_contiguous, a._device) for a in args])
                    return key, any(k[3] for k in key)
                return tuple([("T", a._dtype, a._data.ndim, False, a._data.flags.c_contiguous,
                               a._device) for a in args]), False
            except AttributeError:
                pass  # not a Tensor: the loop below raises the TypeError
        key = []
        need_grad = False
        for i, (k, a) in enumerate(zip(self._kinds, args)):
            if k == "tensor" or (k == "opt_tensor" and a is not None):
                if not isinstance(a, Tensor):
                    self._bad(i, a, "Tensor")
                rg = grad_on and a._requires_grad
                need_grad |= rg
                key.append(("T", a._dtype, a._data.ndim, rg, a._data.flags.c_contiguous,
                            a._device))
            elif k == "float":
                if type(a) is not float:
                    if isinstance(a, bool) or not isinstance(a, (int, float)):
                        self._bad(i, a, "float")
                    args[i] = float(a)
                key.append(float)
            elif k == "int":
                if type(a) is not int:
                    if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
                        self._bad(i, a, "int")
                    args[i] = int(a)
                key.append(int)
            elif k == "bool":
                if type(a) is not bool:
                    if not isinstance(a, np.bool_):
                        self._bad(i, a, "bool")
                    args[i] = bool(a)
                key.append(("B", a))  # by value: `if flag:` folds (types.specialize)
            elif k == "str":
                if not isinstance(a, str):
                    self._bad(i, a, "str")
                key.append(str)
            elif k == "static":
                try:
                    hash(a)
                    key.append(("S", a))
                except TypeError:
                    key.append(("S", repr(a)))
            elif k == "opt_tensor":
                key.append(None)
            else:
                key.append(_other_key(a, grad_on))
                if grad_on and _any_rg(a):
                    need_grad = True
        return tuple(key), need_grad

    # -- calls -------------------------------------------------------------------------------
    def _call_eagerly(self, args, kwargs):
        """Under a dispatch mode that must see every op (vmap: its tensors' data is not the
        arguments' data), the Python function runs instead of the program."""
        if self.__wrapped__ is None:
            raise NotImplementedError(f"{self.name}: a scripted module method cannot run under "
                                      "jitorch.func.vmap; vmap the Python module instead")
        return self.__wrapped__(*args, **kwargs)

    def __call__(self, *args, **kwargs):
        if _tracers[0] and _active_tracer() is not None:  # jit.trace records this as a call
            from ..frontend.trace_call import record_call
            return record_call(self, args, kwargs)
        if _mode_state.stack and any(getattr(m, "eager_calls", False) for m in _mode_state.stack):
            return self._call_eagerly(args, kwargs)
        if _autocast_hook[0] is not None and _autocast.active_on_thread():
            return self._autocast_call(args, kwargs)
        given = args
        try:
            if kwargs or len(args) != len(self._names):
                args = self._bind(args, kwargs)
            else:
                fk = self._fast_key
                if fk is not None:  # all-tensor signature: an unrolled key, one dict lookup
                    try:
                        entry = self._fast.get(fk(args, _gstate.enabled))
                    except AttributeError:  # not a Tensor: the checks below raise TypeError
                        entry = None
                    if entry is not None:
                        if not _threads._pinned:
                            _threads.note_caller_thread()
                        next(_counters.calls)
                        next(_counters.memory_hits)
                        return entry(args)  # the runner returns the final value
                args = list(args)
            orig = args
            eager = self._mutated and self._refuse_writes(args)
            key, need_grad = self._key(args)
            entry = self._cache.get(key)
            if self._mutated:
                # arguments sharing memory: eager's result needs the writes done in place.
                # A compiled program checks that itself (nanoseconds, lower_overlap.py); other
                # tiers are checked here, before anything runs (a first call is checked where
                # its entry is built: `_build`)
                if eager or (need_grad or entry is not None and (
                        entry.kind != "compiled" or not entry.checks_overlap)) and \
                        alias.overlap(args, self._mutated, self._read):
                    return self._finish(self._in_place(
                        args, compiling=entry is not None and tiers.while_compiling(entry)))
                if need_grad:
                    args = self._clone_written(args)
            if entry is None:
                outs = self._miss(key, args, need_grad)
            else:
                if not _threads._pinned:
                    _threads.note_caller_thread()
                if entry.kind == "compiled" or entry.pending is not None and \
                        tiers.switch(entry):  # (the worker's program is ready: load it)
                    # stats.record_call, inlined
                    next(_counters.calls)
                    next(_counters.memory_hits)
                    if self._fast_key is not None:
                        self._fast[self._fast_key(args, _gstate.enabled)] = \
                            entry.runner(args, self._tuple_out)
                    outs = entry.run(args)
                else:
                    stats.record_call(hit=True, interpreted=_interp(entry),
                                      compiling=tiers.while_compiling(entry))
                    outs = self._run(entry, args)
            if self._mutated:
                outs = self._write_back(orig, outs, args)
            return self._finish(outs)
        except RaiseInInterpreter as e:
            # the program met what it cannot do itself (an error message built from lists or
            # reprs, a row region whose rows differ, arguments that share memory) or failed
            # (ProgramFailed: whatever it raised): the interpreter runs this call (eager
            # semantics: it returns the result or raises eager's error at the user's line),
            # outside the handler so that its error does not chain the program's
            signal = e
        return self._raise_interpreted(given, kwargs, signal)

    def _finish(self, outs):
        if len(outs) == 1 and not self._tuple_out:
            return outs[0]
        return tuple(outs)

    def _autocast_call(self, args, kwargs):
        """A call inside CPU autocast (jitorch.amp): the interpreter runs the frontend's graph,
        so each op gets the casts its declaration asks for (registry ops through eager
        dispatch, library composites at their prim::CallFunction): eager autocast's results
        and gradients. Compiled programs do not lower bfloat16/float16 yet."""
        stats.record_call(hit=True, interpreted=False)  # (_raise_interpreted counts the run)
        self.autocast_reason = AUTOCAST_REASON
        return self._raise_interpreted(args, kwargs)

    def _raise_interpreted(self, args, kwargs, signal=None):
        """Run a call (counted in `calls` already) in the interpreter: a program handed it
        over (`signal`), or autocast (None). Counted as an interpreted run where no program
        ran it (NotReady: its overload compiles; a first call's arguments that share memory
        while its program compiles, `while_compiling`, set by `_miss`; autocast) or where the
        interpreter's result is the call's; a call whose program failed and whose rerun raises
        the user's error stays counted as the program's (the interpreter only located it)."""
        compiling = isinstance(signal, NotReady) or getattr(signal, "while_compiling", False)
        ran = signal is None or compiling
        if ran:
            stats.record_interpreted(compiling=compiling)
        args = self._bind(args, dict(kwargs))
        if isinstance(signal, ProgramFailed) and any(
                isinstance(args[i], (list, tuple)) for i in self._mutated):
            # the program wrote list elements in place (lower_list.py) before it failed: a
            # second run would write them twice, so its own error stands (not located)
            raise signal.error
        if self._mutated:  # writes in place: eager's result, aliasing arguments included
            outs = self._in_place(args, count=False)
        elif ran:
            outs = self._interpret(args)
        else:  # a rerun that locates the program's error: one walk
            outs = interpreter.run_graph(self.graph, args)
        if not ran:
            stats.record_interpreted()
        stats.record_rerun(self.name, signal)  # (reached only when eager raises nothing)
        return self._finish(outs)

    def _check_overlap(self, args) -> None:
        """Raise ArgumentsOverlap (the caller runs the call in place) when a written argument
        shares memory with another or itself; for entries whose program does not check."""
        if self._mutated and alias.overlap(args, self._mutated, self._read):
            raise ArgumentsOverlap()

    def _in_place(self, args, count: bool = True, compiling: bool = False):
        """This call through the interpreter over the frontend's graph, every write done in
        place in the arguments' memory (runtime/alias.py): eager's semantics when arguments share
        memory. `count`: False where the caller counted the call already; `compiling`: its
        program compiles in the background (stats)."""
        if count:
            stats.record_call(hit=True, interpreted=True, compiling=compiling)
        return self._write_back(args, alias.run_in_place(self.graph, args), args, in_place=True)

    def _refuse_writes(self, args) -> bool:
        """PyTorch's refusals, before anything runs: arguments the function writes to must be
        tensors that may be modified in place (not a leaf that requires grad in grad mode unless
        written only inside `with no_grad():`, not an expanded tensor). Which elements of a
        written list are written is only known as the call runs, and compiled code writes list
        elements in place (lower_list.py): True when such a list holds a read-only tensor, so
        that the call runs in place instead, where eager's ops refuse exactly the writes eager
        refuses."""
        ro = False
        for i in self._mutated:
            a = args[i]
            if isinstance(a, Tensor):
                if i not in self._no_grad:
                    check_inplace_allowed(a)
                check_writable(a)
            elif isinstance(a, (list, tuple)):
                ro = ro or any(isinstance(e, Tensor) and not e._data.flags.writeable
                               for e in a)
        return ro

    def _clone_written(self, args):
        """Under autograd the inputs may be saved (version-checked): the call reads clones of
        the written arguments (which keep their history), so the write-back does not overwrite
        what the backward needs."""
        args = list(args)
        for i in self._mutated:
            if isinstance(args[i], Tensor):
                args[i] = args[i].clone()
            elif isinstance(args[i], (list, tuple)):
                args[i] = type(args[i])(e.clone() if isinstance(e, Tensor) else e
                                        for e in args[i])
        return args

    def _write_back(self, args, outs, ran_with, in_place: bool = False):
        """Copy the final values of written arguments into the caller's tensors (through their
        views, so a non-contiguous argument's storage is written where it lives), bump their
        version counters and, under autograd, give them the write's history. After an
        in-place run (runtime/alias.py) a value that shares the argument's memory was written there
        already, by eager ops that did all of that."""
        k = len(self._mutated)
        outs = list(outs)
        extra = outs[len(outs) - k:]
        del outs[len(outs) - k:]
        for i, new in zip(self._mutated, extra):
            a = args[i]
            no_grad = i in self._no_grad
            if isinstance(a, list) and isinstance(new, (list, tuple)):
                for e, ne, ran in zip(a, new, ran_with[i]):
                    if ne is not ran and isinstance(e, Tensor) and isinstance(ne, Tensor):
                        _write_one(e, ne, in_place, no_grad)  # elements the call wrote
                continue
            if isinstance(a, Tensor) and isinstance(new, Tensor):
                _write_one(a, new, in_place, no_grad)
        for j, i in self._ret_alias.items():
            if j < len(outs) and isinstance(args[i], Tensor):
                outs[j] = args[i]
        return outs

    def _run(self, entry: _Entry, args):
        if entry.autodiff is not None:
            return entry.autodiff.run(args, self)
        return entry.run(args)

    def _miss(self, key, args, need_grad):
        with self._lock:
            # reentrant: a first call that calls back into this function (through an
            # @ignore'd Python function) must not deadlock on its own key
            lock = self._locks.get(key)
            if lock is None:  # (released in a forked child: jitorch/_fork.py)
                lock = self._locks[key] = _fork.rlock()
        with lock:
            entry = self._cache.get(key)
            if entry is not None:  # another thread built it while we waited
                stats.record_call(hit=True, interpreted=_interp(entry),
                                  compiling=tiers.while_compiling(entry))
                return self._run(entry, args)
            t0 = time.perf_counter()
            epoch = _settings.epoch[0]
            why = self._why(key)
            try:
                entry, outs, how = self._build(key, args, need_grad)
            except RaiseInInterpreter as e:
                # the first call's program handed it to the interpreter (which runs and
                # counts it: _raise_interpreted), or its arguments share memory while the
                # program compiles (`_build`); the call itself is counted here
                stats.record_call(hit=False, interpreted=False)
                entry = self._cache.get(key)
                e.while_compiling = entry is not None and tiers.while_compiling(entry)
                raise
            dt_s = time.perf_counter() - t0
            prog = entry if entry.autodiff is None else entry.autodiff.fwd
            prog.build_s += dt_s
            stats.record_compile(dt_s, how=how, reason=entry.reason)
            stats.record_call(hit=False, interpreted=_interp(entry),
                              compiling=tiers.while_compiling(entry))
            stats.log_compile(self.name, why, how, dt_s, entry.reason)
            if _settings.epoch[0] == epoch:  # else built under a setting changed since: dropped
                self._cache[key] = entry
                self._last, self._last_key = entry, key
            return outs

    def _why(self, key) -> str:
        prev = self._last_key
        if prev is None:
            return "first call"
        parts = []
        for name, a, b in zip(self._names, prev, key):
            if a != b:
                parts.append(f"'{name}' {_describe_key_part(a)} -> {_describe_key_part(b)}")
        return "new key: " + ("; ".join(parts) or "grad mode")

    def _build(self, key, args, need_grad):
        """-> (entry, outputs of this first call, how) where how is as in stats.record_compile.
        The collector's thresholds stay raised throughout (kernels/compile_gc.py)."""
        with compile_gc.raised():
            return self._build_raised(key, args, need_grad)

    def _build_raised(self, key, args, need_grad):
        arg_types = [_arg_type(a, t, p[3] if isinstance(p, tuple) and p and p[0] == "T"
                               else False)
                     for a, t, p in zip(args, self._types, key)]
        static = {n: a for n, a, k in zip(self._names, args, self._kinds)
                  if n in self._static or k == "bool"}
        from . import plans  # a warm process: the record of what this was built into
        pk = plans.key(self, key, static, args, need_grad)
        if need_grad:
            from . import autodiff as autodiff_rt
            ad = plans.load_autodiff(pk, self, arg_types, static, args)
            if ad is None:
                ad, reason = autodiff_rt.build(self, arg_types, static, args)
            if ad is not None:
                entry = plans.entry_of(ad)
                try:
                    outs = ad.run(args, self)
                except Exception:
                    self._cache[key] = entry  # a user error in the first call keeps it
                    raise
                entry.reason = ad.reason
                ad.plan_key = pk
                plans.store_autodiff(pk, ad)
                return entry, outs, ad.how
            entry = _Entry("interpreted", self.graph, reason=reason)
            return entry, self._first_run(key, entry, args), "interpreted"
        entry = plans.load_plain(pk, self, arg_types, static)
        if entry is None:
            entry, how = build_entry(self.graph, arg_types, static)
        if entry.kind == "interpreted":
            return entry, self._first_run(key, entry, args), how
        try:
            # the compile worker starts even when this call runs in place instead (then it also
            # checks arguments that share memory here: the program is not running them)
            tiers.start(entry, args)
            if not entry.checks_overlap or entry.pending is not None:
                self._check_overlap(args)
            outs, how = first_call(entry, args)
        except Exception:
            self._cache[key] = entry  # a user error (bad shapes) in the first call keeps it
            raise
        if outs is None:  # Numba could not type/lower the program: interpret instead
            return entry, self._first_run(key, entry, args), "interpreted"
        plans.store_plain(pk, entry)
        return entry, outs, how

    def _first_run(self, key, entry, args):
        try:
            self._check_overlap(args)
            return entry.run(args)
        except Exception:
            self._cache[key] = entry  # the program stays; the user's error propagates
            self._last, self._last_key = entry, key
            raise

    def _reset(self):
        """Forget every specialisation (tests)."""
        with self._lock:
            self._cache.clear()
            self._fast.clear()
            self._last = self._last_key = None


def _write_one(a: Tensor, new: Tensor, in_place: bool = False, no_grad: bool = False) -> None:
    """Copy `new` into the caller's tensor `a`; `no_grad`: it was written only inside
    `with no_grad():`, so it keeps its own history (a leaf stays a leaf), as in eager."""
    if new._data is a._data or in_place and np.may_share_memory(a._data, new._data):
        return  # written where it lives already
    if not no_grad:
        check_inplace_allowed(a)  # (list elements are only known to be written now)
    check_writable(a)
    np.copyto(a._data, new._data, casting="unsafe")
    a._version[0] += 1
    if _gstate.enabled and new._requires_grad and not no_grad:
        rebase_history(a, new)


