"""The core (mongo_sansio/, without transports and adapters) does no I/O and keeps no time.

Two checks: a static walk over every import statement of every core module, and a fresh
interpreter that imports every core module and then looks at what got loaded.  The one
exception is ObjectId generation (mongo_sansio/bson/objectid.py), which may read the clock and
the OS random source because users expect ``ObjectId()`` to just work.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "mongo_sansio"

# Modules that do I/O, keep time, start threads or draw randomness.
FORBIDDEN = {
    "socket", "ssl", "select", "selectors", "asyncio", "trio", "gevent", "anyio",
    "threading", "_thread", "multiprocessing", "concurrent", "subprocess",
    "time", "random", "secrets", "os", "signal", "io", "shutil", "tempfile",
    "urllib", "http", "ftplib", "smtplib", "dns", "logging",
}
EXCEPTIONS = {"mongo_sansio/bson/objectid.py": {"os", "time"}}


def _core_files() -> list[Path]:
    return sorted(CORE.rglob("*.py"))


def _imported_roots(tree: ast.AST) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            # __import__("time") and importlib.import_module("time") dodge the statements
            if node.func.id == "__import__" and node.args and isinstance(node.args[0], ast.Constant):
                roots.add(str(node.args[0].value).split(".")[0])
        elif isinstance(node, ast.Attribute) and node.attr == "import_module":
            roots.add("importlib.import_module")
    return roots


@pytest.mark.parametrize("path", _core_files(), ids=lambda p: p.relative_to(CORE.parent).as_posix())
def test_core_module_imports_nothing_impure(path: Path) -> None:
    rel = path.relative_to(CORE.parent).as_posix()
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
    roots = _imported_roots(tree)
    allowed = EXCEPTIONS.get(rel, set())
    bad = sorted((roots & FORBIDDEN) - allowed)
    assert not bad, f"{rel} imports {bad}: the core must not do I/O, keep time or draw randomness"
    assert "importlib.import_module" not in roots, f"{rel} imports modules dynamically"


def test_the_walk_catches_forbidden_imports() -> None:
    tree = ast.parse("import time\nfrom socket import socket\nx = __import__('random')\n")
    assert _imported_roots(tree) >= {"time", "socket", "random"}


def test_importing_the_core_loads_no_io_modules() -> None:
    modules = [
        ".".join(path.relative_to(CORE.parent).with_suffix("").parts).removesuffix(".__init__")
        for path in _core_files()
    ]
    script = (
        "import sys, json\n"
        # attrs is the core's one dependency; what it loads itself is not the core's doing
        "import attrs\n"
        "before = set(sys.modules)\n"
        f"for name in {modules!r}:\n"
        "    __import__(name)\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    loaded = {name.split(".")[0] for name in json.loads(out.stdout)}
    watched = FORBIDDEN - {"os", "time", "io"}  # os, time and io are loaded by every interpreter
    assert not (loaded & watched), f"importing the core loaded {sorted(loaded & watched)}"
