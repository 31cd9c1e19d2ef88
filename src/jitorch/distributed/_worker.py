"""The per-rank wrapper `jitorch.distributed.run` starts under mpiexec:
`python -m jitorch.distributed._worker [-m] script.py args...`.

Owns what a rank does around the user's script: it sets the variables PyTorch scripts read
(RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, ROLE_RANK, MASTER_ADDR,
MASTER_PORT), computed from MPI itself (COMM_WORLD and its shared-memory split) so they are the
same under MPICH and Open MPI; runs the script with runpy as `__main__`; and on an exception or
a non-zero `sys.exit` aborts the whole job (MPI_Abort, then os._exit), since otherwise the other
ranks wait for this one forever. A rank whose script returns writes `rank<N>.ok` into
$JITORCH_RUN_MARKERS: mpiexec (MPICH) exits 0 when a rank leaves early with `os._exit(0)`, so the
launcher counts these markers rather than trusting the exit code.
"""
from __future__ import annotations

import os
import runpy
import socket
import sys
import traceback

from ._work import abort_job

MARKERS_ENV = "JITORCH_RUN_MARKERS"


def marker_path(directory: str, rank: int) -> str:
    return os.path.join(directory, f"rank{rank}.ok")


def _set_env(world) -> None:
    from mpi4py import MPI
    rank, size = world.Get_rank(), world.Get_size()
    local = world.Split_type(MPI.COMM_TYPE_SHARED, key=rank)
    # one leader per node (its local rank 0); a node's rank is its leader's order among leaders
    leaders = world.allgather(rank if local.Get_rank() == 0 else None)
    leaders = [r for r in leaders if r is not None]
    my_leader = local.bcast(rank, root=0)
    master = world.bcast(socket.gethostname(), root=0)
    os.environ.update({
        "RANK": str(rank), "WORLD_SIZE": str(size),
        "LOCAL_RANK": str(local.Get_rank()), "LOCAL_WORLD_SIZE": str(local.Get_size()),
        "GROUP_RANK": str(leaders.index(my_leader)), "ROLE_RANK": str(rank),
        "ROLE_WORLD_SIZE": str(size),
        "MASTER_ADDR": os.environ.get("MASTER_ADDR", master),
        "MASTER_PORT": os.environ.get("MASTER_PORT", "29500"),
    })
    local.Free()


def main(argv=None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    as_module = bool(argv) and argv[0] in ("-m", "--module")
    if as_module:
        argv = argv[1:]
    if not argv:
        sys.stderr.write("usage: python -m jitorch.distributed._worker [-m] script.py "
                         "[args...]\n")
        os._exit(2)
    from mpi4py import MPI
    world = MPI.COMM_WORLD
    _set_env(world)
    target, sys.argv = argv[0], argv
    try:
        if as_module:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
            runpy.run_path(target, run_name="__main__")
    except SystemExit as e:
        code = e.code
        if code not in (None, 0):
            if not isinstance(code, int):
                sys.stderr.write(f"{code}\n")
                code = 1
            sys.stderr.write(f"jitorch.distributed.run: rank {world.Get_rank()} exited with "
                             f"code {code}; aborting the job\n")
            abort_job(code)
    except BaseException:  # noqa: BLE001 - any failure must take the whole job down
        traceback.print_exc()
        sys.stderr.write(f"jitorch.distributed.run: rank {world.Get_rank()} failed; aborting "
                         f"the job\n")
        abort_job(1)
    directory = os.environ.get(MARKERS_ENV)
    if directory:
        with open(marker_path(directory, world.Get_rank()), "w") as f:
            f.write("ok\n")


if __name__ == "__main__":
    main()
