"""The public RPC API (PyTorch's `torch.distributed.rpc`): `init_rpc`, `rpc_sync`,
`rpc_async`, `remote`, `RRef`, `WorkerInfo`, `get_worker_info`, `shutdown`, the backend options,
and the serving side of the operations they ask for (`_serve_*`, listed in agent.py's `_OPS`).

Every process of the MPI job is one worker: `init_rpc(name)` is collective (all ranks call it),
names come from the callers and ids from MPI ranks. A call names its function by
"module:qualname" (wire.py), so it must be importable on the callee: a module-level function or
class of the program (both sides run the same program, as PyTorch's pickling of functions by
reference assumes). Arguments and results are tensors (sent as buffers), plain values,
containers, `RRef`s and `WorkerInfo`s, and objects of classes allowed with
`jitorch.serialization.add_safe_globals`.

RRefs: `remote` returns at once an RRef whose value the callee (its owner) is creating; the
owner keeps it while any RRef object to it lives on any worker, its own included (agent.py,
"RRef lifetime": each object is a fork, announced when sent and dropped by `__del__`).
`to_here` fetches a copy; `rpc_sync()/rpc_async()/remote()` call a method of the value on its
owner.

CUDA tensors (PyTorch's CUDA RPC, `TensorPipeRpcBackendOptions(device_maps=...)` /
`set_device_map`): a tensor on a device that the caller's map for the callee names travels
through host memory (the general wire form, agent.encode) and arrives on the mapped device; an
answer's CUDA tensors go back by the inverse of the caller's map (every worker learns the others'
maps in init_rpc, as PyTorch's agent builds its reverse maps). A CUDA tensor on a device the map
does not name raises PyTorch's RuntimeError (on the caller for a request, as the call's error for
an answer). CPU tensors keep the binary and compact forms.
"""
from __future__ import annotations

import atexit
import concurrent.futures
import enum
import re
from datetime import timedelta

from ... import _fork, _profiling
from ...futures import Future
from . import agent as _agent_mod
from . import wire

__all__ = ["BackendType", "RRef", "RpcBackendOptions", "TensorPipeRpcBackendOptions",
           "WorkerInfo", "get_worker_info", "init_rpc", "is_available", "remote", "rpc_async",
           "rpc_sync", "shutdown"]

UNSET_RPC_TIMEOUT = -1.0
DEFAULT_RPC_TIMEOUT_SEC = 60.0
_NAME = re.compile(r"^[A-Za-z0-9_\-:]+$")
_state = {"agent": None}
_init_lock = _fork.lock()


def is_available() -> bool:
    from ..distributed_c10d import is_available as mpi_available
    return mpi_available()


class BackendType(enum.Enum):
    """`rpc.BackendType`: every backend name runs on MPI here."""
    TENSORPIPE = "TENSORPIPE"
    MPI = "MPI"


class RpcBackendOptions:
    """`rpc.RpcBackendOptions`: `rpc_timeout` (seconds, the default of every call; 0: none)
    and `init_method` (accepted, unused: MPI's launcher does the rendezvous)."""

    def __init__(self, rpc_timeout: float = DEFAULT_RPC_TIMEOUT_SEC, init_method: str = "env://"):
        self.rpc_timeout = float(rpc_timeout)
        self.init_method = init_method


def _as_device(d):
    """A device-map key or value as a device (an int is a CUDA device index), unchecked: the
    other side of a map names the callee's devices."""
    from ... import device
    return d if isinstance(d, device) else device(d)


def _to_device_map(device_map) -> dict:
    """PyTorch's `_to_device_map`: {device: device}, one-to-one."""
    full, reverse = {}, {}
    for k, v in dict(device_map).items():
        k, v = _as_device(k), _as_device(v)
        if v in reverse:
            raise ValueError(f"`device_map` only supports 1-to-1 mapping, trying to map {k} "
                             f"and {reverse[v]} to {v}")
        full[k] = v
        reverse[v] = k
    return full


class TensorPipeRpcBackendOptions(RpcBackendOptions):
    """`rpc.TensorPipeRpcBackendOptions`: `num_worker_threads` (the pool that serves calls),
    `rpc_timeout`, `init_method`, `device_maps` ({worker name: {this worker's device: the
    callee's}}, also `set_device_map`) and `devices` (the devices maps may name here, checked
    in init_rpc; staging through host memory needs no per-device setup)."""

    def __init__(self, *, num_worker_threads: int = 16,
                 rpc_timeout: float = DEFAULT_RPC_TIMEOUT_SEC, init_method: str = "env://",
                 device_maps=None, devices=None, _transports=None, _channels=None):
        super().__init__(rpc_timeout, init_method)
        if int(num_worker_threads) < 1:
            raise ValueError(f"num_worker_threads must be positive, got {num_worker_threads}")
        self.num_worker_threads = int(num_worker_threads)
        self.device_maps = {to: _to_device_map(m) for to, m in (device_maps or {}).items()}
        self.devices = [_as_device(d) for d in (devices or [])]

    def set_device_map(self, to: str, device_map) -> None:
        """Map this worker's devices to worker `to`'s (merged into an earlier map for `to`)."""
        full = _to_device_map(device_map)
        curr = self.device_maps.get(to, {})
        for k, v in full.items():
            if k in curr and v != curr[k]:
                raise ValueError(f"`set_device_map` only supports 1-to-1 mapping, trying to map "
                                 f"{k} to {v} and {curr[k]}")
        self.device_maps[to] = {**curr, **full}

    def set_devices(self, devices) -> None:
        self.devices = [_as_device(d) for d in devices]


_NO_MAP = ("TensorPipe RPC backend only supports CPU tensors by default, please move your "
           "tensors to CPU before sending them over RPC, or call `set_device_map` on "
           "`TensorPipeRpcBackendOptions` to explicitly configure device mapping. ")


def _request_locate(device_map: dict, dst: str):
    """The device a request's CUDA tensor on `dev` is written with for worker `dst`
    (agent.encode's `locate`); PyTorch's RuntimeError when the map does not name `dev`."""
    def locate(dev):
        to = device_map.get(dev)
        if to is None:
            raise RuntimeError(f"{_NO_MAP}Request device mapping is not available for "
                               f"destination {dst} for device {dev} but received a tensor on "
                               f"that device.")
        return str(to)
    return locate


def _response_locate(reverse_map, dst: str):
    """As `_request_locate`, for an answer to worker `dst` (`reverse_map`: the inverse of its
    map for this worker, or None when it has none)."""
    def locate(dev):
        to = None if reverse_map is None else reverse_map.get(dev)
        if to is None:
            if reverse_map is None:
                raise RuntimeError(f"{_NO_MAP}Response device mapping is not available for "
                                   f"destination {dst}, but found tensor on device: {dev}")
            raise RuntimeError(f"TensorPipe RPC backend only supports CPU tensors by default. "
                               f"Response device mapping is not available for destination "
                               f"{dst} for device {dev} but received a tensor on that device.")
        return str(to)
    return locate


def _exchange_device_maps(pg, opts, names: list, me: str) -> list:
    """Every worker's map for this one, inverted (by rank; None where it has none): the
    reverse maps answers use. Collective (init_rpc): every worker sends its maps, `devices`
    and device count, and every worker checks them all as PyTorch's `_validate_device_maps`
    does, so all raise the same ValueError or none does."""
    import json
    import numpy as np
    from ..distributed_c10d import _allgather_bytes
    maps, devices = getattr(opts, "device_maps", {}), getattr(opts, "devices", [])
    count = -1  # unknown: a worker that names no device does not look for CUDA
    if maps or devices:
        from ..._device import cuda_backend
        be = cuda_backend()
        count = be.count() if be is not None else 0
    mine = {"maps": {to: {str(k): str(v) for k, v in m.items()} for to, m in maps.items()},
            "devices": [str(d) for d in devices], "count": count}
    got = [json.loads(bytes(raw).decode("utf-8")) for raw in _allgather_bytes(
        pg, np.frombuffer(json.dumps(mine).encode("utf-8"), np.uint8), "init_rpc")]
    by_name = dict(zip(names, got))
    for src, info in by_name.items():
        _validate_device_maps(src, info, by_name, names)
    return [None if info["maps"].get(me) is None else
            {_as_device(v): _as_device(k) for k, v in info["maps"][me].items()} for info in got]


def _validate_device_maps(src: str, info: dict, by_name: dict, names: list) -> None:
    """PyTorch's checks of worker `src`'s device maps (its ValueErrors): known target workers,
    devices among a worker's `devices` when it lists them, else valid indices."""
    def valid(devs, worker_info):
        n = worker_info["count"]
        return n < 0 or all(_as_device(d).type != "cuda" or 0 <= (_as_device(d).index or 0) < n
                            for d in devs)
    if not set(info["maps"]).issubset(names):
        raise ValueError(f"Node {src} has invalid target node names in its device maps\n"
                         f"device maps = {list(info['maps'])}\nnode names = {names}")
    for dst, m in info["maps"].items():
        for side, devs, owner in (("source", m.keys(), info),
                                  ("target", m.values(), by_name[dst])):
            if owner["devices"]:
                if not set(devs).issubset(owner["devices"]):
                    raise ValueError(f"Node {src} has unexpected {side} devices in its device "
                                     f"map for {dst}\ndevice map = {m}\ndevices = "
                                     f"{owner['devices']}")
            elif not valid(devs, owner):
                raise ValueError(f"Node {src} has {side} devices with invalid indices in its "
                                 f"device map for {dst}\ndevice map = {m}\ndevice count = "
                                 f"{owner['count']}")


class WorkerInfo:
    """`rpc.WorkerInfo`: a worker's `name` and `id` (its MPI rank)."""

    def __init__(self, name: str, id: int):  # noqa: A002 - PyTorch's name
        self.name, self.id = name, id

    def __eq__(self, other):
        return isinstance(other, WorkerInfo) and (self.name, self.id) == (other.name, other.id)

    def __hash__(self):
        return hash((self.name, self.id))

    def __repr__(self):
        return f"WorkerInfo(id={self.id}, name={self.name})"


def _agent():
    a = _state["agent"]
    if a is None:
        raise RuntimeError("RPC has not been initialized. Call torch.distributed.rpc.init_rpc "
                           "first.")
    return a


def init_rpc(name, backend=None, rank=-1, world_size=None, rpc_backend_options=None) -> None:
    """Start this worker's RPC agent; every rank of the MPI job calls it (collective).
    `rank`/`world_size`, when given, must agree with MPI's."""
    from ..distributed_c10d import ProcessGroup, _allgather_bytes, _mpi
    from .._work import install_fault_hooks
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"Worker name must match ^[A-Za-z0-9-_:]*$, but got {name!r}")
    opts = rpc_backend_options if rpc_backend_options is not None else \
        TensorPipeRpcBackendOptions()
    if not isinstance(opts, RpcBackendOptions):
        raise TypeError(f"rpc_backend_options must be an RpcBackendOptions, got "
                        f"{type(opts).__name__}")
    if not hasattr(opts, "num_worker_threads"):
        opts.num_worker_threads = 16
    MPI = _mpi()
    world = MPI.COMM_WORLD
    for what, given, actual in (("world_size", world_size, world.Get_size()),
                                ("rank", rank, world.Get_rank())):
        if given is not None and given != -1 and given != actual:
            raise ValueError(f"init_rpc: {what}={given} but the MPI job gives {actual} (ranks "
                             f"come from the launcher: mpiexec -n N)")
    with _init_lock:
        if _state["agent"] is not None:
            raise RuntimeError("RPC is already initialized")
        comm = world.Dup()
        size = comm.Get_size()
        timeout = timedelta(seconds=opts.rpc_timeout if opts.rpc_timeout > 0 else 1800)
        pg = ProcessGroup(comm, list(range(size)), timeout, "rpc")
        import numpy as np
        names = [bytes(b).decode("utf-8") for b in
                 _allgather_bytes(pg, np.frombuffer(name.encode("utf-8"), np.uint8), "init_rpc")]
        if len(set(names)) != len(names):
            comm.Free()
            dup = sorted({n for n in names if names.count(n) > 1})
            raise RuntimeError(f"init_rpc: worker names must be unique, got {dup} more than once")
        workers = [WorkerInfo(n, i) for i, n in enumerate(names)]
        try:
            reverse = _exchange_device_maps(pg, opts, names, name)
        except BaseException:
            comm.Free()
            raise
        a = _agent_mod.Agent(name, opts, comm.Get_rank(), size, comm, workers)
        maps = getattr(opts, "device_maps", {})
        a.locate_request = [_request_locate(maps.get(w.name, {}), w.name) for w in workers]
        a.locate_response = [_response_locate(reverse[w.id], w.name) for w in workers]
        _state["agent"] = a
        a.start()
    install_fault_hooks()


def get_worker_info(worker_name=None) -> WorkerInfo:
    """This worker's WorkerInfo, or the named worker's."""
    a = _agent()
    if worker_name is None:
        return a.workers[a.rank]
    return _worker(a, worker_name)


def _worker(a, to) -> WorkerInfo:
    if isinstance(to, WorkerInfo):
        if to.id >= len(a.workers) or a.workers[to.id] != to:
            raise RuntimeError(f"Unknown destination worker {to}")
        return to
    if isinstance(to, str):
        w = a.by_name.get(to)
        if w is None:
            raise RuntimeError(f"Unknown destination worker {to}")
        return w
    if isinstance(to, int) and not isinstance(to, bool) and 0 <= to < len(a.workers):
        return a.workers[to]
    raise RuntimeError(f"Unknown destination worker {to!r}")


def _timeout_s(a, timeout) -> float:
    if timeout is None or timeout == UNSET_RPC_TIMEOUT:
        return a.options.rpc_timeout
    return float(timeout.total_seconds() if isinstance(timeout, timedelta) else timeout)


def _display_name(func) -> str:
    # PyTorch's profiling key names Python functions by __qualname__
    return getattr(func, "__qualname__", None) or repr(func)


def _begin(mode: str, to, what: str):
    """(agent, destination, the call's name, profiler, its range) of a call; the range (None
    when not profiling) ends when the answer arrives."""
    a = _agent()
    dst = _worker(a, to)
    key = f"rpc_{mode}#{what}({a.name} -> {dst.name})"
    c = _profiling.collector[0]
    return a, dst, key, c, c.begin_async(key, "rpc") if c is not None else None


def _invoke(mode: str, to, envelope: dict, payload, what: str, timeout, hold=None) -> Future:
    """An asynchronous call ("async", "remote"): a Future of its answer (`hold` lives until
    it comes)."""
    a, dst, key, c, ev = _begin(mode, to, what)
    fut = a.request(dst.id, envelope, payload, key, _timeout_s(a, timeout), hold)
    if ev is not None:  # on whichever thread the answer arrives
        concurrent.futures.Future.add_done_callback(fut, lambda _: c.end(ev))
    return fut


def _invoke_sync(to, envelope: dict, payload, what: str, timeout):
    """A synchronous call: its answer's value (the caller receives it itself, agent.call)."""
    a, dst, key, c, ev = _begin("sync", to, what)
    try:
        return a.call(dst.id, envelope, payload, key, _timeout_s(a, timeout))
    finally:
        if ev is not None:
            c.end(ev)


def _call_payload(args, kwargs):
    return {"args": tuple(args or ()), "kwargs": dict(kwargs or {})}


def rpc_async(to, func, args=None, kwargs=None, timeout=UNSET_RPC_TIMEOUT) -> Future:
    """Run `func(*args, **kwargs)` on worker `to`; a Future of its value."""
    name = wire.qualified_name(func)
    return _invoke("async", to, {"op": "call", "fn": name}, _call_payload(args, kwargs),
                   _display_name(func), timeout)


def rpc_sync(to, func, args=None, kwargs=None, timeout=UNSET_RPC_TIMEOUT):
    """Run `func(*args, **kwargs)` on worker `to` and return its value."""
    name = wire.qualified_name(func)
    return _invoke_sync(to, {"op": "call", "fn": name}, _call_payload(args, kwargs),
                        _display_name(func), timeout)


def remote(to, func, args=None, kwargs=None, timeout=UNSET_RPC_TIMEOUT) -> "RRef":
    """Run `func(*args, **kwargs)` on worker `to`, which keeps the value; an RRef to it, at once
    (a failure shows when the value is used, or through `rref._get_future()`)."""
    name = wire.qualified_name(func)
    a = _agent()
    dst = _worker(a, to)
    rref = RRef._user(a, dst.id, a.new_rref_id())
    rref._created = _invoke("remote", dst, {"op": "remote", "fn": name, "rref": rref._id},
                            _call_payload(args, kwargs), _display_name(func), timeout)
    return rref


def shutdown(graceful: bool = True, timeout: float = 0) -> None:
    """Stop this worker's agent. `graceful`: first wait for this worker's calls in flight, then
    for every worker to get there (collective), so no worker stops while others call it."""
    a = _state["agent"]
    if a is None:
        raise RuntimeError("RPC has not been initialized. Call torch.distributed.rpc.init_rpc "
                           "first.")
    if graceful:
        from .._work import wait_requests
        while True:  # the calls in flight and the fork records made so far (a call's end
            pending = a.flush_forks(wait=True) + a.pending()  # may drop forks: again)
            if not pending:
                break
            for f in pending:
                try:
                    f.wait()
                except BaseException:  # noqa: BLE001 - its caller saw (or ignored) the error
                    pass
        limit = timeout or (a.options.rpc_timeout if a.options.rpc_timeout > 0 else 1800)
        wait_requests([a.comm.Ibarrier()], "rpc.shutdown", limit, a.rank)
        a.drain()  # every request this worker serves is answered
        wait_requests([a.comm.Ibarrier()], "rpc.shutdown", limit, a.rank)
    a.stop()
    _state["agent"] = None
    a.direct.Free()
    a.comm.Free()


@atexit.register
def _stop_at_exit():  # before mpi4py finalizes MPI (atexit runs in reverse order)
    a = _state["agent"]
    if a is not None:
        a.stop()
        _state["agent"] = None


# --- RRef -------------------------------------------------------------------------------------
class _Proxy:
    """`rref.rpc_sync()` / `rpc_async()` / `remote()`: attribute access gives a callable that
    runs the value's method on its owner."""

    def __init__(self, rref, mode: str, timeout):
        self._rref, self._mode, self._timeout = rref, mode, timeout

    def __getattr__(self, method: str):
        if method.startswith("__"):
            raise AttributeError(method)
        rref, mode, timeout = self._rref, self._mode, self._timeout

        def call(*args, **kwargs):
            a = _agent()
            env = {"op": "method", "rref": rref._id, "method": method}
            payload = _call_payload(args, kwargs)
            what = f"{method}"
            # (the call holds `rref` until its answer: its fork keeps the value it uses)
            if mode == "remote":
                out = RRef._user(a, rref._owner, a.new_rref_id())
                env.update(result_rref=out._id)
                out._created = _invoke("remote", rref._owner, env, payload, what, timeout,
                                       rref)
                return out
            if mode == "sync":
                return _invoke_sync(rref._owner, env, payload, what, timeout)
            return _invoke(mode, rref._owner, env, payload, what, timeout, rref)
        return call


class RRef:
    """`rpc.RRef`: a reference to a value owned by one worker. `RRef(value)` makes this worker
    the owner of `value`; `remote` returns RRefs owned by the callee."""

    # Each object is one fork of its RRef (`_fork`, agent.py "RRef lifetime"): made with the
    # object (`RRef(value)`, `remote`: its id is the RRef's) or when an RRef is sent (the
    # sender makes the receiver's fork, `__getstate__`), dropped by `__del__`.
    def __init__(self, value=None, type_hint=None):
        a = _agent()
        self._agent, self._owner, self._id, self._created = a, a.rank, a.new_rref_id(), None
        self._fork = self._id
        a.owned(self._id).set_result(value)
        a.create(self._id, self._fork)

    @classmethod
    def _user(cls, a, owner: int, rref_id: int) -> "RRef":
        """The caller's RRef of a `remote` call: its fork is the RRef's id (the owner counts
        it when it creates the value)."""
        r = cls.__new__(cls)
        r._agent, r._owner, r._id, r._fork, r._created = a, owner, rref_id, rref_id, None
        return r

    def __del__(self):
        # (the collector may run this on any thread, inside any lock: it only appends a
        # record, which the agent's prober sends)
        a = self.__dict__.get("_agent")
        if a is not None and a._running:
            a.drop_fork(self._owner, self._id, self._fork)

    # sent only inside RPC messages (as PyTorch: "RRef is not picklable outside RPC")
    def __getstate__(self):
        if not _agent_mod.encoding():
            raise RuntimeError("RRef can only be sent inside RPC arguments and results, not "
                               "saved or pickled")
        a = _agent()
        fork = a.new_fork(self._owner, self._id)  # the receiver's
        _agent_mod.encoded_fork(a, self._owner, self._id, fork)
        return {"_owner": self._owner, "_id": self._id, "_fork": fork}

    def __setstate__(self, state):
        owner, rid, fork = state.get("_owner"), state.get("_id"), state.get("_fork")
        a = _agent()
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                   for v in (owner, rid, fork)) or owner >= a.size or \
                rid >> 40 >= a.size or fork >> 40 >= a.size:
            raise RuntimeError(f"RPC: a malformed RRef in a message: {state!r}")
        self._owner, self._id, self._created = owner, rid, None
        if owner == a.rank:  # back on its owner: a fork of the owner's own, the sent one gone
            self._fork = a.new_fork(owner, rid)
            a.drop_fork(owner, rid, fork)
        else:
            self._fork = fork
        self._agent = a

    def is_owner(self) -> bool:
        return self._owner == _agent().rank

    def owner(self) -> WorkerInfo:
        return _agent().workers[self._owner]

    def owner_name(self) -> str:
        return self.owner().name

    def confirmed_by_owner(self) -> bool:
        return self._created is None or self._created.done()

    def _get_future(self) -> Future:
        """A Future completed once the owner created the value (PyTorch's private API)."""
        if self._created is not None:
            return self._created
        fut = Future()
        fut.set_result(None)
        return fut

    def local_value(self):
        """The value, on its owner."""
        if not self.is_owner():
            raise RuntimeError(f"Call it on owner. Current worker is {_agent().name}, but the "
                               f"owner of this RRef is {self.owner_name()}")
        return _agent().owned(self._id).result()

    def to_here(self, timeout=UNSET_RPC_TIMEOUT):
        """A copy of the value (the value itself on its owner)."""
        if self.is_owner():
            return self.local_value()
        return _invoke_sync(self._owner, {"op": "fetch", "rref": self._id}, None, "to_here",
                            timeout)

    def rpc_sync(self, timeout=UNSET_RPC_TIMEOUT) -> _Proxy:
        return _Proxy(self, "sync", timeout)

    def rpc_async(self, timeout=UNSET_RPC_TIMEOUT) -> _Proxy:
        return _Proxy(self, "async", timeout)

    def remote(self, timeout=UNSET_RPC_TIMEOUT) -> _Proxy:
        return _Proxy(self, "remote", timeout)

    def __repr__(self):
        kind = "OwnerRRef" if _state["agent"] is not None and self.is_owner() else "UserRRef"
        return f"{kind}(RRefId = {self._owner}:{self._id & ((1 << 40) - 1)})"


# --- serving (agent._OPS) ---------------------------------------------------------------------
def _args(payload):
    if type(payload) is not dict:
        raise RuntimeError("RPC: malformed call arguments")
    args, kwargs = payload.get("args"), payload.get("kwargs")
    if type(args) is not tuple or type(kwargs) is not dict or \
            (kwargs and not all(type(k) is str for k in kwargs)):
        raise RuntimeError("RPC: malformed call arguments")
    return args, kwargs


def _run(func, payload):
    args, kwargs = _args(payload)
    result = func(*args, **kwargs)
    if getattr(func, "_wrapped_async_rpc_function", None) is not None and \
            not isinstance(result, Future):
        raise TypeError(f"{func.__qualname__} is decorated with @rpc.functions.async_execution "
                        f"and must return a jitorch.futures.Future, got {type(result).__name__}")
    return result


def _serve_call(agent, src, env, payload):
    return _run(wire.resolve(env.get("fn")), payload)


def _rref_id(env, key="rref") -> int:
    rid = env.get(key)
    if not isinstance(rid, int) or isinstance(rid, bool) or rid < 0:
        raise RuntimeError("RPC: malformed RRef id in the request")
    return rid


def _store(agent, src: int, rref_id: int, compute) -> Future:
    """Create the value of RRef `rref_id` for a `remote` of worker `src`: fill the owner's
    slot with `compute()` (a value or a Future), the caller's fork (whose id is the RRef's,
    made by the caller) its first; a Future completed (with None) when it is filled, the
    answer to the creating call."""
    if rref_id >> 40 != src:
        raise RuntimeError(f"RPC: {agent.workers[src]} asks to create RRef {rref_id}, an id it "
                           f"did not make")
    slot = agent.owned(rref_id)
    agent.create(rref_id, rref_id)  # (after the slot: a drop that came first frees it now)
    done = agent.new_future()

    def fill(value=None, error=None):
        if error is not None:
            if not slot.done():
                slot.set_exception(error)
            done.set_exception(error)
        else:
            if not slot.done():
                slot.set_result(value)
            done.set_result(None)
    try:
        value = compute()
    except BaseException as e:  # noqa: BLE001 - kept in the slot and answered
        fill(error=e)
        return done
    if isinstance(value, Future):
        def settle(f):
            try:
                fill(f.result())
            except BaseException as e:  # noqa: BLE001
                fill(error=e)
        value.add_done_callback(settle)
    else:
        fill(value)
    return done


def _serve_remote(agent, src, env, payload):
    func = wire.resolve(env.get("fn"))
    return _store(agent, src, _rref_id(env), lambda: _run(func, payload))


def _serve_fetch(agent, src, env, payload):
    return agent.owned(_rref_id(env))


def _serve_method(agent, src, env, payload):
    method = env.get("method")
    if not isinstance(method, str) or not method.isidentifier() or method.startswith("__"):
        raise RuntimeError(f"RPC refused to call method {method!r} (not a plain method name)")
    slot = agent.owned(_rref_id(env))
    args, kwargs = _args(payload)

    def call():
        fn = getattr(slot.result(), method)
        if not callable(fn):
            raise TypeError(f"{method} of the RRef's {type(slot.result()).__name__} is not "
                            f"callable")
        return fn(*args, **kwargs)
    if slot.done():
        if "result_rref" in env:
            return _store(agent, src, _rref_id(env, "result_rref"), call)
        return call()
    out = agent.new_future()  # the value is still being created: call once it is
    slot.add_done_callback(lambda _: _settle(out, call))
    if "result_rref" in env:
        return _store(agent, src, _rref_id(env, "result_rref"), lambda: out)
    return out


def _settle(fut, fn):
    try:
        fut.set_result(fn())
    except BaseException as e:  # noqa: BLE001
        fut.set_exception(e)
