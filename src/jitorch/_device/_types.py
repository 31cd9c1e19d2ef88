"""`jitorch.device`: the value naming where a tensor lives (`cpu`, `cuda:N`, and the other
type names PyTorch parses). Pure data: which devices can hold storage is `_device/backends.py`'s
business, normalising a device argument is `as_device` in `_device/__init__.py`."""
from __future__ import annotations


_TYPES = ("cpu", "cuda", "mps", "xpu", "meta")  # names PyTorch parses


class NoDeviceError(AssertionError, NotImplementedError):
    """A device jitorch cannot reach: PyTorch's CPU-only build raises AssertionError ("Torch not
    compiled with CUDA enabled"), jitorch's convention for what is not there is
    NotImplementedError naming it; this is both, so either `except` clause catches it."""


class device:
    __slots__ = ("type", "index")

    def __init__(self, type, index=None):
        if isinstance(type, device):
            self.type, self.index = type.type, type.index
            return
        if isinstance(type, int) and not isinstance(type, bool) and index is None:
            type, index = "cuda", type  # `torch.device(0)` is cuda:0
        if not isinstance(type, str):
            raise TypeError(f"device() expected a string, got {type!r}")
        if ":" in type:
            type, _, idx = type.partition(":")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}:{idx}'")
            index = int(idx)
        if type not in _TYPES:
            raise RuntimeError(f"Expected one of {', '.join(_TYPES)} device type at start of "
                               f"device string: {type}")
        if index is not None and index < 0:
            raise RuntimeError(f"Device index must not be negative")
        self.type, self.index = type, index

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def __repr__(self):
        idx = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{idx})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __enter__(self):  # `with torch.device(d):` makes d the factories' default device
        from . import _push_default
        _push_default(self)
        return self

    def __exit__(self, *exc):
        from . import _pop_default
        _pop_default()
        return False

    def __reduce__(self):
        return (device, (self.type, self.index))


CPU = device("cpu")
