"""`jitorch.distributed`: jitorch has no process groups or collectives, so the namespace answers
as a PyTorch build without distributed support does: `is_available()` is False (and
`is_initialized()` False, so `if dist.is_available() and dist.is_initialized():` guards take
the single-process path); any other name raises NotImplementedError naming it."""
from __future__ import annotations

__all__ = ["is_available", "is_initialized"]


def is_available() -> bool:
    return False


def is_initialized() -> bool:
    return False


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)

    def missing(*args, **kwargs):
        raise NotImplementedError(f"jitorch.distributed.{name} is not implemented: jitorch has "
                                  f"no process groups (torch.distributed)")
    missing.__name__ = name
    return missing
