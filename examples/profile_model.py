"""Profile a scripted model with `jitorch.profiler`: where the time goes, by op and by source line.

A small convolutional classifier is scripted (`jitorch.jit.script`); its forward marks a region
with `record_function` (inside compiled code it is a marker: a range per call). The loop runs
a few batches under `jitorch.profiler.profile(record_shapes=True, profile_memory=True,
with_stack=True)`, each batch in a "batch" range, with an eager softmax / argmax after the
scripted forward. The first call is profiled apart: it starts the compile (Numba compiles in a
background worker while that call runs interpreted), and the loop is profiled once the compiled
program is ready (`jitorch.jit.wait_compiled()`), so the table shows the compiled program's time,
not the interpreter's. Printed: the first call's compile (its reason and time: the profiler
records every compile), the key averages grouped by the calling source lines (PyTorch's table),
where the Chrome trace went (open it in chrome://tracing or https://ui.perfetto.dev), and which
tier ran the scripted calls (`jitorch.jit.stats()`).

    python examples/profile_model.py [--batches 6] [--outdir DIR]
"""
import argparse
import os
import tempfile

import jitorch
import jitorch.nn.functional as F
from jitorch import nn
from jitorch.profiler import ProfilerActivity, profile, record_function


class Net(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, 3, padding=1)
        self.fc1 = nn.Linear(8 * 8 * 8, 64)
        self.fc2 = nn.Linear(64, classes)

    def forward(self, x):
        x = F.max_pool2d(jitorch.relu(self.conv(x)), 2)
        with jitorch.profiler.record_function("classifier"):
            x = jitorch.flatten(x, 1)
            return self.fc2(jitorch.relu(self.fc1(x)))


def run_batch(model, x):
    logits = model(x)
    return F.softmax(logits, dim=1).argmax(1)


def main(batches: int = 6, batch_size: int = 32, outdir: str | None = None):
    """-> (the table printed, the Chrome trace's path)."""
    jitorch.manual_seed(0)
    model = jitorch.jit.script(Net().eval())
    data = [jitorch.randn(batch_size, 1, 16, 16) for _ in range(batches)]
    with jitorch.no_grad():
        with profile(activities=[ProfilerActivity.CPU]) as first:
            run_batch(model, data[0])  # the first call: its compile
        jitorch.jit.wait_compiled()
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                     profile_memory=True, with_stack=True) as prof:
            for x in data:
                with record_function("batch"):
                    run_batch(model, x)
    for e in first.events():
        if e.name.startswith("compile::"):
            print(f"{e.name}: {e.args['reason']} -> {e.args['result']} in "
                  f"{e.cpu_time_total / 1e3:.1f} ms")
    table = prof.key_averages(group_by_stack_n=2).table(sort_by="self_cpu_time_total",
                                                         row_limit=10)
    print(table)
    outdir = outdir or tempfile.mkdtemp(prefix="jitorch_profile_")
    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(outdir, "profile_model.trace.json")
    prof.export_chrome_trace(path)
    print(f"Chrome trace: {path} ({len(prof.events())} events)")
    print(jitorch.jit.stats().calls_by_tier())
    return table, path


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=6)
    ap.add_argument("--outdir", default=None)
    a = ap.parse_args()
    main(a.batches, outdir=a.outdir)
