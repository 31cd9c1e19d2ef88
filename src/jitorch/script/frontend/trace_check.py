"""`jit.trace(..., check_trace=True, check_inputs=[...])`: PyTorch's sanity check of a trace.

Owns `TracingCheckError` and `check_trace`. As PyTorch does, the function is traced again on each
check input (the example inputs when none are given; tensors cloned, so in-place code sees the
same data): a second graph that differs from the first (other ops or other constants, which
is how a branch on a tensor's data shows; the message names the data-dependent Python value
that came out differently) raises `TracingCheckError` ("Tracing failed sanity checks!\\nERROR: Graphs differed across
invocations!" with the diff); when the graphs agree, the traced function's outputs are compared
with the Python function's, and a mismatch warns `TracerWarning` ("Output nr 1. of the traced
function does not match the corresponding output of the Python function. ...", after "Trace had
nondeterministic nodes. ..." when the trace holds random ops, such as a training-mode dropout).
"""
from __future__ import annotations

import difflib
import warnings

import numpy as np

from ..._tensor import Tensor
from . import trace as _trace


class TracingCheckError(Exception):
    """PyTorch's `torch.jit._trace.TracingCheckError`: the trace is not the same program on
    the check inputs."""

    def __init__(self, graph_diff_error, tensor_compare_error, extra_msg=None):
        self.message = "Tracing failed sanity checks!\n"
        if extra_msg is not None:
            self.message += extra_msg + "\n"
        if graph_diff_error is not None:
            self.message += "ERROR: Graphs differed across invocations!\n"
            self.message += _indent(graph_diff_error) + "\n"
        if tensor_compare_error is not None:
            self.message += ("ERROR: Tensor-valued Constant nodes differed in value across "
                             "invocations. This often indicates that the tracer has encountered "
                             "untraceable code.\n")
            self.message += _indent(tensor_compare_error) + "\n"
        super().__init__(self.message)


def _indent(s: str) -> str:
    return "\n".join("\t" + line for line in s.splitlines())


# --- a graph as comparable lines -----------------------------------------------------------
def _const_text(v) -> str:
    # a tensor constant by its type only: its data is compared apart (_tensor_constants_diff),
    # since random data the tracer baked in (rand()) differs without the program differing
    if isinstance(v, Tensor):
        return f"Tensor({v._dtype}, {tuple(v._data.shape)})"
    return repr(v)


def _const_display(v) -> str:
    if isinstance(v, Tensor):
        a = v._data
        return "{" + (repr(a.item()) if a.size == 1 else f"<{a.size} elements>") + "}"
    return repr(v)


def graph_lines(graph) -> tuple[list, list]:
    """(key lines, display lines) of a traced graph: one per node, values numbered by order of
    definition, without types (shapes may differ between check inputs) but with constants."""
    names: dict = {}

    def name(v):
        n = names.get(v.uid)
        if n is None:
            n = names[v.uid] = f"%{len(names)}"
        return n

    for p in graph.inputs:
        name(p)
    keys, shown = [], []

    def walk(block, depth):
        for n in block.nodes:
            ins = ", ".join(name(v) for v in n.inputs)
            outs = ", ".join(name(v) for v in n.outputs)
            where = f" # {n.loc.file}:{n.loc.line}" if n.loc is not None else ""
            head = f"{'  ' * depth}{outs + ' = ' if outs else ''}{n.op}"
            if n.op == "prim::Constant":
                val = n.attrs.get("value")
                keys.append(f"{head}[{_const_text(val)}]({ins})")
                shown.append(f"{head}[value={_const_display(val)}]({ins}){where}")
            else:
                keys.append(f"{head}({ins})")
                shown.append(f"{head}({ins}){where}")
            for b in n.blocks:
                walk(b, depth + 1)
        ret = ", ".join(name(v) for v in block.returns)
        keys.append(f"{'  ' * depth}return ({ret})")
        shown.append(f"{'  ' * depth}return ({ret})")

    walk(graph.block, 1)
    return keys, shown


def _graph_diff(g1, g2) -> str | None:
    k1, s1 = graph_lines(g1)
    k2, s2 = graph_lines(g2)
    if k1 == k2:
        return None
    diff = "\n".join(x.rstrip("\n") for x in difflib.ndiff(s1, s2))
    first = next((i for i, (a, b) in enumerate(zip(k1, k2)) if a != b), min(len(k1), len(k2)))
    node = "\n".join(x.rstrip("\n") for x in difflib.ndiff(s1[first:first + 1],
                                                             s2[first:first + 1]))
    return (f"Graph diff:\n{_indent(diff)}\nFirst diverging operator:\nNode diff:\n"
            f"{_indent(node)}")


def _tensor_constants(graph) -> list:
    out = []

    def walk(block):
        for n in block.nodes:
            v = n.attrs.get("value") if n.op == "prim::Constant" else None
            if isinstance(v, Tensor):
                out.append((n, v))
            for b in n.blocks:
                walk(b)
    walk(graph.block)
    return out


def _tensor_constants_diff(g1, g2) -> str | None:
    """The tensor constants (same graph shape) whose data differs between two traces."""
    bad = []
    for (n, a), (_, b) in zip(_tensor_constants(g1), _tensor_constants(g2)):
        if not np.array_equal(a._data, b._data, equal_nan=True):
            where = f" # {n.loc.file}:{n.loc.line}" if n.loc is not None else ""
            bad.append(f"\tTensor({a._dtype}, {tuple(a._data.shape)}){where}")
    if not bad:
        return None
    return ("Trace had tensor constants whose data differs across invocations (random data, "
            "or data the tracer could not follow, is baked into a trace). Constants:\n"
            + "\n".join(bad) + "\nThis may cause errors in trace checking. To disable trace "
            "checking, pass check_trace=False to jitorch.jit.trace()")


def _conversion_diff(c1, c2) -> str | None:
    """The first data-dependent Python value that differs between two traces."""
    for i, (a, b) in enumerate(zip(c1, c2)):
        (loc1, what, d1), (loc2, _, d2) = a, b
        if loc1 != loc2 or d1.shape != d2.shape or not np.array_equal(d1, d2, equal_nan=True):
            where = f"{loc1.file}:{loc1.line}: {loc1.text.strip()}" if loc1 else "?"
            return (f"The {what} taken from a traced tensor at {where} was computed from "
                    f"{_short(d1)} when traced and from {_short(d2)} with the check input: the "
                    "trace recorded one path of data-dependent Python control flow. Use "
                    "jitorch.jit.script for data-dependent control flow.")
    if len(c1) != len(c2):
        return (f"The trace converted {len(c1)} tensor(s) to Python values, the check "
                f"{len(c2)}: the trace recorded one path of data-dependent control flow.")
    return None


def _short(a: np.ndarray) -> str:
    return repr(a.item()) if a.size == 1 else f"a tensor of shape {tuple(a.shape)}"


# --- outputs -------------------------------------------------------------------------------
def _leaves(x) -> list:
    out: list = []
    _trace._flatten(x, out)
    return out


def _compare(got, want, rtol) -> str | None:
    """None when close (PyTorch's assert_close defaults for atol), else its message."""
    a, b = got._data, want._data
    if a.shape != b.shape:
        return f"The values for attribute 'shape' do not match: {a.shape} != {b.shape}."
    if got._dtype is not want._dtype:
        return (f"The values for attribute 'dtype' do not match: {got._dtype} != "
                f"{want._dtype}.")
    if a.dtype.kind not in "fc":
        bad = a != b
        if not bad.any():
            return None
        return (f"Tensor-likes are not equal!\n\nMismatched elements: {int(bad.sum())} / "
                f"{a.size} ({100.0 * bad.sum() / a.size:.1f}%)")
    atol = 1e-7 if a.dtype == np.float64 or a.dtype == np.complex128 else 1e-5
    a64, b64 = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64), \
        b.astype(np.complex128 if b.dtype.kind == "c" else np.float64)
    ok = np.isclose(a64, b64, rtol=rtol, atol=atol, equal_nan=True)
    if ok.all():
        return None
    diff = np.abs(a64 - b64)
    rel = diff / np.maximum(np.abs(b64), np.finfo(np.float64).tiny)
    ia = tuple(int(i) for i in np.unravel_index(int(np.nanargmax(diff)), a.shape))
    ir_ = tuple(int(i) for i in np.unravel_index(int(np.nanargmax(rel)), a.shape))
    bad = int((~ok).sum())
    return ("Tensor-likes are not close!\n\n"
            f"Mismatched elements: {bad} / {a.size} ({100.0 * bad / a.size:.1f}%)\n"
            f"Greatest absolute difference: {float(diff[ia])} at index {ia} "
            f"(up to {atol} allowed)\n"
            f"Greatest relative difference: {float(rel[ir_])} at index {ir_} "
            f"(up to {rtol} allowed)")


def _clone(x):
    if isinstance(x, Tensor):
        return x.detach().clone().requires_grad_(x.requires_grad)
    if type(x) in (tuple, list):
        return type(x)(_clone(e) for e in x)
    if type(x) is dict:
        return {k: _clone(v) for k, v in x.items()}
    return x


def as_inputs(x) -> tuple:
    """A call's arguments as trace() takes them (one tensor, or a tuple)."""
    if isinstance(x, (Tensor, dict)) or not isinstance(x, (tuple, list)):
        return (x,)
    return tuple(x)


def check_trace(graph, retrace, call_traced, check_inputs, tolerance: float) -> None:
    """Check a trace on each of `check_inputs` (argument tuples): `retrace(args)` traces
    again and returns (graph, the Python function's result); `call_traced(args)` runs the trace.
    Raises TracingCheckError when the program differs, warns TracerWarning when its outputs
    do."""
    warned = False
    for ci in check_inputs:
        ci = as_inputs(ci)
        g2, want = retrace(_clone(ci))
        gdiff = _graph_diff(graph, g2)
        if gdiff is not None:  # (data-dependent values that differ but leave the program
            #                     alone, such as a value only printed, are no divergence)
            cdiff = _conversion_diff(getattr(graph, "trace_conversions", []),
                                     getattr(g2, "trace_conversions", []))
            raise TracingCheckError(gdiff, None, cdiff)
        tdiff = _tensor_constants_diff(graph, g2)
        if tdiff is not None:  # PyTorch warns likewise for nondeterministic nodes
            warnings.warn(tdiff, _trace.TracerWarning, stacklevel=4)
        got = call_traced(_clone(ci))
        gl, wl = _leaves(got), _leaves(want)
        if len(gl) != len(wl):
            warnings.warn(f"The traced function returned {len(gl)} tensor(s), the Python "
                          f"function {len(wl)}", _trace.TracerWarning, stacklevel=4)
            continue
        for i, (g, w) in enumerate(zip(gl, wl)):
            err = _compare(g, w, tolerance)
            if err is not None:
                if not warned:  # (once per trace, as PyTorch)
                    warned = _warn_nondeterministic(graph)
                warnings.warn(f"Output nr {i + 1}. of the traced function does not match the "
                              "corresponding output of the Python function. Detailed error:\n"
                              f"{err}", _trace.TracerWarning, stacklevel=4)


def _warn_nondeterministic(graph) -> bool:
    """PyTorch's warning before an output mismatch when the trace holds random nodes (a model
    traced in training mode records its dropout masks: ir/util.py `is_random`); whether it
    warned."""
    from ..ir import util as ir_util
    nodes = [n for n in ir_util.all_nodes(graph.block) if ir_util.is_random(n.op)]
    if nodes:
        warnings.warn("Trace had nondeterministic nodes. Did you forget call .eval() on your "
                      "model? Nodes:\n" + "\n".join(f"\t{n.op}" for n in nodes[:20]) +
                      "\nThis may cause errors in trace checking. To disable trace checking, "
                      "pass check_trace=False to torch.jit.trace()", _trace.TracerWarning,
                      stacklevel=5)
    return bool(nodes)
