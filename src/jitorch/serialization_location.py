"""Where saved tensors load: the `device` a tensor node records and `map_location`.

A tensor saved from a device other than the CPU records its location (`"device": "cuda:0"`, an
optional key: absent means "cpu"); its data is stored as host bytes like any other. Loading
restores each tensor as PyTorch does: `map_location` None puts it back where it was saved,
a device (or "cpu", "cuda:1") puts every tensor there, a dict maps saved locations to new ones
(unlisted locations stay), and a callable `fn(tensor, location)` returns the tensor to use (None:
the saved location). A tensor bound for CUDA in a process without CUDA raises PyTorch's error.
"""
from __future__ import annotations

from ._device import as_device, cuda_backend, device

_NO_CUDA = ("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is "
            "False. If you are running on a CPU-only machine, please use torch.load with "
            "map_location=torch.device('cpu') to map your storages to the CPU.")


class NoCudaToLoadOn(NotImplementedError):
    """PyTorch raises RuntimeError; jitorch's rule for what is not there is
    NotImplementedError, itself a RuntimeError: this is both."""


def check(map_location) -> None:
    """Reject a malformed `map_location` before reading the file (where tensors go is checked
    per tensor, as PyTorch does)."""
    if map_location is None or callable(map_location):
        return
    values = map_location.values() if isinstance(map_location, dict) else (map_location,)
    for v in values:
        if not isinstance(v, (str, device)):
            raise TypeError(f"map_location: expected a device, a string, a dict of them or a "
                            f"callable, got {type(v).__name__}")
        device(v)  # parses, or raises PyTorch's RuntimeError for a bad device string


def restore(t, location: str, map_location):
    """The loaded (host) tensor `t`, saved at `location`, placed as `map_location` says."""
    if callable(map_location):
        r = map_location(t, location)
        if r is not None:
            return r
        target = location
    elif map_location is None:
        target = location
    elif isinstance(map_location, dict):
        target = map_location.get(location, location)
    else:
        target = map_location
    dev = target if isinstance(target, device) else device(target)
    if dev.type == "cpu":
        return t
    if dev.type == "cuda":
        be = cuda_backend()
        if be is None:
            raise NoCudaToLoadOn(_NO_CUDA)
        if dev.index is not None and dev.index >= be.count():
            raise RuntimeError(f"Attempting to deserialize object on CUDA device {dev.index} "
                               f"but torch.cuda.device_count() is {be.count()}. Please use "
                               f"torch.load with map_location to map your storages to an "
                               f"existing device.")
    from ._device.transfer import place
    return place(t, as_device(dev))
