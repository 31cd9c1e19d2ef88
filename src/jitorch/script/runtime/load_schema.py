"""The closed schema of a module archive: what `jit.load` accepts, checked before anything runs.

`serialize.load` calls `check_manifest` on the manifest's `module` entry and `check_graph` on
each method's parsed IR before any Python callable is resolved, any pass runs or any code is
generated (docs/security.md). Everything not listed here is refused with `SchemaError`, which
names the member, the line and the reason; `jit.load` raises it as a RuntimeError.

A graph may contain:
- nodes whose op is a registry op (`_ops.registry.OPS`, factories included) or one of
  LOADABLE_PRIMS (what `jit.save` writes: no `prim::CallFunction`, no `prim::Fused`), with
  exactly the attributes the op takes (`_ATTRS`): registry ops take none;
- constants whose value has exactly the declared IR type (`value_fits`): an int is an int (not a
  bool, not a str), a `Tuple[int, int]` holds two ints, a tensor constant is a placeholder of
  its type, `Any` holds plain data only;
- `prim::ScalarOp` functions from `interpreter.SCALAR_FNS` (the interpreter resolves only from
  it), `prim::GetAttr` names from the frontend's tensor attributes (never a dunder),
  `prim::Raise` exception names that are identifiers, `prim::TensorToScalar` types int / float
  / bool;
- `prim::PythonOp` nodes, one per entry of the method's `python_ops`: an index with a spec of
  constants, slots and slices; a function registered in `script.loadable`; or a method of
  `loadable.METHODS`; with as many inputs as the call takes;
- value types built from tensors, scalars, tuples, lists, dicts, optionals and Any (no classes);
- closed blocks (a block reads only its params and its own values), then everything
  `verify.verify` checks (SSA, arity, control-flow conventions).
"""
from __future__ import annotations

import bisect

from ... import _device, _dtype as dt
from ..._ops import registry
from .. import ir

MAX_TREE_DEPTH = 64      # nested submodules
MAX_DEFAULT_DEPTH = 16   # nested tuples/lists in a default value

LOADABLE_PRIMS = frozenset({
    "prim::Constant", "prim::If", "prim::Loop", "prim::TupleConstruct", "prim::TupleUnpack",
    "prim::TupleIndex", "prim::ListConstruct", "prim::ListUnpack", "prim::DictConstruct",
    "prim::GetAttr", "prim::PythonOp", "prim::Raise", "prim::Assert", "prim::Print",
    "prim::ScalarOp", "prim::TensorToScalar"})
_ATTRS = {"prim::Constant": {"value"}, "prim::GetAttr": {"name"}, "prim::ScalarOp": {"fn"},
          "prim::PythonOp": {"fn", "name", "gil"}, "prim::Raise": {"exc", "library"},
          "prim::TensorToScalar": {"type"}}
_REQUIRED = {"prim::Constant": ("value",), "prim::GetAttr": ("name",), "prim::ScalarOp": ("fn",),
             "prim::PythonOp": ("fn",)}
_BLOCKS = {"prim::If": 2, "prim::Loop": 1}
_SCALAR_TYPES = (ir.IntType, ir.FloatType, ir.BoolType, ir.StrType, ir.NoneType,
                 ir.DeviceType, ir.DTypeType, ir.AnyType)


class SchemaError(ValueError):
    """A module archive outside the schema (the message names member, line and reason)."""


# --- values and types ---------------------------------------------------------------------------
def _plain(v, depth: int = 0) -> bool:
    """Plain data: what an `Any` constant may hold."""
    if depth > 16:
        return False
    t = type(v)
    if v is None or t in (bool, int, float, str) or isinstance(v, (dt.dtype, _device.device)):
        return True
    if t in (tuple, list):
        return all(_plain(e, depth + 1) for e in v)
    if t is dict:
        return all(_plain(k, depth + 1) and _plain(e, depth + 1) for k, e in v.items())
    return False


def value_fits(v, ty: ir.Type) -> bool:
    """`v` (a parsed literal) has exactly the IR type `ty`."""
    from ..ir.parser import TensorLiteral
    t = type(v)
    if isinstance(ty, ir.IntType):
        return t is int
    if isinstance(ty, ir.FloatType):
        return t is float
    if isinstance(ty, ir.BoolType):
        return t is bool
    if isinstance(ty, ir.StrType):
        return t is str
    if isinstance(ty, ir.NoneType):
        return v is None
    if isinstance(ty, ir.DTypeType):
        return isinstance(v, dt.dtype)
    if isinstance(ty, ir.DeviceType):
        return t is _device.device
    if isinstance(ty, ir.OptionalType):
        return v is None or value_fits(v, ty.elem)
    if isinstance(ty, ir.TupleType):
        return t is tuple and len(v) == len(ty.elems) and all(
            value_fits(e, et) for e, et in zip(v, ty.elems))
    if isinstance(ty, ir.ListType):
        return t is list and all(value_fits(e, ty.elem) for e in v)
    if isinstance(ty, ir.DictType):
        return t is dict and all(value_fits(k, ty.key) and value_fits(e, ty.value)
                                 for k, e in v.items())
    if isinstance(ty, ir.TensorType):
        if t is not TensorLiteral:
            return False
        lt = v.type
        return (ty.dtype is None or lt.dtype is ty.dtype) and (
            ty.shape is None or lt.shape is None or tuple(ty.shape) == tuple(lt.shape))
    if isinstance(ty, ir.AnyType):
        return _plain(v)
    return False


def _type_ok(ty, depth: int = 0) -> bool:
    if depth > 16:
        return False
    if isinstance(ty, ir.TensorType):
        return (ty.dtype is None or ty.dtype in ir.DTYPE_SHORT) and (
            ty.shape is None or all(s is None or type(s) is int for s in ty.shape))
    if isinstance(ty, _SCALAR_TYPES):
        return True
    if isinstance(ty, ir.TupleType):
        return all(_type_ok(e, depth + 1) for e in ty.elems)
    if isinstance(ty, (ir.ListType, ir.OptionalType)):
        return _type_ok(ty.elem, depth + 1)
    if isinstance(ty, ir.DictType):
        return _type_ok(ty.key, depth + 1) and _type_ok(ty.value, depth + 1)
    return False  # ClassType: a loaded module has no classes


def _tensor_attrs() -> frozenset:
    from ..frontend.expr import TENSOR_ATTRS
    return frozenset(TENSOR_ATTRS)


def _public_name(s) -> bool:
    return type(s) is str and s.isidentifier() and not s.startswith("_") and len(s) <= 200


# --- graphs -------------------------------------------------------------------------------------
class _Where:
    """Turns a node into `member:line` for messages."""

    def __init__(self, member: str, text: str, positions: dict):
        self.member, self.positions = member, positions
        self.newlines = [i for i, c in enumerate(text) if c == "\n"]

    def __call__(self, n: ir.Node | None) -> str:
        off = self.positions.get(n) if n is not None else None
        if off is None:
            return self.member
        return f"{self.member}:{bisect.bisect_left(self.newlines, off) + 1}"

    def line(self, n) -> int:
        off = self.positions.get(n)
        return 0 if off is None else bisect.bisect_left(self.newlines, off) + 1


def check_graph(member: str, text: str, g: ir.Graph, positions: dict, python_ops: list) -> None:
    """Check one parsed method graph (see the module docstring); `python_ops` is the method's
    manifest entry (validated here against the graph's `prim::PythonOp` nodes)."""
    where = _Where(member, text, positions)

    def fail(n, msg):
        op = f" {n.op}:" if n is not None else ""
        raise SchemaError(f"{where(n)}:{op} {msg}")

    name = g.name
    if not (type(name) is str and 0 < len(name) <= 200 and name.isprintable() and
            not any(c.isspace() for c in name)):
        fail(None, "the graph's name is not a plain name")
    if not isinstance(python_ops, list):
        fail(None, "the manifest's python_ops is not a list")
    refs = list(python_ops)
    for k, ref in enumerate(refs):  # each entry's form first: what it names, then its node
        try:
            check_python_op(ref)
        except SchemaError as e:
            fail(None, f"python_ops[{k}]: {e}")
    for p in g.block.params:
        if not _type_ok(p.type):
            fail(None, f"graph input of type {p.type} (not a type a loaded module may use)")
    _check_block(g.block, fail, refs)
    if refs:
        fail(None, f"the manifest lists {len(refs)} more Python calls than the IR has")
    _verify(g, where)


def _check_block(block: ir.Block, fail, refs: list) -> None:
    visible = set(block.params)
    for p in block.params:
        if not _type_ok(p.type):
            fail(None, f"block parameter of type {p.type}")
    for n in block.nodes:
        op = n.op
        if not (op in LOADABLE_PRIMS or op in registry.OPS):
            fail(n, "not an op a loaded module may use (a registry op, a factory or one of "
                    "load_schema.LOADABLE_PRIMS)")
        extra = set(n.attrs) - _ATTRS.get(op, set())
        if extra:
            fail(n, f"unexpected attribute(s) {sorted(map(str, extra))}")
        for a in _REQUIRED.get(op, ()):
            if a not in n.attrs:
                fail(n, f"missing attribute {a!r}")
        if len(n.blocks) != _BLOCKS.get(op, 0):
            fail(n, f"has {len(n.blocks)} blocks")
        for i, v in enumerate(n.inputs):
            if v not in visible:
                fail(n, f"input {i} is defined outside this block (blocks are closed)")
        for o in n.outputs:
            if not _type_ok(o.type):
                fail(n, f"output of type {o.type} (not a type a loaded module may use)")
        _check_attrs(n, fail, refs)
        for b in n.blocks:
            _check_block(b, fail, refs)
        visible.update(n.outputs)
    for i, v in enumerate(block.returns):
        if v not in visible:
            fail(None, f"block return {i} is defined outside the block")


def _check_attrs(n: ir.Node, fail, refs: list) -> None:
    from ..ir.interpreter import SCALAR_FNS
    op, a = n.op, n.attrs
    if op == "prim::Constant":
        if len(n.outputs) != 1:
            fail(n, "a constant has one output")
        if not value_fits(a["value"], n.outputs[0].type):
            fail(n, f"the value ({type(a['value']).__name__}) is not of the declared type "
                    f"{n.outputs[0].type}")
    elif op == "prim::ScalarOp":
        fn = a["fn"]
        if type(fn) is not str or fn not in SCALAR_FNS:
            fail(n, f"fn={_show(fn)} is not a scalar function a loaded module may call "
                    "(interpreter.SCALAR_FNS)")
    elif op == "prim::GetAttr":
        if type(a["name"]) is not str or a["name"] not in _tensor_attrs():
            fail(n, f"attribute {_show(a['name'])} is not a tensor attribute a loaded module "
                    "may read")
    elif op == "prim::Raise":
        exc = a.get("exc")
        if not (type(exc) is str and exc.isidentifier() and len(exc) <= 100):
            fail(n, "exc is not the name of an exception class")
        if a.get("library", True) is not True:
            fail(n, "library is not True")
    elif op == "prim::TensorToScalar":
        if a.get("type") not in (None, "int", "float", "bool"):
            fail(n, f"type={_show(a.get('type'))} (expected None, 'int', 'float' or 'bool')")
    elif op == "prim::PythonOp":
        from ..ir.parser import Ref
        if type(a["fn"]) is not Ref:
            fail(n, "fn is not a reference to a saved Python call")
        if type(a.get("name", "")) is not str or type(a.get("gil", True)) is not bool:
            fail(n, "name/gil attributes of the wrong type")
        if not refs:
            fail(n, "more Python calls in the IR than the manifest lists")
        try:
            check_python_op(refs.pop(0), len(n.inputs))
        except SchemaError as e:
            fail(n, str(e))


def _show(v) -> str:
    return repr(v)[:60] if type(v) is str else type(v).__name__


def _verify(g: ir.Graph, where: _Where) -> None:
    """verify.verify for what the walk above does not check (SSA, arity, block conventions);
    nodes carry their member:line as their location for the verifier's message only."""
    from ..ir import verify
    nodes = list(g.nodes())
    for n in nodes:
        n.loc = ir.SourceLoc(where.member, where.line(n), 1)
    try:
        verify.verify(g)
    except verify.VerifyError as e:
        raise SchemaError(f"{where.member}: {e}") from None
    finally:
        for n in nodes:
            n.loc = None


# --- Python calls -------------------------------------------------------------------------------
def _tuple_json(v) -> list | None:
    return v["tuple"] if type(v) is dict and set(v) == {"tuple"} and \
        type(v["tuple"]) is list else None


def _spec_slots(item, inner: bool = False) -> list:
    """The run-time slots an index-spec element (JSON of frontend.index._Index.spec) reads:
    ["c", constant] | ["d", slot] | ["s", [three of those]]; SchemaError for anything else."""
    e = _tuple_json(item)
    if e is None or len(e) != 2 or e[0] not in ("c", "d", "s"):
        raise SchemaError("an index call with a malformed index spec")
    kind, p = e
    if kind == "c":
        if p is None or type(p) in (bool, int) or p == {"ellipsis": True}:
            return []
    elif kind == "d":
        if type(p) is int and 0 <= p < 1024:
            return [p]
    elif not inner:
        parts = _tuple_json(p)
        if parts is not None and len(parts) == 3:
            return [k for x in parts for k in _spec_slots(x, inner=True)]
    raise SchemaError("an index call with a malformed index spec")


def check_python_op(ref, n_inputs: int | None = None) -> None:
    """One `python_ops` entry of the manifest (JSON), for a node with `n_inputs` inputs (None:
    the entry's form only)."""
    from . import loadable
    if not isinstance(ref, dict):
        raise SchemaError("a python_ops entry is not an object")
    kind = ref.get("kind")
    if kind == "index":
        if set(ref) - {"kind", "op", "spec", "single"} or ref.get("op") not in ("getitem",
                                                                                "setitem"):
            raise SchemaError("an index call of an unknown form")
        spec = _tuple_json(ref.get("spec"))
        if spec is None or type(ref.get("single", False)) is not bool:
            raise SchemaError("an index call with a malformed index spec")
        slots = [k for e in spec for k in _spec_slots(e)]
        if n_inputs is None:
            return
        n_dyn = n_inputs - 1 - (ref["op"] == "setitem")  # (x, *slots[, value])
        if n_dyn < 0 or any(k >= n_dyn for k in slots):
            raise SchemaError(f"an index call reading {len(set(slots))} run-time values has "
                              f"{n_inputs} inputs")
        return
    if kind not in ("kw", "fn"):
        raise SchemaError(f"a Python call of unknown kind {_show(kind)}")
    allowed = {"kind", "fn"} | ({"npos", "kwnames", "method"} if kind == "kw" else set())
    if set(ref) - allowed:
        raise SchemaError("a Python call with unexpected fields")
    fn, method = ref.get("fn"), ref.get("method")
    if fn is not None:
        if not (type(fn) is list and len(fn) == 2):
            raise SchemaError("a Python call's fn is not [module, qualname]")
        try:
            loadable.lookup(*fn)
        except ValueError as e:
            raise SchemaError(str(e)) from None
    if kind == "fn":
        if fn is None:
            raise SchemaError("a Python call without a function")
        return
    npos, kwnames = ref.get("npos"), ref.get("kwnames")
    if type(npos) is not int or npos < 0 or type(kwnames) is not list or \
            not all(type(k) is str and k.isidentifier() for k in kwnames) or \
            len(set(kwnames)) != len(kwnames):
        raise SchemaError("a Python call with malformed npos/kwnames")
    if (fn is None) == (method is None):
        raise SchemaError("a Python call names both or neither of a function and a method")
    if method is not None and (type(method) is not str or method not in loadable.METHOD_NAMES):
        raise SchemaError(f"method {_show(method)} is not one a loaded module may call "
                          "(loadable.METHODS)")
    takes = (method is not None) + npos + len(kwnames)
    if n_inputs is not None and takes != n_inputs:
        raise SchemaError(f"a Python call taking {takes} values has {n_inputs} inputs")


# --- the manifest -------------------------------------------------------------------------------
def _json_default_ok(v, depth: int = 0) -> bool:
    if depth > MAX_DEFAULT_DEPTH:
        return False
    if v is None or type(v) in (bool, int, float, str):
        return True
    if type(v) is list:
        return all(_json_default_ok(e, depth + 1) for e in v)
    if type(v) is dict:
        return set(v) == {"tuple"} and type(v["tuple"]) is list and all(
            _json_default_ok(e, depth + 1) for e in v["tuple"])
    return False


def _check_tree(t, path: str, depth: int = 0) -> None:
    where = f"manifest.json: the module tree at '{path or '<root>'}'"
    if depth > MAX_TREE_DEPTH:
        raise SchemaError(f"{where}: nested too deeply")
    if type(t) is not dict or set(t) - {"class", "training", "persistent", "children"}:
        raise SchemaError(f"{where}: not a module entry")
    if type(t.get("class", "Module")) is not str or not t.get("class", "Module").isidentifier():
        raise SchemaError(f"{where}: the class name is not an identifier")
    if type(t.get("training", False)) is not bool:
        raise SchemaError(f"{where}: training is not a bool")
    pers = t.get("persistent", [])
    if type(pers) is not list or not all(type(p) is str for p in pers):
        raise SchemaError(f"{where}: persistent is not a list of names")
    children = t.get("children", {})
    if type(children) is not dict:
        raise SchemaError(f"{where}: children is not an object")
    for k, c in children.items():
        if not (type(k) is str and k and "." not in k):
            raise SchemaError(f"{where}: a child name is not a plain name")
        _check_tree(c, f"{path}.{k}" if path else k, depth + 1)


def check_manifest(meta, reserved) -> None:
    """The manifest's `module` entry: every field of the type `jit.save` writes. `reserved`:
    attribute names of the ScriptModule class a method name must not shadow."""
    if type(meta) is not dict:
        raise SchemaError("manifest.json: 'module' is not an object")
    extra = set(meta) - {"class", "kind", "training", "tree", "methods"}
    if extra:
        raise SchemaError(f"manifest.json: unexpected module field(s) {sorted(extra)}")
    if type(meta.get("class", "Module")) is not str or \
            not meta.get("class", "Module").isidentifier():
        raise SchemaError("manifest.json: module.class is not an identifier")
    if meta.get("kind", "script") not in ("script", "trace"):
        raise SchemaError("manifest.json: module.kind is not 'script' or 'trace'")
    if type(meta.get("training", False)) is not bool:
        raise SchemaError("manifest.json: module.training is not a bool")
    _check_tree(meta.get("tree"), "")
    methods = meta.get("methods")
    if type(methods) is not dict or "forward" not in methods:
        raise SchemaError("manifest.json: module.methods has no 'forward'")
    for name, info in methods.items():
        _check_method(name, info, reserved)


_METHOD_FIELDS = {"code", "args", "defaults", "params", "static_args", "returns_tuple",
                  "python_ops", "mutated_inputs", "no_grad_writes", "return_aliases"}


def _check_method(name, info, reserved) -> None:
    at = f"manifest.json: method {_show(name)}"
    if not _public_name(name) or (name != "forward" and name in reserved):
        raise SchemaError(f"{at}: not a public method name")
    if type(info) is not dict or set(info) - _METHOD_FIELDS or "code" not in info:
        raise SchemaError(f"{at}: not a method entry")
    if info["code"] != f"code/{name}.ir":
        raise SchemaError(f"{at}: code must be 'code/{name}.ir'")
    args = info.get("args", [])
    if type(args) is not list or not all(type(a) is str and a.isidentifier() for a in args) \
            or len(set(args)) != len(args):
        raise SchemaError(f"{at}: args is not a list of distinct identifiers")
    defaults = info.get("defaults", {})
    if type(defaults) is not dict or not set(defaults) <= set(args) or \
            not all(_json_default_ok(v) for v in defaults.values()):
        raise SchemaError(f"{at}: defaults are not plain values of its arguments")
    params = info.get("params", [])
    if type(params) is not list or not all(type(p) is str and p for p in params):
        raise SchemaError(f"{at}: params is not a list of state paths")
    static = info.get("static_args", [])
    if type(static) is not list or not all(type(s) is str and s in args for s in static):
        raise SchemaError(f"{at}: static_args are not names of its arguments")
    for key in ("returns_tuple",):
        if type(info.get(key, False)) is not bool:
            raise SchemaError(f"{at}: {key} is not a bool")
    if type(info.get("python_ops", [])) is not list:
        raise SchemaError(f"{at}: python_ops is not a list")
    n_in = len(args) + len(params)
    mut = info.get("mutated_inputs", [])
    if type(mut) is not list or not all(type(i) is int and 0 <= i < n_in for i in mut):
        raise SchemaError(f"{at}: mutated_inputs are not input positions")
    ngw = info.get("no_grad_writes", [])
    if type(ngw) is not list or not all(type(i) is int and i in mut for i in ngw):
        raise SchemaError(f"{at}: no_grad_writes are not positions of mutated_inputs")
    ra = info.get("return_aliases", {})
    if type(ra) is not dict or not all(
            type(k) is str and k.isdigit() and len(k) < 10 and type(v) is int and
            0 <= v < n_in for k, v in ra.items()):
        raise SchemaError(f"{at}: return_aliases do not map outputs to input positions")


__all__ = ["SchemaError", "check_manifest", "check_graph", "check_python_op", "value_fits",
           "LOADABLE_PRIMS"]
