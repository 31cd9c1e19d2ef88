"""The RPC agent: one per process, on MPI (`init_rpc` makes it, `shutdown` ends it).

Owns the transport and the dispatch of `jitorch.distributed.rpc`:
  * communicators of its own (`COMM_WORLD.Dup()`: RPC traffic never matches a collective's or
    the user's messages): `comm` with requests on tag 1, answers on tag 2 and RRef fork
    records on tag 3, and `direct` with the answers of synchronous calls, each on the tag its
    request asked for (below), so the thread that waits for one receives it and no other
    thread's probe can take it; each message is one whole message (wire.py);
  * the serving threads (`num_worker_threads`), leader and followers: one of them at a time,
    the prober, probes MPI (`Improbe`; MPI has no blocking wait that does not spin a core, so
    it polls: spinning for `_SPIN_S` after the last message, as a blocking MPI receive spins,
    then pausing now and then up to `_HOT_S`, then with sleeps growing to `_MAX_SLEEP_S`;
    `_Backoff`), receives each message with `Mrecv`,
    completes the futures of answers, tests the sends in flight and fails calls past their
    deadline. A request it serves itself: decode, run the operation, send the answer, with no
    thread handoff on the way, then it probes on. If that takes over `_TAKEOVER_S` (a slow
    callee, one that waits for a call back to this worker), the standby follower takes the
    lead; while other requests are being served the lead goes to a follower at once, so a
    load of calls is served in parallel. A scripted callee runs its compiled program without
    the GIL, so the threads serve many callers at once; a function that returns a Future
    (`@async_execution`) frees its thread and is answered when the future completes;
  * the pool (`num_worker_threads` threads, made as needed) that runs futures' callbacks, the
    answers of `@async_execution` functions and requests that come when no serving thread is
    free to take the lead;
  * synchronous calls (`rpc_sync`, `to_here`, `rref.rpc_sync()`: `call`) ask for their answer
    on a tag of their own (`_DIRECT_TAG` + call id), and the waiting thread receives it itself
    (`_wait_direct`) and returns its value: no thread wakes another and no Future is made on a
    call's way; a late answer of one that timed out is received and dropped by the prober;
  * the operations a request may ask for: one table, `_OPS`, of jitorch's own handlers (a call
    of a named function, an RRef's creation, fetch and method call, distributed backward, ...).
    A request naming anything else is refused;
  * the calls in flight: the futures of asynchronous ones (callbacks run on the pool), their
    deadlines (a call past its `timeout` fails with RuntimeError naming it; its late answer is
    dropped), and the values of the RRefs this worker owns;
  * the lifetime of those values (PyTorch's Remote Reference Protocol, "RRef lifetime" below):
    every RRef object on any worker is one fork of its RRef id; the owner keeps the value while
    a fork is alive. Forks are announced ("A") and dropped ("D") in batches, the records of
    one worker to one owner in the order they were made, on a tag of their own
    (`TAG_FORKS`), and the prober applies them when it receives them, so they keep that order.
"""
from __future__ import annotations

import builtins
import collections
import concurrent.futures
import importlib
import itertools
import os
import sys
import threading
import time
import traceback

import numpy as np

from ... import _fork
from ...futures import Future
from . import wire

TAG_REQUEST, TAG_RESPONSE, TAG_FORKS = 1, 2, 3
_DIRECT_TAG = 16  # answers to synchronous calls: this + call id (mod the tag range)
_SPIN_S = 1e-3  # poll this long after the last message (calls come in runs), yielding the
_SPIN_YIELD_EVERY = 16  # core every this many polls; ...
_HOT_S = 0.005  # ... then, up to this, pause every _YIELD_EVERY polls to let other threads run
_MIN_SLEEP_S = 1e-5  # then sleep, from this (the kernel makes it ~60 us) ...
_MAX_SLEEP_S = 1e-3  # ... to this: the most latency an idle worker adds to a call
_YIELD_EVERY = 64
_TAKEOVER_S = 2e-3  # a prober serving a request longer than this hands over the lead

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
_HANDLERS: dict = {}  # op -> its handler, imported on first use


class _Call:
    __slots__ = ("future", "what", "deadline", "timeout", "cid", "dst", "tag", "hold")

    def __init__(self, future, what, deadline, timeout, cid, dst, tag, hold=None):
        self.future, self.what, self.deadline, self.timeout, self.cid = \
            future, what, deadline, timeout, cid
        # future: None for a synchronous call (its caller waits for the answer itself);
        # tag: the answer's own tag (a synchronous call) or None; hold: what must live until
        # the answer comes (the RRef whose value the call uses: its fork keeps the value)
        self.dst, self.tag, self.hold = dst, tag, hold


_yield_core = getattr(os, "sched_yield", None) or (lambda: time.sleep(0))  # (Windows: Sleep(0))


class _Backoff:
    """How a poller waits between probes that found nothing: it spins while traffic is recent
    (`hot`), then sleeps longer and longer."""
    __slots__ = ("active", "sleep", "polls")

    def __init__(self):
        self.active, self.sleep, self.polls = time.perf_counter(), 0.0, 0

    def wait(self, now: float, hot: bool = True) -> None:
        # right after a message the next one comes soon (a caller's next call, the answer to a
        # nested call): probe again at once, as a blocking MPI receive spins. Not sleep(0):
        # it is no yield but a sleep of the kernel's timer slack (50 us) and more on a busy
        # machine (2-core box at load 7: 70 us median; taken every 64 polls it kept a prober
        # asleep 80% of the time and added ~40 us to each way of a round trip). Yielding the
        # core (sched_yield, ~1 us when no other thread waits for it) every 16 polls: two
        # ranks spinning on one core (a loaded machine puts them there) otherwise answer each
        # other once per time slice (2 ms round trips pinned to one core; 0.2-0.6 ms
        # yielding). Each probe releases the GIL, so another thread of the process gets it
        # within the switch interval (5 ms) at worst; past _SPIN_S the poller pauses now and
        # then so that a thread working beside it is not slowed for long.
        elapsed = now - self.active
        if hot and elapsed < _HOT_S:
            self.polls += 1
            if elapsed < _SPIN_S:
                if self.polls % _SPIN_YIELD_EVERY == 0:
                    _yield_core()
            elif self.polls % _YIELD_EVERY == 0:
                time.sleep(0)
        else:
            self.sleep = min(_MAX_SLEEP_S, max(_MIN_SLEEP_S, self.sleep * 2))
            time.sleep(self.sleep)

    def hit(self, now: float) -> None:
        self.active, self.sleep = now, 0.0


class Agent:
    def __init__(self, name: str, options, rank: int, size: int, comm, workers: list):
        from mpi4py import MPI
        self.MPI = MPI
        self.name, self.options, self.rank, self.size = name, options, rank, size
        # per worker: where CUDA tensors of a request to it / an answer to it arrive (the
        # device maps; init_rpc sets them, api._request_locate), None: where they are
        self.locate_request = self.locate_response = [None] * size
        self.comm = comm
        self.direct = comm.Dup()  # collective: every rank makes its agent in init_rpc
        self.workers = workers
        self.by_name = {w.name: w for w in workers}
        self.pool = concurrent.futures.ThreadPoolExecutor(options.num_worker_threads,
                                                          thread_name_prefix="rpc")
        self._lock = _fork.lock()
        self._ids = itertools.count(1)
        self._tag_range = comm.Get_attr(MPI.TAG_UB) - _DIRECT_TAG
        self._calls: dict[int, _Call] = {}
        self._sends: list = []  # (request, buffer) in flight
        self._abandoned: set = set()  # (source, tag) of direct answers no one waits for now
        self._owned: dict[int, Future] = {}  # RRef id -> its value (a Future: may be pending)
        self._forks: dict[int, _Forks] = {}  # RRef id -> the forks that keep its value
        # (owner, op, RRef id, fork id) records to send, in order: RRef.__del__ appends here
        # (deque.append takes no lock the collector could hold) and the prober sends them
        self._fork_records: collections.deque = collections.deque()
        self._flushing = _fork.lock()  # one thread at a time sends the records (in order)
        self._rref_ids = itertools.count(1)
        self._backoff = _Backoff()  # the prober's
        self._cv = _fork.condition()  # guards the lead: _prober, _standby, _inline_since
        self._prober = None  # the serving thread that leads (probes MPI), by thread id
        self._standby = None  # the follower that takes the lead from a prober serving long
        self._inline_since = None  # when the prober began serving a request itself
        self._serving = 0  # requests being served (by serving threads or the pool)
        self._followers = 0  # serving threads waiting for the lead
        self._accepting = True  # False once shutdown drained this worker: requests refused
        self._running = True
        self._threads = [threading.Thread(target=self._serving_thread, name=f"rpc-serve-{i}",
                                          daemon=True)
                         for i in range(options.num_worker_threads)]

    def start(self) -> None:
        """Start serving (once init_rpc made this the worker's agent: a callee may ask for it
        at once)."""
        for t in self._threads:
            t.start()

    # -- sending -------------------------------------------------------------------------------
    def _post(self, dst: int, buf, tag: int) -> None:
        if not self._running:  # stopped: its communicators are (being) freed
            return
        comm = self.direct if tag >= _DIRECT_TAG else self.comm
        req = comm.Isend([buf, self.MPI.BYTE], dst, tag)
        if not req.Test():  # a small message is sent at once (eager): nothing left to watch
            with self._lock:
                self._sends.append((req, buf))  # keeps the buffer alive until the send completes

    def new_future(self) -> Future:
        fut = Future()
        fut._executor = self.pool
        return fut

    def _message(self, dst: int, envelope: dict, payload):
        """(manifest, storages, autograd context id) of a request."""
        autograd = _autograd()
        cid = autograd._current_id()
        envelope = dict(envelope, cid=cid)
        manifest, storages = encode_compact(payload)
        if manifest is None:
            manifest, storages, tensors = encode(payload, self.locate_request[dst])
            if cid is not None:
                envelope["grads"] = autograd._outgoing(cid, dst, tensors)
        manifest["rpc"] = envelope
        return manifest, storages, cid

    @staticmethod
    def _binary_call(call_id: int, envelope: dict, payload, reply: int):
        """The bytes of a request in wire.py's binary form (a call of a function with
        positional arguments it carries; the caller checks it is outside distributed
        autograd), or None."""
        if envelope.get("op") != "call" or len(envelope) != 2 or type(payload) is not dict or \
                payload["kwargs"]:
            return None
        try:
            return wire.pack_call(call_id, envelope["fn"], reply, payload["args"])
        except wire.NotCompact:
            return None

    def request(self, dst: int, envelope: dict, payload, what: str, timeout: float,
                hold=None) -> Future:
        """Send a request; its Future completes with the answer's value (or error), which the
        prober receives. `timeout` in seconds, 0 for none; `hold` lives until the answer."""
        cid = _autograd()._current_id()

        def make(call_id):
            buf = self._binary_call(call_id, envelope, payload, 0) if cid is None else None
            if buf is None:
                manifest, storages, _ = self._message(dst, envelope, payload)
                buf = wire.pack(call_id, manifest, storages)
            return buf
        return self.send_message(dst, make, what, timeout, cid, hold=hold)

    def send_message(self, dst: int, make, what: str, timeout: float, cid=None,
                     tag: int = TAG_REQUEST, hold=None) -> Future:
        """Register a call and send `make(call_id)` (the message's bytes) to `dst` on `tag`."""
        call_id = next(self._ids)
        fut = self.new_future()
        call = _Call(fut, what, _deadline(timeout), timeout, cid, dst, None, hold)
        with self._lock:
            self._calls[call_id] = call
        try:
            self._post(dst, make(call_id), tag)
            # its answer comes to the prober: keep it probing hot
            self._backoff.hit(time.perf_counter())
        except BaseException:
            with self._lock:
                self._calls.pop(call_id, None)
            raise
        return fut

    def call(self, dst: int, envelope: dict, payload, what: str, timeout: float):
        """A synchronous call (`rpc_sync`, `to_here`, `rref.rpc_sync()`): send a request and
        wait for its answer; its value, or its error raised. The answer comes on a tag of this
        call's own and this thread receives it itself: no other thread wakes and no Future is
        made on the way (a Future costs ~10 us of locks and notifications a call). A second
        thread spinning in this process would make each wait for the GIL, up to the 5 ms
        switch interval: the prober is not kept hot for it."""
        call_id = next(self._ids)
        tag = _DIRECT_TAG + call_id % self._tag_range
        cid = _autograd()._current_id()
        buf = self._binary_call(call_id, envelope, payload, tag) if cid is None else None
        if buf is None:
            manifest, storages, cid = self._message(dst, envelope, payload)
            manifest["rpc"]["reply"] = tag
            buf = wire.pack(call_id, manifest, storages)
        call = _Call(None, what, _deadline(timeout), timeout, cid, dst, tag)
        with self._lock:
            self._calls[call_id] = call
        try:
            self._post(dst, buf, TAG_REQUEST)
            return self._wait_direct(call_id, call)
        finally:
            with self._lock:
                self._calls.pop(call_id, None)

    def pending(self) -> list:
        """Futures of the calls in flight (a synchronous call's completes when it returns)."""
        with self._lock:
            calls = list(self._calls.items())
        return [c.future if c.future is not None else self._returned(i) for i, c in calls]

    def _returned(self, call_id: int) -> Future:
        def drive():
            while call_id in self._calls:
                time.sleep(1e-3)
            fut.set_result(None)
        fut = Future._driven(drive, None)
        return fut

    # -- receiving -----------------------------------------------------------------------------
    def _recv(self, msg, status) -> np.ndarray:
        buf = np.empty(status.Get_count(self.MPI.BYTE), np.uint8)
        msg.Recv([buf, self.MPI.BYTE])  # MPI_Mrecv
        return buf

    def _wait_direct(self, call_id: int, call: _Call):
        """Receive the answer of synchronous call `call_id` on this (the waiting) thread: its
        value, or its error raised."""
        status = self.MPI.Status()
        improbe = self.direct.Improbe
        dst, tag, deadline = call.dst, call.tag, call.deadline
        backoff = _Backoff()
        while True:
            msg = improbe(dst, tag, status)
            if msg is not None:
                buf = self._recv(msg, status)
                if wire.call_id_of(buf) == call_id:  # else a late answer of an earlier use
                    return self._value(dst, buf, call)
                continue
            now = time.perf_counter()
            if deadline is not None and now >= deadline:
                error = _timed_out(call)
            elif not self._running:
                error = RuntimeError(f"RPC: the agent of {self.name} stopped while {call.what} "
                                     f"waited for its answer")
            else:
                backoff.wait(now)
                continue
            with self._lock:  # its answer, if it comes, is dropped
                self._abandoned.add((dst, tag))
            raise error

    # -- the serving threads ---------------------------------------------------------------
    def _serving_thread(self) -> None:
        me = threading.get_ident()
        cv = self._cv
        try:
            while True:
                with cv:  # a follower: wait for the lead
                    self._followers += 1
                    while self._running and self._prober is not None:
                        if self._standby in (None, me):
                            self._standby = me  # the one follower that watches the prober
                            cv.wait(_TAKEOVER_S)
                            since = self._inline_since
                            if since is not None and time.perf_counter() - since >= _TAKEOVER_S:
                                self._prober = None  # it serves on: take its lead
                        else:
                            cv.wait()
                    self._followers -= 1
                    if not self._running:
                        return
                    if self._standby == me:
                        self._standby = None
                        cv.notify()  # another follower becomes the standby
                    self._prober, self._inline_since = me, None
                while self._serve_next(me):
                    pass
        except BaseException:  # noqa: BLE001 - a dead service thread would hang every peer
            traceback.print_exc()
            from .._work import abort_job
            sys.stderr.write(f"jitorch.distributed.rpc: a serving thread of {self.name} "
                             f"failed; aborting the job\n")
            abort_job(1)

    def _serve_next(self, me) -> bool:
        """Lead until a request comes and serve it; whether this thread still leads after.
        While other requests are being served, the lead goes to a follower at once (a load of
        calls is served in parallel); else this thread serves the request keeping the lead (no
        thread wakes on a call's way) and the standby takes the lead if serving runs past
        `_TAKEOVER_S` (a slow callee, or one that waits for a call back to this worker). With
        no follower (every other thread serves), the pool serves it and this thread probes on:
        someone always receives the answers the callees wait for."""
        src, buf = self._lead_until_request()
        if buf is None:
            return False
        cv = self._cv
        with cv:
            if not self._followers:  # no thread could take the lead: the pool serves it
                try:
                    self.pool.submit(self._serve_pooled, src, buf)
                    self._serving += 1  # (counted: the prober does not spin beside it)
                except RuntimeError:  # shut down: this worker is stopping
                    self._refuse(src, buf)
                return True
            self._serving += 1
            if self._serving > 1:
                self._prober = None
                cv.notify()
            else:
                self._inline_since = time.perf_counter()
        try:
            self._serve(src, buf)
        finally:
            with cv:
                self._serving -= 1
                still = self._prober == me
                if still:
                    self._inline_since = None
        return still

    def _serve_pooled(self, src: int, buf: np.ndarray) -> None:
        try:
            self._serve(src, buf)
        finally:
            with self._cv:
                self._serving -= 1

    def _lead_until_request(self):
        """Probe until a request comes that this thread should serve: (source, bytes);
        (None, None) when the agent stops."""
        MPI = self.MPI
        status = MPI.Status()
        next_check = 0.0
        backoff = self._backoff
        while self._running:
            msg = self.comm.Improbe(MPI.ANY_SOURCE, MPI.ANY_TAG, status)
            now = time.perf_counter()
            if msg is not None:
                src, tag = status.Get_source(), status.Get_tag()
                buf = self._recv(msg, status)
                backoff.hit(now)
                if tag == TAG_REQUEST:
                    if not self._accepting:
                        self._refuse(src, buf)
                    else:
                        return src, buf
                elif tag == TAG_RESPONSE:
                    self._answer(src, buf)
                elif tag == TAG_FORKS:
                    self._serve_forks(src, buf)
                continue
            if self._sends:
                with self._lock:
                    self._sends = [(r, b) for r, b in self._sends if not r.Test()]
            if now >= next_check:
                if self._fork_records:  # (a batch a millisecond at most)
                    self.flush_forks()
                self._expire(now)
                if self._abandoned:
                    self._drop_abandoned(status)
                next_check = now + 1e-3
            # while other threads serve, spinning would take their GIL and core: sleep
            backoff.wait(now, hot=not self._serving)
        return None, None

    def _drop_abandoned(self, status) -> None:
        """Receive (and drop) the late answers of synchronous calls that failed."""
        with self._lock:
            keys = list(self._abandoned)
        for src, tag in keys:
            msg = self.direct.Improbe(src, tag, status)
            if msg is not None:
                self._recv(msg, status)
                with self._lock:
                    self._abandoned.discard((src, tag))

    def _refuse(self, src: int, buf: np.ndarray) -> None:
        call_id = wire.call_id_of(buf)
        if call_id is not None:
            try:
                tag = _reply_tag(wire.unpack(buf)[1]["rpc"], self._tag_range)
            except wire.MessageError:
                tag = TAG_RESPONSE
            self._respond_error(src, call_id, tag, RuntimeError(
                f"RPC: worker {self.name} is shutting down and serves no more calls"))

    def _expire(self, now: float) -> None:
        """Fail the asynchronous calls past their deadline (a synchronous call's caller
        watches its own)."""
        with self._lock:
            late = [(i, c) for i, c in self._calls.items()
                    if c.deadline is not None and c.future is not None and now >= c.deadline]
            for i, _ in late:
                del self._calls[i]
        for _, c in late:
            c.future.set_exception(_timed_out(c))

    def _answer(self, src: int, buf: np.ndarray) -> None:
        """Complete the future of the asynchronous call that `buf` answers."""
        call_id = wire.call_id_of(buf)
        with self._lock:
            call = self._calls.get(call_id)
            if call is None or call.future is None or call.dst != src:
                return  # timed out already (or not an answer of ours): dropped
            del self._calls[call_id]
        try:
            value = self._value(src, buf, call)
        except BaseException as e:  # noqa: BLE001 - the caller's future carries it
            call.future.set_exception(e)
            return
        call.future.set_result(value)

    def _value(self, src: int, buf: np.ndarray, call: _Call):
        """The value an answer carries, or the error it reports raised."""
        _, manifest, buffers = wire.unpack(buf)
        env = manifest["rpc"]
        if env.get("ok") is not True:
            raise remote_error(env.get("error"), self.workers[src])
        if type(manifest) is wire.Decoded:  # the binary form: read already, no autograd edges
            return manifest.value
        value, tensors = decode(manifest, buffers, _Source("the answer from", self.workers[src]))
        if call.cid is not None and env.get("grads"):
            _autograd()._incoming(call.cid, src, env["grads"], tensors)
        return value

    # -- serving -------------------------------------------------------------------------------
    def _serve(self, src: int, buf: np.ndarray) -> None:
        call_id = wire.call_id_of(buf)
        tag = TAG_RESPONSE
        cid = None
        try:
            try:
                _, manifest, buffers = wire.unpack(buf)
            except wire.MessageError as e:
                raise RuntimeError(f"RPC: the request from {self.workers[src]} is not a valid "
                                   f"message: {e}") from None
            env = manifest["rpc"]
            tag = _reply_tag(env, self._tag_range)
            op = env.get("op")
            handler = _HANDLERS.get(op) if isinstance(op, str) else None
            if handler is None:
                where = _OPS.get(op) if isinstance(op, str) else None
                if where is None:
                    raise RuntimeError(f"RPC: the request from {self.workers[src]} asks for "
                                       f"operation {op!r}, which does not exist")
                handler = _HANDLERS[op] = getattr(importlib.import_module(where[0]), where[1])
            cid = env.get("cid")
            if cid is not None and not isinstance(cid, int):
                raise RuntimeError("RPC: bad autograd context id in the request")
            if type(manifest) is wire.Decoded:  # the binary form: read already (cid None)
                payload = manifest.value
            else:
                payload, tensors = decode(manifest, buffers,
                                          _Source("the request from", self.workers[src]))
            if cid is None:
                result = handler(self, src, env, payload)
            else:
                dist_autograd = _autograd()
                if env.get("grads"):
                    dist_autograd._incoming(cid, src, env["grads"], tensors)
                with dist_autograd._entered(cid):
                    result = handler(self, src, env, payload)
        except BaseException as e:  # noqa: BLE001 - answered to the caller
            if call_id is not None:
                self._respond_error(src, call_id, tag, e)
            return
        if isinstance(result, Future):
            result.add_done_callback(lambda f: self._respond(src, call_id, tag, f, cid))
        else:
            self._respond_value(src, call_id, tag, result, cid)

    def _respond(self, src: int, call_id: int, tag: int, fut, cid) -> None:
        try:
            value = fut.result()
        except BaseException as e:  # noqa: BLE001
            self._respond_error(src, call_id, tag, e)
            return
        self._respond_value(src, call_id, tag, value, cid)

    def _respond_value(self, src: int, call_id: int, tag: int, value, cid) -> None:
        if cid is None:  # (in distributed autograd an answer carries its gradient edges)
            try:
                buf = wire.pack_value(call_id, value)
            except wire.NotCompact:
                buf = None
            if buf is not None:
                self._post(src, buf, tag)
                return
        try:
            manifest, storages = encode_compact(value)
            if manifest is None:
                manifest, storages, tensors = encode(value, self.locate_response[src])
                env = {"ok": True}
                if cid is not None:
                    dist_autograd = _autograd()
                    with dist_autograd._entered(cid):
                        env["grads"] = dist_autograd._outgoing(cid, src, tensors)
            else:
                env = {"ok": True}
            manifest["rpc"] = env
            buf = wire.pack(call_id, manifest, storages)
        except BaseException as e:  # noqa: BLE001 - e.g. a result that cannot be sent
            self._respond_error(src, call_id, tag, e)
            return
        self._post(src, buf, tag)

    def _respond_error(self, src: int, call_id: int, tag: int, e: BaseException) -> None:
        tb = "".join(traceback.format_exception(type(e), e, e.__traceback__))
        manifest = {"format": wire.FORMAT, "version": wire.VERSION, "storages": [],
                    "object": None, "rpc": {"ok": False, "error": {
                        "type": type(e).__name__, "message": str(e), "traceback": tb}}}
        self._post(src, wire.pack(call_id, manifest, []), tag)

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

    # -- RRef lifetime -------------------------------------------------------------------------
    # PyTorch's Remote Reference Protocol: each RRef object is one fork of its RRef id (a user's
    # or the owner's own), and the owner deletes the value once no fork is left. A fork is made
    # by the worker that makes the object or sends an RRef in a message (`new_fork`); a fork
    # made off the owner is announced to it in this worker's records, before any later record
    # of this worker (the one dropping the sender's own fork included), and MPI keeps the
    # order of one sender's messages: so the owner learns of a new user before the sender's
    # drop can free the value. The new fork's own drop comes from another worker and may
    # arrive before its announcement: it is kept (`_Forks.early`) until that comes.
    def create(self, rref_id: int, fork: int) -> None:
        """Mark the value of `rref_id` created here, with its first fork (the caller's of
        `remote`, or the owner's own object); RuntimeError when that id exists already."""
        with self._lock:
            st = self._forks_of(rref_id)
            if st.created:
                raise RuntimeError(f"RPC: RRef id {rref_id} exists already on {self.name}")
            st.created = True
            self._fork_event(rref_id, fork, True)

    def new_fork(self, owner: int, rref_id: int) -> int:
        """A new fork of RRef `rref_id` (of `owner`) made here: its id. The owner (this worker)
        counts it at once; another owner is told in this worker's next records."""
        fork = self.new_rref_id()
        if owner == self.rank:
            with self._lock:
                self._fork_event(rref_id, fork, True)
        else:
            self._fork_records.append((owner, wire.FORK_ANNOUNCE, rref_id, fork))
        return fork

    def drop_fork(self, owner: int, rref_id: int, fork: int) -> None:
        """Record that fork `fork` is gone (from RRef.__del__: no lock, no MPI; sent by the
        prober)."""
        self._fork_records.append((owner, wire.FORK_DROP, rref_id, fork))

    def _forks_of(self, rref_id: int) -> "_Forks":
        st = self._forks.get(rref_id)
        if st is None:
            st = self._forks[rref_id] = _Forks()
        return st

    def _fork_event(self, rref_id: int, fork: int, announce: bool):
        """Apply one record (under self._lock); the reason when it contradicts the forks
        known (None when applied). Deletes the value once it was created and no fork is
        left."""
        st = self._forks_of(rref_id)
        if announce:
            if fork in st.live:
                return f"fork {fork} of RRef {rref_id} announced twice"
            if fork in st.early:
                st.early.discard(fork)
            else:
                st.live.add(fork)
        elif fork in st.live:
            st.live.discard(fork)
        elif fork in st.early:
            return f"fork {fork} of RRef {rref_id} dropped twice"
        else:
            st.early.add(fork)
        if not st.live and not st.early:  # nothing left to remember
            del self._forks[rref_id]
            if st.created:  # (else its creation is still to come: its slot waits for it)
                self._owned.pop(rref_id, None)
        return None

    def _apply_forks(self, src: int, records) -> list:
        """Apply records from worker `src` (their ids checked first: a message of any record
        it could not have made is refused whole); the reasons of records not applied."""
        for op, rref_id, fork in records:
            if rref_id >> 40 >= self.size or fork >> 40 >= self.size:
                raise RuntimeError(f"RPC: a fork record from {self.workers[src]} names an id "
                                   f"made by no worker ({rref_id}, {fork})")
            if op == wire.FORK_ANNOUNCE and fork >> 40 != src:
                raise RuntimeError(f"RPC: {self.workers[src]} announced fork {fork}, which "
                                   f"another worker made")
        problems = []
        with self._lock:
            for op, rref_id, fork in records:
                why = self._fork_event(rref_id, fork, op == wire.FORK_ANNOUNCE)
                if why is not None:
                    problems.append(why)
        return problems

    def _serve_forks(self, src: int, buf: np.ndarray) -> None:
        """Apply a batch of fork records (on the prober, in the order they came) and
        acknowledge it, or answer why it is refused."""
        call_id = wire.call_id_of(buf)
        try:
            try:
                records = wire.unpack_forks(buf)
            except wire.MessageError as e:
                raise RuntimeError(f"RPC: the fork records from {self.workers[src]} are not a "
                                   f"valid message: {e}") from None
            problems = self._apply_forks(src, records)
            if problems:
                raise RuntimeError(f"RPC: {len(problems)} fork records from "
                                   f"{self.workers[src]} refused: {'; '.join(problems)}")
        except RuntimeError as e:
            if call_id is not None:
                self._respond_error(src, call_id, TAG_RESPONSE, e)
            return
        self._post(src, wire.pack_value(call_id, None), TAG_RESPONSE)

    def flush_forks(self, wait: bool = False) -> list:
        """Send the fork records made so far, each owner's in one message in the order they
        were made (this worker's own applied here); the Futures of their acknowledgements.
        One thread at a time (it keeps the order); without `wait`, none when another is at
        it."""
        if not self._flushing.acquire(blocking=wait):
            return []
        try:
            records = self._fork_records
            batches: dict = {}
            problems = []
            while records:
                owner, op, rref_id, fork = records.popleft()
                if owner != self.rank:
                    batches.setdefault(owner, []).append((op, rref_id, fork))
                    continue
                with self._lock:
                    why = self._fork_event(rref_id, fork, op == wire.FORK_ANNOUNCE)
                if why is not None:
                    problems.append(why)
            if problems:
                _report_fork_error(RuntimeError("; ".join(problems)))
            futs = []
            timeout = self.options.rpc_timeout
            for owner, batch in batches.items():
                fut = self.send_message(owner, lambda cid, b=batch: wire.pack_forks(cid, b),
                                        "RRef fork records", timeout, tag=TAG_FORKS)
                fut.add_done_callback(_fork_ack)
                futs.append(fut)
            return futs
        finally:
            self._flushing.release()

    # -- ending ------------------------------------------------------------------------------
    def drain(self) -> None:
        """Wait until every request this worker serves is answered; later ones are refused."""
        while self._serving:
            time.sleep(1e-3)
        self._accepting = False
        self.pool.shutdown(wait=True)

    def stop(self) -> None:
        self._running = False
        with self._cv:
            self._cv.notify_all()
        # the followers and the prober end at once; a thread still in a callee (a shutdown
        # that was not graceful) is left to finish it, its answer dropped (_post)
        deadline = time.perf_counter() + 1.0
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(max(0.0, deadline - time.perf_counter()))
        self.pool.shutdown(wait=False, cancel_futures=True)


class _Forks:
    """The forks of one RRef id on its owner: `live` (announced, not dropped), `early`
    (dropped before their announcement came), and whether its value was `created` (a `remote`
    creates it when served, and forks of it may come and go before)."""
    __slots__ = ("live", "early", "created")

    def __init__(self):
        self.live, self.early, self.created = set(), set(), False


def _report_fork_error(e: BaseException) -> None:
    # records are sent from the prober for objects already gone: no caller to raise to
    sys.stderr.write(f"jitorch.distributed.rpc: RRef fork records refused: {e}\n")


def _fork_ack(fut) -> None:
    try:
        fut.result()
    except BaseException as e:  # noqa: BLE001
        _report_fork_error(e)


def _reply_tag(env, tag_range: int) -> int:
    """The tag a request's answer goes on: the one it asked for (a synchronous call's own)
    when that is a tag of direct answers, else TAG_RESPONSE (a tag past MPI's bound would
    fail the send of the answer, and with it the serving thread)."""
    tag = env.get("reply") if isinstance(env, dict) else None
    if type(tag) is int and _DIRECT_TAG <= tag < _DIRECT_TAG + tag_range:
        return tag
    return TAG_RESPONSE


def _deadline(timeout):
    return time.perf_counter() + timeout if timeout and timeout > 0 else None


def _timed_out(call: _Call) -> RuntimeError:
    return RuntimeError(f"RPC ran for more than set timeout ({int(call.timeout * 1000)} ms) and "
                        f"will now be marked with an error: {call.what}")


_AUTOGRAD: list = []  # jitorch.distributed.autograd, imported once (it imports this module)


def _autograd():
    if not _AUTOGRAD:
        from .. import autograd
        _AUTOGRAD.append(autograd)
    return _AUTOGRAD[0]


class _Source:
    """Names a message's sender in decoding errors; formatted only when one is raised."""
    __slots__ = ("what", "worker")

    def __init__(self, what: str, worker):
        self.what, self.worker = what, worker

    def __str__(self):
        return f"{self.what} {self.worker}"


# --- payloads ---------------------------------------------------------------------------------
_encoding = threading.local()  # set while a message is encoded: RRefs may be pickled only then


def encode(obj, locate=None):
    """(manifest, storages, tensors requiring grad as (node id, tensor)) of a payload.
    `locate(device)`: the device (str) a CUDA tensor arrives on at the receiver (the device
    maps, api.py), which raises when there is none; None: written where they are."""
    from ...serialization import to_manifest
    _encoding.active = True
    _encoding.forks = forks = []  # (agent, owner, RRef id, fork) made for the message
    try:
        manifest, storages, enc = to_manifest(obj, wire.FORMAT, wire.VERSION)
        if locate is not None:
            for t, node in enc.tensors:
                if "device" in node:  # (a CUDA tensor: its values were copied to the host)
                    node["device"] = locate(t._device)
    except BaseException:
        for a, owner, rref_id, fork in forks:  # no message: its forks go at once
            a.drop_fork(owner, rref_id, fork)
        raise
    finally:
        _encoding.active = False
        _encoding.forks = None
    if enc.arrays:
        raise TypeError("RPC arguments and results carry tensors, not NumPy arrays: convert "
                        "them with jitorch.from_numpy")
    return manifest, [a for _, a in storages], \
        [(node["id"], t) for t, node in enc.tensors if t._requires_grad]


def encode_compact(obj):
    """(manifest, storages) of a payload in wire.py's compact form, or (None, None) when it
    holds what only the general form describes."""
    storages: list = []
    try:
        return {"c": wire.compact_encode(obj, storages)}, storages
    except wire.NotCompact:
        return None, None


def encoding() -> bool:
    return getattr(_encoding, "active", False)


def encoded_fork(agent, owner: int, rref_id: int, fork: int) -> None:
    """Note a fork made for the message being encoded (dropped if its encoding fails)."""
    _encoding.forks.append((agent, owner, rref_id, fork))


_PROTOCOL_CLASSES: dict = {}  # path -> class: what a message may hold beyond the user's list


def decode(manifest, buffers, source):
    """(value, {node id: tensor}) of a message's payload, either form; `source` names the
    sender in errors (its str())."""
    if type(manifest) is wire.Decoded:  # the binary form: read with its manifest
        return manifest.value, {}
    if "c" in manifest:
        try:
            return wire.compact_decode(manifest["c"], buffers), {}
        except wire.MessageError as e:
            raise RuntimeError(f"RPC: {source} is not a valid message: {e}") from None
    from ...serialization import load_message
    if not _PROTOCOL_CLASSES:
        from .api import RRef, WorkerInfo
        _PROTOCOL_CLASSES.update({f"{c.__module__}.{c.__qualname__}": c
                                  for c in (RRef, WorkerInfo)})
    return load_message(manifest, buffers, source=str(source), what="RPC",
                        format_name=wire.FORMAT, max_version=wire.VERSION,
                        extra_globals=_PROTOCOL_CLASSES)


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
