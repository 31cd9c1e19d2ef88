"""`nn.utils.rnn.pad_sequence` (packed sequences are not provided)."""
from __future__ import annotations

import jitorch as _jt  # public ops, looked up at call time (no import cycle)
from ..._tensor import Tensor

__all__ = ["pad_sequence"]


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack variable-length sequences (L_i, *) into (T, B, *) or (B, T, *), padding with
    `padding_value` on `padding_side`. Dtype and trailing dims follow the first sequence."""
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    else:
        sequences = list(sequences)
    if padding_side not in ("left", "right"):
        raise RuntimeError("Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    if len(sequences) == 0:
        raise RuntimeError("received an empty list of sequences")
    first = sequences[0]
    if first.dim() == 0:
        raise RuntimeError("ArrayRef: invalid slice, N = 1; size = 0")
    max_len = max(s.size(0) for s in sequences)
    trailing = tuple(first.shape[1:])
    # stacking pieces (rather than writing into a buffer) keeps the result differentiable
    rows = []
    for s in sequences:
        if tuple(s.shape[1:]) != trailing:
            _check_broadcast((s.size(0),) + trailing, tuple(s.shape))
            s = s.expand((s.size(0),) + trailing)
        s = s.to(first.dtype)
        pad_len = max_len - s.size(0)
        if pad_len:
            pad = _jt.full((pad_len,) + trailing, padding_value, dtype=first.dtype)
            s = _jt.cat([s, pad] if padding_side == "right" else [pad, s])
        rows.append(s)
    out = _jt.stack(rows, 0 if batch_first else 1)
    return out


def _check_broadcast(dst: tuple, src: tuple) -> None:
    # PyTorch copies each sequence into its slot of the output: the copy's broadcast error
    ndim = max(len(dst), len(src))
    for i in range(ndim - 1, -1, -1):
        a = dst[i - ndim + len(dst)] if i - ndim + len(dst) >= 0 else 1
        b = src[i - ndim + len(src)] if i - ndim + len(src) >= 0 else 1
        if a != b and a != 1 and b != 1:
            raise RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b "
                               f"({b}) at non-singleton dimension {i}")
