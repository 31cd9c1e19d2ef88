"""The compiler examples (examples/quickstart.py, custom_rnn.py, serve_threads.py) each
run at small size and reach what they claim: scripted results equal eager, a new size adds no
compile, N threads serve the scripted model."""
import importlib.util
import pathlib

import jitorch

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def compiles():
    s = jitorch.jit.stats()
    return s["compiles"] if isinstance(s, dict) else s.compiles


def test_quickstart(capsys):
    mod = load("quickstart")
    err = mod.main(n=16)
    out = capsys.readouterr().out
    assert err < 1e-5
    assert "graph (as scripted):" in out and "tanh" in out
    assert "generated code" in out
    assert "same program (0 new compiles)" in out
    assert out.splitlines()[-1] == jitorch.jit.stats().calls_by_tier()  # what ran the calls
    # another new size: still no compile
    before = compiles()
    y = mod.gelu_bias(jitorch.randn(5, 64), jitorch.randn(64))
    assert tuple(y.shape) == (5, 64)
    assert compiles() == before


def test_custom_rnn(capsys):
    mod = load("custom_rnn")
    err = mod.main(steps=4, batch=2, inp=8, hidden=8, reps=2)
    out = capsys.readouterr().out
    assert err < 1e-4
    assert "ms/sequence" in out
    line = next(ln for ln in out.splitlines() if ln.startswith("new sizes"))
    before, after = line.rsplit(" ", 1)[1].split("/")
    assert before == after  # a longer sequence / bigger batch reuses the program
    assert out.splitlines()[-1] == jitorch.jit.stats().calls_by_tier()


def test_serve_threads(capsys):
    mod = load("serve_threads")
    res = mod.main(batch=4, seconds=0.1, thread_counts=(1, 2))
    out = capsys.readouterr().out
    assert set(res) == {1, 2} and all(v > 0 for v in res.values())
    assert "threads 2:" in out
    assert out.splitlines()[-1] == jitorch.jit.stats().calls_by_tier()
    # every thread got the right answer: compare one scripted call with eager
    x = jitorch.randn(3, 784)
    params = mod.make_params()
    ref = jitorch.clamp(x @ params[0] + params[1], min=0.0)
    ref = jitorch.clamp(ref @ params[2] + params[3], min=0.0) @ params[4] + params[5]
    assert (mod.mlp(x, *params) - ref).abs().max().item() < 1e-4


def test_fft_filter(capsys):
    r = load("fft_filter").main(n=1024, batch=4, cutoff=40.0)
    out = capsys.readouterr().out
    assert not r["reasons"]  # rfft, the masked spectrum and irfft all compiled
    assert "np.fft.rfftn" in out and "np.fft.irfftn" in out
    assert r["diff"] < 1e-5
    assert r["after"] < r["before"] / 3  # most of the noise is gone
    st = r["stats"]  # (taken after the example's calls: it resets the counters first)
    assert st.calls == 2 and st.compiled_runs >= 1  # the second call ran compiled
    assert f"; {st.calls_by_tier()}" in out
    assert jitorch.jit.stats().calls_by_tier() == st.calls_by_tier()
