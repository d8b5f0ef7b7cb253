"""``UpdateConfig``, an operation of the language added in four files (its declaration in operations.py, the
pylance and reference sessions, this test): every runner's path to it is the registry and ``Session.apply``,
its capability comes from its declaration, and both writers leave the config the other's reader reads."""

from __future__ import annotations

from pathlib import Path

import lance
import pytest

from conformance.adapters import registry
from conformance.adapters.base import FEATURES, Capabilities, Folder, WriterRefusal, needs
from conformance.adapters.external import message
from conformance.certify import certify
from conformance.operations import (
    OPERATIONS,
    Create,
    UpdateConfig,
    operation_from_dict,
    operation_to_dict,
)
from reference.table import Dataset

SET = UpdateConfig("ds", (("a", "1"), ("b", "2")))
REMOVE = UpdateConfig("ds", (("a", None), ("c", "3")))


@pytest.mark.interop
@pytest.mark.parametrize("writer", ["reference", "pylance"])
def test_each_writer_sets_and_removes_config_keys_both_readers_read(writer: str, tmp_path: Path) -> None:
    session = registry.get(writer).open(Folder(str(tmp_path)))
    session.apply(Create("ds", 0, 4))
    assert session.apply(SET)["version"] == 2 and session.apply(REMOVE)["version"] == 3
    uri = str(tmp_path / "ds")
    for version, want in ((2, {"a": "1", "b": "2"}), (3, {"b": "2", "c": "3"})):
        assert lance.dataset(uri, version=version).config() == want
        assert dict(Dataset(uri).snapshot(version).manifest.config) == want
    assert lance.dataset(uri).count_rows() == 4
    assert certify(uri, all_versions=True).must_findings == []


def test_its_declaration_gives_its_feature_name_and_value() -> None:
    assert OPERATIONS["UpdateConfig"] is UpdateConfig and UpdateConfig.wire == "config_update"
    assert needs(SET) == ["config"] and "config" in FEATURES
    lacking = Capabilities.parse({"writer": "w", "unsupported": {"config": "no config API"}})
    assert lacking.missing(needs(REMOVE)) == ("config", "no config API")
    assert operation_from_dict(operation_to_dict(REMOVE)) == REMOVE


def test_the_json_lines_contract_refuses_it_until_scenarios_say_it(tmp_path: Path) -> None:
    with pytest.raises(WriterRefusal, match="no UpdateConfig"):
        message(SET, Folder(str(tmp_path)))
