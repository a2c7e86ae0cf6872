"""What README.md's examples write in the directory they run in (data directories, ready files, the
test certificate) is ignored by git: a reader who tries them from a clone leaves `git status` clean."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DIRECTORIES = re.compile(r"--data-dir \./([\w.-]+)")
FILES = (re.compile(r"--ready-file ([\w.-]+\.ready)"), re.compile(r" -(?:keyout|out) ([\w.-]+)"))


def test_what_the_readme_writes_is_ignored() -> None:
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    readme = (ROOT / "README.md").read_text()
    directories = {f"{d}/" for d in [*DIRECTORIES.findall(readme), "rockmq-data"]}  # --data-dir's default too
    written = sorted(directories | {f for pattern in FILES for f in pattern.findall(readme)})
    assert "b1/" in written and "secure.ready" in written and "broker.pem" in written, written
    checked = subprocess.run([git, "check-ignore", "--no-index", "--", *written], cwd=ROOT, capture_output=True, text=True,
                             timeout=30)
    assert sorted(checked.stdout.split()) == written
