"""`torch.cuda.Stream`, `Event`, `stream(...)`, `current_stream`, `default_stream`.

On a GPU each object wraps CuPy's (`native`), so work queued by CuPy (and by kernels launched on
its current stream) follows them. On the simulator work runs synchronously on the host, so a
stream is a host-side object honouring the API (synchronize returns at once, `query()` is True)
and an Event records the host clock: `elapsed_time` is measured, not invented.
"""
from __future__ import annotations

import threading
import time

from .._device import as_device, cuda_backend, current_index

__all__ = ["Stream", "Event", "stream", "current_stream", "default_stream", "set_stream",
           "StreamContext"]


def _cupy():
    be = cuda_backend()
    return getattr(be, "cp", None)


def _device_index(device) -> int:
    if cuda_backend() is None:
        raise AssertionError("Torch not compiled with CUDA enabled")
    if device is None:
        return current_index()
    return device if isinstance(device, int) else as_device(device).index


class Stream:
    """A queue of device work. `Stream()` makes a new one on the current (or given) device."""

    def __init__(self, device=None, priority=0, _native=None, _default=False, **kwargs):
        if cuda_backend() is None:
            raise RuntimeError("torch.cuda.Stream requires CUDA support")
        self.device_index = _device_index(device)
        self.priority = priority
        cp = _cupy()
        if cp is not None and _native is None:
            with cp.cuda.Device(self.device_index):
                _native = cp.cuda.Stream.null if _default else cp.cuda.Stream(non_blocking=True)
        self.native = _native
        self._default = _default

    @property
    def device(self):
        return as_device(self.device_index)

    @property
    def cuda_stream(self) -> int:
        """The raw `cudaStream_t` (0: the default stream; the simulator's streams: their id)."""
        if self.native is not None:
            return self.native.ptr
        return 0 if self._default else id(self)

    def synchronize(self) -> None:
        if self.native is not None:
            self.native.synchronize()

    def query(self) -> bool:
        return True if self.native is None else self.native.done

    def wait_event(self, event: "Event") -> None:
        if self.native is not None and event.native is not None:
            self.native.wait_event(event.native)

    def wait_stream(self, stream: "Stream") -> None:
        self.wait_event(stream.record_event())

    def record_event(self, event: "Event | None" = None) -> "Event":
        event = Event() if event is None else event
        event.record(self)
        return event

    def __eq__(self, other):
        return (isinstance(other, Stream) and self.device_index == other.device_index
                and self.cuda_stream == other.cuda_stream)

    def __hash__(self):
        return hash((self.device_index, self.cuda_stream))

    def __repr__(self):
        return (f"<torch.cuda.Stream device={self.device} cuda_stream={hex(self.cuda_stream)}>")


class Event:
    """A marker in a stream: `record`, `wait`, `query`, `synchronize`, `elapsed_time` (ms)."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        if cuda_backend() is None:
            raise RuntimeError("Tried to instantiate dummy base class Event")
        self.enable_timing = enable_timing
        self.native = None
        cp = _cupy()
        if cp is not None:
            self.native = cp.cuda.Event(block=blocking, disable_timing=not enable_timing,
                                        interprocess=interprocess)
        self._time = None  # the simulator's host clock at record()

    def record(self, stream: Stream | None = None) -> None:
        stream = current_stream() if stream is None else stream
        if self.native is not None:
            self.native.record(stream.native)
        self._time = time.perf_counter()

    def wait(self, stream: Stream | None = None) -> None:
        (current_stream() if stream is None else stream).wait_event(self)

    def query(self) -> bool:
        return True if self.native is None else self.native.done

    def synchronize(self) -> None:
        if self.native is not None:
            self.native.synchronize()

    def elapsed_time(self, end_event: "Event") -> float:
        """Milliseconds from this event's record to `end_event`'s."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument "
                               "'enable_timing=True'.")
        if self._time is None or end_event._time is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        if self.native is not None:
            return float(_cupy().cuda.get_elapsed_time(self.native, end_event.native))
        return (end_event._time - self._time) * 1000.0

    def __repr__(self):
        return f"<torch.cuda.Event {'recorded' if self._time is not None else 'uninitialized'}>"


class _Current(threading.local):
    def __init__(self):
        self.streams = {}  # device index -> the thread's current Stream


_current = _Current()
_defaults: dict = {}


def default_stream(device=None) -> Stream:
    i = _device_index(device)
    s = _defaults.get(i)
    if s is None:
        s = _defaults[i] = Stream(i, _default=True)
    return s


def current_stream(device=None) -> Stream:
    i = _device_index(device)
    return _current.streams.get(i) or default_stream(i)


def set_stream(stream: Stream) -> None:
    if stream is not None:
        _current.streams[stream.device_index] = stream


class StreamContext:
    """`with torch.cuda.stream(s):` makes `s` current on its device (None: a no-op), and CuPy's
    current stream on a GPU, so queued work follows it."""

    def __init__(self, stream: Stream | None):
        self.stream = stream
        self._prev = None

    def __enter__(self):
        s = self.stream
        if s is None:
            return None
        self._prev = _current.streams.get(s.device_index)
        _current.streams[s.device_index] = s
        if s.native is not None:
            s.native.__enter__()
        return s

    def __exit__(self, *exc):
        s = self.stream
        if s is None:
            return False
        if s.native is not None:
            s.native.__exit__(*exc)
        if self._prev is None:
            _current.streams.pop(s.device_index, None)
        else:
            _current.streams[s.device_index] = self._prev
        return False


def stream(stream: Stream | None) -> StreamContext:
    return StreamContext(stream)
