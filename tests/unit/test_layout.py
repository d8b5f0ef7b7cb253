"""Naming and base-path resolution rules. Expected values come from the seeds (storage layout spec
examples) and from names pylance 14.0.2 was observed to write (docs/lance-format.md), not from the code."""

from __future__ import annotations

import pytest

from reference.errors import UnresolvableFile
from reference.layout import (
    Base,
    FileKind,
    ManifestNaming,
    branch_ref_path,
    branch_root,
    data_file_stem,
    deletion_file_name,
    is_data_file_name,
    manifest_name,
    new_data_file_name,
    parse_manifest_name,
    ref_name_from_file,
    resolve,
    reversed_blob_id,
    sidecar_relative_path,
    transaction_file_name,
)


@pytest.mark.parametrize(
    ("version", "naming", "name"),
    [
        (1, ManifestNaming.V2, "18446744073709551614.manifest"),
        (2, ManifestNaming.V2, "18446744073709551613.manifest"),
        (3, ManifestNaming.V2, "18446744073709551612.manifest"),
        (1, ManifestNaming.V1, "1.manifest"),
        (12, ManifestNaming.V1, "12.manifest"),
        (12390440219026837573, ManifestNaming.V2, "d12390440219026837573.manifest"),
    ],
)
def test_manifest_names(version: int, naming: ManifestNaming, name: str) -> None:
    assert manifest_name(version, naming) == name
    parsed = parse_manifest_name(name)
    assert parsed is not None
    assert parsed.version == version
    assert parsed.detached == name.startswith("d")


@pytest.mark.parametrize("name", ["latest_version_hint.json", ".tmp-abc", "1.manifest.tmp", "x.manifest", ""])
def test_non_manifest_names_are_ignored(name: str) -> None:
    assert parse_manifest_name(name) is None


def test_v2_names_sort_newest_first() -> None:
    names = [manifest_name(v) for v in (1, 2, 10, 100, 1000)]
    assert sorted(names) == list(reversed(names))


def test_data_file_stem_is_binary_prefix_then_hex() -> None:
    raw = bytes([0xFF, 0x00, 0x81]) + bytes(range(13))
    stem = data_file_stem(raw)
    assert stem == "11111111" "00000000" "10000001" + bytes(range(13)).hex()
    assert len(stem) == 50
    name = new_data_file_name()
    assert is_data_file_name(name) and len(name) == 56
    assert not is_data_file_name("fragment-0.lance")


def test_deletion_and_transaction_names() -> None:
    assert deletion_file_name(0, 1, 5956912680248172172, 1) == "0-1-5956912680248172172.bin"
    assert deletion_file_name(42, 10, 7, 0) == "42-10-7.arrow"
    uuid = "550e8400-e29b-41d4-a716-446655440000"
    assert transaction_file_name(5, uuid) == f"5-{uuid}.txn"


@pytest.mark.parametrize(
    ("blob_id", "prefix"), [(1, "1000"), (2, "0100"), (3, "1100"), (4, "0010"), (5, "1010")]
)
def test_sidecar_names_use_reversed_binary(blob_id: int, prefix: str) -> None:
    text = reversed_blob_id(blob_id)
    assert len(text) == 32 and text.startswith(prefix) and set(text[4:]) <= {"0"}
    assert sidecar_relative_path("abc.lance", blob_id) == f"abc/{text}.blob"


def test_branch_refs() -> None:
    assert branch_ref_path("team/x") == "_refs/branches/team%2Fx.json"
    assert ref_name_from_file("team%2Fx.json") == "team/x"
    assert branch_root("s3://b/ds", "team/x") == "s3://b/ds/tree/team/x"


# The seed's "Hot/Cold Tiering" and multi-bucket examples, resolved as the layout spec says.
TIERING = {
    0: Base(0, None, "s3://hot-bucket/dataset", True),
    1: Base(1, None, "s3://cold-bucket/dataset-archive", True),
}
BUCKETS = {
    1: Base(1, "bucket2", "s3://bucket-2", False),
    2: Base(2, "bucket3", "s3://bucket-3/", False),
}


def test_seed_tiering_example() -> None:
    root = "s3://hot-bucket/dataset"
    assert resolve(root, TIERING, 0, FileKind.DATA, "fragment-0.lance") == "s3://hot-bucket/dataset/data/fragment-0.lance"
    assert (
        resolve(root, TIERING, 1, FileKind.DATA, "fragment-100.lance")
        == "s3://cold-bucket/dataset-archive/data/fragment-100.lance"
    )


def test_non_root_base_appends_path_directly() -> None:
    root = "s3://bucket-1/dataset_root"
    assert resolve(root, BUCKETS, 1, FileKind.DATA, "fragment-2.lance") == "s3://bucket-2/fragment-2.lance"
    assert resolve(root, BUCKETS, 2, FileKind.DATA, "fragment-4.lance") == "s3://bucket-3/fragment-4.lance"


def test_absent_base_id_resolves_under_the_root() -> None:
    root = "/data/ds"
    assert resolve(root, BUCKETS, None, FileKind.DATA, "a.lance") == "/data/ds/data/a.lance"
    assert resolve(root, BUCKETS, None, FileKind.DELETION, "0-1-2.arrow") == "/data/ds/_deletions/0-1-2.arrow"
    assert resolve(root, BUCKETS, None, FileKind.INDEX, "u/x.idx") == "/data/ds/_indices/u/x.idx"


def test_unknown_base_id_is_an_error_naming_it() -> None:
    with pytest.raises(UnresolvableFile, match="base_id 7"):
        resolve("/r", BUCKETS, 7, FileKind.DATA, "a.lance", "manifest fragment 3")


def test_deletion_file_in_non_root_base_resolves_directly_under_it() -> None:
    """The Storage Layout's two-step resolution applies to deletion files too (BASE-005 is a SHOULD)."""
    assert resolve("/r", BUCKETS, 1, FileKind.DELETION, "0-1-2.arrow") == BUCKETS[1].path + "/0-1-2.arrow"
