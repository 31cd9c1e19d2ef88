"""What an RPC message is, and what it may name.

A message is one MPI message of bytes (so a request arrives whole, and several threads may send
at once without interleaving):

    u64 call id | u64 number of storages n | u64 manifest length m | n x u64 storage byte sizes
    | the manifest | padding to 64 | storage 0 | padding to 64 | storage 1 | ...

The manifest is either binary (a call of a function with positional arguments, or an answer,
whose values are all None, bools, 64-bit ints, floats, strings or plain CPU tensors: struct
fields, "the binary form" below; its first byte is never one JSON text begins with), or
UTF-8 JSON with one key always, "rpc": the envelope (which operation, which function, the
distributed-autograd context, the tag the answer goes to, ...), and the payload in one of two
forms:
  * general: jitorch.save's manifest (serialization.py: the object tree as JSON nodes, tensors
    as nodes naming storages) with format "jitorch.rpc". Reading runs
    `serialization.load_message`: the checks of `jitorch.load(weights_only=True)`, nothing is
    unpickled, objects only of allowed classes (the user's `add_safe_globals` list, plus `RRef`
    and `WorkerInfo`, which are the protocol's own);
  * compact, key "c" (`compact_encode` / `compact_decode`): most calls carry only numbers,
    strings, None, tuples, lists and str-keyed dicts of them, and plain CPU tensors that need
    no gradient; those are written as JSON directly (a tuple is an array, a list {"l": [...]},
    a dict {"d": {...}}, a tensor {"t": [storage, dtype, shape]}), which costs a few
    microseconds where the general form costs tens. It can only describe those values, so
    reading it builds nothing else; anything else takes the general form.
Storages are the tensors' raw bytes, copied once into the message and received as views of the
receive buffer.

The RRef lifetime messages (a batch of forks announced and dropped) have a binary form of their
own (`pack_forks`), on a tag of their own.

Functions travel by name, "module:qualname" (`qualified_name`), and the callee finds them with
`resolve`, which never imports, evaluates or unpickles anything: the module must already be
imported there, the name is looked up attribute by attribute in `vars()` (no `__getattr__`,
no properties, no dunders), and what it finds must be a Python function, a scripted function
or a Python class defined under exactly that name, in a module a message may name
(`module_problem`): not the standard library (eval, exec, os.system, subprocess, pickle live
there), not an installed third-party package, and of jitorch only its tensor API. So a message
can only select a function the callee's own program defines; it never brings code.
"""
from __future__ import annotations

import json
import os
import site
import struct
import sys
import sysconfig
import types

import numpy as np

FORMAT = "jitorch.rpc"
VERSION = 1
_PREFIX = struct.Struct("<QQQ")
_CALL_ID = struct.Struct("<Q")
_ALIGN = 64
# jitorch's modules a message may name: the tensor API (ops, creation, nn, optim, ...); not its
# I/O (save/load, jit), process control (distributed) or compiler internals
# (packages with their submodules; the top-level `jitorch` module itself only, not below it)
_JITORCH_API = ("jitorch._creation", "jitorch._random", "jitorch._ops", "jitorch.nn",
                "jitorch.linalg", "jitorch.fft", "jitorch.special", "jitorch.optim",
                "jitorch.functional")
_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class written in Python


class MessageError(Exception):
    """A message that cannot be read (the reason; the agent answers it with a RuntimeError)."""


_ZEROS = bytes(_ALIGN)


def pack(call_id: int, manifest: dict, storages: list) -> bytes:
    """The bytes of one message (storages: arrays)."""
    return _frame(call_id, _dumps(manifest).encode("utf-8"), storages)


def _frame(call_id: int, text: bytes, storages: list) -> bytes:
    """The bytes of one message of manifest bytes `text` (JSON or the binary form)."""
    n = len(storages)
    if not n:
        return _PREFIX.pack(call_id, 0, len(text)) + text
    # (once per message: the header's fields in one Struct, padding inline)
    parts = [b"", text, _ZEROS[:-(_PREFIX.size + 8 * n + len(text)) % _ALIGN]]
    fields = [call_id, n, len(text)]
    for a in storages:  # joined as they are: bytes.join reads any C-contiguous buffer
        if not a.flags.c_contiguous:
            a = np.ascontiguousarray(a)
        size = a.nbytes
        fields.append(size)
        parts += (a, _ZEROS[:-size % _ALIGN])
    parts[0] = _sizes(n + 3).pack(*fields)
    return b"".join(parts)


_SIZE_STRUCTS: dict = {}  # number of storages -> the Struct of their byte sizes


def _sizes(n: int) -> struct.Struct:
    st = _SIZE_STRUCTS.get(n)
    if st is None:
        st = _SIZE_STRUCTS[n] = struct.Struct(f"<{n}Q")
    return st


def _encoder():
    """JSON text of a manifest: standard JSON only (no NaN), no spaces. The C encoder made
    once (JSONEncoder.encode makes one per call: ~1.5 us of a 4 us encoding); manifests are
    trees (no check for cycles)."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # an interpreter without the C accelerator
        return json.JSONEncoder(allow_nan=False, separators=(",", ":")).encode
    encode = make(None, json.JSONEncoder().default, json.encoder.encode_basestring_ascii,
                  None, ":", ",", False, False, False)
    return lambda obj: "".join(encode(obj, 0))


_dumps = _encoder()


def call_id_of(buf: np.ndarray) -> int | None:
    """The call id of a message (None when it is too short to hold one): an error answer
    needs it even when the rest cannot be read."""
    return _CALL_ID.unpack_from(buf)[0] if len(buf) >= 8 else None


def unpack(buf: np.ndarray) -> tuple[int, dict, list]:
    """(call id, manifest, storage buffers as views of `buf`); MessageError when malformed."""
    total = buf.size
    if total < _PREFIX.size:
        raise MessageError(f"a message of {total} bytes is shorter than its header")
    call_id, n, m = _PREFIX.unpack_from(buf)
    pos = _PREFIX.size
    if n > (total - pos) // 8 or m > total:
        raise MessageError("its header claims more storages or manifest bytes than it holds")
    # (a Struct kept for the counts of storages calls carry, not for any a message claims)
    sizes = (_sizes(n) if n <= 64 else struct.Struct(f"<{n}Q")).unpack_from(buf, pos) \
        if n else ()
    pos += 8 * n
    if pos + m > total:
        raise MessageError("its manifest runs past its end")
    end = pos + m
    head = buf[pos:end].tobytes()  # (tens of bytes: indexing bytes is faster than a buffer's)
    binary = m and head[0] in _BINARY_KINDS
    if not binary:
        try:
            manifest = _loads(str(head, "utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as e:
            raise MessageError(f"its manifest is not JSON: {e}") from None
        if not isinstance(manifest, dict) or not isinstance(manifest.get("rpc"), dict):
            raise MessageError("its manifest is not an object with an \"rpc\" envelope")
    pos = end - end % -_ALIGN
    buffers = []
    for size in sizes:
        if pos + size > total:
            raise MessageError("its storages run past its end")
        buffers.append(buf[pos:pos + size])
        pos += size - size % -_ALIGN
    if binary:
        manifest = _binary_decode(head, buffers)
    return call_id, manifest, buffers


def _reject_constant(name):
    raise ValueError(f"non-standard JSON constant {name}")


_raw_decode = json.JSONDecoder(parse_constant=_reject_constant).raw_decode


def _loads(text: str):
    # raw_decode, then "nothing after it": JSONDecoder.decode's check, without its regexes
    obj, end = _raw_decode(text)
    if end != len(text):
        raise ValueError(f"extra data at {end}")
    return obj


# --- the compact payload ----------------------------------------------------------------------
class NotCompact(Exception):
    """The payload holds something the compact form cannot describe: use the general form."""


_MAX_DEPTH = 32
_MAX_DIMS = 64  # NumPy's
_SCALARS = frozenset((str, int, bool, type(None)))
_FINITE = float("inf")


def compact_encode(obj, storages: list):
    """The compact JSON tree of `obj`, appending its tensors' arrays to `storages`;
    NotCompact when `obj` holds anything else (then the general form is used)."""
    return _enc(obj, 0, storages, [])


# (encoding and decoding run on every call: module-level functions, scalars handled inline
# in the containers, no closure made per message)
def _enc(obj, depth, storages, roots):
    # roots: the memory of each tensor so far: two on one memory need the general form
    t = type(obj)
    if t in _SCALARS:
        return obj
    if depth > _MAX_DEPTH:
        raise NotCompact
    if t is float:
        if -_FINITE < obj < _FINITE:
            return obj
        raise NotCompact  # nan and inf are no JSON
    depth += 1
    if t is tuple:
        return [v if type(v) in _SCALARS else _enc(v, depth, storages, roots) for v in obj]
    if t is list:
        return {"l": [v if type(v) in _SCALARS else _enc(v, depth, storages, roots)
                      for v in obj]}
    if t is dict:
        for k in obj:
            if type(k) is not str:
                raise NotCompact
        return {"d": {k: v if type(v) in _SCALARS else _enc(v, depth, storages, roots)
                      for k, v in obj.items()}}
    if t is (_TENSOR or _tensor_type()):
        a = _plain_array(obj, roots)
        storages.append(a)  # (pack copies it into the message, contiguous)
        return {"t": [len(storages) - 1, obj._dtype.name, list(a.shape)]}
    raise NotCompact


def _plain_array(tensor, roots: list) -> np.ndarray:
    """The array of a tensor the compact and binary forms can carry (a plain CPU tensor that
    needs no gradient, on a memory no earlier tensor of the message uses: `roots`, the ids of
    theirs); NotCompact otherwise."""
    a = tensor._data
    if tensor._requires_grad or getattr(tensor, "_is_param", False) or \
            tensor._device.type != "cpu" or type(a) is not np.ndarray:
        raise NotCompact
    root = a
    while isinstance(root.base, np.ndarray):
        root = root.base
    if id(root) in roots:
        raise NotCompact
    roots.append(id(root))
    return a


def compact_decode(node, buffers: list, depth: int = 0):
    """The value of a compact tree whose tensors view `buffers`; MessageError when it is not
    one (it builds nothing but plain values, containers and tensors)."""
    t = type(node)
    if t in _SCALARS or t is float:
        return node
    if depth > _MAX_DEPTH:
        raise MessageError("its payload nests too deep")
    depth += 1
    if t is list:
        return tuple([v if type(v) in _SCALARS else compact_decode(v, buffers, depth)
                      for v in node])
    if t is dict and len(node) == 1:
        (key, v), = node.items()
        if key == "l" and type(v) is list:
            return [x if type(x) in _SCALARS else compact_decode(x, buffers, depth) for x in v]
        if key == "d" and type(v) is dict:
            return {k: x if type(x) in _SCALARS else compact_decode(x, buffers, depth)
                    for k, x in v.items()}
        if key == "t" and type(v) is list and len(v) == 3:
            return _compact_tensor(*v, buffers)
    raise MessageError("its compact payload holds a node that is not a value")


def _compact_tensor(i, dtype, shape, buffers):
    if _TENSOR is None:
        _tensor_type()
    d = _DTYPES.get(dtype) if type(dtype) is str else None
    if d is None or type(i) is not int or type(shape) is not list or \
            not all(type(n) is int for n in shape):
        raise MessageError("its compact payload holds a malformed tensor")
    return _tensor_of(i, d, shape, buffers)


def _tensor_of(i: int, d, shape, buffers: list):
    """A tensor of dtype `d` and `shape` (ints) viewing storage `i` of a message (no copy);
    MessageError when the storage is not one or does not hold exactly it."""
    if not 0 <= i < len(buffers):
        raise MessageError(f"its payload holds a malformed tensor (of storage {i}; it "
                           f"carries {len(buffers)})")
    if len(shape) > _MAX_DIMS:
        raise MessageError(f"its payload holds a malformed tensor ({len(shape)} "
                           f"dimensions)")
    numel = 1
    for n in shape:
        if n < 0:
            raise MessageError("its payload holds a malformed tensor (a negative size)")
        numel *= n
    raw = buffers[i]
    if raw.size != numel * d.itemsize:
        raise MessageError(f"storage {i}: its buffer holds {raw.size} bytes, the tensor needs "
                           f"{numel} x {d.name}")
    a = raw.view(d.np)
    return _TENSOR._make(a if len(shape) == 1 else a.reshape(shape), d)


def _tensor_type():
    # jitorch's Tensor and dtype table, imported on first use (not at import: jitorch imports
    # this module); an import statement per tensor would cost ~3 us
    global _TENSOR, _DTYPES, _DTYPE_LIST, _DTYPE_CODES
    if _TENSOR is None:
        from ..._tensor import Tensor
        from ...serialization import _DTYPES as dtypes
        _DTYPES = dtypes
        _DTYPE_LIST = tuple(dtypes[k] for k in sorted(dtypes))
        _DTYPE_CODES = {d: i for i, d in enumerate(_DTYPE_LIST)}
        _TENSOR = Tensor
    return _TENSOR


_TENSOR = None
_DTYPES: dict = {}
_DTYPE_LIST: tuple = ()  # the binary form's dtype codes: the names in sorted order
_DTYPE_CODES: dict = {}


# --- the binary form --------------------------------------------------------------------------
# The commonest messages, a call of a named function with positional arguments and its answer,
# each argument or value None, a bool, an int of 64 bits, a float, a str or a plain tensor,
# take a binary manifest: struct fields, no JSON, no tree of dicts on either side (encoding and
# reading both messages of a 4 KB tensor's echo: 12 us of CPU, 23 in the compact JSON form;
# its round trip went from ~49 us to ~36). Its first byte, the kind, is never one JSON text
# begins with:
#   call:  u8 1 | u8 number of arguments | u16 name length | u32 reply tag (0: none) | the
#          function's name (UTF-8) | the arguments
#   value: u8 2 (one value) or 3 (a tuple) | u8 number of values | the values
# and each item is a code byte and its fields: "N" None, "T"/"F" a bool, "i" i64, "d" f64,
# "s" u32 length and UTF-8, "t" u8 dtype code (_DTYPE_LIST), u8 number of dimensions and an
# i64 per dimension: a tensor whose bytes are the message's next storage. Reading it yields
# the same envelope and payload the JSON forms would (`Decoded`), and only those values.
_CALL, _VALUE, _TUPLE = 1, 2, 3
_BINARY_KINDS = frozenset((_CALL, _VALUE, _TUPLE))
_CALL_HEAD = struct.Struct("<BBHI")
_NONE, _TRUE, _FALSE, _INT, _FLOAT, _STR, _TENSOR_ITEM = b"NTFidst"
_I64 = struct.Struct("<q")
_F64 = struct.Struct("<d")
_U32 = struct.Struct("<I")
_MAX_ITEMS = 255


class Decoded(dict):
    """The manifest of a binary message: {"rpc": its envelope}, and its payload's value
    (already read: it views the message's storages)."""
    __slots__ = ("value",)


def pack_call(call_id: int, fn: str, reply: int, args: tuple) -> bytes:
    """The binary message of a call of function `fn` (a qualified name) with positional
    `args`, its answer asked on tag `reply` (0: the agent's answer tag); NotCompact when an
    argument is not one it carries."""
    name = fn.encode("utf-8")
    if type(args) is not tuple or len(args) > _MAX_ITEMS or len(name) > 0xFFFF or \
            not 0 <= reply <= 0xFFFFFFFF:
        raise NotCompact
    fmt = ["BBHI", str(len(name)), "s"]
    vals = [_CALL, len(args), len(name), reply, name]
    storages: list = []
    _items(args, fmt, vals, storages)
    return _binary_frame(call_id, fmt, vals, storages)


def pack_value(call_id: int, value) -> bytes:
    """The binary message of a call's answer `value`; NotCompact when it is not one it
    carries."""
    if type(value) is tuple:
        kind, items = _TUPLE, value
        if len(items) > _MAX_ITEMS:
            raise NotCompact
    else:
        kind, items = _VALUE, (value,)
    fmt = ["BB"]
    vals = [kind, len(items)]
    storages: list = []
    _items(items, fmt, vals, storages)
    return _binary_frame(call_id, fmt, vals, storages)


# (struct format of a binary manifest's fields, number of storages) -> (the Struct of the
# message up to its first storage: prefix, storage sizes, the fields, padding; the manifest's
# length). A call site sends the same kinds of values again and again: one struct.pack makes
# that whole head (with _frame's layout) instead of one for the fields and one for the rest.
_HEADS: dict = {}
_MAX_HEADS = 4096


def _binary_frame(call_id: int, fmt: list, vals: list, storages: list) -> bytes:
    """The bytes of one message of a binary manifest (fields `vals` of struct format `fmt`,
    without byte order) and `storages` (arrays)."""
    n = len(storages)
    key = ("".join(fmt), n)
    hit = _HEADS.get(key)
    if hit is None:
        if len(_HEADS) >= _MAX_HEADS:  # (formats of long strings vary without end)
            _HEADS.clear()
        m = struct.calcsize("<" + key[0])
        pad = -(_PREFIX.size + 8 * n + m) % _ALIGN if n else 0
        hit = _HEADS[key] = (struct.Struct(f"<QQQ{n}Q{key[0]}{pad}x"), m)
    head, m = hit
    if not n:
        return head.pack(call_id, 0, m, *vals)
    parts = [b""]
    sizes = []
    for a in storages:
        size = a.nbytes
        sizes.append(size)
        parts.append(a)
        if size % _ALIGN:
            parts.append(_ZEROS[:-size % _ALIGN])
    parts[0] = head.pack(call_id, n, m, *sizes, *vals)
    try:
        return b"".join(parts)  # (reads any C-contiguous buffer)
    except (BufferError, TypeError, ValueError):  # a strided tensor: copied contiguous
        return b"".join(np.ascontiguousarray(a) if isinstance(a, np.ndarray) else a
                        for a in parts)


def _items(values, fmt: list, vals: list, storages: list) -> None:
    roots: list = []
    for v in values:
        t = type(v)
        if v is None:
            fmt.append("B")
            vals.append(_NONE)
        elif t is bool:
            fmt.append("B")
            vals.append(_TRUE if v else _FALSE)
        elif t is int:
            if not -(1 << 63) <= v < (1 << 63):
                raise NotCompact
            fmt.append("Bq")
            vals += (_INT, v)
        elif t is float:
            fmt.append("Bd")
            vals += (_FLOAT, v)
        elif t is str:
            try:
                b = v.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate
                raise NotCompact from None
            fmt += ("BI", str(len(b)), "s")
            vals += (_STR, len(b), b)
        elif t is (_TENSOR or _tensor_type()):
            a = _plain_array(v, roots)
            shape = a.shape
            fmt += ("BBB", str(len(shape)), "q")
            vals += (_TENSOR_ITEM, _DTYPE_CODES[v._dtype], len(shape))
            vals += shape
            storages.append(a)
        else:
            raise NotCompact


def _binary_decode(head: bytes, buffers: list) -> Decoded:
    """The envelope and value of a binary manifest; MessageError when it is not one (every
    length checked against the message, every storage used by exactly one tensor)."""
    try:
        kind, n = head[0], head[1]
        if kind == _CALL:
            _, n, length, reply = _CALL_HEAD.unpack_from(head)
            pos = _CALL_HEAD.size + length
            if pos > len(head):
                raise MessageError("its function name runs past its manifest")
            env = {"op": "call", "fn": head[_CALL_HEAD.size:pos].decode("utf-8"), "cid": None}
            if reply:
                env["reply"] = reply
        else:
            pos = 2
            env = {"ok": True}
        values, pos, used = _read_items(head, pos, n, buffers)
    except (IndexError, struct.error):
        raise MessageError("its binary manifest runs past its end") from None
    except UnicodeDecodeError as e:
        raise MessageError(f"its binary manifest holds a string that is not UTF-8: {e}") \
            from None
    if pos != len(head):
        raise MessageError(f"its binary manifest has {len(head) - pos} bytes after its items")
    if used != len(buffers):
        raise MessageError(f"it carries {len(buffers)} storages and its items use {used}")
    if kind == _CALL:
        value = {"args": tuple(values), "kwargs": {}}
    elif kind == _TUPLE:
        value = tuple(values)
    elif n == 1:
        value = values[0]
    else:
        raise MessageError(f"its binary answer holds {n} values, not one")
    out = Decoded(rpc=env)
    out.value = value
    return out


def _read_items(head: bytes, pos: int, n: int, buffers: list) -> tuple:
    """(the n items from `pos`, the position after them, the storages they used)."""
    if _TENSOR is None:
        _tensor_type()
    out = []
    used = 0
    dtypes = _DTYPE_LIST
    for _ in range(n):
        code = head[pos]
        pos += 1
        if code == _TENSOR_ITEM:
            dcode, ndim = head[pos], head[pos + 1]
            pos += 2
            if dcode >= len(dtypes):
                raise MessageError(f"its binary manifest names dtype code {dcode}")
            shape = (_DIMS.get(ndim) or _dims(ndim)).unpack_from(head, pos)
            pos += 8 * ndim
            out.append(_tensor_of(used, dtypes[dcode], shape, buffers))
            used += 1
        elif code == _INT:
            out.append(_I64.unpack_from(head, pos)[0])
            pos += 8
        elif code == _FLOAT:
            out.append(_F64.unpack_from(head, pos)[0])
            pos += 8
        elif code == _NONE:
            out.append(None)
        elif code == _TRUE or code == _FALSE:
            out.append(code == _TRUE)
        elif code == _STR:
            length = _U32.unpack_from(head, pos)[0]
            pos += 4
            if pos + length > len(head):
                raise MessageError("its binary manifest has a string past its end")
            out.append(head[pos:pos + length].decode("utf-8"))
            pos += length
        else:
            raise MessageError(f"its binary manifest holds an item of unknown code {code}")
    return out, pos, used


_DIMS: dict = {}  # number of dimensions -> the Struct of a shape


def _dims(ndim: int) -> struct.Struct:
    st = _DIMS.get(ndim)
    if st is None:
        st = _DIMS[ndim] = struct.Struct(f"<{ndim}q")
    return st


# --- fork records -----------------------------------------------------------------------------
# The RRef lifetime messages (agent.py, "RRef lifetime"): a batch of records, each a fork of an
# RRef announced or dropped, for their owner:
#   u8 4 | u32 number of records | per record: u8 op ("A" announce, "D" drop) | u64 RRef id |
#   u64 fork id
# Reading it yields only those numbers; the owner checks what they name.
_FORKS_KIND = 4
_FORKS_HEAD = struct.Struct("<BI")
_FORK_RECORD = struct.Struct("<BQQ")
FORK_ANNOUNCE, FORK_DROP = b"AD"


def pack_forks(call_id: int, records: list) -> bytes:
    """The message of fork records [(op, RRef id, fork id)]."""
    head = [_FORKS_HEAD.pack(_FORKS_KIND, len(records))]
    head += [_FORK_RECORD.pack(op, rid, fork) for op, rid, fork in records]
    return _frame(call_id, b"".join(head), [])


def unpack_forks(buf: np.ndarray) -> list:
    """[(op, RRef id, fork id)] of a fork-records message; MessageError when it is not one."""
    total = buf.size
    if total < _PREFIX.size:
        raise MessageError(f"a message of {total} bytes is shorter than its header")
    _, n, m = _PREFIX.unpack_from(buf)
    if n or m != total - _PREFIX.size:
        raise MessageError("fork records carry no storages and fill the message")
    head = buf[_PREFIX.size:].tobytes()
    if m < _FORKS_HEAD.size or head[0] != _FORKS_KIND:
        raise MessageError("it is not a batch of fork records")
    count = _FORKS_HEAD.unpack_from(head)[1]
    if m != _FORKS_HEAD.size + count * _FORK_RECORD.size:
        raise MessageError(f"it claims {count} fork records in {m} bytes")
    records = list(_FORK_RECORD.iter_unpack(head[_FORKS_HEAD.size:]))
    for op, _, _ in records:
        if op != FORK_ANNOUNCE and op != FORK_DROP:
            raise MessageError(f"a fork record of unknown operation {op}")
    return records


# --- names ------------------------------------------------------------------------------------
_FUNCTION_TYPES: list = []  # what a message may call: Python functions, scripted functions


def _function_types() -> tuple:
    if not _FUNCTION_TYPES:
        from ...script.runtime.functions import ScriptFunction
        _FUNCTION_TYPES.extend((types.FunctionType, ScriptFunction))
    return tuple(_FUNCTION_TYPES)


def qualified_name(fn) -> str:
    """"module:qualname" of a function or class, checked to find `fn` again by that name
    (TypeError otherwise: RPC sends names, never code)."""
    mod, qual = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    if not isinstance(mod, str) or not isinstance(qual, str):
        raise TypeError(f"RPC needs a function or class with a module and qualified name to "
                        f"call it by, got {fn!r}")
    name = f"{mod}:{qual}"
    if "<locals>" in qual or "<lambda>" in qual:
        raise TypeError(f"RPC cannot call {name}: it is local (defined inside a function, or "
                        f"a lambda), and RPC calls functions by importable name, never by "
                        f"sending code; define it at module level")
    found = sys.modules.get(mod)
    for part in qual.split("."):
        found = getattr(found, part, None)
    if found is not fn:
        raise TypeError(f"RPC cannot call {fn!r}: {name} does not name it (RPC calls "
                        f"functions by importable name)")
    return name


_ENV_DIRS: tuple | None = None


def _installed_dirs() -> tuple:
    """Directories of the standard library and of installed packages."""
    global _ENV_DIRS
    if _ENV_DIRS is None:
        paths = sysconfig.get_paths()
        dirs = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
        try:
            dirs.update(site.getsitepackages())
        except AttributeError:  # some embedded interpreters have no site-packages list
            pass
        _ENV_DIRS = tuple(os.path.realpath(d) + os.sep for d in dirs if d)
    return _ENV_DIRS


_PROBLEMS: dict = {}  # module name -> (the module object it was checked as, its problem)


def module_problem(mod: str) -> str | None:
    """Why a message may not name functions of module `mod` (None when it may); remembered
    per module object (the check resolves file paths: tens of microseconds a call)."""
    m = sys.modules.get(mod)
    known = _PROBLEMS.get(mod)
    if known is not None and known[0] is m:
        return known[1]
    problem = _module_problem(mod)
    _PROBLEMS[mod] = (m, problem)
    return problem


def _module_problem(mod: str) -> str | None:
    top = mod.partition(".")[0]
    if top == "jitorch":
        if mod == "jitorch" or any(mod == p or mod.startswith(p + ".") for p in _JITORCH_API):
            return None
        return ("of jitorch, a message may name only the tensor API (not its I/O, process "
                "control or compiler)")
    if top in sys.stdlib_module_names or top in sys.builtin_module_names:
        return ("a message may not name the standard library (eval, exec, os.system, "
                "subprocess and pickle live there)")
    m = sys.modules.get(mod)
    f = getattr(m, "__file__", None)
    if isinstance(f, str) and os.path.realpath(f).startswith(_installed_dirs()):
        return ("a message may name only functions of the program itself, not of an installed "
                "package")
    return None


# name -> (its module, ((namespace, attribute, what it held), ...), the function) of names
# resolved before. A hit is re-validated (the module still the imported one, every attribute
# still holding what it held, the function still defined under the name): the checks of a
# first resolution (spelling, module_problem, types) hold for those same objects, so a hit
# returns what a fresh resolution would and costs ~1 us instead of ~4. Refusals are not kept.
_RESOLVED: dict = {}


def resolve(name) -> object:
    """The function or class a message names, or RuntimeError saying why it is refused."""
    hit = _RESOLVED.get(name) if type(name) is str else None
    if hit is not None:
        m, steps, found, mod, qual = hit
        if sys.modules.get(mod) is m and getattr(found, "__module__", None) == mod and \
                getattr(found, "__qualname__", None) == qual:
            for ns, part, held in steps:
                if vars(ns).get(part) is not held:
                    break
            else:
                return found
        del _RESOLVED[name]
    return _resolve(name)


def _resolve(name) -> object:
    def refuse(why):
        return RuntimeError(f"RPC refused to call {name!r}: {why}")
    if not isinstance(name, str):
        raise refuse("a function name is a \"module:qualname\" string")
    mod, sep, qual = name.partition(":")
    if not sep or not mod or not qual:
        raise refuse("a function name is \"module:qualname\"")
    if not all(p.isidentifier() for p in mod.split(".")):
        raise refuse("the module is not a dotted name")
    if not all(p.isidentifier() and not p.startswith("__") for p in qual.split(".")):
        raise refuse("the qualified name is not a plain dotted name (no dunders, no locals)")
    problem = module_problem(mod)
    if problem:
        raise refuse(problem)
    found = module = sys.modules.get(mod)
    if found is None:
        raise refuse(f"module {mod} is not imported on this worker (a message never imports "
                     f"modules; import it in the callee's program)")
    steps = []
    for part in qual.split("."):
        if not isinstance(found, (types.ModuleType, type)):
            raise refuse(f"{part!r} is looked up on a {type(found).__name__}")
        ns = found
        found = vars(ns).get(part)  # no __getattr__, properties or descriptors run
        steps.append((ns, part, found))
        if isinstance(found, staticmethod):
            found = found.__func__
        if found is None:
            raise refuse("no such function on this worker")
    if isinstance(found, type):
        ok = bool(found.__flags__ & _HEAPTYPE)
    else:
        ok = isinstance(found, _function_types())
    if not ok:
        raise refuse(f"it is a {type(found).__name__}, and RPC calls only Python functions, "
                     f"scripted functions and Python classes")
    if getattr(found, "__module__", None) != mod or getattr(found, "__qualname__", None) != qual:
        raise refuse("the name finds an object defined elsewhere (RPC calls functions by the "
                     "name they were defined under)")
    _RESOLVED[name] = (module, tuple(steps), found, mod, qual)
    return found
