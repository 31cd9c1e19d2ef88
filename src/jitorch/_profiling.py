"""The profiler's and autocast's switches, read by the places that act on them (it imports only
`_fork`: anything may read it).

`collector[0]` is the active `jitorch.profiler._collector.Collector`, or None when no profiler
records. The emitting places check it once and do nothing else when it is None: the compile log
(`script/runtime/stats.log_compile`) and `record_function`; eager op dispatch
(`_ops/registry.dispatch`) checks `intercept[0]` instead, the one switch it shares with
autocast (`jitorch._autocast`, whose hook is `autocast_hook[0]` while any thread has CPU
autocast on). Scripted calls are recorded by swapping `ScriptFunction.__call__` while a
collector is active (`_collector.py`), so their call path carries no check at all.
"""
from . import _fork

collector: list = [None]

# What `registry.dispatch` calls first (its one global check): None while neither the profiler
# nor autocast is active; else autocast's hook (which hands on to the profiler) or the
# collector's `op`. `refresh()` recomputes it whenever either of the two changes.
autocast_hook: list = [None]
intercept: list = [None]


def refresh() -> None:
    # under the switch's lock: autocast and the profiler refresh from threads of their own, and
    # the hook and its bit must come from the same reading
    with _slow_lock:
        a, c = autocast_hook[0], collector[0]
        intercept[0] = a if a is not None else (c.op if c is not None else None)
        slow[0] = slow[0] | INTERCEPT if intercept[0] is not None else slow[0] & ~INTERCEPT


# The eager ops' fast path (`_ops/registry._fast_block`) reads one switch, `slow[0]`: 0 while
# nothing it must leave to the general path (`registry.dispatch`) is on, else a mask of what is:
# the intercept above (profiler or autocast), a tensor placed off the CPU (`_device.mark_placed`;
# never cleared), an open forward-AD level (`forward_ad.dual_level`), a dispatch mode on any
# thread (`registry._ModeStack`). Each owner keeps its own switch too, which the general path
# and the rest read; `set_slow` keeps this bit in step with it. One read instead of four: ~60 ns
# of a ~1 us op.
INTERCEPT, PLACED, FORWARD_AD, MODES = 1, 2, 4, 8
slow: list = [0]
_slow_lock = _fork.lock()


def set_slow(bit: int, on: bool) -> None:
    with _slow_lock:
        slow[0] = slow[0] | bit if on else slow[0] & ~bit
