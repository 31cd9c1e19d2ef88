"""One eager-tape node for a whole scripted call, so compiled and eager autograd mix.

Owns `attach(outputs, inputs, run_backward, ...)` and `ScriptNode`. The node follows the
custom-node pattern of `autograd/function.py` (`node.custom(grads) -> per-input grads`, edges
from `autograd.graph.edge_of`), so `loss.backward()`, `autograd.grad`, hooks and retain_grad
work through it. After a backward without `retain_graph` the node is released: its
`run_backward` (which holds the saved forward values) is dropped, and a second backward raises
PyTorch's "Trying to backward through the graph a second time" error, like eager.

Higher order: the compiled backward works on detached saved values, so its grads cannot be
differentiated again. When the engine runs the node with grad mode on (`create_graph=True`)
the node calls `create_graph_backward` instead (e.g. `recompute_backward(graph, inputs)`: rerun
the original graph eagerly on the inputs and differentiate that tape), or raises a clear error
when none was given, never returning silently first-order-only grads.

Saved tensors that the caller can still reach (the inputs, outputs the backward reads) are
passed as `saved=`: their versions are recorded and an in-place change before backward raises
the same error as eager autograd.
"""
from __future__ import annotations

import numpy as np

from ... import _dtype as dt
from ..._tensor import Tensor
from ...autograd import grad_mode
from ...autograd.graph import _FREED_MSG, Node, edge_of
from ..kernels.log import log_enabled


class ScriptNode(Node):
    """The backward of one scripted call. `run_backward(grads) -> grads per input`."""

    __slots__ = ("run_backward", "fn_name", "materialize", "create_graph_backward")

    def name(self):
        return f"{self.fn_name}Backward"

    def release(self):
        self.freed = True
        self.run_backward = None
        self.create_graph_backward = None
        self.versions = ()

    def run(self, grads):
        if self.freed or self.run_backward is None:
            raise RuntimeError(_FREED_MSG)
        for t, v in self.versions:
            if t._version[0] != v:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified "
                    f"by an inplace operation: [{t.type()} [{', '.join(map(str, t.shape))}]], "
                    f"is at version {t._version[0]}; expected version {v} instead.")
        grads = list(grads)
        for i, meta in enumerate(self.out_meta):
            if grads[i] is None and meta is not None and self.materialize[i]:
                shape, d = meta
                grads[i] = Tensor._make(np.zeros(shape, d.np), d)
        if grad_mode.is_grad_enabled():  # create_graph=True: grads must be differentiable
            if self.create_graph_backward is None:
                raise RuntimeError(
                    f"{self.name()}: double backward (create_graph=True) through the compiled "
                    f"scripted function '{self.fn_name}' is not supported; compute this "
                    "gradient without create_graph=True, or call the function unscripted")
            res = list(self.create_graph_backward(grads))
        else:
            res = list(self.run_backward(grads))
        if len(res) != len(self.next_edges):
            raise RuntimeError(f"{self.name()}: the backward returned {len(res)} gradients for "
                               f"{len(self.next_edges)} inputs")
        out = []
        for g, edge, meta in zip(res, self.next_edges, self.in_meta):
            if g is None or edge is None:
                out.append(None)
                continue
            if not isinstance(g, Tensor):
                g = Tensor._make(np.asarray(g, meta[1].np), meta[1])
            if g._dtype is not meta[1]:
                g = g.to(meta[1])
            out.append(g)
        return out


def attach(outputs, inputs, run_backward, *, saved=(), name: str = "ScriptFunction",
           differentiable=None, create_graph_backward=None):
    """Hang one node on the eager tape for a scripted call.

    `outputs`: the call's outputs (tensors; other values are skipped); float tensor outputs
    (those flagged in `differentiable`, when given) get the node as `grad_fn`. `inputs`: the
    call's inputs; the backward returns one grad (or None) per entry. `run_backward(grads)`:
    grads has one entry per output (a tensor for differentiable outputs, zeros when no
    gradient arrived; None otherwise). Returns the outputs to hand to the caller: the same
    objects, except that an input returned as-is or a tensor returned twice is replaced by a
    new tensor sharing its data (so the caller's input never gets this grad_fn). With no input
    requiring grad nothing is attached and `outputs` come back unchanged.
    `create_graph_backward(grads)`: same contract, used when the backward runs with
    `create_graph=True` (see module doc).
    """
    outputs = list(outputs)
    inputs = list(inputs)
    # one pass over the inputs and one over the outputs (this runs on every scripted call
    # with grad: generator expressions per field were a fifth of the boundary's cost)
    edges, in_meta, seen, wanted = [], [], set(), False
    for t in inputs:
        if isinstance(t, Tensor):
            seen.add(id(t))
            in_meta.append((t._data.shape, t._dtype))
            if t._requires_grad:
                wanted = True
                edges.append(edge_of(t))
                continue
        else:
            in_meta.append(None)
        edges.append(None)
    if not wanted:
        return outputs
    node = ScriptNode()
    marked, out_meta = [], []
    for k, o in enumerate(outputs):
        if not isinstance(o, Tensor):
            marked.append(False)
            out_meta.append(None)
            continue
        # an input returned as-is (or one tensor returned twice) must become a distinct
        # tensor object, else setting its grad_fn would rewrite the caller's tensor; it
        # shares the data and the version counter, like a view
        if id(o) in seen:
            c = Tensor._make(o._data, o._dtype)
            c._version = o._version
            outputs[k] = o = c
        seen.add(id(o))
        d = o._dtype
        m = (differentiable is None or k < len(differentiable) and bool(differentiable[k])) \
            and d.category >= dt.FLOAT and d.category != dt.COMPLEX
        marked.append(m)
        out_meta.append((o._data.shape, d))
        if m:
            o._requires_grad = True
            o._grad_fn = node
            o._output_nr = k
    node.fn_name = name
    node.run_backward = run_backward
    node.create_graph_backward = create_graph_backward
    node.next_edges = tuple(edges)
    node.in_meta = tuple(in_meta)
    node.out_meta = tuple(out_meta)
    node.materialize = tuple(marked)
    node.versions = tuple([(t, t._version[0]) for t in saved if isinstance(t, Tensor)])
    node.custom = node.run
    return outputs


def recompute_backward(graph, inputs):
    """A `create_graph_backward` for `attach`: rerun `graph` (or `graph()`) through the
    interpreter on the call's inputs with grad mode on (so the eager tape links to the inputs'
    history) and differentiate it with `create_graph=True`. Costs one extra forward; only for
    higher order."""
    from ...autograd import engine
    from ..ir.interpreter import run_graph

    def run(grads):
        gr = graph() if callable(graph) else graph  # a function: the graph made when needed
        _record_fallback(gr)
        with grad_mode.enable_grad():
            outs = run_graph(gr, list(inputs))
        pairs = [(o, g) for o, g in zip(outs, grads)
                 if isinstance(o, Tensor) and o._requires_grad and g is not None]
        wrt = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x._requires_grad]
        res = [None] * len(inputs)
        if not pairs or not wrt:
            return res
        gs = engine.grad([p[0] for p in pairs], [inputs[i] for i in wrt],
                         [p[1] for p in pairs], create_graph=True, allow_unused=True)
        for i, g in zip(wrt, gs):
            res[i] = g
        return res
    return run


CREATE_GRAPH_REASON = "create_graph=True: the backward re-runs the graph eagerly"


def _record_fallback(graph) -> None:
    """Count the eager re-run in `jitorch.jit.stats()` (an interpreted run, with its reason in
    `interpreted_reasons`) and log it under JITORCH_LOG=compile, so it is never silent."""
    import sys

    from . import stats
    with stats._lock:
        stats._c.interpreted_reasons[CREATE_GRAPH_REASON] += 1
    next(stats._c.interpreted_runs)
    if log_enabled("compile"):
        print(f"jitorch: {graph.name}: {CREATE_GRAPH_REASON}", file=sys.stderr, flush=True)

