"""The caller's compile workers: up to `JITORCH_COMPILE_WORKERS` lanes side by side (issue 17).

Owns `pool()`: the process's pool, whose lanes are compile_worker's `_Service`s (each a queue,
a thread and a worker process). A job goes to a lane already holding its key (one compile per
overload), else to an idle lane, else to a new lane while there are fewer than
`workers()`, else to the lane with the fewest jobs. Why: a training step's first call submits
its forward and its backward program at once, and one worker compiled them one after the other
(encoder1: 13.6 s for the forward, then the backward, 26 s until both served); two workers
compile them side by side. The kernels the two programs share are compiled once: each
function compiles under its cross-process lock (kernels/compile_lock.py), and the other worker
waits for it and loads it.

`workers()`: `JITORCH_COMPILE_WORKERS` (at least 1), by default 2 where there are two cores or
more, else 1. At exit (`detach`) every lane hands its unanswered jobs to its worker, which
finishes them after the caller is gone (compile_worker.py), and the caller says so once.
"""
from __future__ import annotations

import atexit
import os
import sys

from ... import _fork
from .compile_worker import Job, _Service, job_timeout

DEFAULT_WORKERS = 2


def workers() -> int:
    """How many worker processes may compile at once (`JITORCH_COMPILE_WORKERS`)."""
    try:
        n = int(os.environ.get("JITORCH_COMPILE_WORKERS", "0"))
    except ValueError:
        n = 0
    if n >= 1:
        return n
    return DEFAULT_WORKERS if (os.cpu_count() or 1) >= 2 else 1


class _Pool:
    """The lanes, and what the caller asks of all of them (see the module doc)."""

    def __init__(self):
        self._lock = _fork.lock()
        self.lanes: list = [_Service()]

    def submit(self, key, payload) -> Job:
        with self._lock:
            for lane in self.lanes:
                job = lane.job(key)
                if job is not None:
                    return job  # the same overload asked for again: one compile
            return self._lane().submit(key, payload)

    def _lane(self) -> _Service:
        usable = self.lanes[:workers()]  # (the limit may have been lowered since)
        idle = [lane for lane in usable if lane.pending() == 0]
        if idle:
            return idle[0]
        if len(usable) < workers():
            self.lanes.append(_Service())
            return self.lanes[-1]
        return min(usable, key=lambda lane: lane.pending())

    def pending_jobs(self) -> list:
        """The jobs not answered yet (queued or compiling), oldest first."""
        jobs = [job for lane in list(self.lanes) for job in lane.pending_jobs()]
        return sorted(jobs, key=lambda job: job.submitted)

    @property
    def starts(self) -> int:
        """Worker processes started (tests, stats)."""
        return sum(lane.starts for lane in list(self.lanes))

    @property
    def proc(self):
        """A running worker process, or None when no lane has one (tests)."""
        return next((lane.proc for lane in list(self.lanes) if lane.proc is not None), None)

    def shutdown(self) -> None:
        """Stop every worker process (a later job starts a new one)."""
        for lane in list(self.lanes):
            lane.shutdown()

    def detach(self) -> int:
        """At the caller's exit (atexit): every lane hands its unanswered jobs to its worker
        (compile_worker `_Service.handoff`), and the caller says so once on stderr. -> how
        many jobs the workers got."""
        jobs, pids = [], []
        for lane in list(self.lanes):
            got, proc = lane.handoff()
            if got:
                jobs += got
                pids.append(str(proc.pid))
        if not jobs:
            return 0
        dirs = sorted({j.payload.get("cache_dir") or "(in memory)" for j in jobs})
        n = len(jobs)
        who = (f"the compile worker (pid {pids[0]}) finishes" if len(pids) == 1 else
               f"the compile workers (pids {', '.join(pids)}) finish")
        them, saves = ("them" if n != 1 else "it"), ("saves" if len(pids) == 1 else "save")
        print(f"jitorch: {n} compile{'s' if n != 1 else ''} still pending at exit: {who} "
              f"{them} in the background at low priority (for at most {job_timeout():g} s, "
              f"JITORCH_COMPILE_TIMEOUT) and {saves} {them} to the cache directory "
              f"{', '.join(dirs)}; the next run of this program loads {them} compiled",
              file=sys.stderr, flush=True)
        return n

    def _after_fork(self) -> None:
        """In a forked child: each lane forgets its parent's thread and worker and sends the
        jobs not answered yet again (compile_worker `_Service._after_fork`)."""
        for lane in self.lanes:
            lane._after_fork()


_pool = _Pool()


def pool() -> _Pool:
    """This process's compile workers: `pool().submit(key, payload)` queues a compile
    (compile_worker.py's module doc has the payload); the same key shares one job."""
    return _pool


atexit.register(_pool.detach)
_fork.in_child(_pool._after_fork)
