"""`jitorch.distributed.autograd`: backward across RPC (PyTorch's `dist_autograd`).

Owns the distributed autograd contexts: `with context() as context_id:` opens one (its id is
unique in the job: the worker's rank in the top bits), and every RPC made inside it carries the
id, so the callee serves it inside a context of the same id. A tensor that requires grad and
crosses RPC inside a context is recorded on both sides: the sender keeps it as a "send" under
a send id; the receiver's copy is a leaf that requires grad, recorded as a "recv" pointing back
to (sender, send id).

`backward(context_id, roots)` runs backward on this worker from `roots` with `autograd.grad`
over the leaves its graph reaches: gradients of ordinary leaves (parameters) accumulate in the
context, never in `.grad`; a recv leaf's gradient is sent to its sender, which runs the same
step from the tensor it sent, and so on across workers. Every step waits for the steps it
started, so `backward` returns when the whole distributed backward is done and
`get_gradients(context_id)` on each worker holds its parameters' gradients (what
`DistributedOptimizer.step(context_id)` applies). Leaving the `with` block releases the context
here and on every worker it reached.
"""
from __future__ import annotations

import contextlib
import itertools
import threading

from ... import _fork

__all__ = ["backward", "context", "get_gradients"]

_contexts: dict = {}
_lock = _fork.lock()
_ids = itertools.count(1)
class _Local(threading.local):
    cid = None  # (a class default: a missing attribute of a local costs ~0.3 us a call)


_tls = _Local()


class _Context:
    def __init__(self, cid: int):
        self.id = cid
        self.lock = _fork.lock()
        self.grads: dict = {}   # id(leaf) -> (leaf, accumulated gradient)
        self.sends: dict = {}   # send id -> the tensor sent
        self.recvs: dict = {}   # id(received leaf) -> (leaf, sender rank, send id)
        self.workers: set = set()  # the workers it reached (released with it)
        self.send_ids = itertools.count(1)

    def accumulate(self, leaf, grad) -> None:
        # contiguous, as `.backward()` leaves `.grad` (a transposed view from `autograd.grad`
        # would make an optimizer's compiled step build a second specialisation)
        grad = grad.contiguous()
        with self.lock:
            old = self.grads.get(id(leaf))
            self.grads[id(leaf)] = (leaf, grad if old is None else old[1] + grad)


def _agent():
    from ..rpc.api import _agent as agent
    return agent()


def _ctx(cid: int, create: bool = False) -> _Context:
    with _lock:
        ctx = _contexts.get(cid)
        if ctx is None:
            if not create:
                raise RuntimeError(f"Could not find autograd context with id: {cid}")
            ctx = _contexts[cid] = _Context(cid)
        return ctx


def _current_id():
    return _tls.cid


@contextlib.contextmanager
def _entered(cid):
    """Serve a request inside context `cid` (None: outside any)."""
    old = _current_id()
    _tls.cid = cid
    try:
        yield
    finally:
        _tls.cid = old


class context:
    """`with dist_autograd.context() as context_id:` a distributed autograd context."""

    def __enter__(self) -> int:
        a = _agent()
        if _current_id() is not None:
            raise RuntimeError("Already have an autograd context id for this thread.")
        self.id = (a.rank << 48) | next(_ids)
        _ctx(self.id, create=True)
        _tls.cid = self.id
        return self.id

    def __exit__(self, *exc):
        _tls.cid = None
        _release(self.id, None)
        return False


def _release(cid: int, src) -> None:
    """Drop context `cid` here and on the workers it reached (they pass it on)."""
    with _lock:
        ctx = _contexts.pop(cid, None)
    if ctx is not None:
        a = _agent()
        for w in sorted(ctx.workers - {a.rank, src}):
            a.request(w, {"op": "autograd_release"}, cid, "autograd_release",
                      a.options.rpc_timeout)  # in flight; shutdown waits for it


def _outgoing(cid: int, dst: int, tensors) -> list:
    """Record the tensors requiring grad that a message to `dst` carries: [[node id, send id]]."""
    if not tensors:
        return []
    ctx = _ctx(cid, create=True)
    out = []
    with ctx.lock:
        ctx.workers.add(dst)
        for node_id, t in tensors:
            sid = next(ctx.send_ids)
            ctx.sends[sid] = t
            out.append([node_id, sid])
    return out


def _incoming(cid: int, src: int, pairs, tensors: dict) -> None:
    """Record the received leaves that require grad as recvs from `src`."""
    ctx = _ctx(cid, create=True)
    with ctx.lock:
        ctx.workers.add(src)
        for pair in pairs:
            if not (isinstance(pair, list) and len(pair) == 2 and pair[0] in tensors and
                    isinstance(pair[1], int)):
                raise RuntimeError("RPC: malformed autograd record in the message")
            t = tensors[pair[0]]
            ctx.recvs[id(t)] = (t, src, pair[1])


def _leaves(roots) -> list:
    """The leaves requiring grad that `roots`' graphs reach (roots that are leaves included)."""
    out, seen = [], set()
    stack = []
    for r in roots:
        if r.grad_fn is None:
            if r.requires_grad and id(r) not in seen:
                seen.add(id(r))
                out.append(r)
        else:
            stack.append(r.grad_fn)
    while stack:
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        var = getattr(fn, "variable", None)
        if var is not None:
            if id(var) not in seen:
                seen.add(id(var))
                out.append(var)
            continue
        stack.extend(f for f, _ in fn.next_functions if f is not None)
    return out


def _run_backward(ctx: _Context, roots: list, grads: list) -> None:
    """One worker's step: gradients of the reached leaves; parameters' accumulate in `ctx`,
    recv leaves' go to their senders (in parallel; waits for them all)."""
    from ... import autograd
    leaves = _leaves(roots)
    found = {}
    inner = [(r, g) for r, g in zip(roots, grads) if r.grad_fn is not None]
    if inner and leaves:
        gs = autograd.grad([r for r, _ in inner], leaves, [g for _, g in inner],
                           retain_graph=True, allow_unused=True)
        found = {id(leaf): (leaf, g) for leaf, g in zip(leaves, gs) if g is not None}
    for r, g in zip(roots, grads):  # a root that is itself a leaf gets its gradient as is
        if r.grad_fn is None and r.requires_grad:
            old = found.get(id(r))
            found[id(r)] = (r, g if old is None else old[1] + g)
    a = _agent()
    futs = []
    for leaf, g in found.values():
        recv = ctx.recvs.get(id(leaf))
        if recv is None:
            ctx.accumulate(leaf, g)
        else:
            futs.append(a.request(recv[1], {"op": "autograd_backward"}, (ctx.id, recv[2], g),
                                  "dist_autograd.backward", a.options.rpc_timeout))
    for f in futs:
        f.wait()


def backward(context_id: int, roots, retain_graph: bool = False) -> None:
    """Run backward from `roots` (scalars: their gradient is 1) across every worker the graph
    spans, in context `context_id`; gradients accumulate in the contexts."""
    from ... import ones_like
    ctx = _ctx(context_id)
    roots = list(roots)
    for r in roots:
        if not r.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a "
                               "grad_fn")
    with _entered(context_id):
        _run_backward(ctx, roots, [ones_like(r) for r in roots])


def get_gradients(context_id: int) -> dict:
    """{tensor: gradient} of this worker's leaves in context `context_id`."""
    ctx = _ctx(context_id)
    with ctx.lock:
        return {leaf: g for leaf, g in ctx.grads.values()}


def _serve_backward(agent, src, env, payload):
    if not (isinstance(payload, tuple) and len(payload) == 3):
        raise RuntimeError("RPC: malformed autograd backward request")
    cid, sid, grad = payload
    ctx = _ctx(cid)
    with ctx.lock:
        t = ctx.sends.get(sid)
    if t is None:
        raise RuntimeError(f"autograd context {cid} has no tensor sent with id {sid}")
    with _entered(cid):
        _run_backward(ctx, [t], [grad])


def _serve_release(agent, src, env, payload):
    if isinstance(payload, int):
        _release(payload, src)
