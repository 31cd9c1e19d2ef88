"""`rpc.functions.async_execution`: a callee that answers later.

A function decorated with it returns a `jitorch.futures.Future`; the agent answers the call
when that future completes, and the pool thread that ran the function is free meanwhile (to
serve the nested calls the future may wait on)."""
from __future__ import annotations

import functools

__all__ = ["async_execution"]


def async_execution(fn):
    """Mark `fn` (a module-level function) as returning a Future the RPC answer waits for."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    wrapper._wrapped_async_rpc_function = fn
    return wrapper
