import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
# a first call compiles in the call (tests assert on compiled programs and compile counts);
# tests/test_compile_background.py switches the compile worker on where it tests it
os.environ["JITORCH_COMPILE"] = "sync"

from devices import DEVICES, header  # noqa: E402  (imports jitorch, after the settings above)


def pytest_report_header(config):
    return header()


@pytest.fixture(params=DEVICES)
def device(request):
    """Each device under test by name ("cpu", "cuda"), as PyTorch's device-type tests."""
    return request.param


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(header())  # also under -q, where the header is not shown
