"""Process-wide settings that change what code computes, and the one rule compiled code follows
for them.

A scripted function's program is built once per specialisation key (script/runtime/keys.py) and
may bake a process-wide setting in when it is built: the default dtype types `int_tensor * 2.5`,
`/`, `zeros(3)`, `full(.., 1.5)` and `linspace`; deterministic mode decides `empty`'s fill and
that programs compile in the call. Such a setting is *registered* here (`register(name, getter)`)
and its public setters are wrapped by `setter`: a call that changes any registered value makes
every scripted function forget its specialisations (`stats.forget_specialisations`), so the next
call rebuilds them under the new value (programs that come out the same load from the disk
cache). Eager code, the interpreted tier and compiled programs then agree whatever the compile
timing, and the per-call path pays nothing (the key is not widened).

Per-thread state is not registered: grad mode is part of each specialisation key (a tensor's
requires_grad counts only while grad mode is on), and a scripted call inside an enabled autocast
region runs interpreted, with eager autocast's casts (runtime/functions.py `_autocast_call`).
tests/test_settings.py changes every registered setting, and those two, between two calls of one
compiled function and checks that the result follows eager; it also checks that each public
`set_*`/`use_*` function of jitorch is a registered setter or is listed there with its reason.
"""
from __future__ import annotations

import functools
import sys
from typing import Callable

from . import _fork

_getters: dict = {}  # name -> function returning the setting's current value
_lock = _fork.rlock()  # reentrant: one setter may call another
epoch = [0]  # bumped on every change (a build started under an older epoch is not kept)
_on_change: list = []  # callbacks of tables built under the settings (on_change)


def register(name: str, getter: Callable[[], object]) -> None:
    """Declare a process-wide setting that compiled programs may depend on."""
    _getters[name] = getter


def on_change(callback: Callable[[], None]) -> None:
    """Call `callback()` whenever a registered setting changes (after every scripted function
    forgot its specialisations): for a table of compiled programs kept outside a
    ScriptFunction (_ops/_row_programs.py)."""
    _on_change.append(callback)


def names() -> tuple:
    return tuple(_getters)


def snapshot() -> tuple:
    """The current value of every registered setting."""
    return tuple(g() for g in _getters.values())


def setter(fn: Callable) -> Callable:
    """Wrap a public setter of a registered setting: when a call changes what `snapshot()`
    reads, compiled specialisations are forgotten (`changed`)."""
    @functools.wraps(fn)
    def set_and_forget(*args, **kwargs):
        with _lock:  # two threads setting at once: each compares against its own before
            before = snapshot()
            r = fn(*args, **kwargs)
            if snapshot() != before:
                changed()
        return r
    set_and_forget.__jitorch_setting__ = True
    return set_and_forget


def is_setter(fn) -> bool:
    return getattr(fn, "__jitorch_setting__", False)


def changed() -> None:
    """A registered setting changed: every scripted function forgets its specialisations, and
    each `on_change` callback runs."""
    epoch[0] += 1
    stats = sys.modules.get("jitorch.script.runtime.stats")  # (no scripted function yet: none)
    if stats is not None:
        stats.forget_specialisations()
    for callback in _on_change:
        callback()
