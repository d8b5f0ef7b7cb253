"""Generate the Python protobuf modules of protos/ into reference/proto/ (one reproducible command).

Run ``python -m lancespec.protogen`` from a source checkout. It calls protoc from grpcio-tools (the
version pinned in the ``dev`` extra, so the output is byte-stable) and rewrites the generated modules'
imports of each other into package-relative imports, so that the code lives inside
``reference.proto`` instead of claiming top-level module names such as ``file_pb2``.
A test regenerates into a temporary folder and compares byte for byte with the committed files.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

PROTO_FILES = ("file.proto", "table.proto", "transaction.proto", "rowids.proto")

_SIBLING_IMPORT = re.compile(r"^import (\w+_pb2) as (\w+)$", re.MULTILINE)


def source_root() -> Path:
    """The checkout this module belongs to (protos/ and reference/ live beside lancespec/)."""
    return Path(__file__).resolve().parent.parent


def generate(proto_dir: Path, out_dir: Path) -> list[Path]:
    """Compile every file of PROTO_FILES from ``proto_dir`` into ``out_dir``; return the files written."""
    import grpc_tools
    from grpc_tools import protoc  # dev-only dependency

    include = Path(grpc_tools.__file__).parent / "_proto"
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        args = [
            "protoc",
            f"-I{proto_dir}",
            f"-I{include}",
            f"--python_out={tmp}",
            f"--pyi_out={tmp}",
            *PROTO_FILES,
        ]
        if protoc.main(args) != 0:
            raise RuntimeError(f"protoc failed on {proto_dir}")
        written = []
        for produced in sorted(Path(tmp).iterdir()):
            text = _SIBLING_IMPORT.sub(r"from . import \1 as \2", produced.read_text())
            target = out_dir / produced.name
            target.write_text(text)
            written.append(target)
    return written


def main() -> int:
    root = source_root()
    out = root / "reference" / "proto"
    for path in generate(root / "protos", out):
        print(path.relative_to(root))
    return 0


if __name__ == "__main__":
    sys.exit(main())
