"""`jitorch.torch_version.TorchVersion`: a version string that compares as a version, as
PyTorch's `torch.__version__` does (`__version__ >= "1.12"`, `< (2, 0)`, against
`packaging.version.Version`)."""
from __future__ import annotations

import re

__all__ = ["TorchVersion"]

_RELEASE = re.compile(r"^\s*v?(\d+(?:\.\d+)*)(.*)$")


def _key(v) -> tuple:
    """PEP 440's order over what version strings use: the release numbers (zero-padded), then
    a pre-/dev release before the final one, then a local label ("+cpu") after none."""
    if isinstance(v, (tuple, list)):
        v = ".".join(str(x) for x in v)
    elif not isinstance(v, str):
        v = str(v)  # packaging.version.Version and the like print as their version
    base, _, local = str(v).partition("+")
    m = _RELEASE.match(base)
    if m is None:
        raise ValueError(f"Invalid version: '{v}'")
    nums = tuple(int(x) for x in m.group(1).split("."))
    while len(nums) > 1 and nums[-1] == 0:
        nums = nums[:-1]
    rest = m.group(2).lstrip(".-_").lower()
    final = 0 if rest.startswith(("a", "b", "rc", "c", "dev", "pre")) else 1
    label = tuple((1, int(p), "") if p.isdigit() else (0, 0, p)
                  for p in re.split(r"[._-]", local.lower())) if local else ()
    return nums, final, rest if not final else "", label


class TorchVersion(str):
    """A str whose comparisons (==, <, <=, >, >=) compare versions, not characters."""

    def _cmp(self, other, op):
        try:
            a, b = _key(self), _key(other)
        except (ValueError, TypeError):
            return NotImplemented
        return op(a, b)

    def __lt__(self, other):
        return self._cmp(other, lambda a, b: a < b)

    def __le__(self, other):
        return self._cmp(other, lambda a, b: a <= b)

    def __gt__(self, other):
        return self._cmp(other, lambda a, b: a > b)

    def __ge__(self, other):
        return self._cmp(other, lambda a, b: a >= b)

    def __eq__(self, other):
        r = self._cmp(other, lambda a, b: a == b)
        return str.__eq__(self, other) if r is NotImplemented else r

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = str.__hash__
