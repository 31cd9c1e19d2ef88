"""`nn.utils.rnn`: padding (`pad_sequence`, `unpad_sequence`) and packing (`PackedSequence`,
`pack_padded_sequence`, `pad_packed_sequence`, `pack_sequence`, `unpack_sequence`,
`invert_permutation`), with PyTorch's semantics and messages.

A PackedSequence holds the time steps of B sequences, sorted by decreasing length, one after
the other: `data` is (sum of lengths, *), and `batch_sizes[t]` is how many sequences are still
running at step t (a CPU int64 tensor). Packing and padding are each one differentiable gather
(`index_select` over the flattened time-major batch), so gradients flow through both. The
recurrent layers (`nn/modules/rnn.py`) run on the packed form directly.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

import jitorch as _jt  # public ops, looked up at call time (no import cycle)
from ..._tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence",
           "pad_sequence", "unpad_sequence", "pack_sequence", "unpack_sequence"]


class PackedSequence_(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Optional[Tensor]
    unsorted_indices: Optional[Tensor]


class PackedSequence(PackedSequence_):
    """The packed time steps of a batch of variable-length sequences (see the module docstring);
    made by `pack_padded_sequence` / `pack_sequence`, never by hand."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # `PackedSequence((data, batch_sizes), ...)`
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        elif batch_sizes.device.type != "cpu":
            raise ValueError(
                "batch_sizes should always be on CPU. Instances of PackedSequence should never "
                "be created manually. They should be instantiated by functions like "
                "pack_sequence and pack_padded_sequences in nn.utils.rnn. "
                "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs) -> "PackedSequence":
        """`data.to(...)`; the indices follow data's device, `batch_sizes` stays on the CPU.
        Returns self when data is unchanged, as PyTorch."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        move = lambda t: None if t is None else t.to(data.device)  # noqa: E731
        return type(self)(data, self.batch_sizes, move(self.sorted_indices),
                          move(self.unsorted_indices))

    def cuda(self, *args, **kwargs):
        return self.to(*args, device="cuda", **kwargs)

    def cpu(self, *args, **kwargs):
        return self.to(*args, device="cpu", **kwargs)

    def pin_memory(self):
        bind = lambda t: None if t is None else t.pin_memory()  # noqa: E731
        return type(self)(self.data.pin_memory(), self.batch_sizes, bind(self.sorted_indices),
                          bind(self.unsorted_indices))

    def double(self): return self.to(dtype=_jt.float64)
    def float(self): return self.to(dtype=_jt.float32)
    def half(self): return self.to(dtype=_jt.float16)
    def long(self): return self.to(dtype=_jt.int64)
    def int(self): return self.to(dtype=_jt.int32)
    def short(self): return self.to(dtype=_jt.int16)
    def char(self): return self.to(dtype=_jt.int8)
    def byte(self): return self.to(dtype=_jt.uint8)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return self.data.is_pinned()


def invert_permutation(permutation):
    """The inverse of a 1-D permutation tensor (None for None)."""
    if permutation is None:
        return None
    inv = np.empty(permutation.numel(), np.int64)
    inv[permutation.cpu().numpy()] = np.arange(permutation.numel())
    return _long(inv).to(permutation.device)


def _long(a) -> Tensor:
    return Tensor._make(np.ascontiguousarray(a, dtype=np.int64))


def _lengths_array(lengths) -> np.ndarray:
    if isinstance(lengths, Tensor):
        if lengths.dim() != 1:
            raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got "
                               f"{lengths.dim()}D {lengths.device.type} "
                               f"{_type_name(lengths)} tensor")
        return lengths.cpu().detach().numpy().astype(np.int64)
    return np.asarray(lengths, dtype=np.int64).reshape(-1)


def _type_name(t: Tensor) -> str:
    return t.type().rsplit(".", 1)[-1].replace("Tensor", "")


def _slots(batch_sizes: np.ndarray, batch: int) -> np.ndarray:
    """Where each packed row sits in the flattened time-major (T * B) padded batch."""
    return np.concatenate([t * batch + np.arange(bs) for t, bs in enumerate(batch_sizes)]) \
        if batch_sizes.size else np.zeros(0, np.int64)


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch (T, B, *) (or (B, T, *)) of sequences of the given lengths;
    `enforce_sorted=False` sorts them by decreasing length first (and records the order)."""
    lengths = _lengths_array(lengths)
    sorted_indices = None
    batch_dim = 0 if batch_first else 1
    if not enforce_sorted:
        order = np.argsort(-lengths, kind="stable")
        lengths = lengths[order]
        sorted_indices = _long(order).to(input.device)
        input = input.index_select(batch_dim, sorted_indices)
    x = input.transpose(0, 1) if batch_first else input
    steps, batch = x.shape[0], x.shape[1]
    if lengths.size != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{lengths.size} (batch_size={batch})")
    if enforce_sorted and np.any(lengths[1:] > lengths[:-1]):
        raise RuntimeError(
            "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
            "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
            "to sidestep this requirement if you do not need ONNX exportability.")
    if lengths.size and lengths[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if lengths.size and lengths[0] > steps:
        raise RuntimeError(f"a length ({lengths[0]}) exceeds the padded input's "
                           f"{'second' if batch_first else 'first'} dimension ({steps})")
    batch_sizes = (lengths[None, :] > np.arange(lengths[0] if lengths.size else 0)[:, None]) \
        .sum(1).astype(np.int64)
    flat = x.reshape((steps * batch,) + tuple(x.shape[2:]))
    data = flat.index_select(0, _long(_slots(batch_sizes, batch)))
    return PackedSequence(data, _long(batch_sizes), sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: Optional[int] = None):
    """The inverse of `pack_padded_sequence`: (padded batch, lengths), in the batch's original
    order; `total_length` pads the time dimension further."""
    batch_sizes = sequence.batch_sizes.cpu().numpy().astype(np.int64)
    max_len = batch_sizes.size
    if total_length is not None:
        if total_length < max_len:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being "
                f"{max_len}")
        max_len = total_length
    data = sequence.data
    batch = int(batch_sizes[0]) if batch_sizes.size else 0
    trailing = tuple(data.shape[1:])
    # every padded slot reads its packed row, or the one padding row appended after them
    source = np.full(max_len * batch, data.shape[0], np.int64)
    source[_slots(batch_sizes, batch)] = np.arange(data.shape[0])
    pad_row = _jt.full((1,) + trailing, padding_value, dtype=data.dtype, device=data.device)
    padded = _jt.cat([data, pad_row]).index_select(0, _long(source).to(data.device))
    padded = padded.reshape((max_len, batch) + trailing)
    lengths = (batch_sizes[:, None] > np.arange(batch)[None, :]).sum(0).astype(np.int64)
    if batch_first:
        padded = padded.transpose(0, 1)
    if sequence.unsorted_indices is not None:
        order = sequence.unsorted_indices
        padded = padded.index_select(0 if batch_first else 1, order)
        lengths = lengths[order.cpu().numpy()]
    return padded, _long(lengths)


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of (L_i, *) sequences (`pad_sequence` then `pack_padded_sequence`)."""
    lengths = [v.size(0) for v in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences: Tensor, lengths, batch_first: bool = False) -> list:
    """The list of sequences, each cut to its length, from a padded batch (the input is not
    modified, unlike PyTorch's, which transposes it in place when batch_first is False)."""
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    lens = _lengths_array(lengths)
    if lens.size != x.shape[0]:
        raise ValueError(f"zip() argument 2 is {'shorter' if lens.size < x.shape[0] else 'longer'}"
                         " than argument 1")
    return [x[b, :int(n)] for b, n in enumerate(lens)]


def unpack_sequence(packed_sequences: PackedSequence) -> list:
    """The list of sequences a PackedSequence holds, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


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
