"""A manifest write that fails in transit: the commit is recognised as ours when it landed, tried again from
a listing when the name was never taken, and reported as an unknown outcome (keeping every file it
references) when it cannot be told."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from reference import ops
from reference.errors import CommitOutcomeUnknown, ObjectAlreadyExists
from reference.layout import manifest_name, parse_manifest_name
from reference.store import Storage
from reference.store.local import LocalStore
from reference.table import Dataset


class FlakyManifestStore(LocalStore):
    """Fails the next manifest ``put_if_absent`` with a connection error, after (``lands``) or instead of
    storing it: a lost acknowledgement, or a request that never arrived. ``freed``: it landed, a later
    version landed after it, and a cleanup removed it, all before the error."""

    def __init__(self, lands: bool, freed: bool = False) -> None:
        self.lands, self.freed = lands, freed
        self.armed = True
        self.sent: list[bool] = []

    def put_if_absent(self, uri: str, data: bytes, *, resend: bool = True) -> None:
        if uri.endswith(".manifest"):
            self.sent.append(resend)
        if self.armed and uri.endswith(".manifest"):
            self.armed = False
            if self.lands:
                super().put_if_absent(uri, data)
            if self.freed:
                name = parse_manifest_name(uri.rsplit("/", 1)[-1])
                assert name is not None
                super().put_if_absent(uri.rsplit("/", 1)[0] + "/" + manifest_name(name.version + 1), data)
                self.delete(uri)
            raise ConnectionError("connection reset by peer")
        super().put_if_absent(uri, data)


class TakenThenGoneStore(LocalStore):
    """The next manifest ``put_if_absent`` lands, its answer is lost, a cleanup removes it, and the resend is
    answered "already exists": what the simulator saw when a cleanup kept only the version after it."""

    def __init__(self) -> None:
        self.armed = True

    def put_if_absent(self, uri: str, data: bytes, *, resend: bool = True) -> None:
        super().put_if_absent(uri, data)
        if self.armed and uri.endswith(".manifest"):
            self.armed = False
            self.delete(uri)
            raise ObjectAlreadyExists("object already exists", uri)


def _dataset(tmp_path: Path, store: LocalStore) -> Dataset:
    uri = str(tmp_path / "ds")
    ops.create(uri, pa.table({"a": [1, 2]}))
    storage = Storage()
    storage._backends["file"] = store
    return Dataset(uri, storage)


def _data_files(tmp_path: Path) -> set[str]:
    return {p.name for p in (tmp_path / "ds" / "data").iterdir()}


def test_a_lost_acknowledgement_is_a_success(tmp_path: Path) -> None:
    store = FlakyManifestStore(lands=True)
    result = ops.append(_dataset(tmp_path, store), pa.table({"a": [3]}))
    assert result.version == 2 and store.sent == [False]  # read back as ours, never sent again
    assert Dataset.open(str(tmp_path / "ds")).snapshot().num_rows == 3


def test_a_lost_request_is_tried_again_from_a_listing(tmp_path: Path) -> None:
    """Nothing holds the name and no later version exists: the name was never taken, so trying again is safe."""
    store = FlakyManifestStore(lands=False)
    result = ops.append(_dataset(tmp_path, store), pa.table({"a": [3]}))
    assert result.version == 2 and store.sent == [False, False]
    assert Dataset.open(str(tmp_path / "ds")).versions() == [1, 2]


def test_an_unknown_outcome_keeps_the_files(tmp_path: Path) -> None:
    """The name is free but a later version exists: it was taken and freed, perhaps by this very write."""
    dataset = _dataset(tmp_path, FlakyManifestStore(lands=True, freed=True))
    before = _data_files(tmp_path)
    with pytest.raises(CommitOutcomeUnknown, match="free below version 3"):
        ops.append(dataset, pa.table({"a": [3]}))
    after = _data_files(tmp_path)
    assert len(after - before) == 1  # the appended file stays: the version might have landed
    assert Dataset.open(str(tmp_path / "ds")).versions() == [1, 3]


def test_a_taken_name_whose_manifest_is_gone_is_an_unknown_outcome(tmp_path: Path) -> None:
    """Not "not ours": the retry would fail or commit again, and a failure would discard files that the
    removed version, and every version built on it, reference."""
    dataset = _dataset(tmp_path, TakenThenGoneStore())
    before = _data_files(tmp_path)
    with pytest.raises(CommitOutcomeUnknown, match="cleanup removed it"):
        ops.append(dataset, pa.table({"a": [3]}))
    assert len(_data_files(tmp_path) - before) == 1  # the appended file stays
