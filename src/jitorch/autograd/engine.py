"""The backward engine: `backward()` and `grad()` walk the recorded graph.

Owns graph discovery, the execution order (a node runs once every gradient for it has arrived;
among ready nodes the most recently created runs first, as in PyTorch), hooks, retain_grad,
capture of gradients for `autograd.grad`, and freeing saved tensors unless `retain_graph` (each
node's right after it ran, as PyTorch's engine frees them).
Gradients of one output are summed as `add` sums them (in NumPy when nothing records).
A plain node runs through its op's generated applier (graph.py); a node that alone became ready
runs next without passing through the ready heap when it would come first anyway (a chain
never touches it), and when its one gradient came from the node that just ran, that gradient is
handed on without passing through `buffers` either.
"""
from __future__ import annotations

import heapq
import threading
from collections import namedtuple

import numpy as np

from .. import _dtype as dt
from .._device.transfer import data_copy as _data_copy, full as _full
from .._tensor import Tensor
from . import grad_mode
from .graph import _APPLIERS, _CPU_DEV, _MAYBE_TENSORS, _PLAIN, SUM_DTYPES, AccumulateGrad, \
    applier, edge_of, ops_needed


def _as_tuple(x):
    if x is None:
        return None
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def _root_grads(outputs, grad_outputs, is_grads_batched=False):
    roots = []
    grad_outputs = grad_outputs or (None,) * len(outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad can be implicitly created only for scalar outputs"
                           if not grad_outputs else
                           f"Mismatch in number of outputs ({len(outputs)}) and grad_outputs "
                           f"({len(grad_outputs)})")
    for i, (t, g) in enumerate(zip(outputs, grad_outputs)):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected a Tensor as output {i}, got {type(t).__name__}")
        if not t._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have "
                               "a grad_fn")
        if g is None:
            if t._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if t._dtype.category != dt.FLOAT:
                raise RuntimeError("grad can be implicitly created only for real scalar outputs "
                                   f"but got {t._dtype}")
            g = _full(t._data.shape, 1, t._dtype, t._device)
        elif not isinstance(g, Tensor):
            g = Tensor._make(np.asarray(g, t._dtype.np), t._dtype)
        elif g._data.shape != t._data.shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                               f"{g.shape} and output[{i}] has a shape of {t.shape}.")
        roots.append((edge_of(t), g))
    return roots


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None):
    """`torch.autograd.backward`: accumulate gradients of `tensors` into the leaves' `.grad`."""
    tensors = _as_tuple(tensors)
    grad_tensors = _as_tuple(grad_tensors if grad_tensors is not None else grad_variables)
    if retain_graph is None:
        retain_graph = create_graph
    roots = _root_grads(tensors, grad_tensors)
    only = None
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if not inputs:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
        only = [edge_of(t) for t in inputs]
    _run(roots, retain_graph, create_graph, capture=None, accumulate_only=only)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """`torch.autograd.grad`: gradients of `outputs` w.r.t. `inputs`, returned (not accumulated)."""
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    if allow_unused is None:
        allow_unused = materialize_grads
    for i, t in enumerate(inputs):
        if not t._requires_grad:
            raise RuntimeError(f"One of the differentiated Tensors does not require grad")
    if retain_graph is None:
        retain_graph = create_graph
    roots = _root_grads(outputs, _as_tuple(grad_outputs))
    edges = [edge_of(t) for t in inputs]
    captured = _run(roots, retain_graph, create_graph, capture=edges, accumulate_only=None)
    result = []
    for t, g in zip(inputs, captured):
        if g is None:
            if materialize_grads:
                g = _full(t._data.shape, 0, t._dtype, t._device)
            elif not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been "
                                   "used in the graph. Set allow_unused=True if this is the "
                                   "desired behavior.")
        result.append(g)
    return tuple(result)


# The engine runs in progress on this thread, innermost last. A node whose graph is built only
# when it runs (`hides_graph`: utils.checkpoint's recomputation) reads the run that called it,
# so its inner run captures into the same `autograd.grad` targets or honours `inputs=`.
Run = namedtuple("Run", "capture captured accumulate_only create_graph")
_runs = threading.local()


def current_run() -> "Run | None":
    stack = getattr(_runs, "stack", None)
    return stack[-1] if stack else None


def _add(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def _run(roots, retain_graph, create_graph, capture, accumulate_only):
    # 1. discover the graph and count, per node, how many edges lead into it
    deps: dict = {}
    stack = []
    for (node, _), _g in roots:
        if node not in deps:
            deps[node] = 0
            stack.append(node)
    targets = capture if capture is not None else accumulate_only
    order = [] if targets is not None else None  # (only `_reaching` reads it)
    push, get = stack.append, deps.get
    while stack:
        n = stack.pop()
        if order is not None:
            order.append(n)
        for e in n.next_edges:
            if e is not None:  # (one lookup per edge: a count, or None for a new node)
                m = e[0]
                d = get(m)
                if d is None:
                    deps[m] = 1
                    push(m)
                else:
                    deps[m] = d + 1
    needed = None
    if targets is not None:
        # a node that hides its graph may reach any target: it and its ancestors must run
        needed = _reaching(order, {e[0] for e in targets}
                           | {n for n in order if getattr(n, "hides_graph", False)})
    capture_at = {}
    if capture is not None:
        for i, (n, nr) in enumerate(capture):
            capture_at.setdefault((n, nr), []).append(i)
    captured = [None] * (len(capture) if capture is not None else 0)
    allowed_acc = None if accumulate_only is None else {e[0] for e in accumulate_only}

    buffers: dict = {}
    for (node, nr), g in roots:
        buf = buffers.setdefault(node, [None] * len(node.out_meta))
        buf[nr] = _add(buf[nr], g)
    ready = [(-n.seq, id(n), n) for n in buffers if deps[n] == 0]
    heapq.heapify(ready)
    stack = _runs.__dict__.setdefault("stack", [])
    stack.append(Run(capture, captured, accumulate_only, create_graph))
    try:
        _execute(ready, buffers, deps, needed, capture, capture_at, captured, allowed_acc,
                 create_graph, not retain_graph)
    finally:
        stack.pop()
    return captured


def _execute(ready, buffers, deps, needed, capture, capture_at, captured, allowed_acc,
             create_graph, release):
    pop, push = heapq.heappop, heapq.heappush
    appliers = _APPLIERS
    maybe_tensors = _MAYBE_TENSORS
    plain = _PLAIN
    if not ready:
        return
    node = pop(ready)[2]
    grads = None  # (the gradients of a node handed on directly, below; else in `buffers`)
    # node -> the output numbers whose buffered gradient is a fan-in sum this run made (see
    # below): nobody else holds it while it sits in `buffers`, so a further gradient is added in
    # place and a leaf's `.grad` takes it without a copy, as PyTorch's engine does; the entry
    # leaves with its buffer (one dict pop per node, no id per gradient)
    owned = {}
    with grad_mode.set_grad_enabled(create_graph):
        while True:
            if grads is None:
                grads = buffers.pop(node, None) or [None] * len(node.out_meta)
            # (an AccumulateGrad's gradient is a sum made here)
            mine = bool(owned.pop(node, None)) if owned else False
            if node.tensor_hooks or node.retains:
                mine = False  # (a hook may keep the gradient)
                grads = _run_tensor_hooks(node, grads)
            if capture_at:
                for nr in range(len(grads)):
                    for i in capture_at.get((node, nr), ()):  # added to what a hides_graph
                        captured[i] = _add(captured[i], grads[nr])  # node's inner run captured
            if type(node) is AccumulateGrad:
                if capture is None and grads[0] is not None and (
                        allowed_acc is None or node in allowed_acc):
                    node.accumulate(grads[0], create_graph, mine)
                if not ready:
                    break
                node = pop(ready)[2]
                grads = None
                continue
            for g in grads:  # run the node if some gradient arrived (and it leads somewhere)
                if g is not None:
                    run_it = needed is None or node in needed
                    break
            else:
                run_it = False
            if run_it:
                if node.pre_hooks:
                    for h in node.pre_hooks:
                        r = h(tuple(grads))
                        if r is not None:
                            grads = list(r)
                if node.custom is None:
                    app = appliers.get(node.op)
                    if app is None:
                        app = applier(node.op)
                    in_grads = app(node, grads)
                else:
                    in_grads = node.custom(grads)
                if node.hooks:
                    for h in node.hooks:
                        r = h(tuple(in_grads), tuple(grads))
                        if r is not None:
                            in_grads = list(r)
                # saved tensors are freed once their node ran, as PyTorch's engine frees them
                # (no call where `release` would find nothing: no saved value that may hold a
                # tensor, e.g. a view's shape; ops not seen yet are left to it)
                if release:
                    if node.versions and node.custom is None:  # `Node.release` inline: saved
                        node.freed = True  # tensors are always freed (a call per node saved)
                        node.saved = None
                        node.versions = ()
                    elif node.custom is not None:
                        node.release()
                    elif node.saved is not None:
                        names = maybe_tensors.get(node.op)
                        if names is None:  # (an op not seen yet: `release` finds its names)
                            node.release()
                        elif names:  # only a value that may hold a tensor costs the call
                            saved = node.saved
                            for n in names:
                                if type(saved.get(n)) not in plain:
                                    node.release()
                                    break
            else:
                in_grads = [None] * len(node.next_edges)
            nxt = None  # the first node this one made ready: run next if it is the only one
            nxt_grads = None  # (its gradients when this node gave its only one: not buffered)
            for e, g in zip(node.next_edges, in_grads):
                if e is None:
                    continue
                m, nr = e
                if g is not None:
                    buf = buffers.get(m)
                    if buf is None:
                        buf = [None] * len(m.out_meta)
                        buf[nr] = g
                        d = deps[m] - 1
                        deps[m] = d
                        if d:  # more to come: buffered
                            buffers[m] = buf
                        elif nxt is None:  # its only gradient: handed on without `buffers`
                            nxt, nxt_grads = m, buf
                        else:
                            buffers[m] = buf
                            push(ready, (-m.seq, id(m), m))
                        continue
                    a = buf[nr]
                    if a is None:
                        buf[nr] = g
                    elif (type(a) is Tensor and type(g) is Tensor
                          and a._dtype is g._dtype and a._dtype in SUM_DTYPES
                          and a._data.shape == g._data.shape
                          and a._device is _CPU_DEV and g._device is _CPU_DEV
                          and not ops_needed()):
                        # two gradients of one output (fan-in) summed as `a + g` computes
                        # them, without the op's dispatch: nothing records, nothing casts;
                        # into the sum made here before, if `a` is one
                        own = owned.get(m)
                        if own is not None and nr in own:
                            np.add(a._data, g._data, out=a._data)
                        else:
                            s = np.add(a._data, g._data)
                            if type(s) is not np.ndarray:  # 0-d operands: a NumPy scalar,
                                s = np.asarray(s)  # which a compiled program cannot take
                            a = buf[nr] = Tensor._make(s, a._dtype)
                            if own is None:
                                owned[m] = {nr}
                            else:
                                own.add(nr)
                    else:
                        buf[nr] = a + g
                        own = owned.get(m)
                        if own is not None:
                            own.discard(nr)  # (a sum made by the op: not this run's own)
                d = deps[m] - 1
                deps[m] = d
                if d == 0:
                    if nxt is None:
                        nxt = m
                    else:
                        push(ready, (-m.seq, id(m), m))
            # among ready nodes the most recently created runs first; a lone ready node (a
            # chain) runs without passing through the heap
            if nxt is not None:
                if ready and nxt.seq < -ready[0][0]:
                    if nxt_grads is not None:
                        buffers[nxt] = nxt_grads
                    push(ready, (-nxt.seq, id(nxt), nxt))
                    node = pop(ready)[2]
                    grads = None
                else:  # (it is ready and comes before every node in the heap: no push, pop)
                    node = nxt
                    grads = nxt_grads
            elif ready:
                node = pop(ready)[2]
                grads = None
            else:
                break


def _run_tensor_hooks(node, grads):
    if node.tensor_hooks:
        for nr, hooks in node.tensor_hooks.items():
            for h in list(hooks):
                if grads[nr] is not None:
                    r = h(grads[nr])
                    if r is not None:
                        grads[nr] = r
    if node.retains:
        for nr, ref in node.retains.items():
            t = ref()
            if t is not None and grads[nr] is not None:
                g = grads[nr]
                if t._grad is None:
                    t._grad = g if g._grad_fn is not None else _data_copy(g)
                else:
                    t._grad = t._grad + g
    return grads


def _reaching(order, target_nodes):
    """Nodes from which some target is reachable (only those must run)."""
    reach = set()
    for n in reversed(order):  # children are discovered after parents in DFS order
        if n in target_nodes or any(e is not None and e[0] in reach for e in n.next_edges):
            reach.add(n)
    # DFS order is not topological in general; iterate to a fixed point.
    changed = True
    while changed:
        changed = False
        for n in order:
            if n not in reach and any(e is not None and e[0] in reach for e in n.next_edges):
                reach.add(n)
                changed = True
    return reach
