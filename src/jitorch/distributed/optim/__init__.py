"""`jitorch.distributed.optim.DistributedOptimizer` (PyTorch's): an optimizer over parameters
that live on several RPC workers.

Owns the remote half: for each owner of some of the parameters (`param_rrefs`), one local
optimizer of `optimizer_class` made on that owner over its own parameters (the class travels by
name, checked as RPC checks every function name). `step(context_id)` asks every owner at once
to apply the gradients of that distributed autograd context: the owner puts them in `.grad`
for the step, runs its optimizer's step (jitorch's optimizers run their compiled, GIL-free
functional step: optim/optimizer.py `CompiledStep`) and puts the parameters' own `.grad` back,
so the context's gradients never mix with local ones. Steps on one owner are serialized by a
lock, as PyTorch's are.
"""
from __future__ import annotations

from ... import _fork

__all__ = ["DistributedOptimizer"]


class _LocalOptimizer:
    def __init__(self, optim, params):
        self.optim, self.params = optim, params
        self.lock = _fork.lock()

    def step(self, context_id: int) -> None:
        from .. import autograd as dist_autograd
        grads = {id(t): g for t, g in dist_autograd.get_gradients(context_id).items()}
        with self.lock:
            saved = [p.grad for p in self.params]
            try:
                for p in self.params:
                    p.grad = grads.get(id(p))
                self.optim.step()
            finally:
                for p, g in zip(self.params, saved):
                    p.grad = g


class DistributedOptimizer:
    """`DistributedOptimizer(optimizer_class, params_rref, *args, **kwargs)`: `params_rref`
    lists RRefs of the parameters (on any workers); `args`/`kwargs` go to `optimizer_class`."""

    def __init__(self, optimizer_class, params_rref, *args, **kwargs):
        from ..rpc import api, wire
        name = wire.qualified_name(optimizer_class)
        by_owner: dict = {}
        for r in params_rref:
            if not isinstance(r, api.RRef):
                raise TypeError(f"DistributedOptimizer expects RRefs of parameters, got "
                                f"{type(r).__name__}")
            by_owner.setdefault(r._owner, []).append(r)
        futs = [api._invoke("async", owner, {"op": "optim_create"},
                            (name, rrefs, tuple(args), dict(kwargs)),
                            "DistributedOptimizer", api.UNSET_RPC_TIMEOUT)
                for owner, rrefs in by_owner.items()]
        self.remote_optimizers = [f.wait() for f in futs]

    def step(self, context_id: int) -> None:
        """Step every owner's optimizer with the gradients of `context_id` (all at once)."""
        from .. import autograd as dist_autograd
        from ..rpc import api
        dist_autograd._ctx(context_id)  # PyTorch checks the context exists here
        futs = [api._invoke("async", r._owner, {"op": "optim_step"}, (r, context_id),
                            "DistributedOptimizer.step", api.UNSET_RPC_TIMEOUT)
                for r in self.remote_optimizers]
        for f in futs:
            f.wait()


def _serve_create(agent, src, env, payload):
    from ...optim.optimizer import Optimizer
    from ..rpc import api, wire
    if not (isinstance(payload, tuple) and len(payload) == 4):
        raise RuntimeError("RPC: malformed DistributedOptimizer request")
    name, rrefs, args, kwargs = payload
    cls = wire.resolve(name)
    if not (isinstance(cls, type) and issubclass(cls, Optimizer)):
        raise TypeError(f"DistributedOptimizer: {name} is not an optimizer class")
    if not all(isinstance(r, api.RRef) and r.is_owner() for r in rrefs):
        raise RuntimeError("DistributedOptimizer: parameters must be RRefs owned by the worker "
                           "that optimizes them")
    params = [r.local_value() for r in rrefs]
    return api.RRef(_LocalOptimizer(cls(params, *args, **kwargs), params))


def _serve_step(agent, src, env, payload):
    from ..rpc import api
    if not (isinstance(payload, tuple) and len(payload) == 2 and
            isinstance(payload[0], api.RRef) and payload[0].is_owner()):
        raise RuntimeError("RPC: malformed DistributedOptimizer step request")
    opt = payload[0].local_value()
    if not isinstance(opt, _LocalOptimizer):
        raise RuntimeError("RPC: the RRef of a step request is not a DistributedOptimizer's")
    opt.step(payload[1])
