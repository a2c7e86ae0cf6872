"""`python -m build --wheel` makes a wheel that carries the compiled data path (issue 28 §7): every
module of rockmq.compiled.MODULES as an extension, with the manifest that lets them load, and
rockmq imported from the unpacked wheel runs them compiled; and the dashboard's assets. What the
Dockerfile's builder stage does."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

from rockmq import compiled

ROOT = Path(__file__).resolve().parents[2]
# What a local build leaves beside the sources: the wheel's build must make its own.
LEFT_BY_BUILDS = ("*.so", "*.c", "*.html", compiled.MANIFEST, "__pycache__", "*.egg-info")


def _build_wheel(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    for name in ("pyproject.toml", "setup.py", "README.md"):
        tree.mkdir(exist_ok=True)
        shutil.copy(ROOT / name, tree / name)
    shutil.copytree(ROOT / "src", tree / "src", ignore=shutil.ignore_patterns(*LEFT_BY_BUILDS))
    environ = {k: v for k, v in os.environ.items() if k != compiled.PURE_ENV}
    # --no-isolation: offline, with the build requirements installed here (Cython, setuptools; -x: the
    # `wheel` package setuptools no longer needs).
    done = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "-x", "--outdir", str(tmp_path / "dist")],
                          cwd=tree, env=environ, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("rockmq-*.whl")
    return wheel


def test_the_wheel_carries_and_runs_the_compiled_data_path(tmp_path: Path) -> None:
    wheel = _build_wheel(tmp_path)
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
        manifest = json.loads(whl.read(f"rockmq/{compiled.MANIFEST}"))
        whl.extractall(tmp_path / "site")
    assert {f"{m.replace('.', '/')}{suffix}" for m in compiled.MODULES} <= names
    assert set(manifest["modules"]) == set(compiled.MODULES)
    assert not [n for n in names if n.endswith(".c")]
    assert {"rockmq/ui/static/ui.css", "rockmq/ui/static/ui.js"} <= names  # the dashboard's assets (docs/dashboard.md)
    environ = {**{k: v for k, v in os.environ.items() if k != compiled.PURE_ENV}, "PYTHONPATH": str(tmp_path / "site")}
    code = "import rockmq, rockmq.compiled as c; print(rockmq.__file__); print(c.describe())"
    ran = subprocess.run([sys.executable, "-c", code],
                         cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=60, check=True).stdout.splitlines()
    assert ran == [str(tmp_path / "site" / "rockmq" / "__init__.py"), compiled.COMPILED]
