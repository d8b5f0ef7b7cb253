"""Quick start: write a small multi-base dataset with pylance, then look at it with lancespec.

    python examples/quickstart.py [DIR]

Writes DIR/dataset (the root) and DIR/bucket-a, DIR/bucket-b (two non-root bases that receive data files
round-robin), then prints ``lancespec inspect`` for it.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import lance
import pyarrow as pa

from lancespec.cli import main as lancespec


def write_multi_base(where: Path) -> str:
    root = str(where / "dataset")
    bases = [
        lance.DatasetBasePath(str(where / "bucket-a"), name="a"),
        lance.DatasetBasePath(str(where / "bucket-b"), name="b"),
    ]
    rows = pa.table({"id": list(range(6)), "value": [f"v{i}" for i in range(6)]})
    # Three files of two rows each, spread round-robin over the two bases.
    ds = lance.write_dataset(rows, root, initial_bases=bases, target_bases=["a", "b"], max_rows_per_file=2)
    ds.delete("id = 4")
    ds.tags.create("first", 1)
    return root


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="lancespec-quickstart-"))
    uri = write_multi_base(target)
    sys.exit(lancespec(["inspect", uri]))
