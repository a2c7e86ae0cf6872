"""A/B of two source trees in one run: each round runs this script's `--child` once per tree, in
alternating child processes, so both share the machine's noise (used by send_path_bench.py and
long_poll_bench.py through their `--base`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

HERE_SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def rounds(script: str, child_args: list[str], base: str | None, count: int) -> dict[str, list[Any]]:
    """Per tree ("this", and "base" when given), the JSON each round's child printed last."""
    trees = {"this": HERE_SRC, **({"base": os.path.abspath(base)} if base else {})}
    figures: dict[str, list[Any]] = {name: [] for name in trees}
    for _ in range(count):
        for name, src in trees.items():
            out = subprocess.run([sys.executable, os.path.abspath(script), "--child", *child_args],
                                 env={**os.environ, "PYTHONPATH": src}, check=True, capture_output=True, text=True)
            figures[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    return figures
