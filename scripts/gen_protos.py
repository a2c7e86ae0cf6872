"""Regenerate rockmq's Python modules from `proto/` (run after editing a .proto file).

The modules land in `src/rockmq/protocol/_gen/` and are committed, so a plain install needs no
protoc. They register their descriptors in rockmq's private pool (`rockmq.protocol._pool`), not in
protobuf's default pool, so that rockmq and the official `rocketmq` package, which registers the
same `apache.rocketmq.v2` symbols under other file names, load side by side in one process.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO = ROOT / "proto"
OUT = ROOT / "src" / "rockmq" / "protocol" / "_gen"
PKG = "rockmq.protocol._gen"


def _rewrite(path: Path) -> None:
    text = path.read_text()
    # Our own modules import each other through the package; google's stay as they are.
    text = re.sub(r"^from (apache|rockmq)\.(\S+) import", rf"from {PKG}.\1.\2 import", text, flags=re.M)
    text = re.sub(r"^from (apache|rockmq) import", rf"from {PKG}.\1 import", text, flags=re.M)
    text = text.replace(
        "from google.protobuf import descriptor_pool as _descriptor_pool\n",
        "from rockmq.protocol._pool import POOL as _POOL\n",
    )
    text = text.replace("_descriptor_pool.Default()", "_POOL")
    path.write_text(text)


def main() -> int:
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    files = sorted(str(p.relative_to(PROTO)) for p in PROTO.rglob("*.proto"))
    args = ["protoc", f"-I{PROTO}", f"-I{Path(protoc.__file__).parent / '_proto'}",
            f"--python_out={OUT}", f"--pyi_out={OUT}", f"--grpc_python_out={OUT}", *files]
    if protoc.main(args) != 0:
        return 1
    for d in [OUT, *[p for p in OUT.rglob("*") if p.is_dir()]]:
        (d / "__init__.py").touch()
    for py in OUT.rglob("*.py"):
        _rewrite(py)
    for pyi in OUT.rglob("*.pyi"):
        _rewrite(pyi)
    print(f"generated {len(files)} files into {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
