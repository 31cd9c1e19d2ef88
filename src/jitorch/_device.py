"""`jitorch.device`: where a tensor lives. Only the CPU holds storage in this release; naming a
CUDA device is accepted by `device(...)` but creating storage there raises a clear error until
the CUDA backend lands."""
from __future__ import annotations


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
        if type not in ("cpu", "cuda", "meta"):
            raise RuntimeError(f"Expected one of cpu, cuda, meta device type at start of device "
                               f"string: {type}")
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


CPU = device("cpu")


def as_device(d) -> device:
    """Normalise a device argument and reject devices that cannot hold storage yet."""
    if d is None:
        return CPU
    if isinstance(d, int):
        d = device("cuda", d)
    d = d if isinstance(d, device) else device(d)
    if d.type != "cpu":
        raise NotImplementedError(
            f"jitorch: tensors on device '{d}' are not implemented yet (CPU only in this release)")
    return CPU
