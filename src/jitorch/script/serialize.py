"""`jitorch.jit.save` / `jitorch.jit.load`: scripted and traced modules as data.

Owns the module archive (docs/serialization.md, "scripted modules"). It is the container of
`serialization.write_archive` with format name `jitorch.jit`:
- `code/<method>.ir`: each compiled method's graph, inlined (no calls to other graphs), as
  `printer.print_graph` text; `jit.load` reads it back with `parser.parse_graph`;
- the manifest's `module` key (JSON): the module tree (names, class names, training flags),
  per method its argument names and JSON defaults, parameter/buffer paths (the graph inputs
  after the arguments), static args, in-place write-back metadata and the library callables
  its `prim::PythonOp` nodes call (module + qualified name, only inside `jitorch`);
- the tensor tree (`obj`): {"state": {path: tensor}, "consts": {method: [tensors]}} (the
  parameters/buffers and the tensor constants of the graphs, in node order).
Loading never unpickles or executes anything from the file: the IR is parsed, library callables
are looked up by name in `jitorch` (nothing else is importable), and every defect becomes a
RuntimeError naming `jitorch.jit.load` (read_archive's contract).
"""
from __future__ import annotations

import importlib
import inspect
import types

from .. import serialization
from .._tensor import Tensor

FORMAT_NAME = "jitorch.jit"
FORMAT_VERSION = 1


def _nodes(block):
    for n in block.nodes:
        yield n
        for b in n.blocks:
            yield from _nodes(b)


def _spec_json(v):
    """An index spec (frontend_index._Index.spec) as JSON: tuples, ints, None, Ellipsis."""
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
    from .frontend_index import GetItem, SetItem
    cls = {"getitem": GetItem, "setitem": SetItem}.get(ref.get("op"))
    if cls is None:
        raise RuntimeError(f"jitorch.jit.load: unknown index call {ref.get('op')!r}")
    fn = cls(_spec_from_json(ref.get("spec")))
    fn.single = bool(ref.get("single"))
    return fn


def _callable_ref(fn, where):
    """A PythonOp callable as JSON: {"kind": "kw", fn, npos, kwnames, method},
    {"kind": "index", op, spec, single} (x[...] with run-time parts) or {"fn": ...}."""
    from .frontend_call import KwCall
    from .frontend_index import GetItem, SetItem
    if isinstance(fn, (GetItem, SetItem)):
        return {"kind": "index", "op": "getitem" if isinstance(fn, GetItem) else "setitem",
                "spec": _spec_json(fn.spec), "single": bool(fn.single)}
    if isinstance(fn, KwCall):
        return {"kind": "kw", "fn": None if fn.fn is None else _fn_name(fn.fn, where),
                "npos": fn.npos, "kwnames": list(fn.kwnames), "method": fn.method}
    return {"kind": "fn", "fn": _fn_name(fn, where)}


def _fn_name(fn, where):
    mod = getattr(fn, "__module__", None) or ""
    qn = getattr(fn, "__qualname__", None) or ""
    if not (mod == "jitorch" or mod.startswith("jitorch.")) or "<" in qn:
        raise RuntimeError(f"jitorch.jit.save: {where} calls the Python function "
                           f"{mod}.{qn}, which a saved module cannot carry (only jitorch's own "
                           "functions can be called from a loaded module)")
    if _lookup(mod, qn) is not fn:
        raise RuntimeError(f"jitorch.jit.save: {where} calls {mod}.{qn}, which is not "
                           "reachable by that name")
    return [mod, qn]


def _lookup(mod, qn):
    if not (mod == "jitorch" or mod.startswith("jitorch.")):
        raise ValueError(f"callable outside jitorch: {mod}.{qn}")
    obj = importlib.import_module(mod)
    for p in qn.split("."):
        obj = getattr(obj, p)
        if isinstance(obj, types.ModuleType):  # `jitorch.x.os.system` must not resolve
            raise ValueError(f"callable outside jitorch: {mod}.{qn}")
    owner = getattr(obj, "__module__", None) or ""
    if not callable(obj) or not (owner == "jitorch" or owner.startswith("jitorch.")):
        raise ValueError(f"callable outside jitorch: {mod}.{qn}")
    return obj


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
    from .passes import inline
    from .ir_util import clone_graph
    from .printer import print_graph
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
        g = inline.run(clone_graph(v.graph))
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
                from .module import _resolve
                state[p] = _resolve(root, p)
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
    serialization._check_map_location(map_location)  # "cpu" / device / dict / callable
    def reader(arc):
        return _build(arc, map_location, _extra_files)
    return serialization.read_archive(f, reader, expected_format=FORMAT_NAME,
                                      what="jitorch.jit.load", max_version=FORMAT_VERSION)


def _need(cond, what):
    if not cond:
        raise ValueError(what)


def _build(arc, map_location, extra_files):
    from .. import nn
    from .frontend import FrontendResult
    from .frontend_call import KwCall
    from .module import Compiled, _add_method, script_module_class
    from .parser import parse_graph
    meta = arc.manifest.get("module")
    _need(isinstance(meta, dict), "the manifest has no 'module' entry")
    obj = arc.decode(arc.manifest["object"])
    _need(isinstance(obj, dict) and isinstance(obj.get("state"), dict),
          "the tensor tree has no 'state'")
    state = obj["state"]
    if map_location is not None and callable(map_location):
        state = {k: (map_location(t, "cpu") or t) for k, t in state.items()}
    root = _LoadedModule.build(nn, meta.get("tree"), meta.get("class", "Module"))
    for path, t in state.items():
        _need(isinstance(path, str) and isinstance(t, Tensor), f"bad state entry {path!r}")
        owner, _, leaf = path.rpartition(".")
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
    methods = meta.get("methods")
    _need(isinstance(methods, dict) and "forward" in methods, "no 'forward' method")
    for name, info in methods.items():
        text = arc.member(info["code"]).decode("utf-8")
        g = parse_graph(text)
        ops = list(info.get("python_ops", []))
        tens = list((obj.get("consts") or {}).get(name, []))
        for n in _nodes(g.block):
            if n.op == "prim::PythonOp":
                _need(ops, f"{name}: more Python calls than recorded")
                ref = ops.pop(0)
                if ref.get("kind") == "index":
                    n.attrs["fn"] = _index_call(ref)
                else:
                    fn = None if ref.get("fn") is None else _lookup(*ref["fn"])
                    meth = ref.get("method")
                    _need(meth is None or (isinstance(meth, str) and meth.isidentifier() and
                                           not meth.startswith("_")),
                          f"{name}: bad method name {meth!r}")
                    n.attrs["fn"] = KwCall(fn, int(ref["npos"]), ref["kwnames"],
                                           ref["method"]) if ref.get("kind") == "kw" else fn
            for k in sorted(n.attrs):
                if type(n.attrs[k]).__name__ == "TensorLiteral":
                    _need(tens, f"{name}: more tensor constants than saved")
                    n.attrs[k] = tens.pop(0)
        _need(not ops and not tens, f"{name}: saved Python calls/constants do not match the IR")
        g.mutated_inputs = [int(i) for i in info.get("mutated_inputs", [])]
        g.return_aliases = {int(a): int(b) for a, b in info.get("return_aliases", {}).items()}
        g.holds_gil = bool(info.get("python_ops"))
        params = [str(p) for p in info["params"]]
        args = [str(a) for a in info["args"]]
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
