"""The RPC agent: one per process, on MPI (`init_rpc` makes it, `shutdown` ends it).

Owns the transport and the dispatch of `jitorch.distributed.rpc`:
  * a communicator of its own (`COMM_WORLD.Dup()`: RPC traffic never matches a collective's or
    the user's messages), requests on tag 1, answers on tag 2, each one whole message
    (wire.py);
  * the service thread: it polls `Improbe` (MPI has no blocking wait that does not spin a core,
    so it polls: without sleeping for `_HOT_S` after the last message, then with sleeps growing
    to `_MAX_SLEEP_S`), receives each message with `Mrecv`, hands requests to the
    pool, completes the futures of answers, tests the sends in flight and fails calls past
    their deadline. It never runs user code;
  * the pool (`num_worker_threads` threads) that serves requests: decode, run the operation,
    send the answer. A scripted callee runs its compiled program without the GIL, so the pool
    serves many callers at once; a function that returns a Future (`@async_execution`) frees
    its thread and is answered when the future completes;
  * the operations a request may ask for: one table, `_OPS`, of jitorch's own handlers (a call
    of a named function, an RRef's creation, fetch and method call, distributed backward, ...).
    A request naming anything else is refused;
  * the calls in flight: their futures (callbacks run on the pool), their deadlines (a call
    past its `timeout` fails with RuntimeError naming it; its late answer is dropped), and the
    values of the RRefs this worker owns.
"""
from __future__ import annotations

import builtins
import concurrent.futures
import importlib
import itertools
import sys
import threading
import time
import traceback

import numpy as np

from ... import _fork
from ...futures import Future
from . import wire

TAG_REQUEST, TAG_RESPONSE = 1, 2
_HOT_S = 0.005  # poll without sleeping this long after the last message (calls come in runs)
_MIN_SLEEP_S = 1e-5  # then sleep, from this (the kernel makes it ~60 us) ...
_MAX_SLEEP_S = 1e-3  # ... to this: the most latency an idle worker adds to a call

# operation -> (module, handler): handler(agent, src, envelope, payload) -> value or Future
_OPS = {
    "call": ("jitorch.distributed.rpc.api", "_serve_call"),
    "remote": ("jitorch.distributed.rpc.api", "_serve_remote"),
    "fetch": ("jitorch.distributed.rpc.api", "_serve_fetch"),
    "method": ("jitorch.distributed.rpc.api", "_serve_method"),
    "autograd_backward": ("jitorch.distributed.autograd", "_serve_backward"),
    "autograd_release": ("jitorch.distributed.autograd", "_serve_release"),
    "optim_create": ("jitorch.distributed.optim", "_serve_create"),
    "optim_step": ("jitorch.distributed.optim", "_serve_step"),
}


class _Call:
    __slots__ = ("future", "what", "deadline", "timeout", "cid")

    def __init__(self, future, what, deadline, timeout, cid):
        self.future, self.what, self.deadline, self.timeout, self.cid = \
            future, what, deadline, timeout, cid


class Agent:
    def __init__(self, name: str, options, rank: int, size: int, comm, workers: list):
        from mpi4py import MPI
        self.MPI = MPI
        self.name, self.options, self.rank, self.size = name, options, rank, size
        self.comm = comm
        self.workers = workers
        self.by_name = {w.name: w for w in workers}
        self.pool = concurrent.futures.ThreadPoolExecutor(options.num_worker_threads,
                                                          thread_name_prefix="rpc")
        self._lock = _fork.lock()
        self._ids = itertools.count(1)
        self._calls: dict[int, _Call] = {}
        self._sends: list = []  # (request, buffer) in flight
        self._owned: dict[int, Future] = {}  # RRef id -> its value (a Future: may be pending)
        self._rref_ids = itertools.count(1)
        self._active = time.perf_counter()
        self._running = True
        self._thread = threading.Thread(target=self._service, name="rpc-service", daemon=True)
        self._thread.start()

    # -- sending -------------------------------------------------------------------------------
    def _post(self, dst: int, buf: np.ndarray, tag: int) -> None:
        req = self.comm.Isend([buf, self.MPI.BYTE], dst, tag)
        with self._lock:
            self._sends.append((req, buf))  # keeps the buffer alive until the send completes
        self._active = time.perf_counter()

    def new_future(self) -> Future:
        fut = Future()
        fut._executor = self.pool
        return fut

    def request(self, dst: int, envelope: dict, payload, what: str, timeout: float) -> Future:
        """Send a request; its Future completes with the answer's value (or error).
        `timeout` in seconds, 0 for none."""
        from .. import autograd as dist_autograd
        cid = dist_autograd._current_id()
        envelope = dict(envelope, cid=cid)
        manifest, storages, tensors = encode(payload)
        if cid is not None:
            envelope["grads"] = dist_autograd._outgoing(cid, dst, tensors)
        manifest["rpc"] = envelope
        return self.send_message(dst, lambda call_id: wire.pack(call_id, manifest, storages),
                                 what, timeout, cid)

    def send_message(self, dst: int, make, what: str, timeout: float, cid=None) -> Future:
        """Register a call and send `make(call_id)` (the message's bytes) to `dst`."""
        fut = self.new_future()
        call_id = next(self._ids)
        deadline = time.perf_counter() + timeout if timeout and timeout > 0 else None
        with self._lock:
            self._calls[call_id] = _Call(fut, what, deadline, timeout, cid)
        try:
            self._post(dst, make(call_id), TAG_REQUEST)
        except BaseException:
            with self._lock:
                self._calls.pop(call_id, None)
            raise
        return fut

    def pending(self) -> list:
        with self._lock:
            return [c.future for c in self._calls.values()]

    # -- the service thread --------------------------------------------------------------------
    def _service(self) -> None:
        MPI = self.MPI
        status = MPI.Status()
        sleep = 0.0
        next_check = 0.0
        try:
            while self._running:
                msg = self.comm.Improbe(MPI.ANY_SOURCE, MPI.ANY_TAG, status)
                now = time.perf_counter()
                if msg is not None:
                    buf = np.empty(status.Get_count(MPI.BYTE), np.uint8)
                    msg.Recv([buf, MPI.BYTE])  # MPI_Mrecv
                    src, tag = status.Get_source(), status.Get_tag()
                    if tag == TAG_REQUEST:
                        self._submit(src, buf)
                    elif tag == TAG_RESPONSE:
                        self._answer(src, buf)
                    self._active = now
                    sleep = 0.0
                    continue
                if self._sends:
                    with self._lock:
                        self._sends = [(r, b) for r, b in self._sends if not r.Test()]
                if now >= next_check:
                    self._expire(now)
                    next_check = now + 1e-3
                # right after a message the next one comes soon (a caller's next call, the
                # answer to a nested call): yield (sleep(0) releases the GIL) rather than sleep,
                # which on a busy machine waits for a time slice (2-core box at load 12: 2.3 ms
                # round trips sleeping, 1.2 ms yielding)
                if now - self._active < _HOT_S:
                    time.sleep(0)
                else:
                    sleep = min(_MAX_SLEEP_S, max(_MIN_SLEEP_S, sleep * 2))
                    time.sleep(sleep)
        except BaseException:  # noqa: BLE001 - a dead service thread would hang every peer
            traceback.print_exc()
            from .._work import abort_job
            sys.stderr.write(f"jitorch.distributed.rpc: the service thread of {self.name} "
                             f"failed; aborting the job\n")
            abort_job(1)

    def _submit(self, src: int, buf: np.ndarray) -> None:
        try:
            self.pool.submit(self._serve, src, buf)
        except RuntimeError:  # the pool is shut down: a request after this worker's shutdown
            call_id = wire.call_id_of(buf)
            if call_id is not None:
                self._respond_error(src, call_id, RuntimeError(
                    f"RPC: worker {self.name} is shutting down and serves no more calls"))

    def _expire(self, now: float) -> None:
        with self._lock:
            late = [(i, c) for i, c in self._calls.items()
                    if c.deadline is not None and now >= c.deadline]
            for i, _ in late:
                del self._calls[i]
        for _, c in late:
            c.future.set_exception(RuntimeError(
                f"RPC ran for more than set timeout ({int(c.timeout * 1000)} ms) and will now be "
                f"marked with an error: {c.what}"))

    def _answer(self, src: int, buf: np.ndarray) -> None:
        call_id = wire.call_id_of(buf)
        with self._lock:
            call = self._calls.pop(call_id, None)
        if call is None:  # timed out already (or not ours): dropped
            return
        try:
            _, manifest, buffers = wire.unpack(buf)
            env = manifest["rpc"]
            if env.get("ok") is not True:
                raise remote_error(env.get("error"), self.workers[src])
            value, tensors = decode(manifest, buffers, f"the answer from {self.workers[src]}")
            if call.cid is not None and env.get("grads"):
                from .. import autograd as dist_autograd
                dist_autograd._incoming(call.cid, src, env["grads"], tensors)
        except BaseException as e:  # noqa: BLE001 - the caller's future carries it
            call.future.set_exception(e)
            return
        call.future.set_result(value)

    # -- serving -------------------------------------------------------------------------------
    def _serve(self, src: int, buf: np.ndarray) -> None:
        call_id = wire.call_id_of(buf)
        cid = None
        try:
            try:
                _, manifest, buffers = wire.unpack(buf)
            except wire.MessageError as e:
                raise RuntimeError(f"RPC: the request from {self.workers[src]} is not a valid "
                                   f"message: {e}") from None
            env = manifest["rpc"]
            op = _OPS.get(env.get("op"))
            if op is None:
                raise RuntimeError(f"RPC: the request from {self.workers[src]} asks for "
                                   f"operation {env.get('op')!r}, which does not exist")
            cid = env.get("cid")
            from .. import autograd as dist_autograd
            if cid is not None and not isinstance(cid, int):
                raise RuntimeError("RPC: bad autograd context id in the request")
            payload, tensors = decode(manifest, buffers, f"the request from {self.workers[src]}")
            if cid is not None and env.get("grads"):
                dist_autograd._incoming(cid, src, env["grads"], tensors)
            handler = getattr(importlib.import_module(op[0]), op[1])
            with dist_autograd._entered(cid):
                result = handler(self, src, env, payload)
        except BaseException as e:  # noqa: BLE001 - answered to the caller
            if call_id is not None:
                self._respond_error(src, call_id, e)
            return
        if isinstance(result, Future):
            result.add_done_callback(lambda f: self._respond(src, call_id, f, cid))
        else:
            self._respond_value(src, call_id, result, cid)

    def _respond(self, src: int, call_id: int, fut, cid) -> None:
        try:
            value = fut.result()
        except BaseException as e:  # noqa: BLE001
            self._respond_error(src, call_id, e)
            return
        self._respond_value(src, call_id, value, cid)

    def _respond_value(self, src: int, call_id: int, value, cid) -> None:
        try:
            manifest, storages, tensors = encode(value)
            env = {"ok": True}
            if cid is not None:
                from .. import autograd as dist_autograd
                with dist_autograd._entered(cid):
                    env["grads"] = dist_autograd._outgoing(cid, src, tensors)
            manifest["rpc"] = env
            buf = wire.pack(call_id, manifest, storages)
        except BaseException as e:  # noqa: BLE001 - e.g. a result that cannot be sent
            self._respond_error(src, call_id, e)
            return
        self._post(src, buf, TAG_RESPONSE)

    def _respond_error(self, src: int, call_id: int, e: BaseException) -> None:
        tb = "".join(traceback.format_exception(type(e), e, e.__traceback__))
        manifest = {"format": wire.FORMAT, "version": wire.VERSION, "storages": [],
                    "object": None, "rpc": {"ok": False, "error": {
                        "type": type(e).__name__, "message": str(e), "traceback": tb}}}
        self._post(src, wire.pack(call_id, manifest, []), TAG_RESPONSE)

    # -- owned RRef values ---------------------------------------------------------------------
    def new_rref_id(self) -> int:
        return (self.rank << 40) | next(self._rref_ids)

    def owned(self, rref_id: int) -> Future:
        """The value slot of an RRef this worker owns (made pending if its creation has not
        arrived yet: a fetch may overtake the `remote` that creates it)."""
        with self._lock:
            fut = self._owned.get(rref_id)
            if fut is None:
                fut = self._owned[rref_id] = self.new_future()
            return fut

    # -- ending ------------------------------------------------------------------------------
    def stop(self) -> None:
        self._running = False
        if self._thread is not threading.current_thread():
            self._thread.join()
        self.pool.shutdown(wait=False, cancel_futures=True)


# --- payloads ---------------------------------------------------------------------------------
_encoding = threading.local()  # set while a message is encoded: RRefs may be pickled only then


def encode(obj):
    """(manifest, storages, tensors requiring grad as (node id, tensor)) of a payload."""
    from ...serialization import to_manifest
    _encoding.active = True
    try:
        manifest, storages, enc = to_manifest(obj, wire.FORMAT, wire.VERSION)
    finally:
        _encoding.active = False
    if enc.arrays:
        raise TypeError("RPC arguments and results carry tensors, not NumPy arrays: convert "
                        "them with jitorch.from_numpy")
    return manifest, [a for _, a in storages], \
        [(node["id"], t) for t, node in enc.tensors if t._requires_grad]


def encoding() -> bool:
    return getattr(_encoding, "active", False)


_PROTOCOL_CLASSES: dict = {}  # path -> class: what a message may hold beyond the user's list


def decode(manifest, buffers, source: str):
    from ...serialization import load_message
    if not _PROTOCOL_CLASSES:
        from .api import RRef, WorkerInfo
        _PROTOCOL_CLASSES.update({f"{c.__module__}.{c.__qualname__}": c
                                  for c in (RRef, WorkerInfo)})
    return load_message(manifest, buffers, source=source, what="RPC", format_name=wire.FORMAT,
                        max_version=wire.VERSION, extra_globals=_PROTOCOL_CLASSES)


_BUILTIN_ERRORS = {n: c for n, c in vars(builtins).items()
                   if isinstance(c, type) and issubclass(c, Exception)}


def remote_error(err, worker) -> BaseException:
    """The exception a failed call raises on the caller: the callee's type when it is a
    built-in exception (else RuntimeError), its message, and the callee's traceback."""
    if not isinstance(err, dict):
        return RuntimeError(f"RPC: a malformed error answer from {worker}")
    cls = _BUILTIN_ERRORS.get(err.get("type"), RuntimeError)
    msg = str(err.get("message"))
    if cls is RuntimeError and err.get("type") != "RuntimeError":
        msg = f"{err.get('type')}: {msg}"
    text = f"{msg}\n\nOn {worker}:\n{err.get('traceback', '')}"
    try:
        return cls(text)
    except TypeError:  # a built-in error that takes other arguments (UnicodeDecodeError)
        return RuntimeError(f"{err.get('type')}: {text}")
