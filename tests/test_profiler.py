"""jitorch.profiler and jitorch.autograd.profiler: events, PyTorch's table, exports, schedule."""
import json
import os
import re
import warnings

import numpy as np
import pytest

import jitorch
from jitorch import _profiling
from jitorch.profiler import (ProfilerAction, ProfilerActivity, profile, record_function,
                              schedule, tensorboard_trace_handler)


def _names(prof):
    return [e.name for e in prof.events()]


def test_eager_ops_recorded_with_shapes_and_memory():
    x = jitorch.ones(4, 3)
    with profile(record_shapes=True, profile_memory=True) as prof:
        y = jitorch.add(x, 1.0)
        z = y.sum()
        v = y.view(12)  # a view allocates nothing
    del z, v
    ev = {e.name: e for e in prof.events()}
    assert {"aten::add", "aten::sum", "aten::view"} <= set(ev)
    assert ev["aten::add"].input_shapes == [[4, 3], []]
    assert ev["aten::add"].cpu_memory_usage == 4 * 3 * 4  # float32 output
    assert ev["aten::view"].cpu_memory_usage == 0
    assert all(e.cpu_time_total >= 0 for e in prof.events())


def test_no_profiler_active_records_nothing():
    from jitorch.profiler._collector import Collector, _profiled_call
    from jitorch.jit import ScriptFunction

    @jitorch.jit.script
    def idle_fn(x):
        return x + 1.0

    x = jitorch.ones(3)
    c = Collector()
    c.start()
    assert _profiling.collector[0] is c and ScriptFunction.__call__ is _profiled_call
    jitorch.add(x, x)
    idle_fn(x)
    with record_function("while_on"):
        pass
    c.stop()
    n = len(c.events)
    assert {"aten::add", "script::idle_fn", "while_on"} <= {e.name for e in c.events}
    # stopped: the switch is off and the scripted-call hook is gone again
    assert _profiling.collector[0] is None
    assert ScriptFunction.__call__ is not _profiled_call
    jitorch.add(x, x)
    jitorch.mul(x, 2.0)
    idle_fn(x)
    with record_function("while_off"):
        pass
    assert len(c.events) == n
    with profile() as second:
        pass
    assert len(second.events()) == 0


def test_record_function_nesting_and_decorator():
    x = jitorch.ones(2, 2)

    @record_function("decorated")
    def g(t):
        return t * 2.0

    with profile() as prof:
        with record_function("outer"):
            with record_function("inner"):
                jitorch.mm(x, x)
            g(x)
    ev = {e.name: e for e in prof.events()}
    assert ev["inner"].cpu_parent is ev["outer"]
    assert ev["aten::mm"].cpu_parent is ev["inner"]
    assert ev["decorated"].cpu_parent is ev["outer"]
    assert ev["aten::mul"].cpu_parent is ev["decorated"]
    assert ev["outer"].is_user_annotation
    outer = ev["outer"]
    assert outer.self_cpu_time_total == pytest.approx(
        outer.cpu_time_total - sum(c.cpu_time_total for c in outer.cpu_children))
    # record_function with no profiler is a no-op context manager
    with record_function("nothing"):
        pass


def test_scripted_call_compile_and_marker():
    @jitorch.jit.script
    def prof_fn(x):
        with jitorch.profiler.record_function("prof_marker"):
            y = jitorch.tanh(x) * 2.0
        return y + 1.0

    assert prof_fn.graph.profile_markers == ("prof_marker",)
    x = jitorch.ones(5)
    with profile() as prof:
        a = prof_fn(x)
        b = prof_fn(x)
    np.testing.assert_allclose(a.numpy(), np.tanh(1.0) * 2 + 1, rtol=1e-6)
    np.testing.assert_allclose(b.numpy(), a.numpy())
    calls = [e for e in prof.events() if e.name == "script::prof_fn"]
    assert len(calls) == 2
    marks = [e for e in prof.events() if e.name == "prof_marker"]
    assert len(marks) == 2 and all(m.cpu_parent in calls for m in marks)
    comp = [e for e in prof.events() if e.name == "compile::prof_fn"]
    assert len(comp) == 1  # the second call hits the compiled program
    assert comp[0].args["reason"] == "first call"
    assert comp[0].args["result"] in ("compiled", "disk", "memory")
    assert comp[0].args["seconds"] > 0 and comp[0].cpu_time_total > 0
    assert comp[0].cpu_parent is marks[0]
    # a new key compiles again, and the event says what changed
    with profile() as prof2:
        prof_fn(jitorch.ones(2, 2))
    comp2 = [e for e in prof2.events() if e.name == "compile::prof_fn"]
    assert len(comp2) == 1 and "new key" in comp2[0].args["reason"]


def test_marker_errors_in_script():
    def bad(x):
        with jitorch.profiler.record_function("m") as r:  # noqa: F841
            y = x + 1.0
        return y
    with pytest.raises(jitorch.jit.ScriptError, match="as' target"):
        jitorch.jit.script(bad)

    def bad_name(x, s: str):
        with jitorch.profiler.record_function(s):
            y = x + 1.0
        return y
    with pytest.raises(jitorch.jit.ScriptError, match="string literal"):
        jitorch.jit.script(bad_name)


def test_marker_with_return_inside():
    @jitorch.jit.script
    def early(x):
        with jitorch.autograd.profiler.record_function("ret_region"):
            return x * 3.0

    assert early.graph.profile_markers == ("ret_region",)
    with profile() as prof:
        np.testing.assert_allclose(early(jitorch.ones(3)).numpy(), 3.0)
    assert "ret_region" in _names(prof)


def _row(table, name):
    return next(line for line in table.splitlines() if line.strip().startswith(name))


def test_table_format():
    x = jitorch.ones(8, 8)
    with profile(record_shapes=True, profile_memory=True) as prof:
        for _ in range(3):
            jitorch.mm(x, x)
        jitorch.relu(x)
    t = prof.key_averages().table(sort_by="cpu_time_total", row_limit=-1)
    lines = t.splitlines()
    assert re.fullmatch(r"[- ]+", lines[0])
    head = lines[1].split("  ")
    head = [h.strip() for h in head if h.strip()]
    assert head == ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total",
                    "CPU time avg", "CPU Mem", "Self CPU Mem", "# of Calls"]
    assert lines[0] == lines[2] == lines[-2]
    assert re.fullmatch(r"Self CPU time total: \d+\.\d{3}(us|ms|s)", lines[-1])
    mm = _row(t, "aten::mm").split()
    assert mm[-5:] == ["768", "B", "768", "B", "3"]  # 3 calls of 256 B each
    assert re.fullmatch(r"\d+\.\d\d%", mm[1])
    # sorted by total CPU time, descending
    rows = prof.key_averages()
    totals = [r.cpu_time_total for r in sorted(rows, key=lambda r: -r.cpu_time_total)]
    names = [ln.split()[0] for ln in lines[3:-2]]
    assert names == [r.key for r in sorted(rows, key=lambda r: -r.cpu_time_total)]
    assert totals == sorted(totals, reverse=True)
    # shapes column only when grouped by input shape
    ts = prof.key_averages(group_by_input_shape=True).table(sort_by="self_cpu_time_total")
    assert "Input Shapes" in ts and "[[8, 8], [8, 8]]" in _row(ts, "aten::mm")
    assert "Input Shapes" not in t
    # row_limit
    t1 = prof.key_averages().table(sort_by="count", row_limit=1)
    assert len(t1.splitlines()) == 6 and "aten::mm" in t1
    with pytest.raises(AttributeError, match="no_such_column"):
        prof.key_averages().table(sort_by="no_such_column")
    # the legacy profiler: same table; memory columns only with profile_memory
    with jitorch.autograd.profiler.profile() as old:
        jitorch.mm(x, x)
    t2 = old.key_averages().table(sort_by="self_cpu_time_total")
    assert "CPU Mem" not in t2 and "aten::mm" in t2 and "# of Calls" in t2


def test_group_by_stack_and_export_stacks(tmp_path):
    x = jitorch.ones(4, 4)

    def user_layer(t):
        return jitorch.mm(t, t)

    with profile(with_stack=True) as prof:
        for _ in range(2):
            user_layer(x)
    mm = [e for e in prof.events() if e.name == "aten::mm"]
    assert all(e.stack[0].startswith(__file__ + "(") and e.stack[0].endswith(": user_layer")
               for e in mm)
    pkg = os.path.dirname(jitorch.__file__)
    assert all(not s.startswith(pkg) for e in mm for s in e.stack)  # user frames only
    t = prof.key_averages(group_by_stack_n=2).table(sort_by="self_cpu_time_total")
    assert "Source Location" in t and "user_layer" in t
    path = tmp_path / "stacks.txt"
    prof.export_stacks(str(path), "self_cpu_time_total")
    lines = path.read_text().splitlines()
    assert lines
    for ln in lines:
        frames, value = ln.rsplit(" ", 1)
        assert int(value) > 0 and " " not in frames
    assert any(ln.split(" ")[0].endswith("user_layer") for ln in lines)
    with pytest.raises(ValueError, match="metric should be one of"):
        prof.export_stacks(str(path), "cpu_time")


def test_chrome_trace_is_valid_json(tmp_path):
    @jitorch.jit.script
    def trace_fn(x):
        return x * 2.0 + 1.0

    x = jitorch.ones(3)
    with profile(record_shapes=True, profile_memory=True) as prof:
        with record_function("region"):
            jitorch.add(x, x)
            trace_fn(x)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    data = json.loads(path.read_text())
    evs = data["traceEvents"]
    xs = [e for e in evs if e["ph"] == "X"]
    assert {e["name"] for e in xs} >= {"region", "aten::add", "script::trace_fn",
                                       "compile::trace_fn"}
    for e in xs:
        assert isinstance(e["ts"], float) and e["dur"] >= 0 and e["pid"] and e["tid"]
    cats = {e["name"]: e["cat"] for e in xs}
    assert cats["region"] == "user_annotation" and cats["aten::add"] == "cpu_op"
    comp = next(e for e in xs if e["name"] == "compile::trace_fn")
    assert comp["args"]["reason"] == "first call"
    add = next(e for e in xs if e["name"] == "aten::add")
    assert add["args"]["Input Dims"] == [[3], [3]]
    region = next(e for e in xs if e["name"] == "region")
    assert region["ts"] <= add["ts"] and add["ts"] + add["dur"] <= region["ts"] + region["dur"]
    assert any(e["ph"] == "i" and e["name"] == "[memory]" and e["args"]["Bytes"] == 12
               for e in evs)


def test_schedule_actions():
    s = schedule(wait=1, warmup=1, active=2, repeat=1)
    A = ProfilerAction
    assert [s(i) for i in range(6)] == [A.NONE, A.WARMUP, A.RECORD, A.RECORD_AND_SAVE,
                                        A.NONE, A.NONE]
    s2 = schedule(wait=0, warmup=1, active=1, skip_first=2)
    assert [s2(i) for i in range(6)] == [A.NONE, A.NONE, A.WARMUP, A.RECORD_AND_SAVE,
                                         A.WARMUP, A.RECORD_AND_SAVE]
    with pytest.raises(AssertionError, match="active=0"):
        schedule(wait=1, warmup=1, active=0)
    with pytest.warns(UserWarning, match="won't be using warmup"):
        schedule(wait=1, warmup=0, active=1)


def test_schedule_steps_and_trace_handler(tmp_path):
    x = jitorch.ones(2)
    ready = []

    def on_ready(p):
        steps = [e for e in p.events() if e.name == "ProfilerStep*"]  # PyTorch's name
        ready.append((p.step_num, sorted(e.trace_name for e in steps)))
        assert _row(p.key_averages().table(), "ProfilerStep*").split()[-1] == "2"
        tensorboard_trace_handler(str(tmp_path / "tb"), worker_name="w")(p)

    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=2),
                 on_trace_ready=on_ready) as p:
        for step in range(10):
            jitorch.add(x, float(step))
            p.step()
    # cycles: steps 0 wait, 1 warmup, 2-3 record; 4 wait, 5 warmup, 6-7 record
    assert ready == [(4, ["ProfilerStep#2", "ProfilerStep#3"]),
                     (8, ["ProfilerStep#6", "ProfilerStep#7"])]
    files = sorted((tmp_path / "tb").iterdir())
    assert len(files) == 2 and all(f.name.startswith("w.") and
                                   f.name.endswith(".pt.trace.json") for f in files)
    data = json.loads(files[0].read_text())
    adds = [e for e in data["traceEvents"] if e.get("name") == "aten::add"]
    assert len(adds) == 2  # the two recorded steps
    # ops run inside the step ranges
    steps = {e["name"]: e for e in data["traceEvents"] if e.get("name", "").startswith("Prof")}
    assert set(steps) == {"ProfilerStep#2", "ProfilerStep#3"}
    # acc_events=True keeps the earlier cycles' events
    with profile(schedule=schedule(wait=0, warmup=1, active=1, repeat=2),
                 acc_events=True) as p:
        for step in range(5):
            jitorch.add(x, float(step))
            p.step()
    assert sorted(e.trace_name for e in p.events() if e.name == "ProfilerStep*") == \
        ["ProfilerStep#1", "ProfilerStep#3"]


def test_activities_and_errors():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            jitorch.ones(2) + 1
    assert any("CUDA is not available, disabling CUDA profiling" in str(m.message) for m in w)
    assert prof.activities == {ProfilerActivity.CPU}
    with pytest.raises(RuntimeError, match="already enabled"):
        with profile():
            with profile():
                pass
    assert _profiling.collector[0] is None
    with pytest.raises(TypeError, match="ProfilerActivity"):
        profile(activities=["cpu"])
    with pytest.raises(RuntimeError, match="no results"):
        profile().events()
    with pytest.warns(FutureWarning, match="use_cuda"), \
            pytest.warns(UserWarning, match="CUDA is not available"):
        old = jitorch.autograd.profiler.profile(use_cuda=True)
    assert old.use_device is None
    with jitorch.autograd.profiler.profile(enabled=False) as off:
        jitorch.ones(2) + 1
    assert _profiling.collector[0] is None and off._events is None


def test_profiled_ops_on_other_threads():
    import threading
    x = jitorch.ones(3)
    with profile() as prof:
        t = threading.Thread(target=lambda: jitorch.sub(x, x))
        t.start()
        t.join()
        jitorch.add(x, x)
    ev = {e.name: e for e in prof.events()}
    assert ev["aten::sub"].thread != ev["aten::add"].thread


def test_pytorch_profiler_recipe_runs_unchanged(tmp_path):
    """PyTorch's profiler recipe, as written for PyTorch (the model and data made small)."""
    import jitorch as torch
    import jitorch.nn as nn
    from jitorch.profiler import profile, record_function, ProfilerActivity, schedule

    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 5))
    inputs = torch.randn(2, 3, 8, 8)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        with record_function("model_inference"):
            model(inputs)
    t = prof.key_averages().table(sort_by="cpu_time_total", row_limit=10)
    assert _row(t, "model_inference").split()[-1] == "1"
    t = prof.key_averages(group_by_input_shape=True).table(sort_by="cpu_time_total",
                                                            row_limit=10)
    assert "[[2, 3, 8, 8], [4, 3, 3, 3], [4]]" in t  # conv2d(input, weight, bias)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True,
                 record_shapes=True) as prof:
        model(inputs)
    t = prof.key_averages().table(sort_by="self_cpu_memory_usage", row_limit=10)
    assert "Self CPU Mem" in t
    prof.export_chrome_trace(str(tmp_path / "trace.json"))
    with profile(activities=[ProfilerActivity.CPU], with_stack=True) as prof:
        model(inputs)
    prof.key_averages(group_by_stack_n=5).table(sort_by="self_cuda_time_total", row_limit=2)
    prof.export_stacks(str(tmp_path / "profiler_stacks.txt"), "self_cuda_time_total")
    assert (tmp_path / "profiler_stacks.txt").read_text() == ""  # no device time here

    traces = []

    def trace_handler(p):
        p.key_averages().table(sort_by="self_cuda_time_total", row_limit=10)
        path = str(tmp_path / f"trace_{p.step_num}.json")
        p.export_chrome_trace(path)
        traces.append(path)

    with profile(activities=[ProfilerActivity.CPU],
                 schedule=schedule(skip_first=1, wait=1, warmup=1, active=2, repeat=2),
                 on_trace_ready=trace_handler) as p:
        for idx in range(12):
            model(inputs)
            p.step()
    # (PyTorch 2.13 gives the same steps: a cycle is saved at the step() after its last one)
    assert [os.path.basename(x) for x in traces] == ["trace_5.json", "trace_9.json"]
    assert all(json.load(open(x))["traceEvents"] for x in traces)


def test_markers_of_submodules_are_recorded():
    class Inner(jitorch.nn.Module):
        def forward(self, x):
            with record_function("inner_region"):
                return x * 2.0

    class Outer(jitorch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()

        def forward(self, x):
            with record_function("outer_region"):
                y = self.inner(x)
            return y + 1.0

    m = jitorch.jit.script(Outer())
    x = jitorch.ones(3)
    with profile() as prof:
        np.testing.assert_allclose(m(x).numpy(), 3.0)
    ev = {e.name: e for e in prof.events()}
    assert ev["outer_region"].cpu_parent is ev["script::forward"]
    assert ev["inner_region"].cpu_parent is ev["outer_region"]


def synthetic_events():
    """Fixed events (times, memory, shapes, stacks): the table's input for the reference test."""
    from jitorch.profiler.events import EventList, FunctionEvent
    evs = []

    def ev(name, start_us, end_us, cat="cpu_op", parent=None, mem=0, shapes=None, stack=None):
        e = FunctionEvent(len(evs) + 1, name, 1, int(start_us * 1e3), cat, shapes, stack)
        e.end_ns = int(end_us * 1e3)
        e.own_memory = mem
        if parent is not None:
            e.cpu_parent = parent
            parent.cpu_children.append(e)
        evs.append(e)
        return e

    root = ev("a_region_with_a_rather_long_name_that_is_cut_by_the_table", 0, 5000,
              "user_annotation", stack=["model.py(10): main"])
    for i in range(3):
        ev("aten::mm", 10 + i * 1000, 900 + i * 1000, parent=root, mem=256,
           shapes=[[8, 8], [8, 8]], stack=["model.py(4): layer", "model.py(10): main"])
    ev("aten::relu", 3100, 3150.5, parent=root, mem=3 * 1024 * 1024, shapes=[[8, 8]],
       stack=["model.py(5): layer", "model.py(10): main"])
    ev("script::forward", 3200, 1_203_200, "jit", mem=2048, shapes=[[2, 3], [3]])
    return EventList(evs, profile_memory=True)


TABLE_CASES = {
    "plain": ({}, {"sort_by": "cpu_time_total", "row_limit": -1}),
    "shapes": ({"group_by_input_shapes": True}, {"sort_by": "self_cpu_time_total"}),
    "stacks": ({"group_by_stack_n": 2}, {"sort_by": "cpu_memory_usage", "row_limit": 3}),
    "count": ({}, {"sort_by": "count", "row_limit": 2, "time_unit": "ms"}),
}


REFS_FILE = os.path.join(os.path.dirname(__file__), "profiler_table_refs.txt")


def read_refs() -> dict:
    """profiler_table_refs.txt: "=== <case>" lines, each followed by PyTorch's table."""
    refs, case = {}, None
    with open(REFS_FILE) as f:
        for line in f:
            if line.startswith("=== "):
                case = line[4:].strip()
                refs[case] = ""
            elif case is not None:
                refs[case] += line
    return refs


def test_table_is_pytorchs_table():
    """Byte for byte what PyTorch's own table builder prints for the same events (the file is
    written by tests/gen_profiler_refs.py with torch.autograd.profiler_util)."""
    refs = read_refs()
    assert set(refs) == set(TABLE_CASES)
    for case, (avg_kw, table_kw) in TABLE_CASES.items():
        got = synthetic_events().key_averages(**avg_kw).table(**table_kw)
        assert got == refs[case], case


def test_with_flops_says_it_is_not_implemented():
    with pytest.warns(UserWarning, match="with_flops=True is not implemented"):
        with jitorch.profiler.profile(with_flops=True) as prof:
            jitorch.ones(2, 2) @ jitorch.ones(2, 2)
    assert "FLOPs" not in prof.key_averages().table()
