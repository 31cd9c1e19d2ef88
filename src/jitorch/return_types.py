"""`jitorch.return_types`: the named tuples returned by ops with several named results.

Mirrors `torch.return_types`: each type is a tuple subclass with named fields (`values`,
`indices`, ...) that unpacks, indexes and compares like a tuple and prints like PyTorch's.
Op families add their types here with `make(name, fields)`.
"""
from __future__ import annotations

from collections import namedtuple

__all__: list = []


def make(name: str, fields=("values", "indices")):
    """Create (once) and register the return type `jitorch.return_types.<name>`."""
    existing = globals().get(name)
    if existing is not None:
        return existing
    base = namedtuple(name, fields)

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
        return f"jitorch.return_types.{name}(\n{body})"

    cls = type(name, (base,), {"__slots__": (), "__repr__": __repr__,
                               "__module__": "jitorch.return_types"})
    cls.__qualname__ = name
    globals()[name] = cls
    __all__.append(name)
    return cls


for _n in ("max", "min", "sort", "topk", "kthvalue", "median", "nanmedian", "mode", "cummax",
           "cummin"):
    make(_n)
make("aminmax", ("min", "max"))
