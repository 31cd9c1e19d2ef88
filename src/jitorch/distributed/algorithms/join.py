"""PyTorch's generic join context manager (`torch.distributed.algorithms.join`, 1.10) for
training with uneven inputs: `Join([joinables], enable, throw_on_early_termination, **kw)`.

A rank that ran out of inputs leaves its loop and, in `Join.__exit__`, keeps calling each
joinable's `JoinHook.main_hook` to shadow the collectives the still-active ranks issue in one
iteration, until every rank has joined; then each `post_hook(is_last_joiner)` runs (DDP
broadcasts the final model from a last joiner). Every iteration an active rank's first joinable
calls `Join.notify_join_context`, which all-reduces a one (the joined ranks all-reduce a zero),
so each side learns how many ranks are still active. With `throw_on_early_termination` a joined
rank instead makes every rank raise RuntimeError. The order of these collectives is the
protocol: MPI matches collectives on a communicator by order alone.
"""
from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from typing import NamedTuple

__all__ = ["Join", "JoinHook", "Joinable"]


class JoinHook:
    """Two entry points of the join context: `main_hook()`, run repeatedly while some rank is
    still active (shadowing one iteration's collectives), and `post_hook(is_last_joiner)`, run
    once after every rank joined."""

    def main_hook(self) -> None:
        ...

    def post_hook(self, is_last_joiner: bool) -> None:
        ...


class _JoinConfig(NamedTuple):
    enable: bool
    throw_on_early_termination: bool
    is_first_joinable: bool

    @staticmethod
    def construct_disabled_join_config():
        return _JoinConfig(enable=False, throw_on_early_termination=False,
                           is_first_joinable=False)


class Joinable(ABC):
    """A class taking part in `Join`: implements `join_hook(**kwargs)`, `join_device` and
    `join_process_group`, and calls `Join.notify_join_context(self)` before its per-iteration
    collectives."""

    @abstractmethod
    def __init__(self):
        super().__init__()
        self._join_config = _JoinConfig.construct_disabled_join_config()

    @abstractmethod
    def join_hook(self, **kwargs) -> JoinHook:
        ...

    @property
    @abstractmethod
    def join_device(self):
        ...

    @property
    @abstractmethod
    def join_process_group(self):
        ...


_WARN_THRESHOLD = 1000


class Join:
    """`torch.distributed.algorithms.Join(joinables, enable=True,
    throw_on_early_termination=False, **kwargs)`; `kwargs` go to every `join_hook`."""

    def __init__(self, joinables, enable: bool = True, throw_on_early_termination: bool = False,
                 **kwargs):
        if len(joinables) == 0:
            raise ValueError("The join context manager requires at least one joinable")
        self._joinables = list(joinables)
        self._join_hooks = [j.join_hook(**kwargs) for j in self._joinables]
        self._enable = enable
        self._throw_on_early_termination = throw_on_early_termination
        for i, j in enumerate(self._joinables):
            j._join_config = _JoinConfig(enable=enable,
                                         throw_on_early_termination=throw_on_early_termination,
                                         is_first_joinable=i == 0)
        group = device = None
        for j in self._joinables:
            if group is None:
                group = j.join_process_group
            elif group is not j.join_process_group:
                raise ValueError("Using join context manager with multiple process groups")
            if device is None:
                device = j.join_device
        from .. import distributed_c10d as c10d
        self._process_group = group
        self._rank = c10d.get_rank(group)
        self._device = device

    def __enter__(self):
        return self

    def __exit__(self, type, value, traceback):  # noqa: A002 - the protocol's names
        if not self._enable or type:
            return  # an exception propagates as is; the peers' deadline ends the job
        is_last_joiner = True
        i = 0
        while True:
            if i > _WARN_THRESHOLD:
                warnings.warn(
                    f"Detected uneven input skew of greater than {_WARN_THRESHOLD}. This means "
                    f"that rank {self._rank} has at least {_WARN_THRESHOLD} fewer inputs than "
                    f"other currently-active ranks. This level of skew could lead to "
                    f"performance degradation during training.", stacklevel=2)
            if self._all_reduce_flag(0.0) == 0:  # shadows the active ranks' notify
                break
            if self._throw_on_early_termination:
                self._all_reduce_flag(1.0)  # answers the active ranks' termination check
                raise RuntimeError(f"Rank {self._rank} exhausted all inputs.")
            for hook in self._join_hooks:
                hook.main_hook()
            is_last_joiner = False
            i += 1
        for hook in self._join_hooks:
            hook.post_hook(is_last_joiner)

    def _all_reduce_flag(self, value: float) -> float:
        return _flag(value, self._process_group, async_op=False)[0]

    @staticmethod
    def notify_join_context(joinable: Joinable):
        """Called by an active rank's joinable at the start of an iteration: tells the joined
        ranks it is still active (an async all-reduce of one, returned as a Work whose result
        counts the active ranks) and, with `throw_on_early_termination`, raises RuntimeError
        on every rank once one has joined. None for a joinable that is not the first or when
        join is disabled."""
        if not hasattr(joinable, "_join_config"):
            raise AssertionError(f"Check that the {type(joinable)} constructor calls the "
                                 f"``Joinable`` constructor")
        config = joinable._join_config
        if not config.is_first_joinable or not config.enable:
            return None
        group = joinable.join_process_group
        _, work = _flag(1.0, group, async_op=True)
        if config.throw_on_early_termination:
            should_throw, _ = _flag(0.0, group, async_op=False)
            if should_throw:
                work.wait()  # matched already (by the joined rank's count), so no request leaks
                raise RuntimeError("Detected at least one rank that exhausted inputs. Throwing "
                                   "across all ranks.")
        return work


def _flag(value: float, group, async_op: bool):
    """All-reduce (SUM) a one-element float tensor holding `value`: (the sum, or None while an
    async one is in flight; its Work, or None)."""
    from ... import full
    from .. import distributed_c10d as c10d
    t = full((1,), value)
    work = c10d.all_reduce(t, group=group, async_op=async_op)
    return (None if async_op else t.item()), work
