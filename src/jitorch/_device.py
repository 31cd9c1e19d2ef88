"""`jitorch.device`: where a tensor lives. Only the CPU holds storage in this release; naming a
CUDA device is accepted by `device(...)` but creating storage there raises a clear error until
the CUDA backend lands."""
from __future__ import annotations

from . import _settings


_TYPES = ("cpu", "cuda", "mps", "xpu", "meta")  # names PyTorch parses; only cpu holds storage


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

    def __enter__(self):  # `with torch.device("cpu"):` (another device raises, as as_device)
        as_device(self)
        return self

    def __exit__(self, *exc):
        return False


CPU = device("cpu")


def as_device(d) -> device:
    """Normalise a device argument and reject devices that cannot hold storage yet."""
    if d is None:
        return CPU
    if isinstance(d, int):
        d = device("cuda", d)
    d = d if isinstance(d, device) else device(d)
    if d.type != "cpu":
        prefix = "Torch not compiled with CUDA enabled: " if d.type == "cuda" else ""
        raise NoDeviceError(f"{prefix}jitorch: tensors on device '{d}' are not implemented yet "
                            f"(CPU only in this release)")
    return CPU


_default = [CPU]


@_settings.setter
def set_default_device(device) -> None:
    """`torch.set_default_device`: the CPU (or None, which resets to it) is the only device that
    holds storage here; another raises at once, where PyTorch raises at the first factory call."""
    _default[0] = CPU if device is None else as_device(device)


def get_default_device() -> device:
    return _default[0]


_settings.register("default_device", get_default_device)  # where factories allocate
