"""What a ScriptFunction shows about itself: `code` (the generated program of its last
specialisation, or why it runs interpreted), `stats` (its specialisations and tiers),
`wait_compiled`, and `graph_for` (the optimised graph it runs for given arguments). A mixin of
`runtime/functions.ScriptFunction`, which owns the call path and the cache these read.
"""
from __future__ import annotations

from ..._tensor import Tensor
from .. import ir
from . import tiers


class FunctionInfo:
    """Introspection of a ScriptFunction (reads its `_cache`, `_last`, `python_ops`)."""

    @property
    def code(self) -> str:
        note = ""
        if self.python_ops:
            names = ", ".join(getattr(f, "__qualname__", repr(f)) for f in self.python_ops)
            note = (f"# note: this program calls Python ({names}): it takes the GIL for "
                    "those calls\n")
        return note + self._code()

    def _code(self) -> str:
        e = self._last
        if e is None:
            return ("# no specialisation yet: call the function (or use graph_for(*args)) to "
                    "generate code")
        if e.autodiff is not None:
            return e.autodiff.source()
        if e.pending is not None:
            return f"# runs interpreted while the compile worker compiles it\n{e.source}"
        if e.kind == "interpreted":
            return f"# runs interpreted: {e.reason}\n"
        return e.source

    @property
    def stats(self):
        return {"specialisations": len(self._cache),
                "interpreted": {str(k): e.reason for k, e in self._cache.items()
                                if e.kind == "interpreted" and e.pending is None},
                **tiers.function_report(self)}

    def _entries(self):
        """The programs of every specialisation (an autodiff pair's forward and backward
        entries included), each once."""
        seen = set()
        for e in list(self._cache.values()):
            ad = e.autodiff
            for p in ([e] if ad is None else
                      [ad.fwd, *list(ad.fwds.values()), *list(ad.bwd.values())]):
                p = getattr(p, "entry", p)  # autodiff_rt._LazyFirst wraps its entry
                if id(p) not in seen:
                    seen.add(id(p))
                    yield p

    def wait_compiled(self, timeout: float | None = None) -> bool:
        """Wait until no program of this function is compiling in the background (each is
        compiled, or interpreted with its reason in `jitorch.jit.stats()`); the next call runs
        the compiled program. False if `timeout` seconds passed first. Programs not started
        yet (a backward before the first `backward()`) are not waited for."""
        return tiers.wait(list(self._entries()), timeout)

    def graph_for(self, *args, **kwargs) -> ir.Graph:
        """The optimised graph this function runs for these arguments (compiles if needed)."""
        a = self._bind(args, dict(kwargs)) if kwargs or len(args) != len(self._names) \
            else list(args)
        key, _ = self._key(list(a))
        if key not in self._cache:
            if self._mutated:  # compiling must not write to the caller's tensors
                a = [x.detach().clone().requires_grad_(x._requires_grad)
                     if isinstance(x, Tensor) else
                     [e.clone() for e in x] if isinstance(x, list) else x for x in a]
                self(*a)
            else:
                self(*args, **kwargs)
        return self._cache[key].graph
