"""`jitorch.jit.warmup` and `python -m jitorch.jit warmup` (issue 17 item 7): the command runs
without runpy's warning, validates its workloads, reports progress per workload, and runs the
workloads in parallel processes whose failures are reported with the child's error. (Compiling
the real library takes minutes: tests use a tiny workload in process, and the child protocol
with a failing child.)"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

import jitorch
from jitorch.script.runtime import warmup

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def _run(*args):
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-m", "jitorch.jit",
                           *args], capture_output=True, text=True, env=env, timeout=300)


def test_the_command_runs_without_runpys_warning_and_checks_its_arguments():
    r = _run("--help")
    assert r.returncode == 0 and "warmup" in r.stdout, r.stderr
    assert "RuntimeWarning" not in r.stderr
    r = _run("warmup", "--only", "mlp,nope")
    assert r.returncode == 2 and "unknown warmup workload 'nope'" in r.stderr
    assert "mlp, cnn, encoder" in r.stderr


def test_unknown_workloads_raise_valueerror():
    with pytest.raises(ValueError, match="unknown warmup workload 'rnn'"):
        jitorch.jit.warmup(only=["rnn"])


def _models(name):
    (build,) = [b for n, b in warmup._workloads() if n == name]
    return build()


def test_an_lstm_workload_warms_the_recurrent_kernels():
    """The library has an RNN workload: an nn.LSTM under a Linear and cross entropy (a new LSTM
    model after warmup compiled 1 kernel instead of 30), and the cell written out (its own
    fused gate kernels), whose loss is its final state's sum. Checked eagerly here: compiling
    them is the warmup's business."""
    (lstm, x, y), (cell, cx, h0, loss_of) = _models("lstm")
    assert any(isinstance(m, jitorch.nn.LSTM) for m in lstm.modules())
    loss = lstm(x, y)
    assert loss.dim() == 0 and bool(loss.isfinite())
    assert not any(isinstance(m, jitorch.nn.LSTM) for m in cell.modules())
    h, c = cell(cx, h0)
    assert h.shape == c.shape == h0.shape and bool(loss_of((h, c)).isfinite())


def test_the_encoder_workload_has_a_mean_pooled_classifier():
    """A sequence classifier (the mean over positions, then a head) has kernels of its own:
    the mean's, and the last layer norm's backward fused with the mean's."""
    (tokens, x, y), (pooled, px, py) = _models("encoder")
    assert tokens(x, y).dim() == 0 and y.dim() == 2 and py.dim() == 1
    assert any(isinstance(m, jitorch.nn.TransformerEncoder) for m in pooled.modules())
    assert bool(pooled(px, py).isfinite())


def test_a_workload_runs_here_with_a_progress_line(monkeypatch, capsys):
    nn = jitorch.nn

    def tiny():
        class Loss(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(3, 2)

            def forward(self, x, y):
                return nn.functional.cross_entropy(self.lin(x), y)
        return [(Loss(), jitorch.randn(4, 3), jitorch.randint(0, 2, (4,)))]

    real = warmup._workloads
    monkeypatch.setattr(warmup, "_workloads", lambda: [("tiny", tiny)] + real())
    times = jitorch.jit.warmup(verbose=True, jobs=1, only=["tiny"])
    assert list(times) == ["tiny"] and times["tiny"] > 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("jitorch warmup [1/1] tiny: ") and "kernels compiled" in line


def test_a_failing_child_is_reported_with_its_error():
    with pytest.raises(RuntimeError, match=r"workload nope failed \(exit 1\)") as e:
        warmup._in_processes(["nope"], jobs=2, verbose=False)
    assert "unknown warmup workload 'nope'" in str(e.value)
