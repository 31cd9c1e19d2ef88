"""The IR interpreter: runs a Graph op by op through eager dispatch.

It is the reference semantics for every compiled program (tests compare against it), the
fallback for graphs or nodes the code generator cannot lower, and, because it calls the same
eager ops, it records autograd like eager code does.

Semantics of the prim ops (ir.PRIM_OPS; block conventions in ir/__init__.py):
- `prim::If`: inputs (cond, *captured); the chosen block gets `captured` as params. A tensor
  condition is read with `bool()` (one element).
- `prim::Loop`: inputs (trip, cond, *carried, *captured); the body gets (i, *carried,
  *captured) and returns (cond, *carried_next); `trip` None means unbounded (a while loop).
- `prim::TensorToScalar`: attrs["type"] (an ir scalar type or its name) picks int/float/bool;
  default `item()`.
- `prim::ScalarOp`: attrs["fn"] names a function of the closed table SCALAR_FNS: an operator
  or builtin of SCALAR_OPS, or a `math.` function of MATH_FUNCTIONS (pure arithmetic only: a
  loaded archive names these, so nothing outside the table ever resolves, docs/security.md).
- factory nodes (`zeros`, `arange`, ...; registry ops of `_ops/factories.py`): their `impl`,
  the eager factory, called directly (a tracer never records a factory: its result is a
  constant).
- errors (the rule of kernels/signals.py): `prim::Assert` raises `ScriptRuntimeError`
  (`jitorch.jit.Error`), `prim::Raise` its exception class, and any other exception raised by a
  node is re-raised as `signals.located`: its own class and `ScriptRuntimeError` at once (so
  `except IndexError` and `except jitorch.jit.Error` both catch it), the user's file:line
  appended to its message. An error inside a call of jitorch's own scripted code (a library
  composite, an nn module's forward: `signals.in_library`) names the user's call instead.
"""
from __future__ import annotations

import builtins
import math
import operator
import string

from ... import _autocast
from ..._ops import registry
from ..._profiling import autocast_hook as _autocast_hook
from ..._tensor import Tensor
from .. import ir
from ..kernels.signals import ScriptRuntimeError, in_library, located, where


def safe_format(fmt: str, *args, **kwargs) -> str:
    """`fmt.format(*args, **kwargs)` (f-strings, `str.format`) whose fields name an argument
    only (`{}`, `{0}`, `{name}`), never an attribute or an item: `{0.__class__}` walks objects
    and a loaded archive chooses `fmt`."""
    def check(f, depth=0):
        for _, field, spec, _ in string.Formatter().parse(f):
            if field and not (field.isdigit() or field.isidentifier()):
                raise ValueError(f"format field {field!r} is not supported in scripted code")
            if spec and depth < 2:
                check(spec, depth + 1)
    if type(fmt) is not str:
        raise TypeError(f"format() needs a str, got {type(fmt).__name__}")
    check(fmt)
    return fmt.format(*args, **kwargs)


SCALAR_OPS = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "div": operator.truediv, "floordiv": operator.floordiv, "mod": operator.mod,
    "pow": operator.pow, "neg": operator.neg, "pos": operator.pos, "invert": operator.invert,
    "not": operator.not_, "eq": operator.eq, "ne": operator.ne,
    "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
    "and": lambda a, b: a and b, "or": lambda a, b: a or b, "is": operator.is_,
    "is_not": operator.is_not, "int": int, "float": float, "bool": bool, "str": str,
    "min": min, "max": max, "abs": abs, "len": len, "getitem": operator.getitem,
    "contains": operator.contains, "not_in": lambda a, b: a not in b,
    "in": lambda a, b: a in b, "bitand": operator.and_, "bitor": operator.or_,
    "bitxor": operator.xor, "lshift": operator.lshift, "rshift": operator.rshift,
    "round": round, "divmod": divmod, "format": safe_format,
    "list": list, "tuple": tuple, "range": lambda *a: list(range(*a)), "sum": sum,
}


# the math module's functions (all pure; frontend_call.math_call emits "math.<name>"), named
# one by one so that a name in an archive can never reach anything else
MATH_FUNCTIONS = (
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "ceil", "comb",
    "copysign", "cos", "cosh", "degrees", "dist", "erf", "erfc", "exp", "exp2", "expm1", "fabs",
    "factorial", "floor", "fma", "fmod", "frexp", "fsum", "gamma", "gcd", "hypot", "isclose",
    "isfinite", "isinf", "isnan", "isqrt", "lcm", "ldexp", "lgamma", "log", "log10", "log1p",
    "log2", "modf", "nextafter", "perm", "pow", "prod", "radians", "remainder", "sin", "sinh",
    "sqrt", "sumprod", "tan", "tanh", "trunc", "ulp")
SCALAR_FNS = {**SCALAR_OPS, **{"math." + f: getattr(math, f) for f in MATH_FUNCTIONS
                               if hasattr(math, f)}}


def scalar_fn(name: str):
    """The function of a `prim::ScalarOp`: from SCALAR_FNS only (a closed table)."""
    f = SCALAR_FNS.get(name) if type(name) is str else None
    if f is None:
        raise NotImplementedError(f"jitorch interpreter: unknown scalar op {name!r}")
    return f


def call_registry_op(name: str, vals: list):
    """Registry op `name` on `vals` (one per IR input, in the op's `params` order), through
    eager dispatch: its tensors positional, its attributes by keyword."""
    op = registry.OPS[name]
    cached = _callers.get(name)
    if cached is None or cached[0] is not op:
        cached = _callers[name] = (op, _caller(op))
    return cached[1](vals)


_callers: dict = {}  # op name -> (OpDef, call(vals)): the slots' positions worked out once


def _caller(op):
    """`call(vals)` for `op`: what `call_registry_op` does, unrolled for the op's parameters
    (the interpreter's per-node cost is mostly this bookkeeping: a dict of params per call cost
    about a fifth of an interpreted node; generated once per op from its declaration, whose
    parameter names are the registry's identifiers, never text from a graph)."""
    pos = {p: i for i, p in enumerate(op.params)}
    n_params = len(op.params)
    slots = "".join(f"v[{pos[t]}], " for t in op.tensors)
    attrs = ", ".join(f"{a!r}: v[{pos[a]}]" for a in op.attrs)
    check = op.extra.get("check")  # a value check of the public function (binary.guard)
    ns = {"_op": op, "_dispatch": registry.dispatch, "_check": check, "_slow": _call_by_name}
    body = (f"    s = ({slots})\n    a = {{{attrs}}}\n    _check(*s, **a)\n"
            "    return _dispatch(_op, s, a)\n") if check is not None else \
        f"    return _dispatch(_op, ({slots}), {{{attrs}}})\n"
    exec(f"def call(v):\n    if len(v) != {n_params}:\n        return _slow(_op, v)\n{body}", ns)
    return ns["call"]


def _call_by_name(op, vals):
    """A node whose inputs do not match the op's parameters: the error names the missing one."""
    by_name = dict(zip(op.params, vals))
    slots = tuple(by_name[t] for t in op.tensors)
    attrs = {a: by_name[a] for a in op.attrs}
    check = op.extra.get("check")
    if check is not None:
        check(*slots, **attrs)
    return registry.dispatch(op, slots, attrs)


def run_graph(graph: ir.Graph, args) -> list:
    """Run `graph` on `args` (one per graph input); returns the list of its outputs."""
    args = list(args)
    if len(args) != len(graph.inputs):
        raise TypeError(f"graph @{graph.name} takes {len(graph.inputs)} inputs, got {len(args)}")
    depth = _autocast.script_depth()
    try:
        return run_block(graph.block, args, {})
    except BaseException:
        _autocast.unwind_script_regions(depth)  # a `with autocast` region left by the error
        raise


def run_block(block: ir.Block, args: list, env: dict) -> list:
    for p, a in zip(block.params, args):
        env[p.uid] = a
    ops = registry.OPS
    for n in block.nodes:
        op = n.op
        if op == "prim::Constant":  # the commonest node: nothing to call, nothing can raise
            env[n.outputs[0].uid] = n.attrs["value"]
            continue
        try:
            vals = [env[v.uid] for v in n.inputs]
            c = _callers.get(op)
            if c is not None and c[0] is ops.get(op) and len(n.outputs) == 1:
                # a registry op seen before (the hot case): its call straight from here
                r = c[1](vals)
                if type(r) is Tensor:
                    env[n.outputs[0].uid] = r
                    continue
                outs = _registry_result(n, r)
            else:
                outs = _execute(n, vals, env)
        except ScriptRuntimeError as e:
            if n.loc is not None and n.op == "prim::CallFunction" and \
                    in_library(getattr(e, "script_loc", None)):  # name the user's call
                raise located(e, n.loc) from e.__cause__
            raise
        except Exception as e:  # name the user's line, keep the original as the cause
            if n.loc is None or isinstance(e, StopIteration):
                raise
            raise located(e, n.loc) from e
        k = len(n.outputs)
        if k == 1:
            env[n.outputs[0].uid] = outs
        elif k:
            outs = tuple(outs)
            if len(outs) != k:
                raise ScriptRuntimeError(f"{n.op} gave {len(outs)} values for {k} outputs"
                                         + where(n.loc))
            for v, o in zip(n.outputs, outs):
                env[v.uid] = o
    return [env[v.uid] for v in block.returns]


def _registry_result(n: ir.Node, r):
    """A registry op's result as `n`'s outputs take it."""
    if isinstance(r, list) and len(n.outputs) > 1:
        return tuple(r)
    if isinstance(r, tuple) and len(n.outputs) == 1 and not isinstance(
            n.outputs[0].type, (ir.TupleType, ir.ListType, ir.AnyType)):
        return r[0]  # a multi-output op that gave one element (split into one chunk)
    return r


def _single(n: ir.Node, r):
    return r[0] if len(n.outputs) == 1 else r


def _to_scalar(x, ty):
    name = ty if isinstance(ty, str) else str(ty) if ty is not None else None
    if isinstance(x, Tensor):
        if name == "int":
            return int(x.item())
        if name == "float":
            return float(x.item())
        if name == "bool":
            return bool(x.item())
        return x.item()
    return {"int": int, "float": float, "bool": bool}.get(name, lambda v: v)(x)


def _execute(n: ir.Node, vals: list, env: dict):
    op = n.op
    if not op.startswith("prim::"):
        fac = registry.OPS.get(op)
        if fac is not None and fac.kind == "factory":
            return fac.impl(*vals)
        return _registry_result(n, call_registry_op(op, vals))
    if op == "prim::Constant":
        return n.attrs["value"]
    if op == "prim::ListConstruct":
        return list(vals)
    if op == "prim::TupleConstruct":
        return tuple(vals)
    if op in ("prim::TupleUnpack", "prim::ListUnpack"):
        seq = vals[0]
        if len(seq) != len(n.outputs):  # Python's messages
            k = len(n.outputs)
            raise ValueError(f"too many values to unpack (expected {k})" if len(seq) > k else
                             f"not enough values to unpack (expected {k}, got {len(seq)})")
        return seq[0] if len(n.outputs) == 1 else tuple(seq)
    if op == "prim::TupleIndex":
        return vals[0][vals[1]]
    if op == "prim::DictConstruct":
        return dict(zip(vals[0::2], vals[1::2]))
    if op == "prim::ScalarOp":
        return scalar_fn(n.attrs["fn"])(*vals)
    if op == "prim::TensorToScalar":
        return _to_scalar(vals[0], n.attrs.get("type"))
    if op == "prim::GetAttr":
        return getattr(vals[0], n.attrs["name"])
    if op == "prim::If":
        branch = n.blocks[0] if bool(vals[0]) else n.blocks[1]
        return _single(n, run_block(branch, vals[1:], env))
    if op == "prim::Loop":
        return _run_loop(n, vals, env)
    if op == "prim::CallFunction":
        if "autocast" in n.attrs and _autocast_hook[0] is not None:  # a composite's policy
            vals = _autocast.cast_call(n.attrs["autocast"], vals)
        return _single(n, run_graph(n.attrs["fn"], vals))
    if op == "prim::PythonOp":
        r = n.attrs["fn"](*vals)
        if len(n.outputs) > 1:
            return tuple(r)
        return r
    if op == "prim::Print":
        print(*vals)
        return None
    if op == "prim::Assert":
        if not bool(vals[0]):
            msg = vals[1] if len(vals) > 1 and vals[1] is not None else ""
            raise located(ScriptRuntimeError, n.loc, f"AssertionError: {msg}")
        return None
    if op == "prim::Raise":
        msg = "".join(str(v) for v in vals)
        exc = n.attrs.get("exc", "Exception")
        cls = getattr(builtins, exc, None)
        if not (isinstance(cls, type) and issubclass(cls, Exception)):
            cls = ScriptRuntimeError
        # `raise ValueError(...)` is a ValueError and a jit.Error, as the compiled one is;
        # a check of jitorch's own code (attrs["library"]: a composite's) raises eager's
        # message at the user's call, the user's raise says its class as TorchScript's does
        raise located(cls, n.loc, msg if n.attrs.get("library") else f"{exc}: {msg}")
    if op == "prim::Fused":
        return _single(n, run_block(n.blocks[0], vals, env))
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
