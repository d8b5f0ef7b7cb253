"""The lineage diagram (``inspect --graph``, ``certify --format html``) under a fourth outside review
(2026-11-28): it opened a clone source the checks refuse to read, and its DOT grew with the square of the
lanes, so Graphviz ran past 120 s and, unbounded, to 23.6 GB (docs/security.md)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import lance
import pyarrow as pa
import pytest
from device_kit import watching_opens

from reference.codec import decode_manifest_file, encode_manifest_file
from reference.proto import transaction_pb2


def lancespec(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "lancespec", *argv], capture_output=True, text=True, timeout=60,
                          cwd=cwd, check=False)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def _point_clone_at(clone: Path, ref_path: str) -> None:
    """Rewrite the shallow clone's ``Clone.ref_path``, in its transaction file and its manifest's inline copy."""
    (txn_path,) = (clone / "_transactions").glob("*.txn")
    txn = transaction_pb2.Transaction()
    txn.ParseFromString(txn_path.read_bytes())
    txn.clone.ref_path = ref_path
    (manifest_path,) = (clone / "_versions").glob("*.manifest")
    decoded = decode_manifest_file(manifest_path.read_bytes(), str(manifest_path))
    encoded = encode_manifest_file(decoded.manifest, txn, decoded.index_section)
    txn_path.write_bytes(txn.SerializeToString())
    manifest_path.write_bytes(encoded)


@pytest.mark.parametrize("named", ["climbing", "relative"])
def test_the_diagram_opens_no_clone_source_the_checks_refuse(tmp_path: Path, named: str) -> None:
    """A clone whose ``ref_path`` climbs (``cl/../outside``) or is relative (``outside``, which the diagram
    resolved against the working directory): the checks never read it, and now neither does the diagram."""
    lance.write_dataset(pa.table({"id": [1, 2, 3]}), str(tmp_path / "src"))
    lance.write_dataset(pa.table({"secret": [42]}), str(tmp_path / "outside"))
    lance.dataset(str(tmp_path / "src")).shallow_clone(str(tmp_path / "cl"), 1)
    _point_clone_at(tmp_path / "cl", f"{tmp_path}/cl/../outside" if named == "climbing" else "outside")
    outside = tmp_path / "outside" / "_versions"
    with watching_opens(outside) as watch:
        graph = lancespec("inspect", str(tmp_path / "cl"), "--graph", str(tmp_path / "g.dot"), cwd=tmp_path)
        opened = watch.opened()
    assert graph.returncode in (0, 1), graph.stderr
    assert opened == set(), f"the diagram opened {opened}"
    with watching_opens(outside) as watch:
        lancespec("certify", str(tmp_path / "cl"), "--all-versions", cwd=tmp_path)
        assert watch.opened() == set()


def test_a_chain_of_clones_is_drawn_in_linear_time(tmp_path: Path) -> None:
    """60 shallow clones, each of the one before (a legitimate pylance lineage): the DOT holds no edge per
    (lane, location) pair, and Graphviz lays it out in seconds (at 30 it ran past 120 s)."""
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not on PATH (setup.sh installs it): the layout cannot be timed")
    previous = lance.write_dataset(pa.table({"id": [1, 2, 3]}), str(tmp_path / "src"))
    for i in range(60):
        previous = previous.shallow_clone(str(tmp_path / f"c{i}"), previous.version)
    last = str(tmp_path / "c59")
    assert lancespec("inspect", last, "--graph", str(tmp_path / "g.dot")).returncode == 0
    dot_text = (tmp_path / "g.dot").read_text()
    assert dot_text.count("->") < 1_000, dot_text.count("->")
    started = time.monotonic()
    drawn = lancespec("inspect", last, "--graph", str(tmp_path / "g.svg"))
    assert drawn.returncode == 0, drawn.stderr
    assert time.monotonic() - started < 20
    assert (tmp_path / "g.svg").read_text().lstrip().startswith("<?xml")
