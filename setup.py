"""Compiles rockmq's data path (the modules of `rockmq.compiled.MODULES`) with Cython.

The modules stay plain Python (Cython's pure-Python mode): without a C compiler, or with
ROCKMQ_PURE_PYTHON=1, the install builds nothing, says so, and rockmq runs them as Python.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import sysconfig
from pathlib import Path
from typing import Any

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("_rockmq_compiled", ROOT / "src" / "rockmq" / "compiled.py")
assert _spec is not None and _spec.loader is not None
compiled = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compiled)


def _source(module: str) -> Path:
    return ROOT / "src" / Path(*module.split(".")).with_suffix(".py")


class BuildDataPath(build_ext):
    """build_ext that records what it compiled (`compiled.MANIFEST`) and falls back to pure Python."""

    def run(self) -> None:
        manifest = self._manifest()  # before build_ext.run, which clears `inplace` while it compiles
        built: dict[str, Any] = {}
        if compiled.pure_requested():
            built["skipped"] = f"{compiled.PURE_ENV}=1 at install"
        else:
            inplace = self.inplace
            try:
                self.parallel = self.parallel or os.cpu_count() or 1
                super().run()
                built["modules"] = {ext.name: compiled.source_digest(_source(ext.name)) for ext in self.extensions}
            except Exception as e:  # no compiler, no headers, a failed compile: install as Python
                print(f"WARNING: rockmq's data path was not compiled ({e}); it runs as pure Python, slower.",
                      file=sys.stderr)
                built = {"skipped": "no compiler at install"}
                self.inplace = inplace
        # No extension of an earlier build may shadow a source now: of a module no longer compiled, or of all.
        keep = {Path(manifest.parent.parent, self.get_ext_filename(name)) for name in built.get("modules", ())}
        for stale in set(manifest.parent.rglob("*" + sysconfig.get_config_var("EXT_SUFFIX"))) - keep:
            stale.unlink()
        if "modules" not in built:
            self.extensions = []
        manifest.parent.mkdir(parents=True, exist_ok=True)
        manifest.write_text(json.dumps(built, indent=1) + "\n")

    def _manifest(self) -> Path:
        return (ROOT / "src" if self.inplace else Path(self.build_lib)) / "rockmq" / compiled.MANIFEST

    def get_outputs(self) -> list[str]:
        return [*super().get_outputs(), str(self._manifest())]


def _extensions() -> list[Extension]:
    extensions = [Extension(name, [str(_source(name).relative_to(ROOT))]) for name in compiled.MODULES]
    if compiled.pure_requested():
        return extensions  # for BuildDataPath to record that it built none
    from Cython.Build import cythonize

    # annotation_typing off: the sources' annotations are for mypy (Cython would take `x: str` to refuse a
    # str subclass, `t: type` a metaclass's instance); C types are declared with @cython.locals.
    return list(cythonize(extensions, language_level=3, quiet=True, nthreads=os.cpu_count() or 1,
                          compiler_directives={"annotation_typing": False}))


setup(
    ext_modules=_extensions(),
    cmdclass={"build_ext": BuildDataPath},
)
