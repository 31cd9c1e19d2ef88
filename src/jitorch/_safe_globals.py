"""The allow-list of globals for `jitorch.load(..., weights_only=True)` (PyTorch 2.6's model).

Owns `add_safe_globals`, `get_safe_globals`, `clear_safe_globals`, the `safe_globals` context
manager, and the refusal that names a class the user has not allowed. A saved object names its
class by path (`module.qualname`); under `weights_only=True` a path resolves only to an object the
user put on this list (nothing is imported), exactly as PyTorch's weights-only unpickler looks
paths up in its user-allowed table. Nothing here ever unpickles; the list only decides which
classes `jitorch.load` may construct and which functions/classes it may hand back as values.
"""
from __future__ import annotations

import pickle

from . import _fork

__all__ = ["add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "global_path", "allowed", "refusal"]

# entries as the user gave them (an object or an (object, path) tuple), in order; one process-
# wide list, as in PyTorch, guarded for concurrent loads in threads
_GLOBALS: list = []
_LOCK = _fork.lock()

UNSAFE_MESSAGE = (
    "In PyTorch 2.6, we changed the default value of the `weights_only` argument in `torch.load` "
    "from `False` to `True`. Re-running `torch.load` with `weights_only` set to `False` will "
    "likely succeed, but it can result in arbitrary code execution. Do it only if you got the "
    "file from a trusted source.")
DOCS_MESSAGE = (
    "\n\nCheck the documentation of torch.load to learn more about types accepted by default "
    "with weights_only https://pytorch.org/docs/stable/generated/torch.load.html.")


def global_path(obj) -> str:
    """`module.qualname`: how a saved file names a class or function (PyTorch's key)."""
    return f"{obj.__module__}.{obj.__qualname__}"


def _entry(item):
    if isinstance(item, tuple):
        if len(item) != 2 or not isinstance(item[1], str):
            raise ValueError(f"add_safe_globals: expected a class/function or a (class, "
                             f"'module.qualname') tuple, got {item!r}")
        return item
    if not (hasattr(item, "__module__") and hasattr(item, "__qualname__")):
        raise TypeError(f"add_safe_globals: {item!r} is not a class or function (it has no "
                        "__module__/__qualname__); pass (obj, 'module.qualname')")
    return item


def add_safe_globals(safe_globals: list) -> None:
    """`torch.serialization.add_safe_globals`: allow these classes/functions for
    `weights_only=True` loads. Items are objects or `(object, "module.qualname")` tuples."""
    items = [_entry(i) for i in safe_globals]
    with _LOCK:
        _GLOBALS.extend(items)


def get_safe_globals() -> list:
    """The user-added globals, as they were given."""
    with _LOCK:
        return list(_GLOBALS)


def clear_safe_globals() -> None:
    with _LOCK:
        _GLOBALS.clear()


class safe_globals:
    """`with jitorch.serialization.safe_globals([Net]):` allows these globals inside the block
    only (the list is restored on exit, also when the block raises)."""

    def __init__(self, safe_globals: list):
        self.safe_globals = [_entry(i) for i in safe_globals]

    def __enter__(self):
        with _LOCK:
            self._saved = list(_GLOBALS)
            _GLOBALS.extend(self.safe_globals)
        return self

    def __exit__(self, *exc):
        with _LOCK:
            _GLOBALS[:] = self._saved
        return False


def allowed() -> dict:
    """path -> object for every user-allowed global (the table a load resolves paths in)."""
    out = {}
    for item in get_safe_globals():
        if isinstance(item, tuple):
            out[item[1]] = item[0]
        else:
            out[global_path(item)] = item
    return out


def refusal(path: str) -> pickle.UnpicklingError:
    """PyTorch's error (type and text) for a global that `weights_only=True` does not allow."""
    message = (f"Unsupported global: GLOBAL {path} was not an allowed global by default. Please "
               f"use `torch.serialization.add_safe_globals([{path}])` or the "
               f"`torch.serialization.safe_globals([{path}])` context manager to allowlist this "
               "global if you trust this class/function.")
    text = ("Weights only load failed. This file can still be loaded, to do so you have two "
            "options, \033[1mdo those steps only if you trust the source of the "
            f"checkpoint\033[0m. \n\t(1) {UNSAFE_MESSAGE}\n\t(2) Alternatively, to load with "
            "`weights_only=True` please check the recommended steps in the following error "
            "message.\n\tWeightsUnpickler error: " + message + DOCS_MESSAGE)
    return pickle.UnpicklingError(text)
