"""`JITORCH_LOG`: which kinds of log line are on (compile, ...); read on each call, so tests
and users can switch it at run time."""
from __future__ import annotations

import os


def log_enabled(kind: str = "compile") -> bool:
    flags = os.environ.get("JITORCH_LOG", "")
    return kind in {f.strip() for f in flags.split(",")} or flags.strip() == "all"
