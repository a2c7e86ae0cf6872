"""The compiled data path: which modules Cython compiles, and which build this process runs.

One source: each module of `MODULES` is an annotated .py file that runs as Python and compiles as
C (Cython's pure-Python mode). The install (setup.py, which reads `MODULES` from this file) builds
the extensions beside the sources and writes `MANIFEST`: the SHA-256 of each source it compiled,
or why it compiled nothing. A compiled module is imported only when the manifest says it was built
from the source now beside it; one edited since (a rebase, a checkout) runs as Python, with a
warning, rather than as stale C. A module whose .pxd cimports another's C declarations (the request
scans and protocol/wire_reader.py) runs compiled only together with it: neither half can call the
other across the C/Python line. `ROCKMQ_PURE_PYTHON=1` at build time builds nothing; at run time
it runs every module as Python (CI runs the suite both ways).

Standard library only: setup.py loads this file before rockmq is installed.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import json
import os
import re
import sys
import warnings
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

# Every message goes through these. Measured (bench/compiled_bench.py and an A/B of each function in
# one process, CPython 3.11): compiling as they are is worth it only where Python code runs between
# C calls; modules of classes whose methods read attributes and call bound methods (send, queues,
# dedup, pop/checkpoints) and chains of method calls on C objects (tokens) ran 5-15 % slower
# compiled than under 3.11's specialising interpreter, so they stay Python.
MODULES = (
    "rockmq.protocol.wire",
    "rockmq.protocol.records",
    "rockmq.protocol.receipt",
    "rockmq.protocol.message_id",
    "rockmq.store.keys",
    "rockmq.broker.validate",
    "rockmq.protocol.consume_replies",
    "rockmq.protocol.wire_reader",  # the primitives the two request scans below cimport
    "rockmq.protocol.ack_request",
    "rockmq.protocol.send_request",
)
PURE_ENV = "ROCKMQ_PURE_PYTHON"
MANIFEST = "_compiled.json"  # beside this file: {"modules": {name: source sha256}} or {"skipped": why}
COMPILED = "compiled data path (Cython)"


def source_digest(path: Path) -> str:
    """Of a module's source and, if it has one, the .pxd beside it (C declarations it compiles with)."""
    digest = hashlib.sha256(path.read_bytes())
    pxd = path.with_suffix(".pxd")
    if pxd.exists():
        digest.update(pxd.read_bytes())
    return digest.hexdigest()


def _source(module: str) -> Path:
    return Path(__file__).parent.joinpath(*module.split(".")[1:]).with_suffix(".py")


def cimported(module: str) -> list[str]:
    """The rockmq modules whose C declarations `module`'s .pxd cimports."""
    try:
        pxd = _source(module).with_suffix(".pxd").read_text()
    except OSError:
        return []
    return re.findall(r"^from (rockmq[\w.]*) cimport ", pxd, re.MULTILINE)


def pure_requested(module: str | None = None) -> bool:
    """Whether `ROCKMQ_PURE_PYTHON` asks for Python: `1` for every module; at run time also a
    comma-separated list of the modules to run as Python (to measure one module against its build)."""
    value = os.environ.get(PURE_ENV, "")
    return value == "1" or (module is not None and module in value.split(","))


def _manifest() -> dict[str, object]:
    try:
        loaded = json.loads((Path(__file__).parent / MANIFEST).read_text())
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


class _Finder:
    """A meta path finder for rockmq's modules: an extension only when it is one of `MODULES`, built
    from the source beside it, and not refused; else the source (an extension left by an older build
    of a module no longer compiled must not shadow its source either)."""

    def __init__(self) -> None:
        built = _manifest().get("modules")
        self.built: dict[str, object] = built if isinstance(built, dict) else {}
        self._python: dict[str, str] | None = None

    def as_python(self) -> dict[str, str]:
        """The modules of `MODULES` that run as Python -> why ("" when asked for, `ROCKMQ_PURE_PYTHON`)."""
        if self._python is None:
            why: dict[str, str] = {}
            for name in MODULES:
                if pure_requested(name):
                    why[name] = ""
                elif _source(name).exists() and self.built.get(name) != source_digest(_source(name)):
                    why[name] = "its source changed since it was compiled (or it is compiled no more)"
            links = [(name, other) for name in MODULES for other in cimported(name)]
            spread = True
            while spread:  # a module and those it cimports run the same way
                spread = False
                for a, b in links + [(b, a) for a, b in links]:
                    if a in why and b not in why:
                        why[b] = f"it shares C declarations with {a}, which runs as Python"
                        spread = True
            self._python = why
        return self._python

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> ModuleSpec | None:
        if not fullname.startswith("rockmq."):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        origin = spec.origin if spec is not None else None
        if origin is None or not origin.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
            return spec
        source = Path(origin).with_name(fullname.rpartition(".")[2] + ".py")
        if not source.exists():
            return spec  # an install of the extensions alone
        python = self.as_python()
        if fullname in MODULES and fullname not in python:
            return spec
        why = python.get(fullname, "" if pure_requested(fullname) else "it is compiled no more")
        if why:
            warnings.warn(f"{fullname}: {why}, so it runs as Python (rebuild: pip install -e . or python setup.py "
                          "build_ext --inplace)", stacklevel=2)
        return importlib.util.spec_from_file_location(fullname, source)


def install() -> None:
    """Put the finder in front of the import system (rockmq/__init__ does, before any module of `MODULES`)."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


def is_compiled(module: ModuleType) -> bool:
    return (module.__file__ or "").endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


def describe() -> str:
    """Which data path this process runs, and why, for the broker's startup log and `rockmq --version`."""
    python = [name for name in MODULES if not is_compiled(importlib.import_module(name))]
    if not python:
        return COMPILED
    if len(python) < len(MODULES):
        return f"partly compiled data path (Cython; as Python: {', '.join(python)})"
    if pure_requested():
        return f"pure-Python data path ({PURE_ENV}=1)"
    skipped = _manifest().get("skipped")
    return f"pure-Python data path ({skipped if isinstance(skipped, str) else 'not compiled: no build in this tree'})"
