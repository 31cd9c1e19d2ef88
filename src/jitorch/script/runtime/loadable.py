"""What a loaded module may call in Python: the allow-list of `prim::PythonOp` callables.

A `jit.save` archive names the Python callables of its `prim::PythonOp` nodes (runtime/serialize.py,
docs/security.md). `jit.load` resolves those names through this module only:
- functions registered with `@loadable`, next to their definition, and the few of LIBRARY
  (modules below `script/`, which may not import it): functions that compute from their
  arguments and raise on bad ones, whatever the arguments (no files, imports, globals,
  callbacks or raw memory; writes only into tensors they are given). Registration, not the
  name, decides: `jitorch.save` (writes a file) or `script.cache.load_module` (imports text)
  are jitorch functions and never resolve;
- method calls `x.<name>(...)` whose name is in METHODS for the receiver's type, checked again
  when the call runs (`serialize.MethodCall`): a graph's declared types are not trusted;
  `str.format` runs as `interpreter.safe_format` (fields name arguments only).
`jit.save` refuses a module whose Python calls are not on these lists, so every archive it
writes loads.
"""
from __future__ import annotations

from ..._tensor import Tensor

import importlib

_REGISTRY: dict = {}  # (module, qualname) -> function

# public tensor functions of the op layer and nn.functional that scripted code calls through
# Python where no compiled form applies (BatchNorm/dropout in training, a softmax whose dim is
# not static); the op layer never imports script/ (DESIGN), so they are listed here by name
LIBRARY = frozenset({("jitorch._ops.nn_norm", "batch_norm"), ("jitorch._ops.nn_misc", "dropout"),
                     ("jitorch.nn.functional", "softmax")}
                    # script/frontend/dict_methods.py: dict methods, each checking its receiver
                    | {("jitorch.script.frontend.dict_methods", f"dict_{m}") for m in
                       ("keys", "values", "items", "pop", "setdefault", "update", "clear")})


def loadable(fn):
    """Register `fn` as callable from a loaded module (see the module docstring for what that
    promises about `fn`)."""
    _REGISTRY[(fn.__module__, fn.__qualname__)] = fn
    return fn


def _library(key):
    if key not in LIBRARY:
        return None
    fn = getattr(importlib.import_module(key[0]), key[1])  # names from LIBRARY only
    return fn if callable(fn) and (fn.__module__, fn.__qualname__) == key else None


def name_of(fn):
    """(module, qualname) of a registered function, or None."""
    key = (getattr(fn, "__module__", None), getattr(fn, "__qualname__", None))
    try:
        ok = _REGISTRY.get(key) is fn or _library(key) is fn
    except TypeError:  # an unhashable name
        return None
    return key if ok else None


def lookup(module, qualname):
    """The registered function of that name; ValueError for anything else."""
    key = (module, qualname)
    fn = _REGISTRY.get(key) or _library(key) if type(module) is str and \
        type(qualname) is str else None
    if fn is None:
        raise ValueError(f"{module}.{qualname} is not a function a loaded module may call: "
                         "only functions registered with jitorch.script.runtime.loadable are (nothing "
                         "outside jitorch, nor jitorch's other functions)")
    return fn


# Tensor methods without a registry op that scripted code calls through Python; each computes
# a new value (no hooks, no autograd side effects, no NumPy arrays escaping into the program)
_TENSOR_METHODS = frozenset({
    "aminmax", "bernoulli", "bfloat16", "bool", "byte", "cdouble", "cfloat", "char", "cpu",
    "cummax", "cummin", "detach", "diff", "dim", "double", "element_size", "float", "half",
    "int", "is_complex", "is_conj", "is_contiguous", "is_floating_point", "is_signed", "item",
    "kthvalue", "log_softmax", "logical_and", "logical_or", "logical_xor", "long",
    "matrix_power", "max", "median", "min", "mode", "multinomial", "nanmedian", "ndimension",
    "nelement", "new_empty", "new_full", "new_ones", "new_tensor", "new_zeros", "norm", "numel",
    "pinverse", "pow", "qr", "resolve_conj", "short", "size", "slogdet", "softmax", "sort",
    "storage_offset", "stride", "sub", "subtract", "svd", "to", "tolist", "topk", "type_as",
    "unique", "unique_consecutive", "view", "where"})
_STR_METHODS = frozenset({
    "capitalize", "casefold", "center", "count", "endswith", "find", "format", "index",
    "isalnum", "isalpha", "isdigit", "islower", "isspace", "isupper", "join", "ljust", "lower",
    "lstrip", "partition", "replace", "rfind", "rjust", "rsplit", "rstrip", "split",
    "splitlines", "startswith", "strip", "title", "upper", "zfill"})
METHODS = {Tensor: _TENSOR_METHODS, str: _STR_METHODS,
           list: frozenset({"count", "index", "copy"}), tuple: frozenset({"count", "index"}),
           dict: frozenset({"get", "items", "keys", "values", "copy"})}
METHOD_NAMES = frozenset().union(*METHODS.values())


def method_allowed(recv, name: str) -> bool:
    if isinstance(recv, Tensor):
        return name in _TENSOR_METHODS
    allowed = METHODS.get(type(recv))
    return allowed is not None and name in allowed


__all__ = ["loadable", "lookup", "name_of", "LIBRARY", "METHODS", "METHOD_NAMES",
           "method_allowed"]
