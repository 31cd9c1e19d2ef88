"""jitorch/_code_cache.py: the code objects of the functions `import jitorch` generates come
from a sealed file in the cache directory after the first process; the served code is what
`compile` makes of the same source; a damaged or foreign file is ignored and rewritten."""
from __future__ import annotations

import glob
import os
import subprocess
import sys


_CHILD = r"""
import marshal, jitorch
from jitorch import _code_cache as c
# every served code object is compile()'s for the same source
src, name = "def f(x) -> int:\n    return x + 1\n", "<t>"
fresh = compile(src, name, "exec", flags=c._FLAGS, dont_inherit=True)
assert marshal.dumps(c.compile_cached(src, name)) == marshal.dumps(fresh)
print("MISSED", c._missed, len(c._used))
"""


def _run(cache):
    env = dict(os.environ, JITORCH_CACHE_DIR=str(cache))
    r = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("MISSED")][-1].split()
    return line[1] == "True", int(line[2])


def test_a_second_process_compiles_none_of_the_generated_functions(tmp_path):
    missed, used = _run(tmp_path)
    assert missed and used > 500  # cold: compiled, then saved
    (path,) = glob.glob(str(tmp_path / "generated-code-*.bin"))
    missed, used = _run(tmp_path)
    assert not missed and used > 500  # warm: every function's code came from the file
    for damage in (lambda b: b[:-7], lambda b: b[:40] + bytes([b[40] ^ 1]) + b[41:],
                   lambda b: b"jitorch-generated-code-1\n" + b"\0" * 32 + b"junk"):
        with open(path, "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(damage(data))
        assert _run(tmp_path)[0]  # ignored: compiled ...
        assert not _run(tmp_path)[0]  # ... and rewritten whole
