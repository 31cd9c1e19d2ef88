"""examples/profile_model.py runs and writes what it says; train_mlp.py logs to TensorBoard."""
import json
import re

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import jitorch

from test_examples import load


def test_profile_model_example(capsys, tmp_path):
    table, path = load("profile_model").main(batches=3, batch_size=4, outdir=str(tmp_path))
    out = capsys.readouterr().out
    assert "Source Location" in table and "Self CPU time total:" in table
    assert "profile_model.py(" in table  # grouped by the example's own source lines
    assert f"Chrome trace: {path}" in out
    names = [e["name"] for e in json.loads(open(path).read())["traceEvents"] if e["ph"] == "X"]
    assert names.count("script::forward") == 3 and names.count("batch") == 3
    assert names.count("classifier") == 3  # the record_function marker inside scripted code
    assert any(n.startswith("aten::") for n in names)
    assert out.splitlines()[-1] == jitorch.jit.stats().calls_by_tier()
    assert re.search(r"^compile::forward: first call -> ", out, re.M)  # the first call's


def test_train_mlp_logs_to_tensorboard(capsys, tmp_path):
    load("train_mlp").main(epochs=2, points=300, batch_size=32, hidden=16, goal=0.0,
                           scripted=False, logdir=str(tmp_path))
    out = capsys.readouterr().out
    assert re.search(r"TensorBoard log: .+ \(tensorboard --logdir", out)
    acc = EventAccumulator(str(tmp_path))
    acc.Reload()
    loss = acc.Scalars("loss/train")
    assert [e.step for e in loss] == [1, 2] and all(e.value > 0 for e in loss)
    assert len(acc.Scalars("accuracy/test")) == 1
