"""Safe `jitorch.save` / `jitorch.load`: tensors and containers of them as plain data.

Owns the on-disk format for saved objects (state_dicts, checkpoints, single tensors) and the
reusable archive reader/writer that `jitorch.jit.save/load` can build on. DESIGN property 7:
loading never unpickles and never evaluates anything from the file; every field is type- and
bounds-checked before it is used, and any defect in the file surfaces as a `RuntimeError`.

Format (version 1; full description in docs/serialization.md)
--------------------------------------------------------------
A ZIP archive, every member stored uncompressed (ZIP_STORED):

    manifest.json      UTF-8 JSON: {"format": "jitorch.save", "version": 1,
                       "storages": [{"dtype": "float32", "numel": 12}, ...], "object": NODE}
    data/<i>.npy       storage i: a 1-D NumPy array (`np.save(allow_pickle=False)`) of `numel`
                       elements of `dtype` (bfloat16 is stored as its uint16 bit pattern)

NODE is JSON: null / true / false / finite numbers / strings stand for themselves, a JSON array
is a Python list, and every other value is a JSON object tagged by "$":
    {"$": "tuple" | "set" | "frozenset" | "size", "items": [NODE...]}
    {"$": "dict" | "odict", "items": [[KEY_NODE, NODE], ...]}   (keys of any saved type;
        an "odict" may carry "metadata": NODE, the `_metadata` attribute of a state_dict)
    {"$": "float", "value": "nan" | "inf" | "-inf"}   {"$": "complex", "real": N, "imag": N}
    {"$": "bytes", "base64": "..."}   {"$": "dtype", "name": "float32"}
    {"$": "device", "type": "cpu", "index": null}
    {"$": "tensor" | "parameter", "id": k, "storage": i, "dtype": "float32", "shape": [...],
        "stride": [...] (elements), "byte_offset": b, "requires_grad": false,
        "device": "cuda:0" (optional, absent on the CPU: serialization_location.py)}
    {"$": "ref", "id": k}   (the same tensor object saved again: loads as the same object)
Tensors whose memory overlaps share one storage, so views saved together load as views of one
buffer (an in-place write through one is seen by the other), as in PyTorch. A storage holds only
the bytes the saved tensors cover (PyTorch saves the whole underlying storage).

Version rule: additive changes (new optional keys, new members) keep "version"; a reader refuses
a file whose version is newer than it knows, naming both versions.
"""
from __future__ import annotations

import base64
import ctypes
import io
import json
import math
import os
import zipfile
from collections import OrderedDict

import numpy as np
from numpy.lib import format as npformat
try:
    from numpy.lib.array_utils import byte_bounds
except ImportError:  # NumPy < 2
    from numpy import byte_bounds

from . import _dtype as dt
from . import serialization_location as location
from ._device import CPU, device as _device_cls
from ._device.transfer import host
from ._safe_globals import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals
from ._tensor import Size, Tensor

__all__ = ["save", "load", "FORMAT_VERSION", "write_archive", "read_archive", "to_manifest",
           "load_message",
           "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "get_unsafe_globals_in_checkpoint"]

FORMAT_NAME = "jitorch.save"
FORMAT_VERSION = 2  # the newest this reader knows; files without objects are written as 1
MANIFEST = "manifest.json"
_DTYPES = {d.name: d for d in (dt.bool, dt.uint8, dt.int8, dt.int16, dt.int32, dt.int64,
                               dt.float16, dt.bfloat16, dt.float32, dt.float64, dt.complex64,
                               dt.complex128)}
_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def _file_dtype(d: dt.dtype) -> np.dtype:
    # the dtype the .npy member holds: ml_dtypes' bfloat16 has no .npy descr, so its bits go
    # as uint16 (np.save would write an opaque '<V2')
    return np.dtype(np.uint16) if d is dt.bfloat16 else np.dtype(d.np)


# ------------------------------------------------------------------------------------------
# writing
# ------------------------------------------------------------------------------------------
class _Encoder:
    """Turns an object tree into JSON nodes; tensors get placeholder nodes filled in later."""

    def __init__(self):
        self.tensors: list[tuple[Tensor, dict]] = []
        self.memo: dict[int, int] = {}  # id(tensor) -> node id; the tensors list keeps them alive
        self.active: set[int] = set()  # containers being encoded (cycle detection)
        # whole objects and NumPy arrays (serialization_objects): memo, keep-alive, members
        self.objects: dict = {}
        self.keep: list = []
        self.arrays: list[tuple[str, bytes]] = []

    def encode(self, obj, path: str):
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return int(obj)
        if isinstance(obj, float):
            v = float(obj)
            if math.isfinite(v):
                return v
            return {"$": "float", "value": "nan" if v != v else ("inf" if v > 0 else "-inf")}
        if isinstance(obj, Tensor):
            return self._tensor(obj, path)
        if isinstance(obj, complex):
            return {"$": "complex", "real": self.encode(obj.real, path),
                    "imag": self.encode(obj.imag, path)}
        if isinstance(obj, bytes):
            return {"$": "bytes", "base64": base64.b64encode(obj).decode("ascii")}
        if isinstance(obj, dt.dtype):
            return {"$": "dtype", "name": obj.name}
        if isinstance(obj, _device_cls):
            return {"$": "device", "type": obj.type, "index": obj.index}
        kind = _CONTAINERS.get(type(obj))
        if kind is None:  # modules, plain objects, classes/functions, NumPy arrays
            from . import serialization_objects
            return serialization_objects.encode(self, obj, path)
        if id(obj) in self.active:
            raise ValueError(f"jitorch.save: the object contains itself (at {path}); "
                             "self-referencing containers cannot be saved")
        self.active.add(id(obj))
        try:
            if kind == "list":
                return [self.encode(v, f"{path}[{i}]") for i, v in enumerate(obj)]
            if kind in ("dict", "odict"):
                items = []
                for k, v in obj.items():
                    items.append([self.encode(k, f"{path} key {k!r}"),
                                  self.encode(v, f"{path}[{k!r}]")])
                node = {"$": kind, "items": items}
                meta = getattr(obj, "_metadata", None) if kind == "odict" else None
                if meta is not None:
                    node["metadata"] = self.encode(meta, f"{path}._metadata")
                return node
            items = obj if kind in ("tuple", "size") else sorted(obj, key=_set_order)
            return {"$": kind, "items": [self.encode(v, f"{path}[{i}]")
                                         for i, v in enumerate(items)]}
        finally:
            self.active.discard(id(obj))

    def _tensor(self, t: Tensor, path: str) -> dict:
        if id(t) in self.memo:
            return {"$": "ref", "id": self.memo[id(t)]}
        k = len(self.tensors)
        self.memo[id(t)] = k
        node = {"$": "parameter" if getattr(t, "_is_param", False) else "tensor", "id": k,
                "dtype": t._dtype.name, "shape": list(t._data.shape),
                "requires_grad": bool(t._requires_grad)}
        if t._device.type != "cpu":  # its data is saved from a host copy (_build_storages)
            node["device"] = str(t._device)
        self.tensors.append((t, node))
        return node


_CONTAINERS = {list: "list", tuple: "tuple", dict: "dict", OrderedDict: "odict", set: "set",
               frozenset: "frozenset", Size: "size"}


def _set_order(v):
    # deterministic files: set members in a stable order (by type name, then repr)
    return (type(v).__name__, repr(v))


def _raw_bytes(lo: int, hi: int) -> np.ndarray:
    # A copy of the bytes [lo, hi): they lie inside one live allocation (the union of
    # overlapping extents of arrays we hold), so reading them is safe.
    if hi <= lo:
        return np.zeros(0, np.uint8)
    return np.frombuffer((ctypes.c_char * (hi - lo)).from_address(lo), np.uint8).copy()


def _build_storages(tensors: list[tuple[Tensor, dict]]) -> list[tuple[dt.dtype, np.ndarray]]:
    """Group tensors whose memory overlaps; one storage per group; fill the tensor nodes."""
    storages: list[tuple[dt.dtype, np.ndarray]] = []

    def alone(t, node, arr):
        a = np.ascontiguousarray(arr).reshape(-1)
        node.update(storage=len(storages), byte_offset=0,
                    stride=_contiguous_strides(arr.shape))
        storages.append((t._dtype, a))

    spans = []
    for t, node in tensors:
        arr = t._data
        isz = arr.dtype.itemsize
        if t._device is not CPU:  # device memory: saved from a host copy, one storage each
            alone(t, node, host(t))
            continue
        if arr.size == 0 or any(s % isz for s in arr.strides):
            alone(t, node, arr)
            continue
        lo, hi = byte_bounds(arr)
        spans.append((lo, hi, t, node))
    spans.sort(key=lambda s: s[0])
    groups: list[list] = []
    for s in spans:
        if groups and s[0] < groups[-1][1]:
            groups[-1][1] = max(groups[-1][1], s[1])
            groups[-1][2].append(s)
        else:
            groups.append([s[0], s[1], [s]])
    for glo, ghi, members in groups:
        if len(members) == 1 and members[0][2]._data.flags.c_contiguous:
            _, _, t, node = members[0]
            alone(t, node, t._data)  # the common case: no copy through raw bytes
            continue
        dtypes = {m[2]._dtype for m in members}
        d = dtypes.pop() if len(dtypes) == 1 else None
        if d is not None and ((ghi - glo) % d.itemsize or
                              any((m[0] - glo) % d.itemsize for m in members)):
            d = None
        raw = _raw_bytes(glo, ghi)
        key = len(storages)
        storages.append((d or dt.uint8, raw.view(d.np) if d is not None else raw))
        for _, _, t, node in members:
            arr = t._data
            ptr = arr.__array_interface__["data"][0]
            node.update(storage=key, byte_offset=ptr - glo,
                        stride=[s // arr.dtype.itemsize for s in arr.strides])
    return storages


def _contiguous_strides(shape) -> list[int]:
    st, acc = [], 1
    for n in reversed(shape):
        st.append(acc)
        acc *= max(n, 1)
    return st[::-1]


def to_manifest(obj, format_name: str = FORMAT_NAME, version: int | None = None):
    """(manifest, storages, encoder) of `obj`: the manifest dict of the format above, the
    storages as (dtype, contiguous 1-D array) in manifest order, and the encoder (its `tensors`:
    (tensor, node) pairs; `arrays`: NumPy members). Archives write these into a ZIP; RPC
    messages (jitorch.distributed.rpc) send the storages as buffers beside the manifest."""
    enc = _Encoder()
    tree = enc.encode(obj, "obj")
    storages = _build_storages(enc.tensors)
    if version is None:  # version 2 added object nodes (serialization_objects)
        version = 2 if (enc.keep and format_name == FORMAT_NAME) else 1
    manifest = {"format": format_name, "version": version,
                "storages": [{"dtype": d.name, "numel": int(a.size)} for d, a in storages],
                "object": tree}
    return manifest, storages, enc


def write_archive(f, obj, *, format_name: str = FORMAT_NAME, extra_manifest: dict | None = None,
                  extra_members: dict[str, bytes] | None = None,
                  version: int | None = None) -> None:
    """Write `obj` (a tree of saveable values) as an archive; `jitorch.jit.save` adds its IR
    text as `extra_members` and its metadata as `extra_manifest` keys (see the doc)."""
    manifest, storages, enc = to_manifest(obj, format_name, version)
    for k, v in (extra_manifest or {}).items():
        if k in manifest:
            raise ValueError(f"write_archive: manifest key {k!r} is reserved")
        manifest[k] = v
    for name in extra_members or {}:
        if name == MANIFEST or name.startswith(("data/", "arrays/")):
            raise ValueError(f"write_archive: member name {name!r} is reserved")
    text = json.dumps(manifest, allow_nan=False, separators=(",", ":"))

    def write(fileobj):
        with zipfile.ZipFile(fileobj, "w", compression=zipfile.ZIP_STORED) as zf:
            zf.writestr(MANIFEST, text.encode("utf-8"))
            for i, (d, a) in enumerate(storages):
                # streamed into the member: no whole-array copy (ZIP64 once it may pass 2 GiB)
                with zf.open(f"data/{i}.npy", "w", force_zip64=a.nbytes > (1 << 30)) as fp:
                    np.save(fp, a.view(_file_dtype(d)), allow_pickle=False)
            for name, data in enc.arrays:
                zf.writestr(name, data)
            for name, data in (extra_members or {}).items():
                zf.writestr(name, data)

    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fileobj:
            write(fileobj)
    else:
        if not hasattr(f, "write"):
            raise AttributeError(f"jitorch.save: expected a path or a writable binary file "
                                 f"object, got {type(f).__name__}")
        write(f)


def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False) -> None:
    """`torch.save(obj, f)`: write tensors / state_dicts / nested containers to a path or a
    binary file object, as plain data (no pickle). `pickle_module`/`pickle_protocol` are
    accepted for PyTorch compatibility and ignored (nothing is pickled)."""
    write_archive(f, obj)


# ------------------------------------------------------------------------------------------
# reading
# ------------------------------------------------------------------------------------------
class _Corrupt(Exception):
    """A defect found while validating the file (becomes the RuntimeError's detail)."""


def _need(cond, what: str):
    if not cond:
        raise _Corrupt(what)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


class Archive:
    """An opened, validated archive: `manifest` (dict), `member(name) -> bytes`, and
    `decode(node)` to rebuild saved objects (handed to `read_archive`'s reader)."""

    # class/function paths allowed beside the user's allow-list (a message's own classes)
    extra_globals: dict = {}

    def __init__(self, zf: zipfile.ZipFile, size: int, source: str):
        self.zf, self.size, self.source = zf, size, source
        self.infos = {i.filename: i for i in zf.infolist()}
        self._start(json.loads(self.member(MANIFEST).decode("utf-8"),
                               parse_constant=_reject_constant))

    def _start(self, manifest) -> None:
        self.manifest = manifest
        _need(isinstance(self.manifest, dict), "manifest is not a JSON object")
        self.storages: dict[int, tuple] = {}
        self.tensors: dict[int, Tensor] = {}
        # object nodes: None (not allowed: jit archives), or the load's weights_only flag
        self.weights_only: bool | None = None
        self.objects: dict = {}
        self.arrays: dict = {}
        self.map_location = None

    def _info(self, name: str) -> zipfile.ZipInfo:
        info = self.infos.get(name)
        _need(info is not None, f"member {name!r} is missing")
        _need(info.compress_type == zipfile.ZIP_STORED,
              f"member {name!r} is compressed (jitorch archives store members uncompressed)")
        _need(info.file_size == info.compress_size and
              info.header_offset + info.compress_size <= self.size,
              f"member {name!r} claims more bytes than the file has")
        return info

    def member(self, name: str) -> bytes:
        return self.zf.read(self._info(name))  # zipfile checks the CRC

    def storage_entry(self, i: int) -> tuple[dt.dtype, int]:
        """(dtype, numel) of storage `i`, as the manifest lists it (validated)."""
        table = self.manifest.get("storages")
        _need(isinstance(table, list) and 0 <= i < len(table), f"storage {i} is not listed")
        entry = table[i]
        _need(isinstance(entry, dict), f"storage {i} entry is not an object")
        d = _DTYPES.get(entry.get("dtype"))
        numel = entry.get("numel")
        _need(d is not None, f"storage {i} has unknown dtype {entry.get('dtype')!r}")
        _need(_is_int(numel) and numel >= 0, f"storage {i} has a bad numel")
        return d, numel

    def storage(self, i):
        _need(_is_int(i), "tensor storage index is not an int")
        if i in self.storages:
            return self.storages[i]
        d, numel = self.storage_entry(i)
        name = f"data/{i}.npy"
        info = self._info(name)
        want = _file_dtype(d)
        with self.zf.open(info) as fp:
            version = npformat.read_magic(fp)
            _need(version in ((1, 0), (2, 0)), f"{name}: unsupported .npy version {version}")
            read_header = (npformat.read_array_header_1_0 if version == (1, 0)
                           else npformat.read_array_header_2_0)
            shape, _fortran, fdt = read_header(fp)
            _need(fdt in (want, want.newbyteorder("<"), want.newbyteorder(">")),
                  f"{name}: holds {fdt}, expected {want}")
            _need(tuple(shape) == (numel,), f"{name}: shape {shape}, expected ({numel},)")
            _need(fp.tell() + numel * fdt.itemsize == info.file_size,
                  f"{name}: size does not match its header")
            fp.seek(0)
            arr = np.load(fp, allow_pickle=False)
            _need(fp.read(1) == b"", f"{name}: trailing bytes")
        arr = np.ascontiguousarray(arr.astype(want.newbyteorder("="), copy=False))
        if d is dt.bfloat16:
            arr = arr.view(d.np)
        self.storages[i] = (arr.view(np.uint8), [0])  # raw bytes, shared version counter
        return self.storages[i]

    def decode(self, node, depth: int = 0):
        _need(depth < 10000, "object tree nested too deeply")
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list):
            return [self.decode(v, depth + 1) for v in node]
        _need(isinstance(node, dict), f"bad node of type {type(node).__name__}")
        tag = node.get("$")
        if tag in ("tensor", "parameter"):
            return self._tensor(node, tag)
        if tag == "ref":
            _need(node.get("id") in self.tensors, "reference to an unknown tensor")
            return self.tensors[node["id"]]
        if tag in ("tuple", "set", "frozenset", "size"):
            items = node.get("items")
            _need(isinstance(items, list), f"{tag} node without items")
            vals = [self.decode(v, depth + 1) for v in items]
            if tag == "size":
                _need(all(_is_int(v) for v in vals), "Size with non-int items")
                return Size(vals)
            return {"tuple": tuple, "set": set, "frozenset": frozenset}[tag](vals)
        if tag in ("dict", "odict"):
            items = node.get("items")
            _need(isinstance(items, list), f"{tag} node without items")
            out = {} if tag == "dict" else OrderedDict()
            for kv in items:
                _need(isinstance(kv, list) and len(kv) == 2, "dict item is not a [key, value]")
                k = self.decode(kv[0], depth + 1)
                out[k] = self.decode(kv[1], depth + 1)  # unhashable keys raise TypeError
            if tag == "odict" and "metadata" in node:
                out._metadata = self.decode(node["metadata"], depth + 1)
            return out
        if tag == "float":
            _need(node.get("value") in _FLOATS, "bad special float")
            return _FLOATS[node["value"]]
        if tag == "complex":
            re_, im = self.decode(node.get("real"), depth + 1), self.decode(node.get("imag"),
                                                                         depth + 1)
            _need(isinstance(re_, float) and isinstance(im, float), "bad complex")
            return complex(re_, im)
        if tag == "bytes":
            _need(isinstance(node.get("base64"), str), "bad bytes node")
            return base64.b64decode(node["base64"], validate=True)
        if tag == "dtype":
            _need(node.get("name") in _DTYPES, "unknown dtype")
            return _DTYPES[node["name"]]
        if tag == "device":
            _need(isinstance(node.get("type"), str) and
                  (node.get("index") is None or _is_int(node.get("index"))), "bad device")
            return _device_cls(node["type"], node.get("index"))
        if self.weights_only is not None:
            from . import serialization_objects
            if tag in serialization_objects.TAGS:
                return serialization_objects.decode(self, node, depth)
        raise _Corrupt(f"unknown node tag {tag!r}")

    def _tensor(self, node: dict, tag: str) -> Tensor:
        k = node.get("id")
        _need(_is_int(k) and k not in self.tensors, "tensor id missing or repeated")
        d = _DTYPES.get(node.get("dtype"))
        _need(d is not None, f"tensor has unknown dtype {node.get('dtype')!r}")
        shape, stride, off = node.get("shape"), node.get("stride"), node.get("byte_offset")
        rg = node.get("requires_grad")
        _need(isinstance(shape, list) and all(_is_int(n) and n >= 0 for n in shape),
              "bad tensor shape")
        _need(isinstance(stride, list) and len(stride) == len(shape) and
              all(_is_int(s) for s in stride), "bad tensor stride")
        _need(_is_int(off) and off >= 0, "bad tensor byte_offset")
        _need(isinstance(rg, bool), "bad requires_grad flag")
        _need(not rg or d.category in (dt.FLOAT, dt.COMPLEX),
              f"a {d.name} tensor cannot require grad")
        raw, version = self.storage(node.get("storage"))
        isz = d.itemsize
        numel = math.prod(shape)
        if numel:
            lo = off + sum(s * isz * (n - 1) for s, n in zip(stride, shape) if s < 0)
            hi = off + sum(s * isz * (n - 1) for s, n in zip(stride, shape) if s > 0) + isz
            _need(lo >= 0 and hi <= raw.size, "tensor reaches outside its storage")
            arr = np.ndarray(tuple(shape), dtype=d.np, buffer=raw, offset=off,
                             strides=tuple(s * isz for s in stride))
        else:
            arr = np.zeros(tuple(shape), dtype=d.np)
        t = Tensor._make(arr, d)
        t._version = version  # tensors on one storage share a version counter, like views
        if tag == "parameter":
            from .nn.parameter import Parameter
            t = Parameter(t, rg)
        elif rg:
            t._requires_grad = True
        loc = node.get("device", "cpu")
        _need(isinstance(loc, str) and _valid_device(loc), "bad tensor device")
        try:  # where it goes: map_location (in objects too), else where it was saved
            t = location.restore(t, loc, self.map_location)
        except Exception as e:  # the user's function, or no such device: its error as it is
            raise _Raise(e) from None
        self.tensors[k] = t
        return t


class MessageArchive(Archive):
    """A manifest whose storages arrived as buffers, not in a ZIP (jitorch.distributed.rpc's
    messages): `buffers[i]` holds storage i's bytes. It has no members, so a NumPy-array node
    is refused; `extra_globals` are class paths the message format itself allows."""

    def __init__(self, manifest, buffers: list, source: str, extra_globals=None):
        self.zf, self.size, self.source, self.infos = None, 0, source, {}
        self.buffers = buffers
        if extra_globals:
            self.extra_globals = dict(extra_globals)
        self._start(manifest)

    def _info(self, name: str):
        raise _Corrupt(f"it names member {name!r}, and a message has no members")

    def storage(self, i):
        _need(_is_int(i), "tensor storage index is not an int")
        if i in self.storages:
            return self.storages[i]
        d, numel = self.storage_entry(i)
        _need(i < len(self.buffers), f"storage {i} has no buffer")
        raw = self.buffers[i]
        _need(raw.dtype == np.uint8 and raw.ndim == 1 and raw.size == numel * d.itemsize,
              f"storage {i}: its buffer holds {raw.size} bytes, the manifest says "
              f"{numel} x {d.name}")
        self.storages[i] = (raw, [0])
        return self.storages[i]


def load_message(manifest, buffers: list, *, source: str, what: str, format_name: str,
                 max_version: int, weights_only: bool = True, extra_globals=None):
    """(the object, {node id: tensor}) of a manifest and its storages' buffers, checked as
    `jitorch.load` checks a file (nothing unpickled, objects only from allowed classes); any
    defect raises RuntimeError naming `source`."""
    def read():
        arc = MessageArchive(manifest, buffers, source, extra_globals)
        fmt, version = arc.manifest.get("format"), arc.manifest.get("version")
        _need(fmt == format_name, f"it holds format {fmt!r}, {what} reads {format_name!r}")
        _need(_is_int(version) and 1 <= version <= max_version, f"bad format version {version}")
        arc.weights_only = weights_only
        return arc.decode(arc.manifest.get("object")), arc.tensors
    return _guard(what, source, read, "message")


def _reject_constant(name):
    raise _Corrupt(f"non-standard JSON constant {name}")


def _open_archive(fileobj, size: int, source: str, expected_format: str, what: str,
                  max_version: int):
    """Open a ZIP and validate its manifest; returns an `Archive` (call within `_guard`)."""
    try:
        zf = zipfile.ZipFile(fileobj)
    except Exception as e:
        raise _Corrupt("not a ZIP archive (a jitorch file is one)") from e
    names = set(zf.namelist())
    if MANIFEST not in names and any(n.endswith("data.pkl") for n in names):
        raise _Corrupt("it looks like a PyTorch (pickle-based) file; jitorch never unpickles. "
                       "Convert it in PyTorch to plain tensors and save those with jitorch")
    arc = Archive(zf, size, source)
    fmt, version = arc.manifest.get("format"), arc.manifest.get("version")
    _need(isinstance(fmt, str) and _is_int(version), "manifest lacks format and version")
    if fmt != expected_format:
        hint = " (load it with jitorch.jit.load)" if fmt == "jitorch.jit" else ""
        raise _Corrupt(f"it holds format {fmt!r}, {what} reads {expected_format!r}{hint}")
    if version > max_version:
        raise _NewerFormat(
            f"{what}: {source} was written by a newer jitorch (format version {version}; this "
            f"jitorch reads up to version {max_version}). Upgrade jitorch to load it.")
    _need(version >= 1, f"bad format version {version}")
    return arc


class _NewerFormat(Exception):
    """The file is fine but newer than this reader (its own message, no 'corrupt' prefix)."""


class _Raise(Exception):
    """Carries an exception that a load raises as it is (not as 'corrupted file')."""


def _guard(what: str, source: str, fn, kind: str = "jitorch file"):
    try:
        return fn()
    except _NewerFormat as e:
        raise RuntimeError(str(e)) from None
    except _Raise as e:  # a refusal (UnpicklingError) or a missing class: raised as it is
        raise e.args[0] from None
    except _Corrupt as e:
        raise RuntimeError(f"{what}: {source} is not a valid {kind}: {e}") from None
    except Exception as e:  # zipfile/JSON/NumPy/recursion errors from a damaged file
        raise RuntimeError(f"{what}: {source} is not a valid {kind} (corrupted or "
                           f"truncated): {type(e).__name__}: {e}") from e


def _valid_device(loc: str) -> bool:
    try:
        _device_cls(loc)
    except (RuntimeError, TypeError):
        return False
    return True


def read_archive(f, reader, *, expected_format: str = FORMAT_NAME,
                 what: str = "jitorch.load", max_version: int = FORMAT_VERSION):
    """Open `f` (a path or a binary file object), validate it, and return `reader(archive)`.

    Any defect found while opening or inside `reader` (which reads `archive.manifest`,
    `archive.member(name)` and `archive.decode(node)`) becomes a RuntimeError naming the file;
    opening errors such as FileNotFoundError propagate unchanged, as in PyTorch.
    `jitorch.jit.load` is meant to call this with expected_format="jitorch.jit" (and its own
    `max_version` if its format evolves separately).
    """
    def run(fileobj, size, source):
        return _guard(what, source, lambda: reader(
            _open_archive(fileobj, size, source, expected_format, what, max_version)))

    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fileobj:
            return run(fileobj, os.fstat(fileobj.fileno()).st_size, repr(os.fspath(f)))
    if not hasattr(f, "read"):
        raise AttributeError(f"{what}: expected a path or a readable binary file object, got "
                             f"{type(f).__name__}")
    if not (hasattr(f, "seekable") and f.seekable()):
        data = f.read()  # zipfile needs to seek
        return run(io.BytesIO(data), len(data), "the file object")
    start = f.tell()
    size = f.seek(0, io.SEEK_END)
    f.seek(start)
    return run(f, size, "the file object")


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None,
         **pickle_load_args):
    """`torch.load(f, map_location=None, *, weights_only=True)`: read a `jitorch.save` file.

    Never unpickles. Tensors and containers load whatever `weights_only` says; saved objects
    (modules, class instances, class/function values, NumPy arrays) follow PyTorch 2.6: with
    `weights_only=True` (the default, also for None) only globals allowed with
    `add_safe_globals`/`safe_globals` are used, others raise `pickle.UnpicklingError`; with
    `weights_only=False` their modules are imported (serialization_objects).
    `map_location` may be None, "cpu", a device, a dict of locations, or a callable
    `fn(tensor, location)` returning a replacement tensor (or None: the saved location); see
    serialization_location. A damaged, truncated
    or foreign file raises RuntimeError; a file from a newer format version says so.
    """
    if pickle_module is not None:
        raise RuntimeError("jitorch.load never unpickles; pickle_module is not supported")
    if mmap:
        raise NotImplementedError("jitorch.load: mmap=True is not supported yet")
    location.check(map_location)

    def reader(arc):
        arc.weights_only = weights_only is not False
        arc.map_location = map_location
        return arc.decode(arc.manifest.get("object"))

    return read_archive(f, reader)


def get_unsafe_globals_in_checkpoint(f) -> list[str]:
    """`torch.serialization.get_unsafe_globals_in_checkpoint`: the class/function paths a file
    names that `weights_only=True` does not allow now (nothing is built or imported)."""
    from . import serialization_objects
    from ._safe_globals import allowed
    found = read_archive(f, lambda arc: serialization_objects.unsafe_globals(
        arc.manifest.get("object"), []))
    ok = allowed()
    return [p for p in found if p not in ok]
