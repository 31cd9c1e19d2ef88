"""`jitorch.jit.save` / `jitorch.jit.load`: scripted and traced modules as data.

Owns the module archive (docs/serialization.md, "scripted modules"). It is the container of
`serialization.write_archive` with format name `jitorch.jit`:
- `code/<method>.ir`: each compiled method's graph, inlined (no calls to other graphs), as
  `printer.print_graph` text; `jit.load` reads it back with `parser.parse_graph`;
- the manifest's `module` key (JSON): the module tree (names, class names, training flags),
  per method its argument names and JSON defaults, parameter/buffer paths (the graph inputs
  after the arguments), static args, in-place write-back metadata and the Python
  calls of its `prim::PythonOp` nodes (an index as data, a function registered in
  `script.loadable`, or an allowed method);
- the tensor tree (`obj`): {"state": {path: tensor}, "consts": {method: [tensors]}} (the
  parameters/buffers and the tensor constants of the graphs, in node order).
Loading never unpickles or executes anything from the file (docs/security.md): the IR is
parsed, the manifest and every graph are checked against the closed schema of `load_schema`
before anything else happens, Python calls resolve only through `script.loadable`'s allow-list,
and every defect becomes a RuntimeError naming `jitorch.jit.load`, the member and the line
(read_archive's contract). `jit.save` refuses what `jit.load` would refuse.
"""
from __future__ import annotations

import inspect

from ... import serialization
from ..._tensor import Tensor
from . import load_schema, loadable
from ..frontend.call import KwCall

FORMAT_NAME = "jitorch.jit"
FORMAT_VERSION = 2  # 2: factory nodes take `%device` (version 1 files load: `_factories_v1`)


def _nodes(block):
    for n in block.nodes:
        yield n
        for b in n.blocks:
            yield from _nodes(b)


def _spec_json(v):
    """An index spec (frontend.index._Index.spec) as JSON: tuples, ints, None, Ellipsis."""
    if v is Ellipsis:
        return {"ellipsis": True}
    if isinstance(v, (tuple, list)):
        return {"tuple": [_spec_json(e) for e in v]}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    raise RuntimeError(f"jitorch.jit.save: an index of {type(v).__name__} cannot be saved")


def _spec_from_json(v):
    if isinstance(v, dict) and v.get("ellipsis") is True:
        return Ellipsis
    if isinstance(v, dict) and isinstance(v.get("tuple"), list):
        return tuple(_spec_from_json(e) for e in v["tuple"])
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    raise RuntimeError(f"jitorch.jit.load: bad index spec {v!r}")


def _index_call(ref):
    """The GetItem/SetItem callable a saved {"kind": "index"} reference describes."""
    from ..frontend.index import GetItem, SetItem
    cls = {"getitem": GetItem, "setitem": SetItem}.get(ref.get("op"))
    if cls is None:
        raise RuntimeError(f"jitorch.jit.load: unknown index call {ref.get('op')!r}")
    fn = cls(_spec_from_json(ref.get("spec")))
    fn.single = bool(ref.get("single"))
    return fn


def _callable_ref(fn, where):
    """A PythonOp callable as JSON: {"kind": "kw", fn, npos, kwnames, method},
    {"kind": "index", op, spec, single} (x[...] with run-time parts) or {"fn": ...}."""
    from ..frontend.index import GetItem, SetItem
    from ..frontend.module_state import AttrGet, AttrSet
    if isinstance(fn, (AttrGet, AttrSet)):
        raise RuntimeError(f"jitorch.jit.save: {where} writes the module attribute "
                           f"'{fn.name}' ({type(getattr(fn.module, fn.name, None)).__name__}): "
                           "a saved module holds attribute state only of int, float and bool "
                           "attributes")
    if isinstance(fn, (GetItem, SetItem)):
        return {"kind": "index", "op": "getitem" if isinstance(fn, GetItem) else "setitem",
                "spec": _spec_json(fn.spec), "single": bool(fn.single)}
    if isinstance(fn, KwCall):
        if fn.method is not None and fn.method not in loadable.METHOD_NAMES:
            raise RuntimeError(f"jitorch.jit.save: {where} calls the method .{fn.method}() "
                               "through Python, which a loaded module may not call "
                               "(script/runtime/loadable.py METHODS)")
        return {"kind": "kw", "fn": None if fn.fn is None else _fn_name(fn.fn, where),
                "npos": fn.npos, "kwnames": list(fn.kwnames), "method": fn.method}
    return {"kind": "fn", "fn": _fn_name(fn, where)}


def _fn_name(fn, where):
    key = loadable.name_of(fn)
    if key is None:
        mod = getattr(fn, "__module__", None) or ""
        qn = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", type(fn).__name__)
        raise RuntimeError(f"jitorch.jit.save: {where} calls the Python function "
                           f"{mod}.{qn}, which a saved module cannot carry (a loaded module "
                           "may call only functions registered with "
                           "jitorch.script.runtime.loadable.loadable)")
    return list(key)


def _lookup(mod, qn):
    """The function a saved [module, qualname] names: registered ones only (runtime/loadable.py)."""
    return loadable.lookup(mod, qn)


class MethodCall(KwCall):
    """`recv.<method>(*pos, **kw)` in a loaded program: the receiver's run-time type and the
    method are checked against loadable.METHODS first (a graph's declared types are not
    trusted), and `str.format` is `interpreter.safe_format`."""

    def __init__(self, npos, kwnames, method):
        super().__init__(None, npos, kwnames, method)

    def __call__(self, *vals):
        recv = vals[0]
        if not loadable.method_allowed(recv, self.method):
            raise TypeError(f"a loaded module cannot call {type(recv).__name__}."
                            f"{self.method}()")
        if type(recv) is str and self.method == "format":
            from ..ir.interpreter import safe_format
            pos, kw = vals[1:1 + self.npos], vals[1 + self.npos:]
            return safe_format(recv, *pos, **dict(zip(self.kwnames, kw)))
        return super().__call__(*vals)


def _json_default(v, where):
    if isinstance(v, tuple):
        return {"tuple": [_json_default(e, where) for e in v]}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, list):
        return [_json_default(e, where) for e in v]
    raise RuntimeError(f"jitorch.jit.save: the default value of {where} ({type(v).__name__}) "
                       "cannot be saved")


def _from_json_default(v):
    if isinstance(v, dict):
        return tuple(_from_json_default(e) for e in v["tuple"])
    if isinstance(v, list):
        return [_from_json_default(e) for e in v]
    return v


# --- saving -------------------------------------------------------------------------------------
def save(m, f, _extra_files=None):
    from .module import script_module_class
    from ..passes import inline
    from ..ir.util import clone_graph
    from ..ir.printer import print_graph
    from .legacy import script_module_base
    if isinstance(m, script_module_base()):  # a jit.ScriptModule subclass: its scripted view
        m = m._scripted()
    if not isinstance(m, script_module_class()):
        raise TypeError("jitorch.jit.save expects a ScriptModule (from jitorch.jit.script or "
                        f"jitorch.jit.trace), got {type(m).__name__}")
    root = m._orig
    state = {}
    for k, t in list(root.named_parameters(remove_duplicate=False)) + \
            list(root.named_buffers(remove_duplicate=False)):
        state[k] = t
    methods, members, consts = {}, {}, {}
    for name, meth in m._methods.items():
        v = meth._current()
        g = inline.run(clone_graph(v.graph), devices=False)  # x.device stays a read
        where = f"{m.original_name}.{name}"
        ops, tens = [], []
        for n in _nodes(g.block):
            if n.op == "prim::CallFunction":
                raise RuntimeError(f"jitorch.jit.save: {where} calls a Python function that "
                                   "could not be inlined")
            if n.op == "prim::PythonOp":
                ops.append(_callable_ref(n.attrs["fn"], where))
            for k in sorted(n.attrs):
                if isinstance(n.attrs[k], Tensor):
                    tens.append(n.attrs[k])
        for p in v.param_paths:
            if p not in state:  # a plain tensor attribute read by the method
                from .module import _resolve, _state_tensor
                state[p] = _resolve(root, p)
                if p in v.state:  # int/float/bool attribute state: saved as its 0-d tensor
                    state[p] = _state_tensor(state[p], v.state[p])
        sig = meth._signature
        args, defaults = [], {}
        if sig is not None:
            for pn, prm in sig.parameters.items():
                args.append(pn)
                if prm.default is not inspect.Parameter.empty:
                    defaults[pn] = _json_default(prm.default, f"{where}({pn})")
        else:
            args = [iv.name for iv in v.graph.inputs[:len(v.graph.inputs) - len(v.param_paths)]]
        members[f"code/{name}.ir"] = print_graph(g).encode("utf-8")
        consts[name] = tens
        methods[name] = {
            "code": f"code/{name}.ir", "args": args, "defaults": defaults,
            "params": list(v.param_paths), "static_args": sorted(v.sf._static),
            "returns_tuple": bool(v.sf._tuple_out), "python_ops": ops,
            "mutated_inputs": list(getattr(v.graph, "mutated_inputs", None) or ()),
            "no_grad_writes": list(getattr(v.graph, "no_grad_writes", None) or ()),
            "return_aliases": {str(a): b for a, b in
                               (getattr(v.graph, "return_aliases", None) or {}).items()}}
    meta = {"class": m.original_name, "kind": m._kind, "training": bool(m.training),
            "tree": _tree(root), "methods": methods}
    for k, data in (_extra_files or {}).items():
        members[f"extra/{k}"] = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    serialization.write_archive(f, {"state": state, "consts": consts},
                                format_name=FORMAT_NAME, version=FORMAT_VERSION,
                                extra_manifest={"module": meta}, extra_members=members)


def _tree(mod) -> dict:
    return {"class": type(mod).__name__, "training": bool(mod.training),
            "persistent": [k for k in mod._buffers if k not in mod._non_persistent_buffers_set],
            "children": {k: _tree(c) for k, c in mod._modules.items() if c is not None}}


# --- loading ------------------------------------------------------------------------------------
def load(f, map_location=None, _extra_files=None):
    serialization.location.check(map_location)  # "cpu" / device / dict / callable

    def reader(arc):
        # each tensor (state and graph constants) goes where its saved device and
        # `map_location` say, as jitorch.load places them (serialization_location.restore)
        arc.map_location = map_location
        return _build(arc, map_location, _extra_files)
    return serialization.read_archive(f, reader, expected_format=FORMAT_NAME,
                                      what="jitorch.jit.load", max_version=FORMAT_VERSION)


def _need(cond, what):
    if not cond:
        raise ValueError(what)


def _schema_error(msg: str) -> Exception:
    return serialization._Corrupt(msg)  # read_archive: "... is not a valid jitorch file: msg"


def _parse_and_check(arc, meta) -> dict:
    """Every method's graph, parsed and checked against load_schema, before anything of the
    file is used: {method: (graph, info)}."""
    from ..ir.parser import ParseError, parse_graph
    out = {}
    for name, info in meta["methods"].items():
        member = info["code"]
        text = arc.member(member).decode("utf-8")
        positions: dict = {}
        try:
            g = parse_graph(text, positions=positions)
        except ParseError as e:
            raise _schema_error(f"{member}: {e}") from None
        if arc.manifest.get("version") == 1:
            _factories_v1(g.block)
        load_schema.check_graph(member, text, g, positions, info.get("python_ops", []))
        out[name] = (g, info)
    return out


def _factories_v1(block) -> None:
    """A version 1 archive's factory nodes have no `%device` (its last input since version 2):
    that jitorch dropped `device=` (it only had CPU tensors), so each such node gets the None
    it meant. Nodes of any other arity are left for the schema check to refuse."""
    from ..._ops import registry
    from .. import ir
    out = []
    for n in block.nodes:
        op = registry.OPS.get(n.op)
        if op is not None and op.kind == "factory" and op.params[-1] == "device" and \
                len(n.inputs) == len(op.params) - 1 and not n.blocks:
            none = ir.Node("prim::Constant", (), (ir.NONE,), {"value": None})
            out.append(none)
            n.inputs = list(n.inputs) + [none.output]
        for b in n.blocks:
            _factories_v1(b)
        out.append(n)
    block.nodes = out


def _resolve_call(ref):
    """The callable of a checked python_ops entry (load_schema.check_python_op)."""
    if ref["kind"] == "index":
        return _index_call(ref)
    fn = None if ref.get("fn") is None else _lookup(*ref["fn"])
    if ref["kind"] == "fn":
        return fn
    if ref.get("method") is not None:
        return MethodCall(ref["npos"], ref["kwnames"], ref["method"])
    return KwCall(fn, ref["npos"], ref["kwnames"])


def _build(arc, map_location, extra_files):
    from ... import nn
    from ..frontend.function import FrontendResult
    from .module import Compiled, _add_method, script_module_class
    from ..ir.parser import TensorLiteral
    meta = arc.manifest.get("module")
    _need(isinstance(meta, dict), "the manifest has no 'module' entry")
    try:
        load_schema.check_manifest(meta, frozenset(dir(script_module_class())))
        graphs = _parse_and_check(arc, meta)
    except load_schema.SchemaError as e:
        raise _schema_error(str(e)) from None
    obj = arc.decode(arc.manifest["object"])
    _need(isinstance(obj, dict) and isinstance(obj.get("state"), dict),
          "the tensor tree has no 'state'")
    consts = obj.get("consts") or {}
    _need(isinstance(consts, dict) and all(isinstance(v, list) for v in consts.values()),
          "the tensor tree's 'consts' is not {method: [tensors]}")
    state = obj["state"]
    root = _LoadedModule.build(nn, meta.get("tree"), meta.get("class", "Module"))
    for path, t in state.items():
        _need(isinstance(path, str) and isinstance(t, Tensor), f"bad state entry {path!r}")
        owner, _, leaf = path.rpartition(".")
        _need(leaf != "", f"bad state entry {path!r}")
        mod = root
        for p in owner.split(".") if owner else ():
            mod = mod._modules.get(p)
            _need(mod is not None, f"state entry {path!r} names no submodule")
        if isinstance(t, nn.Parameter):
            mod._parameters[leaf] = t
        else:
            mod._buffers[leaf] = t
            if leaf not in mod._persistent:
                mod._non_persistent_buffers_set.add(leaf)
    sm = script_module_class()(root, meta.get("kind", "script"))
    sm.__dict__["original_name"] = str(meta.get("class", "Module"))
    for name, (g, info) in graphs.items():
        ops = list(info.get("python_ops", []))
        tens = list(consts.get(name, []))
        for n in _nodes(g.block):
            if n.op == "prim::PythonOp":
                n.attrs["fn"] = _resolve_call(ops.pop(0))
            v = n.attrs.get("value")
            if n.op == "prim::Constant" and type(v) is TensorLiteral:
                _need(tens, f"{name}: more tensor constants than saved")
                t = tens.pop(0)
                _need(isinstance(t, Tensor) and t.dtype is v.type.dtype and
                      tuple(t.shape) == tuple(v.type.shape),
                      f"{name}: a saved tensor constant is not of its IR type {v.type}")
                n.attrs["value"] = t
        _need(not tens, f"{name}: saved tensor constants do not match the IR")
        g.mutated_inputs = list(info.get("mutated_inputs", []))
        g.no_grad_writes = list(info.get("no_grad_writes", []))
        g.return_aliases = {int(a): b for a, b in info.get("return_aliases", {}).items()}
        g.holds_gil = bool(info.get("python_ops"))
        params = list(info.get("params", []))
        args = list(info.get("args", []))
        _need(len(g.inputs) == len(args) + len(params),
              f"{name}: the graph has {len(g.inputs)} inputs, the metadata {len(args)} "
              f"arguments and {len(params)} parameters")
        for p in params:
            _need(p in state, f"{name} reads '{p}', which the file does not hold")
        defaults = {k: _from_json_default(v) for k, v in info.get("defaults", {}).items()}
        sig = inspect.Signature([inspect.Parameter(
            a, inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=defaults.get(a, inspect.Parameter.empty)) for a in args])
        res = FrontendResult(g, tuple(info.get("static_args", ())), defaults, sig,
                             bool(info.get("returns_tuple")), bool(info.get("python_ops")), ())
        c = Compiled(res, params, [], sig)
        _add_method(sm, name, lambda c=c: c, sig)
    sm.train(bool(meta.get("training", False)))
    if extra_files is not None:
        for k in list(extra_files):
            try:
                extra_files[k] = arc.member(f"extra/{k}").decode("utf-8")
            except Exception:
                pass
    return sm


class _LoadedModule:
    """Builds the plain nn.Module tree a loaded ScriptModule holds its tensors in."""

    @staticmethod
    def build(nn, tree, name):
        _need(isinstance(tree, dict), "bad module tree")
        cls = type(str(tree.get("class", name)), (nn.Module,), {})
        m = cls()
        m.training = bool(tree.get("training", False))
        object.__setattr__(m, "_persistent", set(tree.get("persistent", [])))
        children = tree.get("children", {})
        _need(isinstance(children, dict), "bad module tree")
        for k, sub in children.items():
            m._modules[str(k)] = _LoadedModule.build(nn, sub, k)
        return m


__all__ = ["save", "load", "FORMAT_NAME", "FORMAT_VERSION"]
