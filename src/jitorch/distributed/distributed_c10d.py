"""Process groups and collectives of `jitorch.distributed` (PyTorch's `distributed_c10d`), on MPI.

Owns the process-group state (the default group made by `init_process_group` and the groups of
`new_group`, each an MPI communicator of its own, duplicated so user MPI traffic never mixes with
ours), `ReduceOp`, and every tensor and object operation. The transport is mpi4py's uppercase
buffer calls on the tensors' own memory (`Tensor._data`, the array `Tensor.numpy()` returns):
tensors are never pickled. Every operation is started nonblocking (`Iallreduce`, `Ibcast`, ...)
and completed through a `Work` (_work.py), which enforces the group's `timeout`.

Staging (`_stage`): MPI reads and writes contiguous memory, so a non-contiguous tensor is copied
into a contiguous array and written back when the operation completes; MPI has no reductions for
float16/bfloat16, so those reduce in float32 and are rounded back. Operations that only move data
(broadcast, gather, send, ...) send the raw bytes (MPI.BYTE), so every dtype moves unchanged.
A CUDA tensor (a GPU through CuPy, or the simulator) is staged through host memory, as Gloo
stages it: the MPI wheels are not CUDA-aware, so its values are copied to a host array when the
operation starts and the result is written back into its device memory when the operation
completes (in `wait()` for `async_op`). The tensors of one operation must share a device
(PyTorch's RuntimeError otherwise).

Ranks given as `src`/`dst` are global ranks, as in PyTorch (`group_src`/`group_dst` name a rank
within the group). A rank outside the group an operation names does nothing and gets None, as
PyTorch's do. Objects (`broadcast_object_list`, `all_gather_object`, ...) travel in jitorch.save's
format and load with `weights_only=True`: plain data, containers and tensors; other classes only
when allowed with `jitorch.serialization.add_safe_globals` - a message never runs code.
"""
from __future__ import annotations

import enum
import importlib.util
import io
from datetime import timedelta

import numpy as np

from .. import _dtype as dt
from .._device import CPU, backend_of
from .._device.transfer import host
from .._tensor import Tensor
from ._work import Work, _watchdog, install_fault_hooks, wait_in_mpi, wait_requests

__all__ = [
    "Backend", "GroupMember", "P2POp", "ProcessGroup", "ReduceOp", "Work", "all_gather",
    "all_gather_into_tensor", "all_gather_object", "all_reduce", "all_to_all",
    "all_to_all_single", "barrier", "batch_isend_irecv", "broadcast", "broadcast_object_list",
    "destroy_process_group", "gather", "gather_object", "get_backend", "get_global_rank",
    "get_group_rank", "get_process_group_ranks", "get_rank", "get_world_size", "group",
    "init_process_group", "irecv", "is_available", "is_gloo_available", "is_initialized",
    "is_mpi_available", "is_nccl_available", "is_torchelastic_launched", "isend", "new_group",
    "recv", "reduce", "reduce_scatter", "reduce_scatter_tensor", "scatter",
    "scatter_object_list", "send",
]

_INSTALL_HINT = ("jitorch.distributed runs on MPI through mpi4py, which is not installed: "
                 "pip install 'jitorch[distributed]' (mpi4py and the mpich wheel)")
_NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                    "init_process_group.")
_DEFAULT_TIMEOUT = timedelta(minutes=30)  # PyTorch's default for CPU backends


def is_available() -> bool:
    """True when mpi4py is importable (it does not start MPI)."""
    return importlib.util.find_spec("mpi4py") is not None


is_mpi_available = is_available


def is_gloo_available() -> bool:
    return False


def is_nccl_available() -> bool:
    return False


def is_torchelastic_launched() -> bool:
    """True under `jitorch.distributed.run` (it sets TORCHELASTIC_RUN_ID, as torchrun does)."""
    import os
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def _mpi():
    if not is_available():
        raise RuntimeError(_INSTALL_HINT)
    from mpi4py import MPI
    return MPI


class Backend(str):
    """`torch.distributed.Backend`: the name of a backend. Only "mpi" exists here."""
    MPI = "mpi"
    GLOO = "gloo"
    NCCL = "nccl"
    UNDEFINED = "undefined"

    def __new__(cls, name: str):
        return super().__new__(cls, name.lower())


class ReduceOp(enum.Enum):
    """`torch.distributed.ReduceOp`. AVG (NCCL-only in PyTorch) sums then divides by the group
    size; on integer tensors the quotient is truncated."""
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7

    def __repr__(self):
        return f"<RedOpType.{self.name}: {self.value}>"

    def __str__(self):
        return f"RedOpType.{self.name}"


ReduceOp.RedOpType = ReduceOp  # PyTorch spells the members ReduceOp.RedOpType.SUM too


class ProcessGroup:
    """A group of ranks with its own MPI communicator. `rank()` and `size()` are the group's;
    `_ranks` lists the members' global ranks in group order."""

    def __init__(self, comm, ranks: list[int], timeout: timedelta, name: str):
        self._comm = comm
        self._ranks = list(ranks)
        self._index = {g: i for i, g in enumerate(self._ranks)}
        self._timeout_s = timeout.total_seconds()
        self.group_name = name

    def rank(self) -> int:
        return self._comm.Get_rank()

    def size(self) -> int:
        return self._comm.Get_size()

    def name(self) -> str:
        return "mpi"

    def _group_rank(self, global_rank: int) -> int:
        try:
            return self._index[global_rank]
        except (KeyError, TypeError):
            raise ValueError(f"Global rank {global_rank} is not part of group {self}") from None

    def _work(self, name, reqs, finish=None, result=None, statuses=None, nbytes=0) -> Work:
        return Work(name, reqs, self._timeout_s, self._ranks[self.rank()], finish, result,
                    statuses, nbytes)

    def __repr__(self):
        return f"<ProcessGroup {self.group_name!r} ranks={self._ranks}>"


_NON_MEMBER = object()


class _Groups:
    """`dist.group` / `dist.GroupMember`: `WORLD` is the default group (None before init)."""
    NON_GROUP_MEMBER = _NON_MEMBER

    @property
    def WORLD(self):  # noqa: N802 - PyTorch's name
        return _state.default


group = GroupMember = _Groups()


class _State:
    def __init__(self):
        self.default: ProcessGroup | None = None
        self.groups: list[ProcessGroup] = []


_state = _State()


def is_initialized() -> bool:
    return _state.default is not None


def _default() -> ProcessGroup:
    if _state.default is None:
        raise ValueError(_NOT_INITIALIZED)
    return _state.default


def _resolve(group) -> ProcessGroup | None:
    """The group an operation runs on, or None on a rank outside it."""
    if group is None:
        return _default()
    if group is _NON_MEMBER:
        return None
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"expected a ProcessGroup, got {type(group).__name__}")
    if group not in _state.groups:
        raise ValueError("Invalid process group specified")
    return group


def init_process_group(backend=None, init_method=None, timeout=None, world_size: int = -1,
                       rank: int = -1, store=None, group_name: str = "", pg_options=None,
                       device_id=None) -> None:
    """Join the job's ranks into the default group. The ranks are MPI's: start them with
    `mpiexec -n N` or `python -m jitorch.distributed.run --nproc-per-node N`; a plain `python`
    process is a 1-rank job. `init_method` and `store` are accepted and unused (MPI's launcher
    does the rendezvous); `world_size`/`rank`, when given, must agree with MPI's."""
    if _state.default is not None:
        raise RuntimeError("trying to initialize the default process group twice!")
    name = "mpi" if backend is None else str(backend).lower()
    if name == "nccl" or name.startswith("cuda"):
        raise NotImplementedError(
            f"jitorch.distributed: backend {backend!r} is not supported yet; use "
            f"backend='mpi' (it takes CUDA tensors too, staged through host memory)")
    if name not in ("mpi", "gloo", "cpu:mpi", "cpu:gloo"):
        raise ValueError(f"Invalid backend: '{backend}'")
    MPI = _mpi()
    world = MPI.COMM_WORLD
    for what, given, actual in (("world_size", world_size, world.Get_size()),
                                ("rank", rank, world.Get_rank())):
        if given is not None and given != -1 and given != actual:
            raise ValueError(
                f"init_process_group: {what}={given} but the MPI job gives {actual} (the ranks "
                f"come from the launcher: mpiexec -n N, or jitorch-run --nproc-per-node N)")
    if timeout is None:
        timeout = _DEFAULT_TIMEOUT
    if not isinstance(timeout, timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, "
                        f"got {type(timeout).__name__}")
    pg = ProcessGroup(world.Dup(), list(range(world.Get_size())), timeout, group_name or "0")
    _state.default = pg
    _state.groups = [pg]
    install_fault_hooks()


def destroy_process_group(group=None) -> None:
    """Free a group's communicator; with no argument, every group (the default included)."""
    if group is _NON_MEMBER:
        return
    if group is None or group is _state.default:
        if _state.default is None:
            raise ValueError("Invalid process group specified")
        for pg in _state.groups:
            pg._comm.Free()
        _state.default = None
        _state.groups = []
        return
    if group not in _state.groups:
        raise ValueError("Invalid process group specified")
    group._comm.Free()
    _state.groups.remove(group)


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization: bool = False, group_desc=None):
    """A group of `ranks` (global ranks; all ranks when None). Every rank of the default group
    must call it, unless `use_local_synchronization` (then only the members do); a rank outside
    gets `GroupMember.NON_GROUP_MEMBER`."""
    world = _default()
    n = world.size()
    members = list(range(n)) if ranks is None else sorted(int(r) for r in ranks)
    if len(set(members)) != len(members):
        raise ValueError(f"new_group: ranks must be unique, got {list(ranks)}")
    for r in members:
        if r < 0 or r >= n:
            raise ValueError("The new group's rank should be within the world_size set by "
                             "init_process_group")
    mpi_group = world._comm.Get_group().Incl(members)
    me = world.rank()
    if use_local_synchronization:
        if me not in members:
            mpi_group.Free()
            return _NON_MEMBER
        comm = world._comm.Create_group(mpi_group)
    else:
        comm = world._comm.Create(mpi_group)
    mpi_group.Free()
    if me not in members:
        return _NON_MEMBER
    pg = ProcessGroup(comm, members, timeout or timedelta(seconds=world._timeout_s),
                      str(len(_state.groups)))
    _state.groups.append(pg)
    return pg


def get_rank(group=None) -> int:
    pg = _resolve(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group=None) -> int:
    pg = _resolve(group)
    return -1 if pg is None else pg.size()


def get_backend(group=None) -> str:
    if _resolve(group) is None:
        raise ValueError("Invalid process group specified")
    return Backend.MPI


def get_process_group_ranks(group) -> list[int]:
    pg = _resolve(group)
    return list(pg._ranks) if pg is not None else []


def get_global_rank(group, group_rank: int) -> int:
    pg = _resolve(group)
    if pg is None or not 0 <= group_rank < pg.size():
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return pg._ranks[group_rank]


def get_group_rank(group, global_rank: int) -> int:
    return _resolve(group)._group_rank(global_rank)


# --- tensors and buffers ----------------------------------------------------------------------
_REDUCE_IN_FLOAT32 = (dt.float16, dt.bfloat16)  # MPI has no arithmetic on these


def _check_tensor(t, param: str, op: str) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{param}` of type "
                        f"torch.Tensor but got {type(t)} instead.")


def _check_list(ts, param: str, op: str) -> None:
    if not isinstance(ts, (list, tuple)) or not all(isinstance(t, Tensor) for t in ts):
        raise TypeError(f"Invalid function argument. Expected parameter `{param}` of type "
                        f"List[torch.Tensor] but got {type(ts)} instead.")
    for t in ts:
        _check_tensor(t, param, op)


def _check_like(ts, ref: Tensor, op: str, what: str) -> None:
    """Gloo's checks: every tensor of a list has the reference's dtype and shape."""
    for i, t in enumerate(ts):
        if t.dtype is not ref.dtype:
            raise RuntimeError(f"ProcessGroupMPI::{op}: invalid tensor type at index {i} of "
                               f"{what} (expected {ref.dtype}, got {t.dtype})")
        if t.shape != ref.shape:
            raise RuntimeError(f"ProcessGroupMPI::{op}: invalid tensor size at index {i} of "
                               f"{what} (expected {list(ref.shape)}, got {list(t.shape)})")


def _check_device(op: str, *tensors) -> None:
    """The tensors of one operation (single tensors or lists) live on one device, as PyTorch's
    backends require (Gloo's assertSameDevice), though MPI sees host buffers either way."""
    flat = [t for x in tensors for t in (x if isinstance(x, (list, tuple)) else (x,))
            if isinstance(t, Tensor)]
    for t in flat[1:]:
        if t._device is not flat[0]._device:
            raise RuntimeError(f"ProcessGroupMPI::{op}: Expected list of tensors on the same "
                               f"device, but found {flat[0].device} and {t.device}")


def _check_count(ts, n: int, op: str, what: str) -> None:
    if len(ts) != n:
        raise RuntimeError(f"ProcessGroupMPI::{op}: {what} must have one tensor per rank of "
                           f"the group (expected {n}, got {len(ts)})")


def _stage(t: Tensor, arith: bool = False):
    """(a C-contiguous host array MPI works on, a write-back callable or None). `arith`: the
    array will be reduced, so float16/bfloat16 become float32. A contiguous CPU tensor is its
    own buffer; anything else is a copy (a CUDA tensor's on the host), written back into the
    tensor's memory by the callable."""
    a = t._data
    wide = arith and t._dtype in _REDUCE_IN_FLOAT32
    be = backend_of(t._device)
    if t._device is CPU:
        if not wide and a.flags.c_contiguous:
            return a, None
        src = a
    else:
        src = be.to_host(a)
    s = src.astype(np.float32) if wide else np.asarray(src, order="C")
    return s, lambda: be.write(a, s)


def _write(t: Tensor, arr: np.ndarray) -> None:
    """Copy host array `arr` into `t`'s memory on its device (an operation's output)."""
    backend_of(t._device).write(t._data, arr)
    t._version[0] += 1


def _raw(a: np.ndarray) -> list:
    """A contiguous array as an MPI message of bytes (every dtype, bfloat16 included)."""
    from mpi4py import MPI
    return [a.reshape(-1).view(np.uint8), MPI.BYTE]


_MPI_TYPE_NAMES = {"float32": "FLOAT", "float64": "DOUBLE", "int8": "INT8_T",
                   "uint8": "UINT8_T", "int16": "INT16_T", "int32": "INT32_T",
                   "int64": "INT64_T", "bool": "C_BOOL", "complex64": "C_FLOAT_COMPLEX",
                   "complex128": "C_DOUBLE_COMPLEX"}


def _typed(a: np.ndarray) -> list:
    """A contiguous array as a typed MPI message (for reductions)."""
    from mpi4py import MPI
    return [a.reshape(-1), getattr(MPI, _MPI_TYPE_NAMES[a.dtype.name])]


_MPI_OPS = {ReduceOp.SUM: "SUM", ReduceOp.AVG: "SUM", ReduceOp.PRODUCT: "PROD",
            ReduceOp.MIN: "MIN", ReduceOp.MAX: "MAX", ReduceOp.BAND: "BAND",
            ReduceOp.BOR: "BOR", ReduceOp.BXOR: "BXOR"}
# MPI reduces C_BOOL only with logical ops; a sum or max of booleans saturates to `or`
_BOOL_OPS = {ReduceOp.SUM: "LOR", ReduceOp.MAX: "LOR", ReduceOp.BOR: "LOR",
             ReduceOp.PRODUCT: "LAND", ReduceOp.MIN: "LAND", ReduceOp.BAND: "LAND",
             ReduceOp.BXOR: "LXOR"}
_NOT_COMPLEX = (ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PRODUCT, ReduceOp.BAND, ReduceOp.BOR,
                ReduceOp.BXOR)
_BITWISE = (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR)


def _mpi_op(op, t: Tensor, name: str):
    from mpi4py import MPI
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{name}: op must be a ReduceOp, got {op!r}")
    if t.is_complex() and op in _NOT_COMPLEX:
        raise ValueError(f"{name} does not support {op} on complex tensors")
    if op in _BITWISE and t._dtype.category in (dt.FLOAT, dt.COMPLEX):
        raise RuntimeError(f"Cannot use {op} with non-integral dtype")
    if t._dtype is dt.bool:
        if op is ReduceOp.AVG:
            raise RuntimeError(f"Cannot use {op} with a bool tensor")
        return getattr(MPI, _BOOL_OPS[op])
    return getattr(MPI, _MPI_OPS[op])


def _average(a: np.ndarray, n: int) -> None:
    if a.dtype.kind in "fc":
        a /= n
    else:
        a[...] = (a / n).astype(a.dtype)


def _finisher(*steps):
    """One callable running the non-None steps in order (a Work's completion step)."""
    steps = [s for s in steps if s is not None]

    def finish():
        for step in steps:
            step()
    return finish if steps else None


def _written(*tensors):
    def bump():
        for t in tensors:
            t._version[0] += 1
    return bump


def _done(pg: ProcessGroup, work: Work, async_op: bool):
    if async_op:
        return work
    work.wait()
    return None


def _root(pg: ProcessGroup, rank, group_rank, kw: str) -> int:
    """The group rank of an operation's root from the global `rank` or `group_rank`."""
    if group_rank is not None:
        if rank is not None:
            raise ValueError(f"Can not specify both {kw} and group_{kw}")
        if not 0 <= group_rank < pg.size():
            raise ValueError(f"Group rank {group_rank} is not part of group {pg}")
        return group_rank
    return pg._group_rank(0 if rank is None else rank)


# --- collectives ------------------------------------------------------------------------------
def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce `tensor` over the group; every rank's `tensor` receives the result (in place)."""
    _check_tensor(tensor, "tensor", "all_reduce")
    pg = _resolve(group)
    if pg is None:
        return None
    from mpi4py import MPI
    mop = _mpi_op(op, tensor, "all_reduce")
    buf, back = _stage(tensor, arith=True)
    if wait_in_mpi(buf.nbytes, async_op):  # a large blocking call: MPI's, under the watchdog
        token = _watchdog.arm("all_reduce", pg._timeout_s, pg._ranks[pg.rank()])
        try:
            pg._comm.Allreduce(MPI.IN_PLACE, buf, mop)
        finally:
            _watchdog.disarm(token)
        if op is ReduceOp.AVG:
            _average(buf, pg.size())
        if back is not None:
            back()
        tensor._version[0] += 1
        return None
    avg = (lambda: _average(buf, pg.size())) if op is ReduceOp.AVG else None
    req = pg._comm.Iallreduce(MPI.IN_PLACE, _typed(buf), mop)
    work = pg._work("all_reduce", [req], _finisher(avg, back, _written(tensor)), [tensor],
                    nbytes=buf.nbytes)
    return _done(pg, work, async_op)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op: bool = False,
           group_dst=None):
    """Reduce `tensor` over the group into `dst`'s `tensor`; the others' are left unchanged."""
    _check_tensor(tensor, "tensor", "reduce")
    pg = _resolve(group)
    if pg is None:
        return None
    from mpi4py import MPI
    root = _root(pg, dst, group_dst, "dst")
    mop = _mpi_op(op, tensor, "reduce")
    if pg.rank() == root:
        buf, back = _stage(tensor, arith=True)
        req = pg._comm.Ireduce(MPI.IN_PLACE, _typed(buf), mop, root)
        avg = (lambda: _average(buf, pg.size())) if op is ReduceOp.AVG else None
        finish = _finisher(avg, back, _written(tensor))
    else:
        buf, _ = _stage(tensor, arith=True)
        req = pg._comm.Ireduce(_typed(buf), None, mop, root)
        finish = None
    return _done(pg, pg._work("reduce", [req], finish, [tensor], nbytes=buf.nbytes), async_op)


def broadcast(tensor, src=None, group=None, async_op: bool = False, group_src=None):
    """Copy `src`'s `tensor` into every rank's `tensor`."""
    _check_tensor(tensor, "tensor", "broadcast")
    pg = _resolve(group)
    if pg is None:
        return None
    root = _root(pg, src, group_src, "src")
    buf, back = _stage(tensor)
    req = pg._comm.Ibcast(_raw(buf), root)
    finish = _finisher(back, _written(tensor)) if pg.rank() != root else None
    return _done(pg, pg._work("broadcast", [req], finish, [tensor], nbytes=buf.nbytes),
                 async_op)


def _scatter_rows(rows: np.ndarray, outs) -> None:
    """Copy row i of a (n, nbytes) byte array into tensor `outs[i]`."""
    for row, t in zip(rows, outs):
        _write(t, row.view(t._data.dtype).reshape(t._data.shape))


def _stack_bytes(ts) -> np.ndarray:
    """The tensors' bytes, one row each, in one contiguous array."""
    nbytes = ts[0]._data.nbytes if ts else 0
    out = np.empty((len(ts), nbytes), np.uint8)
    for row, t in zip(out, ts):
        row.view(t._data.dtype).reshape(t._data.shape)[...] = host(t)
    return out


def all_gather(tensor_list, tensor, group=None, async_op: bool = False):
    """`tensor_list[i]` receives rank i's `tensor`."""
    _check_list(tensor_list, "tensor_list", "all_gather")
    _check_tensor(tensor, "tensor", "all_gather")
    _check_device("allgather", tensor, tensor_list)
    pg = _resolve(group)
    if pg is None:
        return None
    _check_count(tensor_list, pg.size(), "allgather", "tensor_list")
    _check_like(tensor_list, tensor, "allgather", "tensor_list")
    send, _ = _stage(tensor)
    recv = np.empty((pg.size(), send.nbytes), np.uint8)
    req = pg._comm.Iallgather(_raw(send), _raw(recv))
    work = pg._work("all_gather", [req], lambda: _scatter_rows(recv, tensor_list), tensor_list)
    return _done(pg, work, async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op: bool = False):
    """`output_tensor` (world_size * input's numel elements: concatenated or stacked along
    dim 0) receives every rank's `input_tensor` in rank order."""
    _check_tensor(output_tensor, "output_tensor", "all_gather_into_tensor")
    _check_tensor(input_tensor, "input_tensor", "all_gather_into_tensor")
    _check_device("_allgather_base", input_tensor, output_tensor)
    pg = _resolve(group)
    if pg is None:
        return None
    if output_tensor.dtype is not input_tensor.dtype:
        raise RuntimeError("output tensor must have the same type as input tensor")
    if output_tensor.numel() != pg.size() * input_tensor.numel():
        raise RuntimeError("output tensor size must be equal to world_size times input tensor "
                           "size")
    send, _ = _stage(input_tensor)
    recv, back = _stage(output_tensor)
    req = pg._comm.Iallgather(_raw(send), _raw(recv))
    work = pg._work("all_gather_into_tensor", [req], _finisher(back, _written(output_tensor)),
                    [output_tensor])
    return _done(pg, work, async_op)


def _reduce_scatter(name, out: Tensor, send: np.ndarray, op, pg, async_op):
    mop = _mpi_op(op, out, name)
    recv, back = _stage(out, arith=True)
    req = pg._comm.Ireduce_scatter_block(_typed(send), _typed(recv), mop)
    avg = (lambda: _average(recv, pg.size())) if op is ReduceOp.AVG else None
    work = pg._work(name, [req], _finisher(avg, back, _written(out)), [out])
    return _done(pg, work, async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """`output` on rank i receives the reduction over ranks of their `input_list[i]`."""
    _check_tensor(output, "output", "reduce_scatter")
    _check_list(input_list, "input_list", "reduce_scatter")
    _check_device("reduce_scatter", output, input_list)
    pg = _resolve(group)
    if pg is None:
        return None
    _check_count(input_list, pg.size(), "reduce_scatter", "input_list")
    _check_like(input_list, output, "reduce_scatter", "input_list")
    cast = np.float32 if output._dtype in _REDUCE_IN_FLOAT32 else output._data.dtype
    send = np.empty((pg.size(),) + output._data.shape, cast)
    for i, t in enumerate(input_list):
        send[i] = host(t)
    return _reduce_scatter("reduce_scatter", output, send, op, pg, async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None,  # noqa: A002
                          async_op: bool = False):
    """`output` on rank i receives the reduction over ranks of block i of `input` (world_size *
    output's numel elements)."""
    _check_tensor(output, "output", "reduce_scatter_tensor")
    _check_tensor(input, "input", "reduce_scatter_tensor")
    _check_device("_reduce_scatter_base", output, input)
    pg = _resolve(group)
    if pg is None:
        return None
    if output.dtype is not input.dtype:
        raise RuntimeError("input tensor must be the same type as the output tensor.")
    if input.numel() != pg.size() * output.numel():
        raise RuntimeError("input tensor must be the same size as output size times world "
                           "size")
    send, _ = _stage(input, arith=True)
    return _reduce_scatter("reduce_scatter_tensor", output, send, op, pg, async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op: bool = False,
           group_dst=None):
    """`gather_list[i]` on `dst` receives rank i's `tensor`."""
    _check_tensor(tensor, "tensor", "gather")
    pg = _resolve(group)
    if pg is None:
        return None
    root = _root(pg, dst, group_dst, "dst")
    send, _ = _stage(tensor)
    if pg.rank() == root:
        if not gather_list:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        _check_list(gather_list, "gather_list", "gather")
        _check_device("gather", tensor, gather_list)
        _check_count(gather_list, pg.size(), "gather", "gather_list")
        _check_like(gather_list, tensor, "gather", "gather_list")
        recv = np.empty((pg.size(), send.nbytes), np.uint8)
        req = pg._comm.Igather(_raw(send), _raw(recv), root)
        work = pg._work("gather", [req], lambda: _scatter_rows(recv, gather_list), gather_list)
    else:
        if gather_list:
            raise ValueError("Argument ``gather_list`` must NOT be specified on "
                             "non-destination ranks.")
        work = pg._work("gather", [pg._comm.Igather(_raw(send), None, root)])
    return _done(pg, work, async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op: bool = False,
            group_src=None):
    """Rank i's `tensor` receives `scatter_list[i]` of `src`."""
    _check_tensor(tensor, "tensor", "scatter")
    pg = _resolve(group)
    if pg is None:
        return None
    root = _root(pg, src, group_src, "src")
    recv, back = _stage(tensor)
    if pg.rank() == root:
        if not scatter_list:
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        _check_list(scatter_list, "scatter_list", "scatter")
        _check_device("scatter", tensor, scatter_list)
        _check_count(scatter_list, pg.size(), "scatter", "scatter_list")
        _check_like(scatter_list, tensor, "scatter", "scatter_list")
        send = _stack_bytes(scatter_list)
    else:
        if scatter_list:
            raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source "
                             "ranks.")
        send = None
    req = pg._comm.Iscatter(None if send is None else _raw(send), _raw(recv), root)
    work = pg._work("scatter", [req], _finisher(back, _written(tensor)), [tensor])
    return _done(pg, work, async_op)


def _splits(sizes, t: Tensor, n: int, what: str) -> list[int]:
    rows = t.shape[0] if t.dim() else 1
    if sizes is None or len(sizes) == 0:
        if rows % n:
            raise RuntimeError("Tensor's dim 0 does not divide equally across group size")
        return [rows // n] * n
    sizes = [int(s) for s in sizes]
    if len(sizes) != n:
        raise RuntimeError(f"Number of tensor splits not equal to group size ({what}: "
                           f"{len(sizes)} splits, {n} ranks)")
    if sum(sizes) != rows:
        raise RuntimeError(f"Split sizes doesn't match total dim 0 size ({what}: {sizes} sum to "
                           f"{sum(sizes)}, dim 0 is {rows})")
    return sizes


def _counts(sizes: list[int], row_bytes: int):
    counts = [s * row_bytes for s in sizes]
    displs = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64).tolist()
    return counts, displs


def all_to_all_single(output, input, output_split_sizes=None,  # noqa: A002
                      input_split_sizes=None, group=None, async_op: bool = False):
    """Split `input` along dim 0 (evenly, or by `input_split_sizes`), send piece i to rank i,
    and concatenate the pieces received into `output` (by `output_split_sizes`)."""
    _check_tensor(output, "output", "all_to_all_single")
    _check_tensor(input, "input", "all_to_all_single")
    _check_device("alltoall_base", output, input)
    pg = _resolve(group)
    if pg is None:
        return None
    if output.dtype is not input.dtype:
        raise RuntimeError("all_to_all_single: output and input must have the same dtype")
    n = pg.size()
    send, _ = _stage(input)
    recv, back = _stage(output)
    row_in = send.nbytes // max(1, input.shape[0] if input.dim() else 1)
    row_out = recv.nbytes // max(1, output.shape[0] if output.dim() else 1)
    scounts, sdispls = _counts(_splits(input_split_sizes, input, n, "input"), row_in)
    rcounts, rdispls = _counts(_splits(output_split_sizes, output, n, "output"), row_out)
    from mpi4py import MPI
    req = pg._comm.Ialltoallv([send.reshape(-1).view(np.uint8), (scounts, sdispls), MPI.BYTE],
                              [recv.reshape(-1).view(np.uint8), (rcounts, rdispls), MPI.BYTE])
    work = pg._work("all_to_all_single", [req], _finisher(back, _written(output)), [output])
    return _done(pg, work, async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op: bool = False):
    """`output_tensor_list[i]` receives rank i's `input_tensor_list[<this rank>]`."""
    _check_list(output_tensor_list, "output_tensor_list", "all_to_all")
    _check_list(input_tensor_list, "input_tensor_list", "all_to_all")
    _check_device("alltoall", output_tensor_list, input_tensor_list)
    pg = _resolve(group)
    if pg is None:
        return None
    n = pg.size()
    _check_count(output_tensor_list, n, "alltoall", "output_tensor_list")
    _check_count(input_tensor_list, n, "alltoall", "input_tensor_list")
    send = np.concatenate([np.asarray(host(t), order="C").reshape(-1).view(np.uint8)
                           for t in input_tensor_list])
    rcounts = [t._data.nbytes for t in output_tensor_list]
    recv = np.empty(sum(rcounts), np.uint8)
    scounts = [t._data.nbytes for t in input_tensor_list]
    from mpi4py import MPI
    req = pg._comm.Ialltoallv([send, _counts(scounts, 1), MPI.BYTE],
                              [recv, _counts(rcounts, 1), MPI.BYTE])

    def finish():
        _, displs = _counts(rcounts, 1)
        _scatter_rows([recv[d:d + c] for d, c in zip(displs, rcounts)], output_tensor_list)
    return _done(pg, pg._work("all_to_all", [req], finish, output_tensor_list), async_op)


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Wait until every rank of the group reached the barrier."""
    pg = _resolve(group)
    if pg is None:
        return None
    return _done(pg, pg._work("barrier", [pg._comm.Ibarrier()]), async_op)


# --- point to point ---------------------------------------------------------------------------
def _peer(pg: ProcessGroup, rank, group_rank, kw: str) -> int:
    if rank is None and group_rank is None:
        raise ValueError(f"Must specify either {kw} or group_{kw}")
    peer = _root(pg, rank, group_rank, kw)
    if peer == pg.rank():
        what = "destination" if kw == "dst" else "source"
        raise ValueError(f"Invalid {what} rank: should not be the same as rank of the current "
                         f"process.")
    return peer


def isend(tensor, dst=None, group=None, tag: int = 0, group_dst=None):
    """Start sending `tensor` to `dst`; returns a Work."""
    _check_tensor(tensor, "tensor", "isend")
    pg = _resolve(group)
    if pg is None:
        return None
    peer = _peer(pg, dst, group_dst, "dst")
    buf, _ = _stage(tensor)
    return pg._work("send", [pg._comm.Isend(_raw(buf), peer, tag)], result=[tensor])


def irecv(tensor, src=None, group=None, tag: int = 0, group_src=None):
    """Start receiving into `tensor` from `src` (any rank when None); returns a Work whose
    `source_rank()` names the sender."""
    _check_tensor(tensor, "tensor", "irecv")
    pg = _resolve(group)
    if pg is None:
        return None
    from mpi4py import MPI
    peer = MPI.ANY_SOURCE if src is None and group_src is None else \
        _peer(pg, src, group_src, "src")
    buf, back = _stage(tensor)
    status = MPI.Status()
    req = pg._comm.Irecv(_raw(buf), peer, tag)

    copy_back = _finisher(back, _written(tensor))

    def finish():
        copy_back()
        return pg._ranks[status.Get_source()]  # the sender, for recv() and source_rank()
    return pg._work("recv", [req], finish, [tensor], statuses=[status])


def send(tensor, dst=None, group=None, tag: int = 0, group_dst=None) -> None:
    """Send `tensor` to `dst` and wait until it left."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor, src=None, group=None, tag: int = 0, group_src=None):
    """Receive into `tensor` from `src` (any rank when None); returns the sender's rank (-1 on
    a rank outside the group)."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    return work._value


class P2POp:
    """`torch.distributed.P2POp(op, tensor, peer, group=None, tag=0)` for `batch_isend_irecv`;
    `op` is `isend` or `irecv`."""

    def __init__(self, op, tensor, peer=None, group=None, tag: int = 0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``torch.distributed."
                             "isend`` or ``torch.distributed.irecv``.")
        self.op, self.tensor, self.peer, self.group, self.tag = op, tensor, peer, group, tag
        self.group_peer = group_peer


def batch_isend_irecv(p2p_op_list) -> list:
    """Start every operation of the list; returns their Works."""
    if not p2p_op_list or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``torch.distributed.P2POp``.")
    return [p.op(p.tensor, p.peer, p.group, p.tag, p.group_peer) for p in p2p_op_list]


# --- objects ----------------------------------------------------------------------------------
def _dumps(obj) -> np.ndarray:
    from ..serialization import save
    f = io.BytesIO()
    save(obj, f)
    return np.frombuffer(f.getvalue(), np.uint8)


def _loads(data: np.ndarray):
    from ..serialization import load
    return load(io.BytesIO(data.tobytes()))


def _wait(pg: ProcessGroup, name: str, req) -> None:
    wait_requests([req], name, pg._timeout_s, pg._ranks[pg.rank()])


def _int64(values):
    from mpi4py import MPI
    return [np.ascontiguousarray(values, np.int64), MPI.INT64_T]


def _allgather_bytes(pg: ProcessGroup, payload: np.ndarray, name: str) -> list[np.ndarray]:
    from mpi4py import MPI
    sizes = np.empty(pg.size(), np.int64)
    _wait(pg, name, pg._comm.Iallgather(_int64([payload.size]), [sizes, MPI.INT64_T]))
    counts, displs = _counts(sizes.tolist(), 1)
    recv = np.empty(int(sizes.sum()), np.uint8)
    _wait(pg, name, pg._comm.Iallgatherv([payload, MPI.BYTE], [recv, (counts, displs),
                                                                MPI.BYTE]))
    return [recv[d:d + c] for d, c in zip(displs, counts)]


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Replace every rank's `object_list` entries with `src`'s (in place)."""
    pg = _resolve(group)
    if pg is None:
        return
    from mpi4py import MPI
    root = _root(pg, src, group_src, "src")
    name = "broadcast_object_list"
    if pg.rank() == root:
        payloads = [_dumps(o) for o in object_list]
        sizes = np.array([p.size for p in payloads], np.int64)
    else:
        sizes = np.empty(len(object_list), np.int64)
    _wait(pg, name, pg._comm.Ibcast([sizes, MPI.INT64_T], root))
    data = np.concatenate(payloads) if pg.rank() == root and payloads else \
        np.empty(int(sizes.sum()), np.uint8)
    _wait(pg, name, pg._comm.Ibcast([data, MPI.BYTE], root))
    if pg.rank() != root:
        _, displs = _counts(sizes.tolist(), 1)
        for i, (d, c) in enumerate(zip(displs, sizes.tolist())):
            object_list[i] = _loads(data[d:d + c])


def all_gather_object(object_list, obj, group=None) -> None:
    """`object_list[i]` receives rank i's `obj`."""
    pg = _resolve(group)
    if pg is None:
        return
    if len(object_list) != pg.size():
        raise RuntimeError(f"all_gather_object: object_list must have {pg.size()} entries "
                           f"(the group size), got {len(object_list)}")
    for i, data in enumerate(_allgather_bytes(pg, _dumps(obj), "all_gather_object")):
        object_list[i] = _loads(data)


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None) -> None:
    """`object_gather_list[i]` on `dst` receives rank i's `obj`."""
    pg = _resolve(group)
    if pg is None:
        return
    root = _root(pg, dst, group_dst, "dst")
    if pg.rank() == root:
        if object_gather_list is None or len(object_gather_list) != pg.size():
            raise ValueError("Argument ``object_gather_list`` must be specified on destination "
                             "rank, with one entry per rank of the group.")
    elif object_gather_list is not None:
        raise ValueError("Argument ``object_gather_list`` must NOT be specified on "
                         "non-destination ranks.")
    # objects are small: an all-gather of the bytes is one code path for both sides
    gathered = _allgather_bytes(pg, _dumps(obj), "gather_object")
    if pg.rank() == root:
        for i, data in enumerate(gathered):
            object_gather_list[i] = _loads(data)


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None,
                        group=None, group_src=None) -> None:
    """`scatter_object_output_list[0]` on rank i receives `src`'s
    `scatter_object_input_list[i]`."""
    pg = _resolve(group)
    if pg is None:
        return
    if not isinstance(scatter_object_output_list, list) or not scatter_object_output_list:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at "
                         "least 1.")
    root = _root(pg, src, group_src, "src")
    objs = [None] * pg.size()
    if pg.rank() == root:
        objs = list(scatter_object_input_list)
    broadcast_object_list(objs, src=None, group=pg, group_src=root)
    scatter_object_output_list[0] = objs[pg.rank()]

