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


@pytest.fixture(params=DEVICES)
def device(request):
    """Each device under test by name ("cpu", "cuda"), as PyTorch's device-type tests."""
    return request.param


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(header())  # also under -q, where the header is not shown
