"""The disk-cache stamp of jitorch's library kernels, made to follow the files they take code from.

Numba keys a `cache=True` function's disk cache on its own source file (mtime and size) only.
Code a library kernel takes in place from another file, an intrinsic's emitted IR (alloc.py's
`_jt_empty` inside conv.py's kernels), is not followed: editing alloc.py would leave the cached
machine code of conv.py stale. Owns `follow(namespace, *modules)`, which folds the content of
`modules`' source files into the stamp of every `cache=True` dispatcher defined in `namespace`
(a module's `globals()`, at its end), so a changed file makes those caches miss and compile
again. A call through a symbol (kernel_call.library) needs none of this: the symbol's name
carries its file's hash.
"""
from __future__ import annotations

import hashlib

from numba.core.dispatcher import Dispatcher


_digests: dict = {}  # source file -> sha256 of its content (read once per process)


def _digest(path: str) -> str:
    got = _digests.get(path)
    if got is None:
        with open(path, "rb") as f:
            got = _digests[path] = hashlib.sha256(f.read()).hexdigest()
    return got


def follow(namespace: dict, *modules) -> None:
    tag = hashlib.sha256("".join(_digest(m.__file__) for m in modules).encode()).hexdigest()[:16]
    for v in list(namespace.values()):
        if not isinstance(v, Dispatcher) or \
                getattr(v.py_func, "__module__", None) != namespace.get("__name__"):
            continue
        cache_file = getattr(getattr(v, "_cache", None), "_cache_file", None)
        if cache_file is not None:
            cache_file._source_stamp = (cache_file._source_stamp, tag)
