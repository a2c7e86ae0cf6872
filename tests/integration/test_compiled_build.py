"""The compiled data path's build and its fallbacks (src/rockmq/compiled.py, setup.py): an install
without a C compiler still works, as Python; a module edited since its build runs as Python;
`rockmq serve` and `rockmq --version` say which data path runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from broker_process import BrokerProcess

import rockmq.protocol
import rockmq.protocol.wire
from rockmq import compiled

ROOT = Path(__file__).resolve().parents[2]


def _build(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """setup.py's build_ext into `tmp_path`/lib, not in place."""
    environ = {k: v for k, v in os.environ.items() if k != compiled.PURE_ENV}
    done = subprocess.run([sys.executable, "setup.py", "build_ext", "--build-lib", str(tmp_path / "lib"),
                           "--build-temp", str(tmp_path / "temp")], cwd=ROOT, env={**environ, **env}, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert not list((tmp_path / "lib").rglob("*.so"))
    return done


def _manifest(tmp_path: Path) -> object:
    return json.loads((tmp_path / "lib" / "rockmq" / compiled.MANIFEST).read_text())


def test_build_without_a_compiler_installs_pure_python(tmp_path: Path) -> None:
    done = _build(tmp_path, CC="/bin/false", LDSHARED="/bin/false")
    assert "was not compiled" in done.stderr and "pure Python" in done.stderr
    assert _manifest(tmp_path) == {"skipped": "no compiler at install"}


def test_a_pure_build_on_request(tmp_path: Path) -> None:
    _build(tmp_path, **{compiled.PURE_ENV: "1"})
    assert _manifest(tmp_path) == {"skipped": "ROCKMQ_PURE_PYTHON=1 at install"}


def test_serve_logs_which_data_path_runs(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path, env={compiled.PURE_ENV: "1"}).start()
    try:
        assert any("pure-Python data path (ROCKMQ_PURE_PYTHON=1)" in line for line in broker.log), list(broker.log)
    finally:
        broker.stop()


def test_version_tells_the_data_path() -> None:
    out = subprocess.run([sys.executable, "-m", "rockmq", "--version"], capture_output=True, text=True, check=True).stdout
    assert out == f"rockmq {rockmq.__version__}, {compiled.describe()}\n"


def _runs_as_python(module: str, older: str) -> str:
    """The finder's spec of `module` when the manifest says `older` was built from another source:
    its source, and the warning given."""
    finder = compiled._Finder()
    finder.built = {**finder.built, older: "the digest of an older source"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spec = finder.find_spec(module, rockmq.protocol.__path__)
    assert spec is not None and spec.origin == str(Path(rockmq.protocol.__file__).with_name(module.rpartition(".")[2] + ".py"))
    return str(caught[0].message)


@pytest.mark.skipif(not compiled.is_compiled(rockmq.protocol.wire), reason="the data path is not compiled in this tree")
def test_a_module_edited_since_its_build_runs_as_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(compiled.PURE_ENV, raising=False)
    warned = _runs_as_python("rockmq.protocol.wire", older="rockmq.protocol.wire")
    assert "source changed since it was compiled" in warned
    assert compiled._Finder().find_spec("rockmq.protocol.wire", rockmq.protocol.__path__).origin.endswith(".so")


@pytest.mark.skipif(not compiled.is_compiled(rockmq.protocol.wire), reason="the data path is not compiled in this tree")
def test_modules_sharing_c_declarations_run_as_python_together(monkeypatch: pytest.MonkeyPatch) -> None:
    """send_request's .pxd cimports wire_reader's Reader: an edited wire_reader (its .py or .pxd) runs as
    Python, and so must send_request, whose build calls the compiled Reader's C methods."""
    monkeypatch.delenv(compiled.PURE_ENV, raising=False)
    assert "rockmq.protocol.wire_reader" in compiled.cimported("rockmq.protocol.send_request")
    warned = _runs_as_python("rockmq.protocol.send_request", older="rockmq.protocol.wire_reader")
    assert "shares C declarations with rockmq.protocol.wire_reader" in warned
    source = Path(rockmq.protocol.__file__).with_name("wire_reader.py")
    assert compiled.source_digest(source) != compiled.hashlib.sha256(source.read_bytes()).hexdigest()  # the .pxd counts


@pytest.mark.skipif(not compiled.is_compiled(rockmq.protocol.wire), reason="the data path is not compiled in this tree")
def test_an_extension_of_a_module_compiled_no_more_runs_as_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(compiled.PURE_ENV, raising=False)
    monkeypatch.setattr(compiled, "MODULES", tuple(m for m in compiled.MODULES if m != "rockmq.protocol.wire"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spec = compiled._Finder().find_spec("rockmq.protocol.wire", rockmq.protocol.__path__)
    assert spec is not None and spec.origin == str(Path(rockmq.protocol.__file__).with_name("wire.py"))
    assert "compiled no more" in str(caught[0].message)


@pytest.mark.skipif(os.environ.get("ROCKMQ_EXPECT_COMPILED") != "1",
                    reason="only where the run says it installed a compiled build (.ci/run)")
def test_the_compiled_build_runs_where_it_was_installed() -> None:
    """CI installs with a compiler: the compiled-only tests above must run there, not skip."""
    assert compiled.describe() == compiled.COMPILED, sorted(p.name for p in Path(compiled.__file__).parent.rglob("*.so"))
