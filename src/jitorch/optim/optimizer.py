"""`Optimizer`: param groups, per-parameter state, state_dict in PyTorch's format, hooks, and the
compiled-step machinery shared by every optimizer class.

Each subclass's `step` gathers, per param group, the lists of params, grads and state tensors and
hands them with its option flags to its functional form (`optim/functional.py`) through a
`CompiledStep`: the flags' kernel compiled with `@jitorch.script` (one program per flags tuple
and dtype, the loop over the list inside it, called on chunks of CHUNK flattened tensors), or
the same kernel run eagerly where scripting is not available for the case (complex params, a
compile error); the reason is recorded in `CompiledStep.fallbacks`.
"""
from __future__ import annotations

import functools
import warnings
from collections import OrderedDict, defaultdict
from copy import deepcopy
from typing import Any, Callable

import numpy as np

from .. import _fork
from .._device import CPU
from .._tensor import Tensor
from ..autograd import enable_grad, no_grad
from ..nn.modules._support import RemovableHandle

__all__ = ["Optimizer", "CompiledStep", "required"]


class _RequiredParameter:
    """Singleton class representing a required parameter for an Optimizer."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()

# How the optimizer classes run their functional form (tests flip it):
#   True      compiled by default (see `CompiledStep.for_group`: every param group except
#             those built with `fused=False` or `differentiable=True`, which run eagerly): the
#             compiled program where the compiler lowers it to generated code; a case it can
#             only interpret runs eagerly instead (same semantics, and the interpreter is
#             slower), with the reason recorded in `CompiledStep.fallbacks`;
#   "always"  the scripted function whatever it compiles to (generated code or interpreter),
#             called with the original tensors (no flattening, no chunks);
#   False     always eager.
USE_SCRIPT: bool | str = True

# Every compiled call gets lists of exactly CHUNK flattened tensors (the last chunk padded with
# empty arrays): Numba specialises a tuple argument on its length, and the compile time of the
# tuple unpacking grows faster than linearly with it (measured: 64 arrays 3.6 s, 8 arrays
# 0.6 s), so one program per (options, dtype) serves groups of any size and any shapes.
CHUNK = 16


def _case_key(params: list, args: tuple) -> tuple:
    """What the script runtime specialises on: each list's element dtypes/ranks, scalar types."""
    key = [tuple((p.dtype, p.dim()) for p in params)]
    for a in args:
        if isinstance(a, list):
            key.append(tuple((t.dtype, t.dim()) for t in a))
        else:
            key.append(type(a))
    return tuple(key)


def _rank_classes(params: list):
    """None when every param has one dtype and rank, else the index lists of each class.

    A compiled program indexes a list argument with a run-time `i`, so the list's elements need
    one array type (targets/cpu/lower_list.py: a tuple of arrays, the cheapest to pass to Numba:
    ~0.65 us per array against ~9 us to build a numba.typed.List). The functional forms update
    each index independently, so a group of 2-D weights and 1-D biases runs as two calls of
    the same program's two specialisations, with exactly the single-call semantics."""
    if not params:
        return None
    d0, n0 = params[0]._dtype, params[0]._data.ndim
    for p in params:
        if p._dtype is not d0 or p._data.ndim != n0:
            break
    else:
        return None
    seen: dict = {}
    for i, p in enumerate(params):
        seen.setdefault((p._dtype, p._data.ndim), []).append(i)
    return list(seen.values())


def _select(idx: list, params: list, args: tuple) -> tuple:
    """(params, *args) restricted to the indices `idx` (lists sliced, scalars kept)."""
    out = [[params[i] for i in idx]]
    for a in args:
        out.append([a[i] for i in idx] if isinstance(a, list) else a)
    return tuple(out)


_EMPTY: dict = {}


def _flat_chunks(params: list, args: tuple):
    """The call as chunks of flat arrays: -> (dtype, [(tuple per list..., scalars...)]) or None
    when some tensor is not C-contiguous, is off the CPU (the chunks are re-wrapped as CPU
    tensors and called through the CPU program directly) or the lists mix dtypes (then the
    tensors go as they are, keyed on their device). The update math is elementwise per index, so a flat view of each tensor gives the
    same result with one array type for every shape (one compile, not one per rank)."""
    lists = [params] + [a for a in args if isinstance(a, list)]
    d0 = params[0]._dtype
    flat, done = [], {}
    for lst in lists:
        row = done.get(id(lst))  # the same list passed twice (an option's unused list)
        if row is None:
            row = []
            for t in lst:
                a = t._data
                if t._dtype is not d0 or t._device is not CPU or not a.flags.c_contiguous:
                    return None
                row.append(a if a.ndim == 1 else a.reshape(-1))
            done[id(lst)] = row
        flat.append(row)
    empty = _EMPTY.get(d0)
    if empty is None:
        empty = _EMPTY.setdefault(d0, np.empty(0, d0.np))
    n = len(params)
    calls = []
    for s in range(0, n, CHUNK):
        tuples = []
        for row in flat:
            part = row[s:s + CHUNK]
            if len(part) < CHUNK:
                part = part + [empty] * (CHUNK - len(part))
            tuples.append(tuple(part))
        it = iter(tuples)
        # scalars as float (every kernel scalar is a float): an int would make Numba compile
        # another specialisation
        calls.append(tuple(next(it) if isinstance(a, list) else
                           a if isinstance(a, bool) or not isinstance(a, int) else float(a)
                           for a in [params] + list(args)))
    return d0, calls


class CompiledStep:
    """An optimizer's `StepForm` (optim/functional.py), called compiled with `@jitorch.script`
    when possible: one ScriptFunction per flags tuple (the options that select code), called
    with chunks of flattened tensors so that one Numba compile per (flags, dtype) serves every
    group; after the first call of a case its compiled program is called directly with NumPy
    arrays (the in-place writes land in the arguments: targets/cpu/lower_list.py)."""

    def __init__(self, form):
        self.form = form
        self.scripted: dict = {}   # flags -> ScriptFunction
        self.fallbacks: dict = {}  # case -> why it ran eagerly
        self._modes: dict = {}     # case key -> "script" | "eager"
        self._direct: dict = {}    # (flags, dtype) -> compiled entry (a Numba dispatcher)
        self._broken: dict = {}
        self._lock = _fork.lock()

    def _script(self, flags):
        fn = self.scripted.get(flags)
        if fn is None and flags not in self._broken:
            from .. import script
            try:
                fn = self.scripted[flags] = script(self.form.kernel(flags))
            except Exception as e:  # a frontend limitation: run eagerly, say why
                self._broken[flags] = f"scripting failed: {type(e).__name__}: {e}"
        return fn

    def __call__(self, flags: tuple, params: list, *args, use_script=None):
        mode = USE_SCRIPT if use_script is None else use_script
        kernel = self.form.kernel(flags)
        if not mode or not params:
            return kernel(params, *args)
        if any(p._dtype.is_complex for p in params):
            self.fallbacks["complex"] = "complex parameters: the compiler does not lower them"
            return kernel(params, *args)
        fn = self._script(flags)
        if fn is None:
            self.fallbacks["script"] = self._broken[flags]
            return kernel(params, *args)
        if mode != "always":
            chunks = _flat_chunks(params, args)
            if chunks is not None:
                return self._run_chunks(flags, fn, kernel, params, args, *chunks)
        classes = _rank_classes(params)
        if classes is not None:  # one call per (dtype, rank) class of the group's tensors
            for idx in classes:
                self(flags, *_select(idx, params, args), use_script=use_script)
            return None
        if mode == "always":
            return fn(params, *args)
        return self._run_case(flags, fn, kernel, params, args)

    def _run_case(self, flags, fn, kernel, params, args):
        """One call through the ScriptFunction, eager where it only interprets the case."""
        key = (flags, _case_key(params, args))
        known = self._modes.get(key)
        if known == "eager":
            return kernel(params, *args)
        if known is None:  # first call of this case: compile, then see what it compiled to
            before = set(fn.stats["interpreted"])
            out = fn(params, *args)
            if _pending(fn):  # compiling in the background: the interpreter ran this call;
                return out    # ask again at the next step (nothing is decided yet)
            new = set(fn.stats["interpreted"]) - before
            if new:
                why = fn.stats["interpreted"][next(iter(new))]
                self.fallbacks[key] = f"the compiler only interprets this case ({why})"
                self._modes[key] = "eager"
            else:
                self._modes[key] = "script"
            return out
        return fn(params, *args)

    def _run_chunks(self, flags, fn, kernel, params, args, dtype, calls):
        direct = self._direct.get((flags, dtype))
        if direct is not None:
            from .._tensor import Tensor as _T
            from ..script.runtime import stats
            from ..script.kernels.signals import RaiseInInterpreter
            for c in calls:
                try:
                    direct(*c)
                except RaiseInInterpreter:  # e.g. arguments sharing memory: the checked path
                    fn(*[[_T._make(a, dtype) for a in x] if type(x) is tuple else x
                         for x in c])
                    continue
                stats.record_call(hit=True, interpreted=False)  # visible in jit.stats()
        else:
            from .._tensor import Tensor as _T
            with self._lock:  # one first call per case at a time
                for c in calls:
                    targs = [[_T._make(a, dtype) for a in x] if type(x) is tuple else x
                             for x in c]
                    if self._modes.get((flags, "flat", dtype)) == "eager":
                        kernel(*targs)
                        continue
                    self._run_case(flags, fn, kernel, targs[0], tuple(targs[1:]))
                    key = (flags, _case_key(targs[0], tuple(targs[1:])))
                    mode = self._modes[(flags, "flat", dtype)] = self._modes.get(key)
                    last = _entry_for(fn, targs)
                    if mode == "script" and getattr(last, "kind", "") == "compiled" and \
                            getattr(last, "fn", None) is not None:
                        self._direct[(flags, dtype)] = last.fn
        # the writes happened in the arrays (of flat views): bump the version counters as the
        # in-place ops would (the grads, argument 1, are only read)
        for lst in [params] + [a for a in args[1:] if isinstance(a, list)]:
            for t in lst:
                t._version[0] += 1
        return None

    def for_group(self, group: dict) -> Callable:
        """The step of one param group: by default (`USE_SCRIPT is True`) the compiled
        GIL-free program, 5-10x faster than the eager step and 2-3x faster than PyTorch's
        foreach (bench/optim_step.py), the same math (functional.py's one body, PyTorch's
        single-tensor arithmetic; `foreach` selects nothing else here). Eager instead for a
        group built with `fused=False` (the caller asked for the unfused step) or
        `differentiable=True` (the update must stay on the autograd tape). The first step of
        each options tuple and dtype compiles once per machine (seconds; later processes load
        it from the disk cache in ~0.1 s), in the background where the compiler has a worker:
        the steps meanwhile run through the interpreter (`_pending`)."""
        if USE_SCRIPT is True and (group.get("fused") is False or group.get("differentiable")):
            return functools.partial(self, use_script=False)
        return self

    @property
    def why_interpreted(self) -> dict:
        """Specialisations that run through the IR interpreter rather than generated code."""
        out: dict = {}
        for fn in self.scripted.values():
            out.update(fn.stats["interpreted"])
        return out


def _entry_for(fn, args):
    """The specialisation (script/runtime/entry.py `_Entry`) `fn` runs for `args`, None if it has
    not built one. (Looked up by key, not `fn._last`: a call that a program compiling in the
    background answered from the interpreter leaves `_last` as it was.)"""
    try:
        key, _ = fn._key(list(args))
    except Exception:  # noqa: BLE001 - arguments it cannot key: no direct path
        return None
    return fn._cache.get(key)


def _pending(fn) -> bool:
    """Is a program of `fn` still compiling in the background (script/runtime/tiers.py: its calls
    run on the tier below meanwhile)? Then what its last call ran on decides nothing yet."""
    try:
        return bool(fn.stats.get("programs_compiling"))
    except Exception:  # noqa: BLE001 - a runtime without background compiles
        return False


def _typename(obj) -> str:
    """`torch.typename`: builtins by bare name, others module-qualified."""
    t = type(obj)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


class Optimizer:
    """Base class of all optimizers (`torch.optim.Optimizer`)."""

    def __init__(self, params, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks: dict[int, Callable] = OrderedDict()
        self._optimizer_step_post_hooks: dict[int, Callable] = OrderedDict()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            f"Tensors or dicts, but got {_typename(params)}")
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    # -- pickling / printing -------------------------------------------------------------------
    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state,
                "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()

    def __repr__(self) -> str:
        s = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += "\n"
            s += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        s += ")"
        return s

    # -- groups --------------------------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            param_group["params"] = list(params)
        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. Some param "
                                 "names are missing")
            param_group["param_names"] = names
        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(param))
            if not self.defaults.get("differentiable", None) and not (
                    param.is_leaf or getattr(param, "retains_grad", False)):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        seen = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                txt = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {txt} to the optimizer")
        if any(id(p) in seen for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # -- grads / step --------------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    g = p.grad
                    if g.grad_fn is not None:
                        g = g.detach()
                        p.grad = g
                    else:
                        g.requires_grad_(False)
                    g.zero_()

    def _run_step(self, closure):
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            self._step_groups()
        return loss

    def step(self, closure: Callable | None = None):
        """One optimisation step; `closure` re-evaluates the model and returns the loss."""
        for hook in list(self._optimizer_step_pre_hooks.values()):
            result = hook(self, (closure,) if closure is not None else (), {})
            if result is not None:
                raise RuntimeError("optimizer step pre-hooks returning new args are not "
                                   "supported by jitorch")
        loss = self._run_step(closure)
        for hook in list(self._optimizer_step_post_hooks.values()):
            hook(self, (closure,) if closure is not None else (), {})
        return loss

    def _step_groups(self) -> None:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        handle = RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        handle = RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[handle.id] = hook
        return handle

    # -- state dict ----------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """`{'state': {index: {...}}, 'param_groups': [{..., 'params': [indices]}]}`; the
        tensors are the live state tensors (as in PyTorch)."""
        mappings: dict[int, int] = {}
        start = 0

        def pack_group(group):
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            mappings.update({id(p): i for i, p in enumerate(group["params"], start)
                             if id(p) not in mappings})
            packed["params"] = [mappings[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        by_id = {id(p): p for g in self.param_groups for p in g["params"]}
        packed_state = {mappings[id(k)]: v for k, v in self.state.items()
                        if id(k) in mappings and by_id.get(id(k)) is k}
        return {"state": packed_state, "param_groups": param_groups}

    @staticmethod
    def _cast(param: Tensor, value, key=None):
        if isinstance(value, Tensor):
            if key == "step":  # PyTorch keeps step (and NAdam's mu_product) float32
                return value.clone()
            if param.is_floating_point() or param.is_complex():
                return value.to(dtype=param.dtype).clone()
            return value.clone()
        if isinstance(value, dict):
            return {k: Optimizer._cast(param, v, k) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(Optimizer._cast(param, v) for v in value)
        return value

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a `state_dict()`; state tensors are copied (cast to each param's dtype)."""
        state_dict = state_dict.copy()
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        id_map = {old: p for g, s in zip(groups, saved_groups)
                  for old, p in zip(s["params"], g["params"])}
        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = self._cast(param, v)
            else:
                state[k] = v
        new_groups = []
        for g, s in zip(groups, saved_groups):
            s["params"] = g["params"]
            if "param_names" in g and "param_names" not in s:
                s["param_names"] = g["param_names"]
            new_groups.append(s)
        self.state = state
        self.param_groups = new_groups

    # -- helpers for subclasses ----------------------------------------------------------------
    def _params_with_grad(self, group):
        return [p for p in group["params"] if p.grad is not None]

