"""Profiler events and their aggregates, with PyTorch's names (`torch.autograd.profiler_util`).

Owns `FunctionEvent` (one recorded range: an eager op, a scripted call, a compile, a
`record_function` range), `FunctionEventAvg` (the events of one key summed, what
`key_averages()` returns) and `EventList` (a list of either with `key_averages`, `table`,
`export_chrome_trace`, `export_stacks`, `total_average`, `self_cpu_time_total`).

Times are microseconds (floats), as in PyTorch. Invariant: an event's children are ranges that
ran inside it on the same thread, so `self_cpu_time_total = cpu_time_total - sum(children)` and
`self_cpu_memory_usage = cpu_memory_usage - sum(children's cpu_memory_usage)`.
"""
from __future__ import annotations

import json
import os
from collections import defaultdict

from . import _table

# what a `sort_by=` / `metric=` naming a device column reads: there is no device here
_DEVICE_WORDS = ("cuda", "xpu", "privateuse1")


def _attr_name(name: str) -> str:
    for w in _DEVICE_WORDS:
        name = name.replace(w, "device")
    return name


class _Times:
    """The `*_str` forms and the device columns (always 0: jitorch profiles the CPU)."""

    __slots__ = ()
    device_time_total = 0.0
    self_device_time_total = 0.0
    device_time = 0.0
    device_memory_usage = 0
    self_device_memory_usage = 0
    device_type = "CPU"
    is_legacy = False
    is_async = False
    is_remote = False
    node_id = -1
    flops = 0
    use_device = None
    overload_name = ""

    @property
    def cpu_time_str(self):
        return _table.format_time(self.cpu_time)

    @property
    def cpu_time_total_str(self):
        return _table.format_time(self.cpu_time_total)

    @property
    def self_cpu_time_total_str(self):
        return _table.format_time(self.self_cpu_time_total)

    @property
    def cuda_time_total(self):  # PyTorch's older names for the device columns
        return 0.0

    self_cuda_time_total = cuda_time_total
    cuda_time = cuda_time_total


class FunctionEvent(_Times):
    """One range: `name`, `thread`, `start_us`/`end_us` (`time_range`), `input_shapes` (with
    record_shapes), `stack` (innermost user frame first, with with_stack), `cpu_children`,
    `cpu_parent`, memory the range allocated (`cpu_memory_usage`, with profile_memory) and
    `args` (what the Chrome trace shows: a compile's reason, a marker's meaning)."""

    __slots__ = ("id", "name", "thread", "start_ns", "end_ns", "cat", "input_shapes", "stack",
                 "cpu_children", "cpu_parent", "own_memory", "_args", "trace_name")
    count = 1

    def __init__(self, id, name, thread, start_ns, cat="cpu_op", input_shapes=None,
                 stack=None):
        self.id = id
        self.name = name
        self.thread = thread
        self.start_ns = start_ns
        self.end_ns = None
        self.cat = cat
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.stack = stack if stack is not None else []
        self.cpu_children = []
        self.cpu_parent = None
        self.own_memory = 0  # bytes this range itself allocated (children excluded)
        self._args = None  # made on first use: most events have none
        self.trace_name = None  # the Chrome trace's name when it differs ("ProfilerStep#3")

    @property
    def args(self) -> dict:
        if self._args is None:
            self._args = {}
        return self._args

    @args.setter
    def args(self, value):
        self._args = value

    @property
    def is_user_annotation(self) -> bool:
        return self.cat == "user_annotation"

    key = property(lambda self: self.name)

    @property
    def cpu_time_total(self) -> float:
        return (self.end_ns - self.start_ns) / 1e3

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    cpu_time = cpu_time_total

    @property
    def cpu_memory_usage(self) -> int:
        return self.own_memory + sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def self_cpu_memory_usage(self) -> int:
        return self.own_memory

    @property
    def time_range(self):
        return (self.start_ns / 1e3, self.end_ns / 1e3)

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} thread={self.thread} "
                f"cpu_time_total={self.cpu_time_total_str} "
                f"self_cpu_time_total={self.self_cpu_time_total_str} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage}>")


class FunctionEventAvg(_Times):
    """The events of one key, summed (`count` of them); `cpu_time` is the mean total time."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.input_shapes = None
        self.stack = None
        self.is_user_annotation = False
        self.cpu_parent = None

    def add(self, other):
        if self.key is None:
            self.key = other.key
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.is_user_annotation = other.is_user_annotation
            self.cpu_parent = getattr(other, "cpu_parent", None)
        if other.key != self.key:
            raise AssertionError(f"cannot add {other.key!r} to the average of {self.key!r}")
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        return self

    __iadd__ = add

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage}>")


class EventList(list):
    """A list of FunctionEvents (or of FunctionEventAvgs, from `key_averages`)."""

    def __init__(self, *args, profile_memory=False, with_flops=False, use_device=None,
                 trace_meta=None, **kwargs):
        super().__init__(*args, **kwargs)
        self._profile_memory = profile_memory
        self._with_flops = with_flops
        self._use_device = use_device
        self._trace_meta = dict(trace_meta or {})

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        """Sum the events over their keys: (name, input shapes when grouped by them, the first
        `group_by_stack_n` stack frames when grouped by stack)."""
        stats: dict = defaultdict(FunctionEventAvg)
        for e in self:
            key = [e.key, str(e.is_user_annotation)]
            if group_by_input_shapes:
                key.append(str(e.input_shapes))
            if group_by_stack_n > 0:
                key += e.stack[:group_by_stack_n]
            stats[tuple(key)].add(e)
        out = EventList(stats.values(), profile_memory=self._profile_memory,
                        with_flops=self._with_flops)
        for e in out:
            e.stack = e.stack[:group_by_stack_n] if group_by_stack_n > 0 else []
            if not group_by_input_shapes:
                e.input_shapes = ""
        return out

    def total_average(self):
        total = FunctionEventAvg()
        for e in self:
            total.key = total.key or "Total"
            total.count += e.count
            total.cpu_time_total += e.cpu_time_total
            total.self_cpu_time_total += e.self_cpu_time_total
            total.cpu_memory_usage += e.cpu_memory_usage
            total.self_cpu_memory_usage += e.self_cpu_memory_usage
        total.key = "Total"
        return total

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, time_unit=None):
        """PyTorch's profiler table (see `_table.build_table`)."""
        if sort_by is not None:
            attr = _attr_name(sort_by)
            if self and not hasattr(self[0], attr):
                raise AttributeError(
                    f"'{type(self[0]).__name__}' object has no attribute '{sort_by}' (sort by "
                    "cpu_time, cpu_time_total, self_cpu_time_total, cpu_memory_usage, "
                    "self_cpu_memory_usage or count)")
            rows = sorted(self, key=lambda e: getattr(e, attr), reverse=True)
        else:
            rows = list(self)
        return _table.build_table(
            rows, row_limit=row_limit, header=header, profile_memory=self._profile_memory,
            max_src_column_width=max_src_column_width,
            max_name_column_width=max_name_column_width,
            max_shapes_column_width=max_shapes_column_width,
            top_level_events_only=top_level_events_only, time_unit=time_unit)

    def __str__(self):
        return self.table()

    def supported_export_stacks_metrics(self):
        return ["self_cpu_time_total", "self_cuda_time_total", "self_xpu_time_total",
                "self_privateuse1_time_total"]

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Write the collapsed-stack format of flamegraph.pl / speedscope: one line per event
        with a stack, `outer;...;inner <metric as an integer>` (events whose metric rounds to
        0 are left out, as PyTorch does)."""
        if metric not in self.supported_export_stacks_metrics():
            raise ValueError("metric should be one of: "
                             + str(self.supported_export_stacks_metrics()))
        attr = _attr_name(metric)
        tr = str.maketrans(" ;\t\n", "____")
        with open(path, "w") as f:
            for e in self:
                if e.stack and int(getattr(e, attr)) > 0:
                    frames = ";".join(s.translate(tr) for s in reversed(e.stack))
                    f.write(f"{frames} {int(getattr(e, attr))}\n")

    def export_chrome_trace(self, path: str) -> None:
        """Write the Chrome trace event format (chrome://tracing, Perfetto, TensorBoard's
        profile plugin): one complete ('X') event per range, with its input dims, call stack,
        and for a compile its reason; with profile_memory an instant '[memory]' event per
        allocating range."""
        trace = chrome_trace(self, self._trace_meta)
        opener = open
        if path.endswith(".gz"):
            import gzip
            opener = gzip.open
        with opener(path, "wt") as f:
            json.dump(trace, f)


def chrome_trace(events, meta: dict) -> dict:
    pid = os.getpid()
    base = meta.get("base_ns", min((e.start_ns for e in events), default=0))
    epoch_us = meta.get("epoch_us", 0.0)
    out = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
            "args": {"name": "python"}},
           {"ph": "M", "name": "process_labels", "pid": pid, "tid": 0,
            "args": {"labels": "CPU"}}]
    for tid in sorted({e.thread for e in events}):
        out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                    "args": {"name": f"thread {tid} (python)"}})
    for i, e in enumerate(events):
        ts = epoch_us + (e.start_ns - base) / 1e3
        args = {"External id": e.id, "Ev Idx": i}
        if e.input_shapes:
            args["Input Dims"] = e.input_shapes
        if e.stack:
            args["Call stack"] = ";".join(e.stack)
        if e._args:
            args.update(e._args)
        out.append({"ph": "X", "cat": e.cat, "name": e.trace_name or e.name, "pid": pid,
                    "tid": e.thread,
                    "ts": ts, "dur": e.cpu_time_total, "args": args})
        if e.own_memory:
            out.append({"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]",
                        "pid": pid, "tid": e.thread, "ts": epoch_us + (e.end_ns - base) / 1e3,
                        "args": {"Device Type": 0, "Device Id": -1, "Bytes": e.own_memory}})
    return {"schemaVersion": 1, "deviceProperties": [], "displayTimeUnit": "ms",
            "traceName": meta.get("trace_name", ""), "record_shapes": meta.get("record_shapes"),
            "profile_memory": meta.get("profile_memory"), "with_stack": meta.get("with_stack"),
            "baseTimeNanoseconds": int(epoch_us * 1e3), "traceEvents": out,
            **meta.get("metadata", {})}
