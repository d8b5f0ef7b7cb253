"""The reference writer's ``update_config`` (one UpdateConfig transaction) against pylance 14.0.2: what the
reference writes, pylance reads as its config; what pylance writes (its own transactions), the reference's
``apply_transaction`` rebuilds into the config pylance's manifest holds; every version certifies."""

from __future__ import annotations

from pathlib import Path

import lance
import pytest

from conformance.certify import certify
from conformance.payload import rows
from reference import ops
from reference.apply import apply_transaction
from reference.commit import load_transaction
from reference.table import Dataset

pytestmark = pytest.mark.interop


def test_the_reference_sets_and_removes_config_keys_as_pylance_reads_them(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    ops.create(uri, rows(0, 4))
    dataset = Dataset(uri)
    assert ops.update_config(dataset, {"a": "1", "b": "2"}).version == 2
    assert lance.dataset(uri).config() == {"a": "1", "b": "2"}
    assert ops.update_config(dataset, {"a": None, "c": "3"}).version == 3
    assert lance.dataset(uri).config() == {"b": "2", "c": "3"}
    assert lance.dataset(uri, version=2).config() == {"a": "1", "b": "2"}
    assert ops.update_config(dataset, {"gone": None}).version == 4  # as pylance: a version all the same
    assert ops.update_config(dataset, {}).version == 5  # pylance's update_config({}) commits one too
    assert lance.dataset(uri).config() == {"b": "2", "c": "3"} and Dataset(uri).versions() == [1, 2, 3, 4, 5]
    assert lance.dataset(uri).to_table().to_pylist() == rows(0, 4).to_pylist()
    assert certify(uri, all_versions=True).must_findings == []


def test_pylance_update_config_transactions_apply_to_the_config_pylance_keeps(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    written = lance.write_dataset(rows(0, 2), uri)
    written.update_config({"x": "1", "y": "2"})
    written.update_config({"x": None})
    written.delete_config_keys(["y"])
    dataset = Dataset(uri)
    for version in (2, 3, 4):
        before = dataset.snapshot(version - 1).manifest
        txn = load_transaction(dataset, version)
        assert txn is not None and txn.WhichOneof("operation") == "update_config"
        rebuilt = apply_transaction(before, txn)
        assert dict(rebuilt.config) == lance.dataset(uri, version=version).config()
