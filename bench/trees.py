"""What the A/B benchmarks share: a base commit checked out and built beside this tree, brokers of
either tree, and this tree's CLI as the one client (so only the broker differs between sides).

A tree runs with PYTHONPATH=<tree>/src. `checkout` builds the base's compiled data path as this
tree's was built (both sides must run the same way: src/rockmq/compiled.py); `worktree` removes the
checkout afterwards, on failure too.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def tree_env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree / "src")}


def rockmq(*args: str) -> str:
    """This tree's CLI (the same client for every broker)."""
    done = subprocess.run([sys.executable, "-m", "rockmq", *args], env=tree_env(HERE), capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"rockmq {args[0]} failed:\n{done.stderr[-2000:]}")
    return done.stdout


def start(tree: Path, data_dir: Path, *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    ready, log = data_dir.with_suffix(".ready"), data_dir.with_suffix(".log")
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "rockmq", "serve", "--port", "0", "--data-dir", str(data_dir),
                                 "--ready-file", str(ready), "--log-level", "WARNING", *extra],
                                env=tree_env(tree), stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"the broker of {tree} did not start:\n{log.read_text()[-2000:]}")
        time.sleep(0.05)
    return proc, ready.read_text().strip()


def checkout(ref: str, worktree: Path) -> None:
    """REF in `worktree`, its data path compiled (with ROCKMQ_PURE_PYTHON=1 set: nothing, and every tree runs as Python)."""
    subprocess.run(["git", "-C", str(HERE), "worktree", "add", "--detach", str(worktree), ref], check=True)
    print(f"base {ref}: building in {worktree} ...", flush=True)
    build = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=worktree, capture_output=True,
                           text=True)
    if build.returncode:
        raise SystemExit(f"base {ref}: the build failed:\n{build.stderr[-2000:]}")


def data_path(tree: Path) -> str:
    out = subprocess.run([sys.executable, "-m", "rockmq", "--version"], env=tree_env(tree), capture_output=True,
                         text=True, check=True).stdout.strip()
    return out.partition(", ")[2] or out


@contextlib.contextmanager
def worktree(ref: str | None) -> Iterator[Path | None]:
    """REF checked out and built in a temporary git worktree (None: no base), removed afterwards."""
    if ref is None:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="rockmq-ab-") as tmp:
        tree = Path(tmp) / "base"
        try:
            checkout(ref, tree)
            yield tree
        finally:
            subprocess.run(["git", "-C", str(HERE), "worktree", "remove", "--force", str(tree)], capture_output=True)
