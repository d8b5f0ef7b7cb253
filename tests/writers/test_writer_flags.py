"""MAN-020: a writer that does not recognise a writer feature flag does not write to the dataset (the
Table Format's Manifest writer_feature_flags). Both writers this suite knows are held to it: the
reference writer and pylance 14.0.2, each refusing and leaving storage byte for byte unchanged. Readers
are not bound by the writer word: the dataset stays readable and certify still judges it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conformance_kit import file_digests, rewrite_manifest, rows

from reference import ops
from reference.errors import UnsupportedFeatureError
from reference.table import Dataset

UNKNOWN_BIT = 1 << 40


def _flagged(tmp_path: Path) -> str:
    uri = str(tmp_path / "ds")
    ops.create(uri, rows(0, 4))
    rewrite_manifest(uri, 1, lambda m: setattr(m, "writer_feature_flags", m.writer_feature_flags | UNKNOWN_BIT))
    return uri


def _reference_append(uri: str) -> None:
    ops.append(Dataset(uri), rows(4, 2))


def _reference_delete(uri: str) -> None:
    ops.delete(Dataset(uri), rows={0: [1]})


def _pylance_append(uri: str) -> None:
    import lance

    lance.write_dataset(rows(4, 2), uri, mode="append")


def _pylance_delete(uri: str) -> None:
    import lance

    lance.dataset(uri).delete("id = 1")


@pytest.mark.parametrize(("write", "refusal", "strays"), [
    pytest.param(_reference_append, UnsupportedFeatureError, 0, id="reference-append"),
    pytest.param(_reference_delete, UnsupportedFeatureError, 0, id="reference-delete"),
    pytest.param(_pylance_append, OSError, 0, id="pylance-append", marks=pytest.mark.interop),
    pytest.param(_pylance_delete, OSError, 1, id="pylance-delete", marks=pytest.mark.interop),
])
def test_a_writer_refuses_an_unknown_writer_flag(tmp_path: Path, write: Callable[[str], None],
                                                  refusal: type[Exception], strays: int) -> None:
    """No version is committed. Storage is unchanged, except that pylance 14.0.2's delete writes its
    deletion file before it refuses and leaves it behind (spec/findings.md F-033)."""
    uri = _flagged(tmp_path)
    before = file_digests(Path(uri))
    with pytest.raises(refusal, match=str(UNKNOWN_BIT)):
        write(uri)
    assert Dataset(uri).versions() == [1]
    after = file_digests(Path(uri))
    assert {k: v for k, v in after.items() if k in before} == before, "a refused write changed a file"
    added = sorted(set(after) - set(before))
    assert len(added) == strays, added
    assert all("/_deletions/" in path for path in added)


def test_the_flagged_dataset_stays_readable(tmp_path: Path) -> None:
    import lance

    uri = _flagged(tmp_path)
    assert lance.dataset(uri).to_table().column("id").to_pylist() == [0, 1, 2, 3]
