"""Whole objects in `jitorch.save` files: modules, plain objects, class/function references and
NumPy arrays, as structured data (format version 2; docs/serialization.md, "objects").

Owns the object node kinds of the archive and the rules for rebuilding them:
    {"$": "object", "id": k, "module": "__main__", "qualname": "Net", "state": NODE}
        an instance: its class path and its state (the instance `__dict__`, or what a class's
        own `__getstate__` returns); an `nn.Module`'s state omits its hook tables
    {"$": "objref", "id": k}       the same instance again (shared submodules, cycles)
    {"$": "global", "module": "jitorch.nn.functional", "qualname": "relu"}
        a class or function used as a value (e.g. `self.activation = F.relu`); handed back as
        the object, never called
    {"$": "ndarray", "member": "arrays/j.npy", "scalar": false}
        a NumPy array (any non-object dtype) in its own `.npy` member, or a NumPy scalar
    {"$": "defaultdict", "factory": NODE, "items": [[KEY_NODE, NODE], ...]}
        a `collections.defaultdict` (an optimizer's `state`); its factory is a "global" or null

Loading follows PyTorch 2.6's weights-only model without pickle. With `weights_only=True` a
class/function path resolves only through the user's allow-list (`_safe_globals`; nothing is
imported) and an unlisted one raises PyTorch's `pickle.UnpicklingError`; NumPy arrays need
`numpy._core.multiarray._reconstruct` allowed, as in PyTorch. With `weights_only=False` the path
is imported as PyTorch's unpickler would. Either way an instance is built only from a class
(`cls.__new__(cls)`, then the base `nn.Module.__init__` for modules, then `__setstate__(state)`
or a `__dict__` update) and is handed out only once its effective state (the resulting
`__dict__`) passes the rule of serialization_state, which saving checks too; a path naming
anything that is not a class is only ever returned as a value by a "global" node, and a path
through a dunder or `<locals>` is refused.
"""
from __future__ import annotations

import collections
import importlib
import io
import types
import warnings

import numpy as np
from numpy.lib import format as npformat

from . import _safe_globals as sg
from . import serialization_state as rule
from .serialization import _Corrupt, _is_int, _need
from .serialization import _Raise as Raise

__all__ = ["encode", "decode", "TAGS", "unsafe_globals"]

TAGS = ("object", "objref", "global", "ndarray", "defaultdict")
_RECONSTRUCT = np.arange(1).__reduce__()[0]  # numpy._core.multiarray._reconstruct (NumPy 2)
_SCALAR = np.float64(0).__reduce__()[0]  # numpy._core.multiarray.scalar


def _module_cls():
    from .nn.modules.module import Module
    return Module


# ------------------------------------------------------------------------------------------
# saving
# ------------------------------------------------------------------------------------------
def _refuse(obj, path: str, why: str):
    cls = type(obj)
    raise TypeError(
        f"jitorch.save: cannot save an object of type {cls.__module__}.{cls.__qualname__} "
        f"(at {path}): {why}. jitorch files hold tensors, Parameters, containers, str, bytes, "
        "numbers, bool, None, dtypes, devices, Sizes, NumPy arrays, importable classes and "
        "functions, and instances of importable Python classes whose state is such data "
        "(no pickle)")


def _check_importable(obj, path: str, what: str, owner=None) -> tuple[str, str]:
    # `owner`: the instance being saved whose class `obj` is (named in the error)
    import sys
    owner = obj if owner is None else owner
    mod, qual = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not isinstance(mod, str) or not isinstance(qual, str):
        _refuse(owner, path, f"the {what} has no module/qualname to be found by on load")
    if "<locals>" in qual or "<lambda>" in qual:
        _refuse(owner, path, f"{what} {mod}.{qual} is local (defined inside a function or a "
                           "lambda) and cannot be found by name on load, as pickle says")
    found = sys.modules.get(mod)
    for part in qual.split("."):
        found = getattr(found, part, None)
    if found is not obj:
        _refuse(owner, path, f"{what} {mod}.{qual} is not the object found under that name")
    return mod, qual


def encode(enc, obj, path: str):
    """The node for a value the plain-data encoder does not know (called by `_Encoder`)."""
    if isinstance(obj, (np.ndarray, np.generic)):
        return _array(enc, obj, path)
    if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)):
        mod, qual = _check_importable(obj, path, "class" if isinstance(obj, type) else "function")
        return {"$": "global", "module": mod, "qualname": qual}
    if id(obj) in enc.objects:
        return {"$": "objref", "id": enc.objects[id(obj)]}
    cls = type(obj)
    if cls is collections.defaultdict:
        items = enc.encode(dict(obj), path)["items"]  # a plain dict's node (cycle-checked)
        return {"$": "defaultdict", "factory": enc.encode(obj.default_factory,
                                                           f"{path}.default_factory"),
                "items": items}
    if cls.__module__.startswith("jitorch.script"):
        import pickle
        raise pickle.PickleError(
            "ScriptModules cannot be deepcopied using copy.deepcopy or saved using torch.save. "
            "Mixed serialization of script and non-script modules is not supported. For purely "
            "script modules use my_script_module.save(<filename>) instead.")
    problem = rule.class_problem(cls)
    if problem:
        _refuse(obj, path, problem)
    if not hasattr(obj, "__dict__"):
        _refuse(obj, path, "it has no __dict__ (slots-only state is not saved)")
    mod, qual = _check_importable(cls, path, "class", owner=obj)
    k = len(enc.keep)
    enc.objects[id(obj)] = k
    enc.keep.append(obj)  # keeps id() unique while encoding
    state = obj.__getstate__() if rule.own_getstate(cls) else dict(obj.__dict__)
    if isinstance(obj, _module_cls()) and isinstance(state, dict):
        hooks = [n for n in rule.MODULE_HOOK_TABLES if state.pop(n, None)]
        if hooks:
            # PyTorch pickles hook tables, but hooks are code; here they are not saved
            warnings.warn(f"jitorch.save: the hooks of {qual} at {path} ({', '.join(hooks)}) "
                          "are not saved (hooks are code); register them again after load",
                          UserWarning, stacklevel=4)
    if isinstance(state, dict):  # what load will hold it to (serialization_state)
        problem = rule.effective_problem(cls, state)
        if problem:
            _refuse(obj, path, problem)
    return {"$": "object", "id": k, "module": mod, "qualname": qual,
            "state": enc.encode(state, f"{path}.__dict__")}


def _array(enc, a, path: str) -> dict:
    scalar = isinstance(a, np.generic)
    arr = np.asarray(a)
    if arr.dtype.hasobject:
        _refuse(a, path, "a NumPy array of Python objects is pickled data")
    key = ("np", id(a))
    if key in enc.objects:
        name = enc.objects[key]
    else:
        name = f"arrays/{len(enc.arrays)}.npy"
        enc.objects[key] = name
        enc.keep.append(a)
        buf = io.BytesIO()
        np.save(buf, arr, allow_pickle=False)
        enc.arrays.append((name, buf.getvalue()))
    return {"$": "ndarray", "member": name, "scalar": scalar}


# ------------------------------------------------------------------------------------------
# loading
# ------------------------------------------------------------------------------------------
def _path_of(node) -> tuple[str, str]:
    mod, qual = node.get("module"), node.get("qualname")
    _need(isinstance(mod, str) and isinstance(qual, str) and mod and qual,
          f"{node.get('$')} node without module/qualname")
    # dunder attributes (`os.system.__globals__`) would walk from a name to anything
    _need(all(p.isidentifier() for p in mod.split(".")) and
          all(p.isidentifier() and not p.startswith("__") for p in qual.split(".")),
          f"class path {mod}.{qual!r} is not a plain importable name")
    return mod, qual


def _resolve(arc, mod: str, qual: str):
    path = f"{mod}.{qual}"
    if arc.weights_only:
        table = {**sg.allowed(), **arc.extra_globals}
        if path not in table:
            raise Raise(sg.refusal(path))
        return table[path]
    try:
        obj = importlib.import_module(mod)  # what PyTorch's unpickler does with weights_only=False
        for part in qual.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise Raise(type(e)(f"jitorch.load: cannot find {path} named in {arc.source}: {e}")) \
            from None
    return obj


def decode(arc, node: dict, depth: int):
    """Rebuild an object node (called by `Archive.decode` for the tags in TAGS)."""
    tag = node["$"]
    if tag == "objref":
        _need(node.get("id") in arc.objects, "reference to an unknown object")
        return arc.objects[node["id"]]
    if tag == "ndarray":
        return _load_array(arc, node)
    if tag == "defaultdict":
        return _load_defaultdict(arc, node, depth)
    mod, qual = _path_of(node)
    if tag == "global":
        return _resolve(arc, mod, qual)  # a value: returned, never called
    k = node.get("id")
    _need(_is_int(k) and k not in arc.objects, "object id missing or repeated")
    cls = _resolve(arc, mod, qual)
    if not isinstance(cls, type):
        raise Raise(TypeError(f"jitorch.load: {mod}.{qual} named as the class of a saved "
                              f"object is a {type(cls).__name__}, not a class; it is not "
                              "called"))
    where = f"manifest.json: object {k} ({mod}.{qual})"
    problem = rule.class_problem(cls)
    _need(problem is None, f"{where}: jitorch.save never writes one: {problem}")
    module_cls = _module_cls()
    try:
        inst = cls.__new__(cls)
    except Exception as e:
        raise Raise(TypeError(f"jitorch.load: cannot create a {mod}.{qual} without calling "
                              f"__init__ ({e})")) from None
    _need(hasattr(inst, "__dict__"), f"{where}: its instances have no __dict__")
    if isinstance(inst, module_cls):
        module_cls.__init__(inst)  # jitorch's own defaults (hook tables) before the state
    arc.objects[k] = inst  # before the state: the state may refer back to the object
    state = arc.decode(node.get("state"), depth + 1)
    problem = rule.shape_problem(cls, state)
    _need(problem is None, f"{where}: {problem}")
    try:
        if hasattr(cls, "__setstate__"):
            inst.__setstate__(state)
        else:
            inst.__dict__.update(state)
    except Exception as e:  # e.g. dict.update given a list that is not of pairs
        raise _Corrupt(f"{where}: its state cannot be applied: {type(e).__name__}: {e}") from e
    # the rule holds for what the instance now is, whatever shape carried the state there
    problem = rule.effective_problem(cls, vars(inst))
    _need(problem is None, f"{where}: {problem}")
    return inst


def _load_defaultdict(arc, node: dict, depth: int):
    if arc.weights_only and "collections.defaultdict" not in sg.allowed():
        raise Raise(sg.refusal("collections.defaultdict"))  # PyTorch does not allow it either
    fnode, items = node.get("factory"), node.get("items")
    _need(fnode is None or (isinstance(fnode, dict) and fnode.get("$") == "global"),
          "defaultdict factory is not a class/function reference")
    _need(isinstance(items, list), "defaultdict node without items")
    factory = None if fnode is None else arc.decode(fnode, depth + 1)
    _need(factory is None or callable(factory), "defaultdict factory is not callable")
    out = collections.defaultdict(factory)  # the factory runs only when user code asks
    out.update(arc.decode({"$": "dict", "items": items}, depth + 1))
    return out


def _load_array(arc, node: dict):
    name, scalar = node.get("member"), node.get("scalar")
    _need(isinstance(name, str) and name.startswith("arrays/") and isinstance(scalar, bool),
          "bad ndarray node")
    if arc.weights_only:
        fn = _SCALAR if scalar else _RECONSTRUCT
        path = sg.global_path(fn)
        table = sg.allowed()
        ok = path in table or ("numpy.core.multiarray." + fn.__name__) in table
        if not ok:
            raise Raise(sg.refusal(path))
    if name not in arc.arrays:
        info = arc._info(name)
        with arc.zf.open(info) as fp:
            version = npformat.read_magic(fp)
            _need(version in ((1, 0), (2, 0)), f"{name}: unsupported .npy version {version}")
            shape, _fortran, dtype = (npformat.read_array_header_1_0 if version == (1, 0)
                                      else npformat.read_array_header_2_0)(fp)
            _need(not dtype.hasobject, f"{name}: holds Python objects (pickled data)")
            n = 1
            for s in shape:
                n *= s
            _need(fp.tell() + n * dtype.itemsize == info.file_size,
                  f"{name}: size does not match its header")
            fp.seek(0)
            arc.arrays[name] = np.load(fp, allow_pickle=False)
    arr = arc.arrays[name]
    if scalar:
        _need(arr.ndim == 0, f"{name}: a NumPy scalar must be 0-d")
        return arr[()]
    return arr


def unsafe_globals(node, out: list) -> list:
    """Every class/function path in a decoded manifest tree (for
    `get_unsafe_globals_in_checkpoint`), in first-seen order."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, list):
            stack.extend(reversed(n))
        elif isinstance(n, dict):
            tag = n.get("$")
            if tag == "defaultdict" and "collections.defaultdict" not in out:
                out.append("collections.defaultdict")
            if tag in ("object", "global"):
                p = f"{n.get('module')}.{n.get('qualname')}"
                if p not in out:
                    out.append(p)
            elif tag == "ndarray":
                p = sg.global_path(_SCALAR if n.get("scalar") else _RECONSTRUCT)
                if p not in out:
                    out.append(p)
            stack.extend(reversed([v for key, v in n.items() if key != "$"]))
    return out
