"""Eager calls of the library's own layers served by their compiled composites.

Owns the decision, at an eager (not scripted, not traced) call of `nn.RNN` / `nn.LSTM` /
`nn.GRU`, to run the whole sequence as one scripted function instead of one Python step per
time step, and the table of those functions. The function is the layer's "flat" twin
(`_rnn_script.source(m, "flat")`: `(input, h0[, c0], *parameters)`, dropout baked in for the
training mode), scripted once per configuration (mode, layers, directions, bias, projection,
batch_first, dropout in training) and shared by every instance with it; the `ScriptFunction`
specialises it per shape class (dtypes, ranks, requires_grad: sizes never compile again) and
follows `@script`'s rules: the first call of a new shape class runs interpreted while the
compile worker builds the program (`JITORCH_COMPILE=sync`: compiled in the call), later calls
run the compiled forward and, under autograd, its compiled backward as one node on the tape.
Each function is named `nn.<Layer>[eager]` in `jitorch.jit.stats()["functions"]`.

The layer's own checks and defaults (`_prepare_call`, `_finish_call`) run eagerly around the
call, so arguments, error types and messages are the eager form's. Anything that needs the
eager ops themselves keeps the eager path: `jit.trace` recording, a dispatch mode
(`__torch_dispatch__`-style, vmap), autocast, tensor subclasses, dtypes other than float32 /
float64, devices other than the CPU, empty sequences or batches, and PackedSequence inputs
(handled by the layer's packed loop). `JITORCH_EAGER_COMPILED_LAYERS=0` switches it off.
"""
from __future__ import annotations

import os

import jitorch as _jt
from ..._tensor import Tensor
from ..parameter import Parameter

ENV = "JITORCH_EAGER_COMPILED_LAYERS"
_FNS: dict = {}  # flat source -> ScriptFunction
_rt = None  # the runtime state read per call (imported at first use: no import cycle)


def enabled() -> bool:
    return os.environ.get(ENV, "1").strip() != "0"


def _runtime():
    global _rt
    if _rt is None:
        from ... import _autocast
        from ..._ops.registry import _mode_state
        from ..._profiling import autocast_hook
        from ...script.frontend.trace import _active_count
        _rt = (_active_count, _mode_state, autocast_hook, _autocast,
               (_jt.float32, _jt.float64))
    return _rt


def _eligible(tensors) -> bool:
    tracers, modes, ac_hook, autocast, dtypes = _runtime()
    if tracers[0] or modes.stack or (ac_hook[0] is not None and autocast.active_on_thread()):
        return False
    dt = tensors[0].dtype
    if dt not in dtypes:
        return False
    for t in tensors:
        ty = type(t)
        if ty is not Tensor and ty is not Parameter or t.dtype != dt or \
                t._device is not Tensor._device:
            return False
    return True


def _function(m):
    from . import _rnn_script
    src = _rnn_script.source(m, "flat")
    sf = _FNS.get(src)
    if sf is None:
        fn = _rnn_script._make(src, type(m).__name__)
        sf = _jt.jit.script(fn)
        sf.name = sf.__name__ = f"nn.{type(m).__name__}[eager]"
        _FNS[src] = sf
    return sf


def rnn(m, input: Tensor, states: tuple):
    """The whole-sequence result `(output, h_n[, c_n])` of RNN/LSTM/GRU `m` on batched
    `input` (as given: batch-first when `m.batch_first`) and its checked initial states,
    computed by the compiled function; None where the eager loop must run it."""
    if not enabled() or input.size(0) == 0 or input.size(1) == 0:
        return None
    params = m._flat_weights
    tensors = (input,) + tuple(states) + tuple(params)
    if not _eligible(tensors):
        return None
    return _function(m)(*tensors)
