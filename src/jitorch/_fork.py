"""Process-global state across `os.fork`: every lock of jitorch, and the hooks that re-create
what a forked child cannot use.

Owns `lock()`, `rlock()`, `event()` and `condition()`, the only way jitorch makes a
synchronisation object (tests/test_fork_safety.py checks the source for any other), and
`in_child(fn)`, the registry of what a forked child re-creates.

Why: `os.fork` copies memory but only the thread that called it. A lock another thread held at
that moment stays held in the child for ever (the holder does not exist there), so the child's
first compile, module load or pool submit would hang; and objects that own threads (the
`jit.fork` pool, the compile worker's queue thread and pipes) are shells without them. Forks
are ordinary for a library like this one: DataLoader workers, gunicorn's pre-fork workers,
`multiprocessing` with the "fork" start method.

In the child, first every lock made here is released (re-initialised in place, so every
reference to it sees a free lock; an event keeps whether it is set, a condition forgets the
parent's waiters), then the `in_child` hooks run in registration order and
re-create the state that owned threads or handles. Releasing a lock is safe for jitorch's
state because every structure it guards is published only complete (a module once its code ran,
a specialisation once built, a pool once made): what the vanished holder left half-done is
simply not there, and the child builds it again. State that records work in progress on some
thread (the frontend's set of functions being compiled) is reset by a hook. `subprocess` (fork + exec in C) runs no hooks
and needs none.
"""
from __future__ import annotations

import os
import sys
import threading
import weakref

_registry_lock = threading.Lock()  # (re-initialised first in the child, see _after_fork)
_locks: "weakref.WeakSet" = weakref.WeakSet()
_hooks: list = []


def _registered(obj):
    with _registry_lock:
        _locks.add(obj)
    return obj


def lock() -> threading.Lock:
    """A `threading.Lock` that a forked child gets released."""
    return _registered(threading.Lock())


def rlock() -> threading.RLock:
    """A `threading.RLock` that a forked child gets released."""
    return _registered(threading.RLock())


def event() -> threading.Event:
    """A `threading.Event` whose internal lock a forked child gets released."""
    return _registered(threading.Event())


def condition(lk=None) -> threading.Condition:
    """A `threading.Condition` (on `lk`, a lock made here, or a new one) that a forked child
    gets released, without the parent's waiting threads."""
    return _registered(threading.Condition(lk if lk is not None else lock()))


def in_child(fn):
    """Register `fn()` to run in every forked child, after the locks are released (usable as
    a decorator; returns `fn`). Hooks run in registration order, i.e. import order."""
    _hooks.append(fn)
    return fn


def _after_fork() -> None:
    _registry_lock._at_fork_reinit()
    for lk in list(_locks):
        lk._at_fork_reinit()
    for fn in list(_hooks):
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - one broken hook must not break the others
            print(f"jitorch: after fork, {getattr(fn, '__qualname__', fn)} failed: "
                  f"{type(e).__name__}: {e}", file=sys.stderr)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
