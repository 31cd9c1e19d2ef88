import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
# a first call compiles in the call (tests assert on compiled programs and compile counts);
# tests/test_compile_background.py switches the compile worker on where it tests it
os.environ["JITORCH_COMPILE"] = "sync"
# eager nn.RNN/LSTM/GRU calls run a compiled whole-sequence function (nn/modules/
# _eager_compiled.py), a forward and backward compile per configuration: the suite's layer tests
# run the eager loop; tests/test_eager_compiled_layers.py switches it on where it tests it
os.environ.setdefault("JITORCH_EAGER_COMPILED_LAYERS", "0")

from devices import DEVICES, header  # noqa: E402  (imports jitorch, after the settings above)


def pytest_report_header(config):
    return header()


def pytest_addoption(parser):
    parser.addoption("--no-cpu-cases", action="store_true",
                     help="leave out the cases parametrised on the cpu device and not on cuda "
                          "(the simulator tier's process, tests/test_cuda_sim_tier.py: they "
                          "ran in the suite's own)")


def pytest_configure(config):
    config.addinivalue_line("markers", "first: a test of minutes (a process of its own), run "
                            "before the others")


def _cpu_case(item) -> bool:
    values = [v for v in getattr(getattr(item, "callspec", None), "params", {}).values()
              if isinstance(v, str)]
    return "cpu" in values and not any(v.startswith("cuda") for v in values)


def pytest_collection_modifyitems(config, items):
    """The tests marked `first` (the CUDA tiers: minutes each) run first: under pytest-xdist
    (`-n auto`, load scheduling) a long test that starts late in the run leaves the other
    worker idle at its end; started at once, the other tests are shared out around it. The
    sort is stable: the other tests keep their order. With --no-cpu-cases, the cpu cases are
    deselected."""
    if config.getoption("no_cpu_cases"):
        cpu = [item for item in items if _cpu_case(item)]
        if cpu:
            config.hook.pytest_deselected(items=cpu)
            items[:] = [item for item in items if not _cpu_case(item)]
    items.sort(key=lambda item: item.get_closest_marker("first") is None)


@pytest.fixture(params=DEVICES)
def device(request):
    """Each device under test by name ("cpu", "cuda"), as PyTorch's device-type tests."""
    return request.param


@pytest.fixture(scope="module")
def module_cache_dir(tmp_path_factory):
    """JITORCH_CACHE_DIR pointed at a directory of the test module's own (what it compiles
    once, its later tests load), restored afterwards."""
    d = tmp_path_factory.mktemp("cache")
    old = os.environ.get("JITORCH_CACHE_DIR")
    os.environ["JITORCH_CACHE_DIR"] = str(d)
    yield d
    if old is None:
        del os.environ["JITORCH_CACHE_DIR"]
    else:
        os.environ["JITORCH_CACHE_DIR"] = old


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(header())  # also under -q, where the header is not shown
