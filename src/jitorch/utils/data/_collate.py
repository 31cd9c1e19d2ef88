"""`default_collate` (a list of samples -> one batch) and `default_convert` (one sample's NumPy
values -> tensors), with PyTorch's rules: tensors are stacked, Python floats become float64
tensors, ints int64, bools bool, NumPy arrays/scalars tensors of their dtype, strings and bytes
stay lists, and dicts, namedtuples, tuples and lists are collated element-wise (tuples become
lists, as in PyTorch).
"""
from __future__ import annotations

import collections.abc
import copy
import re

import numpy as np

from ... import _dtype as dt
from ..._creation import as_tensor, tensor
from ..._ops import stack
from ..._tensor import Tensor

__all__ = ["default_collate", "default_convert"]

_np_str_obj_array_pattern = re.compile(r"[SaUO]")
_ERR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        "found {}")


def _is_numpy(elem) -> bool:
    t = type(elem)
    return t.__module__ == "numpy" and t.__name__ not in ("str_", "string_", "bytes_")


def _is_namedtuple(elem) -> bool:
    return isinstance(elem, tuple) and hasattr(elem, "_fields")


def default_convert(data):
    """Convert NumPy arrays and scalars inside `data` to tensors, keeping the structure."""
    if isinstance(data, Tensor):
        return data
    if _is_numpy(data):
        if isinstance(data, np.ndarray) and _np_str_obj_array_pattern.search(data.dtype.str):
            return data
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {k: default_convert(data[k]) for k in data})
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        items = [default_convert(d) for d in data]
        try:
            return type(data)(items)
        except TypeError:
            return items
    return data


def _rebuild_mapping(elem, values: dict):
    # keep the mapping's own type where it can be rebuilt, as PyTorch does
    if isinstance(elem, collections.abc.MutableMapping):
        try:
            clone = copy.copy(elem)
            clone.update(values)
            return clone
        except Exception:
            pass
    try:
        return type(elem)(values)
    except TypeError:
        return values


def default_collate(batch):
    """Merge a list of samples into a batch (see the module docstring for the rules)."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(list(batch), 0)
    if _is_numpy(elem):
        if isinstance(elem, np.ndarray):
            if _np_str_obj_array_pattern.search(elem.dtype.str) is not None:
                raise TypeError(_ERR.format(elem.dtype))
            return default_collate([as_tensor(b) for b in batch])
        if elem.shape == ():  # NumPy scalars
            return as_tensor(np.asarray(batch))
        raise TypeError(_ERR.format(type(elem)))
    if isinstance(elem, float):
        return tensor(batch, dtype=dt.float64)
    if isinstance(elem, int):  # bool included: tensor([True, ...]) is a bool tensor
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        return _rebuild_mapping(elem, {k: default_collate([d[k] for d in batch]) for k in elem})
    if _is_namedtuple(elem):
        return type(elem)(*(default_collate(s) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        size = len(next(it))
        if not all(len(e) == size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(s) for s in transposed]
        items = [default_collate(s) for s in transposed]
        try:
            return type(elem)(items)
        except TypeError:
            return items
    raise TypeError(_ERR.format(type(elem)))
