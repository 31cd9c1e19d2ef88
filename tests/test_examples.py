"""Each example runs, at small size, and reaches what it claims."""
import importlib.util
import pathlib

import pytest

import jitorch
from devices import DEVICES

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_fit_sine_example(capsys):
    final = load("fit_sine").main(steps=2000)
    out = capsys.readouterr().out
    assert "Result: y =" in out
    # PyTorch's own run of this recipe ends near 9 after 2000 steps (from about 1e4-1e5)
    assert final < 30.0


def test_train_mlp_example(capsys):
    # small size: fewer points and epochs than the default run (which reaches > 95%)
    acc = load("train_mlp").main(epochs=6, points=600, batch_size=32, hidden=32, goal=0.7,
                                 scripted=False)
    out = capsys.readouterr().out
    assert out.count("train acc") == 6  # one progress line per epoch
    assert "test accuracy" in out and "same predictions" in out
    assert acc > 0.7


def test_train_mlp_example_scripted(capsys):
    jitorch.jit.reset_stats()  # (the example prints this process's counters: earlier tests' too)
    acc = load("train_mlp").main(epochs=6, points=600, batch_size=32, hidden=32, goal=0.7,
                                 scripted=True)
    out = capsys.readouterr().out
    assert "train step (scripted)" in out and "same predictions" in out
    st = jitorch.jit.stats()
    # what it says ran compiled is what the counters say (the tests compile in the call,
    # JITORCH_COMPILE=sync: every call)
    assert f"; {st.calls_by_tier()}" in out and st.compiled_runs == st.calls > 0
    assert " 0 interpreted" in out and "graph @" in out  # the JIT ran it and shows its IR
    assert acc > 0.7


@pytest.mark.parametrize("device", [d for d in DEVICES if d != "cpu"])
def test_train_mlp_example_on_cuda(capsys, device):
    """`--device cuda` (the cuda tier: JITORCH_CUDA_SIM=1 or a GPU): trains there and says how
    the scripted program ran (the tier and reasons jitorch.jit.stats() gives)."""
    jitorch.jit.reset_stats()
    load("train_mlp").main(epochs=1, points=200, batch_size=32, hidden=16, goal=0.0,
                           scripted=True, device=device)
    out = capsys.readouterr().out
    assert "scripted forward/backward on cuda:0" in out and "ms on cuda:0" in out
    tier = next(ln for ln in out.splitlines() if ln.startswith("mlp_forward on cuda:0: "))
    st = jitorch.jit.stats().functions["mlp_forward"]
    assert tier.split(": ")[1].startswith(st["tier"])
    assert all(r in tier for r in st["reasons"]) and "same predictions" in out


def test_train_char_lstm_example(capsys):
    losses = load("train_char_lstm").main(epochs=3, steps=4, hidden=16, seq=8, batch=4,
                                          sample_len=20)
    out = capsys.readouterr().out
    assert len(losses) == 3 and losses[-1] < losses[0]  # the loss falls
    sample = next(ln for ln in out.splitlines() if ln.startswith("sample:"))
    assert len(eval(sample[len("sample:"):])) == len("Four score") + 20
    assert out.splitlines()[-1] == jitorch.jit.stats().calls_by_tier()


def test_transformer_encoder_example(capsys):
    # small size; the default run (2 layers, d_model 32, 4 epochs, trained scripted) reaches
    # 100% on its test set. Trained eagerly here to save the suite two large compiles (scripted
    # training of an encoder is tests/test_script_attention.py's); saved, loaded and served
    # compiled as in the default run
    acc, served_acc, summary = load("transformer_encoder").main(
        epochs=2, n_train=512, n_test=48, d_model=16, layers=1, batch=32, goal=0.7, eager=True)
    out = capsys.readouterr().out
    assert out.count("epoch") == 2 and "saved" in out
    assert acc > 0.7 and abs(served_acc - acc) < 1e-6  # served answers = in-process ones
    assert summary["done"] == 48 and summary["interpreted"] == {}  # compiled in the server
    # (the tests compile in the call, JITORCH_COMPILE=sync: every request ran compiled)
    assert summary["calls"] == summary["compiled_runs"] == 48
    assert f"server: {summary['tiers']}," in out
