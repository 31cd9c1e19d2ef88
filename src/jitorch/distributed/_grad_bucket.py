"""`torch.distributed.GradBucket`: what DDP hands a communication hook (`register_comm_hook`):
one bucket's flat gradient buffer, its position and its parameters."""
from __future__ import annotations

__all__ = ["GradBucket"]


class GradBucket:
    """A bucket of gradients being reduced: `buffer()` is the flat tensor of its gradients
    (in the bucket's parameter order), `gradients()` the per-parameter views into it."""

    def __init__(self, index: int, buffer, params, offsets, is_last: bool):
        self._index = index
        self._buffer = buffer
        self._params = list(params)
        self._offsets = list(offsets)
        self._is_last = is_last

    def index(self) -> int:
        return self._index

    def buffer(self):
        return self._buffer

    def set_buffer(self, buffer) -> None:
        self._buffer = buffer

    def is_last(self) -> bool:
        """True for the last bucket reduced in an iteration (the first parameters' gradients)."""
        return self._is_last

    def parameters(self) -> list:
        return list(self._params)

    def gradients(self) -> list:
        return [self._buffer.narrow(0, off, p.numel()).view(p.shape)
                for p, off in zip(self._params, self._offsets)]

    def __repr__(self):
        return f"<GradBucket index={self._index} numel={self._buffer.numel()}>"
