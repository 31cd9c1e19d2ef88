"""`python -m jitorch.jit warmup [--jobs N] [--only NAME,...]`: compile the generic kernel
library into the disk cache (script/runtime/warmup.py), with a progress line per workload.

A module of its own (jitorch.jit is a package) so that `-m` runs it without runpy's warning
about a module imported before it runs (`import jitorch` imports `jitorch.jit`)."""
from __future__ import annotations

import argparse
import json
import sys


def main(argv=None) -> int:
    from ..script.runtime import warmup
    ap = argparse.ArgumentParser(prog="python -m jitorch.jit")
    sub = ap.add_subparsers(dest="command", required=True)
    w = sub.add_parser("warmup", help="compile the generic kernel library into the disk cache")
    w.add_argument("--jobs", type=int, default=None,
                   help="workloads compiled at once, each in its own process (default: cores)")
    w.add_argument("--only", default=None,
                   help=f"comma-separated subset of: {', '.join(warmup.names())}")
    w.add_argument("--child", default=None, help=argparse.SUPPRESS)  # one workload, JSON out
    args = ap.parse_args(argv)
    if args.child is not None:
        print(json.dumps(warmup.warm_one(args.child)), flush=True)
        return 0
    only = [s.strip() for s in args.only.split(",") if s.strip()] if args.only else None
    try:
        times = warmup.warmup(verbose=True, jobs=args.jobs, only=only)
    except ValueError as e:
        ap.error(str(e))
    print(f"jitorch warmup: done, {len(times)} workloads", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
