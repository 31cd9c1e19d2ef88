"""Each example runs, at small size, and reaches what it claims."""
import importlib.util
import pathlib

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_quickstart_fits_sine(capsys):
    final = load("quickstart").main(steps=300)
    out = capsys.readouterr().out
    assert "Result: y =" in out
    # the cubic fit of sin on [-pi, pi] by this recipe goes below 100 within a few hundred steps
    assert final < 100.0
