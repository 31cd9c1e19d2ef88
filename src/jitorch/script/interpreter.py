"""The IR interpreter: runs a Graph op by op through eager dispatch.

It is the reference semantics for every compiled program (tests compare against it), the
fallback for graphs or nodes the code generator cannot lower, and, because it calls the same
eager ops, it records autograd like eager code does.
"""
from __future__ import annotations

import operator

from .._ops import registry
from .._tensor import Tensor
from . import ir


class ScriptRuntimeError(RuntimeError):
    """`jitorch.jit.Error`: a failure inside a scripted program, naming the user's line."""


SCALAR_OPS = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow,
    "neg": operator.neg, "not": operator.not_, "eq": operator.eq, "ne": operator.ne,
    "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
    "and": lambda a, b: a and b, "or": lambda a, b: a or b, "is": operator.is_,
    "is_not": operator.is_not, "int": int, "float": float, "bool": bool,
    "min": min, "max": max, "abs": abs, "len": len, "getitem": operator.getitem,
    "contains": operator.contains,
}


def call_registry_op(name: str, vals: list):
    op = registry.OPS[name]
    by_name = dict(zip(op.params, vals))
    slots = tuple(by_name[t] for t in op.tensors)
    attrs = {a: by_name[a] for a in op.attrs}
    return registry.dispatch(op, slots, attrs)


def run_graph(graph: ir.Graph, args) -> list:
    return run_block(graph.block, list(args), {})


def run_block(block: ir.Block, args: list, env: dict) -> list:
    for p, a in zip(block.params, args):
        env[p.uid] = a
    for n in block.nodes:
        try:
            outs = _execute(n, [env[v.uid] for v in n.inputs], env)
        except ScriptRuntimeError:
            raise
        except Exception as e:  # name the user's line, keep the original as the cause
            if n.loc is None or isinstance(e, (StopIteration,)):
                raise
            raise type(e)(f"{e}\n  in scripted code at {n.loc}: {n.loc.text.strip()}") from e
        if len(n.outputs) == 1:
            env[n.outputs[0].uid] = outs
        else:
            for v, o in zip(n.outputs, outs):
                env[v.uid] = o
    return [env[v.uid] for v in block.returns]


def _execute(n: ir.Node, vals: list, env: dict):
    op = n.op
    if not op.startswith("prim::"):
        return call_registry_op(op, vals)
    if op == "prim::Constant":
        return n.attrs["value"]
    if op == "prim::ListConstruct":
        return list(vals)
    if op == "prim::TupleConstruct":
        return tuple(vals)
    if op in ("prim::TupleUnpack", "prim::ListUnpack"):
        return tuple(vals[0])
    if op == "prim::TupleIndex":
        return vals[0][vals[1]]
    if op == "prim::DictConstruct":
        return dict(zip(vals[0::2], vals[1::2]))
    if op == "prim::ScalarOp":
        return SCALAR_OPS[n.attrs["fn"]](*vals)
    if op == "prim::TensorToScalar":
        return vals[0].item()
    if op == "prim::GetAttr":
        return getattr(vals[0], n.attrs["name"])
    if op == "prim::If":
        branch = n.blocks[0] if bool(vals[0]) else n.blocks[1]
        r = run_block(branch, vals[1:], env)
        return r[0] if len(n.outputs) == 1 else r
    if op == "prim::Loop":
        return _run_loop(n, vals, env)
    if op == "prim::CallFunction":
        r = run_graph(n.attrs["fn"], vals)
        return r[0] if len(n.outputs) == 1 else r
    if op == "prim::PythonOp":
        r = n.attrs["fn"](*vals)
        return r
    if op == "prim::Print":
        print(*vals)
        return None
    if op == "prim::Assert":
        if not bool(vals[0]):
            raise ScriptRuntimeError(f"AssertionError: {vals[1] if len(vals) > 1 else ''}\n"
                                     f"  in scripted code at {n.loc}")
        return None
    if op == "prim::Raise":
        msg = "".join(str(v) for v in vals)
        raise ScriptRuntimeError(f"{n.attrs.get('exc', 'Exception')}: {msg}\n"
                                 f"  in scripted code at {n.loc}")
    if op == "prim::Fused":
        r = run_block(n.blocks[0], vals, env)
        return r[0] if len(n.outputs) == 1 else r
    raise NotImplementedError(f"jitorch interpreter: no rule for {op}")


def _run_loop(n: ir.Node, vals: list, env: dict):
    n_carried = len(n.outputs)
    trip, cond = vals[0], vals[1]
    carried = list(vals[2:2 + n_carried])
    captured = list(vals[2 + n_carried:])
    body = n.blocks[0]
    i = 0
    trip = int(trip) if trip is not None else None
    while bool(cond) and (trip is None or i < trip):
        r = run_block(body, [i] + carried + captured, env)
        cond, carried = r[0], list(r[1:])
        i += 1
    return carried[0] if n_carried == 1 else carried
