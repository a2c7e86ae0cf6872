"""The layering rules, written once, here (docs/architecture.md §2 cites them), and checked over the
import graph parsed from the source: imports point down only.

A *unit* is a top-level module or package of `rockmq` (inside `broker/`, also its `api`, `cluster`
and `pop` packages). A unit imports only units of lower layers; units of one layer do not import
each other. Imports inside functions count too: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "rockmq"

# Lowest first. Each line says what its layer is for.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("compiled", "units", "log_escape", "whole_file", "bounded_cache", "when"),  # leaves: import nothing of rockmq
    ("rockmq",),  # the package itself: its version, and the compiled modules installed before any is imported
    ("protocol",),  # wire definitions, pure codecs, the status error and the status-code tables: no I/O
    ("plumbing", "http"),  # what every side shares to talk and to run: channels, signing, TLS, limits, signals, ready
    # file; the HTTP port (/metrics, /healthz, /readyz) over collaborators each server hands in
    ("store", "filter"),  # RocksDB storage; filter expressions
    ("config",),  # the one typed Settings object
    ("auth", "malloc_tuning"),  # authentication and ACLs (rules, stores, the seam); the allocator's tuning
    ("namesrv", "client", "ui"),  # the name server; rockmq's client; the dashboard (pages over the admin calls)
    ("broker",),  # the broker's services, POP and the cluster (broker/, broker/pop/, broker/cluster/)
    ("broker.api",),  # its servicers: translate and delegate (only broker/server.py, the composition root, imports them)
    ("spark", "bench", "workers"),  # the data source and sink; `rockmq bench`; `--workers`
    ("cli",),  # the `rockmq` command
    ("entry",),  # processes' entry points: python -m rockmq, rockmq.workers.shard, rockmq.benchmark
)
LAYER = {unit: i for i, units in enumerate(LAYERS) for unit in units}
ENTRY_POINTS = frozenset({"rockmq.__main__", "rockmq.workers.shard", "rockmq.benchmark"})
COMPOSITION_ROOT = "rockmq.broker.server"  # the one module of `broker` that may import `broker.api`


def unit_of(module: str) -> str:
    """rockmq.broker.api.messaging -> broker.api; rockmq.broker.pop.service -> broker; rockmq -> rockmq."""
    if module in ENTRY_POINTS:
        return "entry"
    parts = module.split(".")[1:]
    if not parts:
        return "rockmq"
    if parts[:2] == ["broker", "api"]:
        return "broker.api"
    return parts[0]


def module_of(path: Path) -> str:
    relative = path.relative_to(SRC.parent).with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    return ".".join(parts)


def imported(path: Path) -> Iterator[tuple[int, str]]:
    """(line, module) of every rockmq module `path` imports (`from rockmq import x` is rockmq.x)."""
    package = module_of(path) if path.name == "__init__.py" else module_of(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "rockmq")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            if base == "rockmq":  # a submodule, or a name of the package itself (__version__)
                yield from ((node.lineno, f"rockmq.{a.name}" if _is_module(a.name) else "rockmq") for a in node.names)
            elif base.startswith("rockmq."):
                yield node.lineno, base


def _is_module(name: str) -> bool:
    return (SRC / f"{name}.py").exists() or (SRC / name).is_dir()


def sources() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if "_gen" not in p.parts)


def violations() -> list[str]:
    found = []
    for path in sources():
        module = module_of(path)
        here = unit_of(module)
        for line, target in imported(path):
            there = unit_of(target)
            if there == here or (module == COMPOSITION_ROOT and there == "broker.api"):
                continue
            if LAYER[there] >= LAYER[here]:
                found.append(f"{path.relative_to(SRC)}:{line}: {here} imports {target} ({there}, not below it)")
    return found


def test_every_unit_has_a_layer():
    assert sorted({unit_of(module_of(p)) for p in sources()} - set(LAYER)) == []


def test_imports_point_down():
    assert violations() == []
