"""`jitorch.utils.checkpoint`: activation checkpointing (`checkpoint`, `checkpoint_sequential`).

A checkpointed call keeps no activations: its outputs hang from one backward node that holds
only the inputs, the function and the RNG (and autocast) state at the call. When backward
reaches the node it reruns the function with that state restored, so dropout draws the same
masks and the gradients equal the plain run's, then runs the engine on the recomputed graph.

The node `hides_graph` (see `autograd/engine.py`): the parameters the function uses are not its
inputs, so the engine lets it run whenever a target may lie behind it, and the inner run works
for the call that reached it: under `autograd.grad` it captures into the same targets, under
`backward(inputs=...)` it accumulates only into those. With `use_reentrant=True` both are
refused with PyTorch's error, as PyTorch's reentrant variant does; `use_reentrant=False` supports
them, keyword arguments, and inputs that do not require grad. The forward runs under no_grad
when it is known that the outputs require grad (an input does, or the function is a module
with parameters that do); otherwise it records the graph just long enough to learn which
outputs require grad, then drops it.
"""
from __future__ import annotations

import warnings

from .. import _dtype as dt
from .. import _random
from .. import _precision
from .._tensor import Tensor
from ..autograd import engine, grad_mode
from ..autograd.graph import Node, edge_of

__all__ = ["checkpoint", "checkpoint_sequential"]

_REENTRANT_GRAD = ("When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() "
                   "or passing an `inputs` parameter to .backward(). To resolve this error, you "
                   "can either set use_reentrant=False, or call .backward() without passing the "
                   "`inputs` argument.")


def _rng_state(args) -> tuple:
    """The CPU generator's state, and the CUDA one's when a tensor argument is on CUDA."""
    cuda = any(isinstance(a, Tensor) and a.device.type == "cuda" for a in args)
    if cuda:
        from .. import cuda as _cuda
        return _random.get_rng_state(), _cuda.get_rng_state()
    return _random.get_rng_state(), None


def _set_rng_state(state) -> None:
    _random.set_rng_state(state[0])
    if state[1] is not None:
        from .. import cuda as _cuda
        _cuda.set_rng_state(state[1])


class _CheckpointNode(Node):
    __slots__ = ("fn", "args", "kwargs", "rng", "autocast", "reentrant")
    hides_graph = True

    def name(self):
        return "CheckpointFunctionBackward"

    def release(self):
        self.args = self.kwargs = None
        self.freed = True

    def run(self, grads):
        run = engine.current_run()
        if self.reentrant and (run.capture is not None or run.accumulate_only is not None):
            raise RuntimeError(_REENTRANT_GRAD)
        if self.args is None:
            from ..autograd.graph import _FREED_MSG
            raise RuntimeError(_FREED_MSG)
        # rerun the function as it ran: same RNG and autocast state, grad recorded
        detached = [a.detach().requires_grad_(a._requires_grad) if isinstance(a, Tensor) else a
                    for a in self.args]
        with _random.fork_rng(enabled=self.rng is not None):
            if self.rng is not None:
                _set_rng_state(self.rng)
            saved_autocast = _precision.is_autocast_cpu_enabled()
            _precision.set_autocast_cpu_enabled(self.autocast)
            try:
                with grad_mode.enable_grad():
                    outputs = self.fn(*detached, **self.kwargs)
            finally:
                _precision.set_autocast_cpu_enabled(saved_autocast)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        outs, gs = [], []
        for o, g in zip(outputs, grads):
            if isinstance(o, Tensor) and o._requires_grad and g is not None:
                outs.append(o)
                gs.append(g)
        if not outs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not "
                               "necessary")
        inputs = [d for d in detached if isinstance(d, Tensor) and d._requires_grad]
        roots = engine._root_grads(outs, gs)
        in_edges = [edge_of(d) for d in inputs]
        if run.capture is not None:
            n = len(run.capture)
            got = engine._run(roots, run.create_graph, run.create_graph,
                              capture=list(run.capture) + in_edges, accumulate_only=None)
            for i, g in enumerate(got[:n]):
                if g is not None:
                    run.captured[i] = engine._add(run.captured[i], g)
            in_grads = got[n:]
        else:
            only = (None if run.accumulate_only is None
                    else list(run.accumulate_only) + in_edges)
            engine._run(roots, run.create_graph, run.create_graph, capture=None,
                        accumulate_only=only)
            in_grads = [d._grad for d in inputs]
        it = iter(in_grads)
        return [next(it) if isinstance(a, Tensor) and a._requires_grad else None
                for a in self.args if isinstance(a, Tensor)]


def _module_params_need_grad(function) -> bool:
    """Whether `function` is a module (or a module's bound method) with a parameter that
    requires grad."""
    from ..nn.modules.module import Module
    owner = function if isinstance(function, Module) else getattr(function, "__self__", None)
    return isinstance(owner, Module) and any(p.requires_grad for p in owner.parameters())


def _checkpoint(function, args, kwargs, preserve, reentrant):
    tensors = [a for a in args if isinstance(a, Tensor)]
    rng = _rng_state(args) if preserve else None
    autocast = _precision.is_autocast_cpu_enabled()
    record = grad_mode._state.enabled
    inputs_grad = any(t._requires_grad for t in tensors)
    if reentrant and record and not inputs_grad:
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=3)
    # the outputs require grad if an input or (non-reentrant) a parameter of a module being
    # checkpointed does; otherwise the graph is recorded only to learn which do, then dropped
    known = reentrant or inputs_grad or _module_params_need_grad(function)
    if known or not record:
        with grad_mode.no_grad():
            out = function(*args, **kwargs)
    else:
        out = function(*args, **kwargs)
    single = not isinstance(out, tuple)
    outs = (out,) if single else tuple(out)
    if known:
        needs = [record and (inputs_grad or not reentrant) and isinstance(o, Tensor)
                 and o._dtype.category >= dt.FLOAT for o in outs]
    else:
        needs = [record and isinstance(o, Tensor) and o._requires_grad for o in outs]
    outs = tuple(o.detach() if isinstance(o, Tensor) else o for o in outs)
    if any(needs):
        node = _CheckpointNode()
        node.fn, node.args, node.kwargs = function, tuple(args), dict(kwargs)
        node.rng, node.autocast, node.reentrant = rng, autocast, reentrant
        node.next_edges = tuple(edge_of(t) if t._requires_grad else None for t in tensors)
        node.in_meta = tuple((t._data.shape, t._dtype) for t in tensors)
        node.out_meta = tuple((o._data.shape, o._dtype) for o in outs if isinstance(o, Tensor))
        node.custom = node.run
        k = 0
        for o, need in zip(outs, needs):
            if not isinstance(o, Tensor):
                continue
            if need:
                o._requires_grad = True
                o._grad_fn = node
                o._output_nr = k
            k += 1
    return outs[0] if single else outs


def checkpoint(function, *args, use_reentrant: bool | None = None, context_fn=None,
               determinism_check: str = "default", debug: bool = False, **kwargs):
    """`function(*args, **kwargs)` without keeping its activations; backward recomputes them."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
            "exception. use_reentrant=False is recommended, but if you need to preserve the "
            "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant and (context_fn is not None or debug is not False):
        raise ValueError("Passing `context_fn` or `debug` is only supported when "
                         "use_reentrant=False.")
    if context_fn is not None:
        raise NotImplementedError("checkpoint(context_fn=...): selective activation "
                                  "checkpointing is not supported by jitorch")
    if determinism_check not in ("default", "none"):
        raise ValueError("determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    return _checkpoint(function, args, kwargs, preserve, use_reentrant)


def checkpoint_sequential(functions, segments, input, use_reentrant: bool | None = None,
                          **kwargs):
    """Run `functions` (a list or an `nn.Sequential`) in `segments` chunks, checkpointing all
    but the last."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be "
            "passed explicitly. In version 2.9 we will raise an exception if use_reentrant is "
            "not passed. use_reentrant=False is recommended, but if you need to preserve the "
            "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input
        return forward

    from ..nn.modules.container import Sequential
    if isinstance(functions, Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1  # the last chunk runs without checkpointing: its output is the result
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
