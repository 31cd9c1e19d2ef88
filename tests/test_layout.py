"""The compiler's layout (docs/architecture.md): `script/` is seven packages whose imports flow
one way, and no file of it grows past ~600 lines.

Dependency order, each package importing only those before it: `kernels` (the shared runtime of
generated programs; nothing else of script/), `ir`, `frontend`, `passes`, `codegen` (target-
neutral), `targets` (one package per device type: `targets/cpu`, `targets/cuda`, which never
import each other), `runtime` (which chooses a target by device, codegen.target.get_target).
`script/__init__.py` and `script/api.py` (the public entry points) may import any of them.
Function-level (lazy) imports count too: a lazy import is still a dependency.
"""
from __future__ import annotations

import ast
import pathlib

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "src" / "jitorch" / "script"
ORDER = ["kernels", "ir", "frontend", "passes", "codegen", "targets", "runtime"]
MAX_LINES = 620


def _modules():
    for path in sorted(SCRIPT.rglob("*.py")):
        rel = path.relative_to(SCRIPT)
        yield path, rel


def _package_of(rel: pathlib.PurePath) -> str | None:
    return rel.parts[0] if len(rel.parts) > 1 else None


def _imported_packages(path: pathlib.Path, rel: pathlib.PurePath):
    """(line, script package, its sub-package or None) for every import of a module of script/
    in this file."""
    tree = ast.parse(path.read_text())
    here = ["jitorch", "script", *rel.parts[:-1]]  # the file's package
    if rel.name == "__init__.py":
        pass
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - (node.level - 1)]
                mod = base + (node.module.split(".") if node.module else [])
            else:
                mod = (node.module or "").split(".")
            if mod[:2] == ["jitorch", "script"]:
                if len(mod) == 2:  # `from jitorch.script import ir` / `from .. import ir`
                    targets += [(a.name, None) for a in node.names]
                elif len(mod) == 3:  # `from ..targets import cpu`
                    targets += [(mod[2], a.name) for a in node.names]
                else:
                    targets.append((mod[2], mod[3]))
        elif isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[:2] == ["jitorch", "script"] and len(parts) > 2:
                    targets.append((parts[2], parts[3] if len(parts) > 3 else None))
        for t, sub in targets:
            yield node.lineno, t, sub


def _violations():
    out = []
    for path, rel in _modules():
        pkg = _package_of(rel)
        if pkg is None:  # script/__init__.py, script/api.py
            continue
        allowed = set(ORDER[:ORDER.index(pkg) + 1])
        for line, target, sub in _imported_packages(path, rel):
            if pkg == target == "targets" and len(rel.parts) > 2 and \
                    sub not in (None, rel.parts[1]):
                out.append(f"{rel}:{line} (targets/{rel.parts[1]}) imports targets/{sub}")
            elif target in ORDER and target not in allowed:
                out.append(f"{rel}:{line} ({pkg}) imports {target}")
            elif target not in ORDER:
                out.append(f"{rel}:{line} ({pkg}) imports script/{target}, outside the layout")
    return out


def test_every_module_sits_in_one_of_the_seven_packages():
    loose = [str(rel) for _, rel in _modules()
             if _package_of(rel) is None and rel.name not in ("__init__.py", "api.py")]
    assert not loose, f"modules outside script's packages: {loose}"
    assert {p.name for p in SCRIPT.iterdir() if p.is_dir() and p.name != "__pycache__"} == set(ORDER)


def test_imports_flow_one_way():
    assert not _violations(), "imports against the layout:\n" + "\n".join(_violations())


def test_the_checker_sees_a_violation(tmp_path, monkeypatch):
    """The check itself can fail: a kernels module that imports the runtime is reported."""
    fake = tmp_path / "script"
    (fake / "kernels").mkdir(parents=True)
    (fake / "kernels" / "bad.py").write_text("def f():\n    from ..runtime import stats\n")
    monkeypatch.setattr(__import__(__name__), "SCRIPT", fake)
    assert _violations() == ["kernels/bad.py:2 (kernels) imports runtime"]


def test_the_checker_sees_one_target_importing_another(tmp_path, monkeypatch):
    """targets/cpu and targets/cuda never import each other, in any import form."""
    fake = tmp_path / "script"
    (fake / "targets" / "cuda").mkdir(parents=True)
    (fake / "targets" / "cuda" / "bad.py").write_text(
        "from ..cpu import program\nfrom ...targets.cpu.blas import mm\n"
        "import jitorch.script.targets.cpu.alloc\nfrom .. import cpu\nfrom . import ok\n")
    monkeypatch.setattr(__import__(__name__), "SCRIPT", fake)
    assert _violations() == [f"targets/cuda/bad.py:{k} (targets/cuda) imports targets/cpu"
                             for k in (1, 2, 3, 4)]


@pytest.mark.parametrize("path", [p for p, _ in _modules()], ids=lambda p: str(p.relative_to(SCRIPT)))
def test_no_file_over_600_lines(path):
    n = len(path.read_text().splitlines())
    assert n <= MAX_LINES, f"{path.relative_to(SCRIPT)} has {n} lines: split it by concept"
