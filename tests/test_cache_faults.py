"""The disk cache cannot lie (script/kernels/cache.py, script/kernels/numba_cache.py): faults in the
cache directory give correct, eager-equal results, never an error or the interpreter for good.

Faults that matter to a later process run in fresh interpreters against a tmp_path cache: one
child fills the cache with one small program per fault, the test damages each program's files
differently (edited, truncated, junk, unreadable, FIFO, symlink `.py`; truncated, junk, swapped
Numba `.nbc`/`.nbi`), a second child must run every program correctly (and say so in
JITORCH_LOG=compile), and a third must load every program from disk with nothing to repair.
Read-only and full directories, a directory removed mid-compile and two processes compiling at
once are separate tests.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap

import pytest

import jitorch
from jitorch.script.kernels import cache

SRC_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(jitorch.__file__)))
X = [0.0, 1.0, 2.0, 3.0, 4.0]

# Each runs `x * c + 1` with its own c: distinct programs, exact float32 results.
FAULTS = ["py_edit", "py_truncate", "py_junk", "py_unreadable", "py_fifo", "py_symlink",
          "nbc_truncate", "nbc_junk", "nbc_swap", "nbi_truncate", "nbi_junk"]


def _const(i):
    return 1.5 + i


def _progs(consts, name_of=lambda i: f"f{i}"):
    return "".join(f"def {name_of(i)}(x):\n    return x * {c!r} + 1.0\n\n\n"
                   for i, c in enumerate(consts))


CHILD = textwrap.dedent("""
    import importlib.util, json, sys
    import jitorch

    out = {}
    for path in sys.argv[1:]:
        spec = importlib.util.spec_from_file_location("progs_" + str(len(out)), path)
        m = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(m)
        for name in sorted(n for n in vars(m) if n.startswith("f")):
            fn = getattr(m, name)
            sf = jitorch.jit.script(fn)
            x = jitorch.arange(5, dtype=jitorch.float32)
            s0, mods0 = jitorch.jit.stats(), set(sys.modules)
            r = sf(x).tolist()
            s1 = jitorch.jit.stats()
            out[name] = {
                "r": r, "eager": fn(x).tolist(),
                "mods": sorted(k for k in sys.modules
                               if k.startswith("_jitorch_prog_") and k not in mods0),
                "compiled": s1.numba_compiles - s0.numba_compiles,
                "kernels_compiled": s1.kernels["compiled"] - s0.kernels["compiled"],
                "disk": s1.disk_hits - s0.disk_hits,
                "interpreted": s1.interpreted_runs - s0.interpreted_runs,
            }
    print(json.dumps(out))
""")


def _env(cache_dir, **extra):
    env = dict(os.environ, JITORCH_CACHE_DIR=str(cache_dir), JITORCH_LOG="compile",
               PYTHONPATH=os.pathsep.join([SRC_ROOT, os.environ.get("PYTHONPATH", "")]))
    env.pop("JITORCH_STRICT", None)
    env.update(extra)
    return env


def _child_cmd(tmp, progs):
    child = os.path.join(tmp, "child.py")
    if not os.path.exists(child):
        with open(child, "w") as f:
            f.write(CHILD)
    return [sys.executable, child, *map(str, progs)]


def _finish(p, out, err):
    assert p.returncode == 0, err[-3000:]
    res = json.loads(out.strip().splitlines()[-1])
    cache_lines = [ln for ln in err.splitlines() if ln.startswith("jitorch: cache:")]
    return res, cache_lines


def _run(tmp, progs, cache_dir, timeout=180, **kw):
    p = subprocess.run(_child_cmd(tmp, progs), env=kw.pop("env", None) or _env(cache_dir),
                       capture_output=True, text=True, timeout=timeout, **kw)
    return _finish(p, p.stdout, p.stderr)


def _expected(c):
    return [v * c + 1.0 for v in X]


def _check_correct(res, consts):
    for i, c in enumerate(consts):
        r = res[f"f{i}"]
        assert r["r"] == r["eager"] == _expected(c), (i, r)
        assert r["interpreted"] == 0, (i, r)  # compiled or loaded, not sent to the interpreter


# --- one program per fault, in one cache, through three processes ---------------------------
def _damage(fault, d, mod, donor_nbc, tmp):
    py = os.path.join(d, mod + ".py")
    pyc = os.path.join(d, "__pycache__")
    nbi = [os.path.join(pyc, n) for n in os.listdir(pyc) if n.startswith(mod + ".")
           and n.endswith(".nbi")]
    nbc = [os.path.join(pyc, n) for n in os.listdir(pyc) if n.startswith(mod + ".")
           and n.endswith(".nbc")]
    assert len(nbi) == 1 and len(nbc) == 1, (fault, os.listdir(pyc))
    i = FAULTS.index(fault)
    with open(py, "rb") as f:
        text = f.read()
    edited = text.replace(repr(_const(i)).encode(), repr(_const(i) + 7).encode())
    assert edited != text
    target = {"py": py, "nbc": nbc[0], "nbi": nbi[0]}[fault.split("_")[0]]
    kind = fault.split("_", 1)[1]
    if kind == "edit":
        with open(py, "wb") as f:  # in place, as an editor would
            f.write(edited)
    elif kind == "truncate":
        os.truncate(target, 10 if fault == "nbi_truncate" else os.path.getsize(target) // 2)
    elif kind == "junk":
        with open(target, "r+b") as f:
            f.seek(os.path.getsize(target) // 2)
            f.write(b"\xff\xfe\x00junk\x80\x81 junk bytes\x00")
    elif kind == "unreadable":
        os.chmod(py, 0)
    elif kind == "fifo":
        os.unlink(py)
        os.mkfifo(py)
    elif kind == "symlink":
        other = os.path.join(tmp, "elsewhere.py")
        with open(other, "wb") as f:
            f.write(edited)
        os.unlink(py)
        os.symlink(other, py)
    elif kind == "swap":  # a valid data file of another program with the same function name
        shutil.copyfile(donor_nbc, target)
    else:
        raise AssertionError(fault)


@pytest.fixture(scope="module")
def faulted(tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("faults"))
    d = os.path.join(tmp, "cache")
    consts = [_const(i) for i in range(len(FAULTS))]
    progs = os.path.join(tmp, "progs.py")
    with open(progs, "w") as f:
        f.write(_progs(consts))
    swap = FAULTS.index("nbc_swap")
    donor = os.path.join(tmp, "donor.py")  # the same function name, another program
    with open(donor, "w") as f:
        f.write(f"def f{swap}(x):\n    return x * 100.5 - 3.0\n")
    _run(tmp, [progs, donor], d)
    mods = {}
    names = sorted(n[:-3] for n in os.listdir(d) if n.endswith(".py"))
    assert len(names) == len(FAULTS) + 1  # one function each (a single fused loop, no kernels)
    originals = {}
    for n in names:
        with open(os.path.join(d, n + ".py"), "rb") as f:
            originals[n] = f.read()
    for i, fault in enumerate(FAULTS):
        pick = [n for n in names if f"np.float32({_const(i)!r})".encode() in originals[n]]
        assert len(pick) == 1, (fault, pick)
        mods[fault] = pick[0]
    donor_mod = [n for n in names if b"100.5" in originals[n]]
    assert len(donor_mod) == 1
    pyc = os.path.join(d, "__pycache__")
    donor_nbc = [os.path.join(pyc, n) for n in os.listdir(pyc)
                 if n.startswith(donor_mod[0] + ".") and n.endswith(".nbc")]
    assert len(donor_nbc) == 1
    for fault in FAULTS:
        _damage(fault, d, mods[fault], donor_nbc[0], tmp)
    second, second_log = _run(tmp, [progs], d, timeout=120,  # a FIFO must not hang it
                              preexec_fn=_as_user())
    third, third_log = _run(tmp, [progs], d)
    return dict(d=d, consts=consts, mods=mods, originals=originals, second=second,
                second_log=second_log, third=third, third_log=third_log, tmp=tmp)


@pytest.mark.parametrize("fault", FAULTS)
def test_damaged_cache_file_is_repaired_in_the_next_process(faulted, fault):
    i = FAULTS.index(fault)
    name, mod = f"f{i}", faulted["mods"][fault]
    r = faulted["second"][name]
    assert r["r"] == r["eager"] == _expected(faulted["consts"][i]), r
    assert r["interpreted"] == 0, r
    said = [ln for ln in faulted["second_log"] if mod in ln]
    assert len(said) == 1, (fault, faulted["second_log"])  # one line in JITORCH_LOG=compile
    if fault.startswith("nb"):  # compiled afresh (a program, or a kernel: targets/cpu/kernel.py)
        assert r["compiled"] + r["kernels_compiled"] == 1 and "dropped" in said[0], (r, said)
    # the file is the generated source again, a regular file (not written through a link)
    py = os.path.join(faulted["d"], mod + ".py")
    assert os.path.isfile(py) and not os.path.islink(py)
    with open(py, "rb") as f:
        assert f.read() == faulted["originals"][mod]
    if fault == "py_symlink":
        with open(os.path.join(faulted["tmp"], "elsewhere.py"), "rb") as f:
            assert f.read() != faulted["originals"][mod]  # the link's target is untouched


@pytest.mark.parametrize("fault", FAULTS)
def test_repaired_cache_loads_from_disk_in_a_later_process(faulted, fault):
    r = faulted["third"][f"f{FAULTS.index(fault)}"]
    assert r["r"] == r["eager"] == _expected(faulted["consts"][FAULTS.index(fault)]), r
    assert r["disk"] == 1 and r["compiled"] == 0 and r["interpreted"] == 0, r
    assert faulted["third_log"] == []  # nothing left to repair


# --- directories that cannot hold the cache ----------------------------------------------------
def _as_user():
    """A preexec_fn under which permission bits apply to the child, also for root."""
    return _without_dac_override if os.geteuid() == 0 else None


def _without_dac_override():
    """In the child before exec: root without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH obeys
    permission bits, so a 0o555 directory is read-only and a 0o000 file unreadable to it as to
    anyone (prctl PR_CAPBSET_DROP: dropped from the bounding set, gone after exec)."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), f"prctl(PR_CAPBSET_DROP, {cap}) failed")


def test_read_only_cache_dir_compiles_in_memory():
    """Compiled in memory, correct, one line in the log for two programs, nothing written in
    the directory or elsewhere (no private temp cache left behind)."""
    base = tempfile.mkdtemp(prefix="jitorch-ro-")
    try:
        os.chmod(base, 0o755)
        d, home, tmpd = (os.path.join(base, n) for n in ("cache", "home", "tmp"))
        for p in (d, home, tmpd):
            os.mkdir(p)
        consts = [2.5, 3.5]
        progs = os.path.join(base, "progs.py")
        with open(progs, "w") as f:
            f.write(_progs(consts))
        os.chmod(progs, 0o644)
        os.chmod(d, 0o555)
        cmd = _child_cmd(base, [progs])
        os.chmod(cmd[1], 0o644)
        p = subprocess.run(cmd, env=_env(d, HOME=home, TMPDIR=tmpd), capture_output=True,
                           text=True, timeout=180, cwd=base, preexec_fn=_as_user())
        res, lines = _finish(p, p.stdout, p.stderr)
        _check_correct(res, consts)
        assert all(res[f"f{i}"]["compiled"] == 1 for i in range(2)), res
        said = [ln for ln in lines if d in ln]
        assert len(said) == 1 and "in memory" in said[0], lines
        assert os.listdir(d) == [] and os.listdir(tmpd) == []
    finally:
        os.chmod(os.path.join(base, "cache"), 0o755)
        shutil.rmtree(base, ignore_errors=True)


def _file_size_limit(n):
    def set_limit():
        import resource
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failed write, not a killed process
        resource.setrlimit(resource.RLIMIT_FSIZE, (n, n))
    return set_limit


@pytest.mark.parametrize("limit", [200, 4000], ids=["module-write-fails", "numba-save-fails"])
def test_full_cache_dir_compiles_in_memory(tmp_path, limit):
    """A file size limit makes every write past `limit` bytes fail as on a full disk: below
    the size of a program's module (200) or between it and Numba's data file (4000)."""
    d = tmp_path / "cache"
    consts = [4.5, 5.5]
    progs = tmp_path / "progs.py"
    progs.write_text(_progs(consts))
    res, lines = _run(str(tmp_path), [progs], d, preexec_fn=_file_size_limit(limit))
    _check_correct(res, consts)
    assert all(res[f"f{i}"]["compiled"] == 1 for i in range(2)), res
    said = [ln for ln in lines if str(d) in ln]
    assert len(said) == 1 and ("in memory" in said[0]), lines


# --- the directory removed while a program compiles (in this process) --------------------------
def _rm_before(x):
    return x * 6.25 + 1.0


def _rm_after_write(x):
    return x * 6.75 + 1.0


def _rm_during_numba(x):
    return x * 7.25 + 1.0


def _rm_before_save(x):
    return x * 7.75 + 1.0


@pytest.mark.parametrize("fn, c", [(_rm_before, 6.25), (_rm_after_write, 6.75),
                                   (_rm_during_numba, 7.25), (_rm_before_save, 7.75)],
                         ids=["before", "after_write", "during_numba", "before_save"])
def test_cache_dir_removed_mid_compile(tmp_path, monkeypatch, fn, c):
    d = tmp_path / "cache"
    monkeypatch.setenv("JITORCH_CACHE_DIR", str(d))
    monkeypatch.delenv("JITORCH_STRICT", raising=False)
    assert cache.cache_dir() == str(d)  # made (and remembered) before the removal
    rm = lambda: shutil.rmtree(d, ignore_errors=True)  # noqa: E731
    if fn is _rm_before:
        rm()
    elif fn is _rm_after_write:
        write = cache._write_atomic
        monkeypatch.setattr(cache, "_write_atomic", lambda *a: (write(*a), rm()))
    elif fn is _rm_during_numba:
        from numba.core.dispatcher import Dispatcher
        compile_ = Dispatcher.compile
        monkeypatch.setattr(Dispatcher, "compile", lambda self, sig: (rm(), compile_(self, sig))[1])
    else:
        from numba.core.caching import IndexDataCacheFile
        save = IndexDataCacheFile.save
        monkeypatch.setattr(IndexDataCacheFile, "save", lambda *a: (rm(), save(*a))[1])
    sf = jitorch.jit.script(fn)
    x = jitorch.arange(5, dtype=jitorch.float32)
    s0 = jitorch.jit.stats()
    r = sf(x)
    s1 = jitorch.jit.stats()
    assert r.tolist() == fn(x).tolist() == _expected(c)
    assert s1.interpreted_runs == s0.interpreted_runs and s1.numba_compiles > s0.numba_compiles


# --- two processes at once -------------------------------------------------------------------
def test_two_processes_compile_the_same_programs_at_once(tmp_path):
    d = tmp_path / "cache"
    consts = [8.5]  # both write and read the same module, index and data files
    progs = tmp_path / "progs.py"
    progs.write_text(_progs(consts))
    cmd = _child_cmd(str(tmp_path), [progs])
    ps = [subprocess.Popen(cmd, env=_env(d), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True) for _ in range(2)]
    for p in ps:
        out, err = p.communicate(timeout=180)
        res, lines = _finish(p, out, err)
        _check_correct(res, consts)
        assert lines == []  # neither saw a damaged file written by the other
    later, lines = _run(str(tmp_path), [progs], d)
    _check_correct(later, consts)
    assert later["f0"]["disk"] == 1 and lines == [], later
    left = [n for n in os.listdir(d) + os.listdir(d / "__pycache__") if ".tmp" in n]
    assert left == []
