"""`jitorch.profiler.profile`: PyTorch's profiler API (`torch.profiler`) over `Collector`.

Owns the context manager and its step schedule: `schedule(wait, warmup, active, repeat,
skip_first)` decides per step whether the profiler waits, warms up or records; a cycle ends on
RECORD_AND_SAVE, where `on_trace_ready(prof)` runs (`tensorboard_trace_handler(dir)` writes the
Chrome trace there). Each `step()` is a "ProfilerStep#N" range when a schedule is given, as in
PyTorch. Activities: CPU; CUDA (and the other devices) warn that they are not available and are
dropped, as PyTorch does on a CPU-only build.
"""
from __future__ import annotations

import enum
import os
import socket
import time
import warnings
from typing import Callable, Iterable

from ._collector import Collector
from .events import EventList
from .record_function import record_function


class ProfilerActivity(enum.Enum):
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5

    def __repr__(self):
        return f"<ProfilerActivity.{self.name}: {self.value}>"

    def __str__(self):
        return f"ProfilerActivity.{self.name}"


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities() -> set:
    """The activities this build can profile: the CPU."""
    return {ProfilerActivity.CPU}


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable:
    """Skip `skip_first` steps, then cycle: wait `wait` steps, warm up `warmup`, record
    `active` (the last one RECORD_AND_SAVE); `repeat` cycles (0: until the profiler stops)."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} "
            f"(need >= 0), active={active} (need > 0), repeat={repeat} (need >= 0), "
            f"skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        n = wait + warmup + active
        if repeat > 0 and step / n >= repeat:
            return ProfilerAction.NONE
        m = step % n
        if m < wait:
            return ProfilerAction.NONE
        if m < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if m < n - 1 else ProfilerAction.RECORD_AND_SAVE

    return schedule_fn


def _default_schedule(_step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False) -> Callable:
    """An `on_trace_ready` that writes `<worker>.<ns>.pt.trace.json` into `dir_name` (the
    layout TensorBoard's profile plugin reads)."""
    def handler_fn(prof) -> None:
        nonlocal worker_name
        try:
            os.makedirs(dir_name, exist_ok=True)
        except OSError as e:
            raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker_name}.{time.time_ns()}.pt.trace.json" + (".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, name))
    return handler_fn


def _check_activities(activities) -> set:
    if activities is None:
        return supported_activities()
    acts = set()
    for a in activities:
        if isinstance(a, dict):  # {ProfilerActivity: [names]}
            acts.update(a)
            continue
        if not isinstance(a, ProfilerActivity):
            raise TypeError(f"profile(): activities must be ProfilerActivity values, not "
                            f"{type(a).__name__}")
        acts.add(a)
    for a in sorted(acts - supported_activities(), key=lambda a: a.value):
        warnings.warn(f"{a.name} is not available, disabling {a.name} profiling", stacklevel=3)
    return acts & supported_activities()


class _Profile:
    """What both profilers share: a collector per recorded window and its events."""

    def __init__(self, *, record_shapes=False, profile_memory=False, with_stack=False,
                 with_flops=False, with_modules=False, acc_events=False):
        self.record_shapes = record_shapes
        self.acc_events = acc_events  # keep the events of earlier schedule cycles
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        # FLOPs are not estimated (no op declares a formula): the table leaves the column out,
        # as PyTorch does when no recorded op has one; say so rather than ignore the request.
        # Module scopes are not recorded (PyTorch records them for TorchScript models only).
        if with_flops:
            warnings.warn("jitorch.profiler: with_flops=True is not implemented (no op declares "
                          "a FLOP formula); the table has no FLOPs column", UserWarning,
                          stacklevel=3)
        self.with_flops = with_flops
        self.with_modules = with_modules
        self._collector: Collector | None = None
        self._events: EventList | None = None
        self._metadata: dict = {}

    def _start_trace(self) -> None:
        self._collector = Collector(record_shapes=self.record_shapes,
                                    profile_memory=self.profile_memory,
                                    with_stack=self.with_stack)
        self._collector.start()

    def _stop_trace(self) -> None:
        if self._collector is not None:
            events = self._collector.stop()
            for e in events:  # the steps are one row of the table, as in PyTorch
                if e.cat == "user_annotation" and e.name.startswith("ProfilerStep#"):
                    e.trace_name, e.name = e.name, "ProfilerStep*"
            if self.acc_events and self._events is not None:
                events[:0] = self._events
            events._trace_meta["metadata"] = dict(self._metadata)
            self._events = events
            self._collector = None

    def events(self) -> EventList:
        """The events of the last recorded window."""
        if self._events is None:
            raise RuntimeError("the profiler has no results: profile a block of code first "
                               "(the results are available after it stops)")
        return self._events

    @property
    def function_events(self) -> EventList:
        return self.events()

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        return self.events().key_averages(group_by_input_shape, group_by_stack_n,
                                          group_by_overload_name)

    def table(self, sort_by=None, row_limit=100, **kwargs) -> str:
        return self.key_averages().table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    def export_chrome_trace(self, path: str) -> None:
        self.events().export_chrome_trace(path)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        if not self.with_stack:
            raise AssertionError("export_stacks() requires with_stack=True")
        self.events().export_stacks(path, metric)

    def add_metadata(self, key: str, value: str) -> None:
        """A key/value pair written at the top level of the Chrome trace."""
        self._metadata[key] = value

    def add_metadata_json(self, key: str, value: str) -> None:
        import json
        self._metadata[key] = json.loads(value)

    @property
    def self_cpu_time_total(self) -> float:
        return self.events().self_cpu_time_total

    def total_average(self):
        return self.events().total_average()


class profile(_Profile):
    """`with jitorch.profiler.profile(...) as prof:` records eager ops, scripted calls,
    compiles and `record_function` ranges; `prof.step()` advances the schedule."""

    def __init__(self, *, activities: Iterable | None = None, schedule: Callable | None = None,
                 on_trace_ready: Callable | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_flops: bool = False, with_modules: bool = False,
                 experimental_config=None, execution_trace_observer=None,
                 acc_events: bool = False, use_cuda: bool | None = None):
        super().__init__(record_shapes=record_shapes, profile_memory=profile_memory,
                         with_stack=with_stack, with_flops=with_flops,
                         with_modules=with_modules, acc_events=acc_events)
        if use_cuda is not None:
            warnings.warn("`use_cuda` is deprecated, use `activities` argument instead",
                          FutureWarning, stacklevel=2)
            if use_cuda:
                activities = set(activities or supported_activities()) | {
                    ProfilerActivity.CUDA}
        self.activities = _check_activities(activities)
        self.schedule = schedule if schedule is not None else _default_schedule
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self.step_rec_fn: record_function | None = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self) -> None:
        self._transit(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self._step_range()

    def stop(self) -> None:
        if self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        self._transit(self.current_action, None)

    def step(self) -> None:
        """The end of one step: exit its "ProfilerStep#N" range and follow the schedule."""
        if self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(prev, self.current_action)
        if self.record_steps:
            self._step_range()

    def _step_range(self) -> None:
        self.step_rec_fn = record_function(f"ProfilerStep#{self.step_num}")
        self.step_rec_fn.__enter__()

    def _transit(self, prev, cur) -> None:
        A = ProfilerAction
        recording = (A.RECORD, A.RECORD_AND_SAVE)
        if prev in recording and (cur not in (A.RECORD, A.RECORD_AND_SAVE)
                                  or prev is A.RECORD_AND_SAVE):
            if prev is A.RECORD and cur is not None:
                warnings.warn(f"Incorrect schedule: RECORD followed by {cur.name}")
            self._stop_trace()
            if prev is A.RECORD_AND_SAVE or cur is None:
                self._trace_ready()
        if prev is A.WARMUP and cur in (A.NONE, None):
            if cur is A.NONE:
                warnings.warn("Incorrect schedule: WARMUP followed by NONE")
            self._start_trace()  # an empty trace, as PyTorch's warm-up-then-stop gives
            self._stop_trace()
        if cur in recording and (prev not in recording or prev is A.RECORD_AND_SAVE):
            self._start_trace()

    def _trace_ready(self) -> None:
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)
