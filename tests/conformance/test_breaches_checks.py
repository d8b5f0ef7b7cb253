"""Each breach of breach_kit_checks.py, certified: exit 1 (a MUST breached), the breach's requirement at
MUST, and no other MUST; certified both through the I/O plan and lazily (``certify_findings``)."""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pytest
from breach_kit_checks import BREACHES, branched, copy_root, stable_row_ids
from conformance_kit import assert_clean, assert_only, certify_findings

from conformance.certify import certify
from lancespec.cli.main import main
from reference import relocate
from reference.store.local import LocalStore
from reference.table import Dataset


@pytest.mark.parametrize("name", sorted(BREACHES))
def test_breach_is_reported_as_its_requirement(tmp_path: Path, name: str) -> None:
    breach = BREACHES[name](tmp_path)
    found = assert_only(certify_findings(breach.uri), breach.requirement)
    assert all(f.severity == "MUST" for f in found)


@pytest.mark.parametrize("name", sorted(BREACHES))
def test_breach_fails_certify(tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    breach = BREACHES[name](tmp_path)
    assert main(["certify", breach.uri, "--all-versions"]) == 1
    assert breach.requirement in capsys.readouterr().out


def test_a_valid_external_row_id_sequence_is_judged_like_an_inline_one(tmp_path: Path) -> None:
    """The same sequence, moved from inline to a range of an external file: no ROW-001, no MUST."""
    findings = certify_findings(stable_row_ids(tmp_path, external=b"header!!trailer"))
    assert_clean(findings)
    assert not [f for f in findings if f.requirement == "ROW-001"]


def test_branches_of_a_family_and_of_a_clone_are_no_copies(tmp_path: Path) -> None:
    """A branch reading its main root, and a branch of a shallow clone reading the clone's source (which the
    clone registers too), breach no PORT-002."""
    source = branched(tmp_path)
    clone = lance.dataset(str(source)).shallow_clone(str(tmp_path / "clone"), 1)
    clone.create_branch("sub")
    lance.write_dataset(pa.table({"id": pa.array([9], pa.int64())}), str(tmp_path / "clone" / "tree" / "sub"),
                        mode="append")
    for uri in (str(source), str(tmp_path / "clone")):
        findings = certify_findings(uri)
        assert_clean(findings)
        assert not [f for f in findings if f.requirement == "PORT-002"], uri


def test_a_copied_root_adopted_by_relocate_is_no_copy(tmp_path: Path) -> None:
    """After ``relocate`` adopted the copy (one new version of the branch naming the copy), the branch reads
    its own family: no PORT-002 (the versions before still name the original; only the latest is judged)."""
    copy_root(branched(tmp_path), tmp_path / "new")
    relocate.relocate(Dataset(str(tmp_path / "new")).branch("feat"), adopt_from=str(tmp_path / "old"))
    findings = certify_findings(str(tmp_path / "new"))
    assert not [f for f in findings if f.requirement == "PORT-002"]


@pytest.mark.interop
def test_f045_pylance_cannot_open_an_external_row_id_sequence(tmp_path: Path) -> None:
    """F-045: the valid external sequence above; pylance 14.0.2 refuses the version, opens the one before."""
    uri = stable_row_ids(tmp_path, external=b"header!!trailer")
    with pytest.raises(ValueError, match="All fragments must have row ids"):
        lance.dataset(uri)
    assert lance.dataset(uri, version=1).count_rows() == 4


def test_an_external_object_is_asked_about_once_and_never_read(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Through certify's I/O plan, each external object costs one HEAD for the whole run (three versions,
    the same objects named by several rows of each), and no byte of it is read (BLOB-004's I/O bound)."""
    external = tmp_path / "external"
    external.mkdir()
    objects = [external / f"o{i}.bin" for i in range(3)]
    for i, path in enumerate(objects):
        path.write_bytes(bytes(50 + i))
    uri = str(tmp_path / "ds")
    values = [str(p) for p in objects] * 2
    table = pa.Table.from_arrays([pa.array(range(6), pa.int64()), lance.blob_array(values)],
                                 schema=pa.schema([pa.field("id", pa.int64()), lance.blob_field("blob")]))
    lance.write_dataset(table, uri, data_storage_version="2.2",
                        initial_bases=[lance.DatasetBasePath(str(external), name="external")])
    lance.write_dataset(table, uri, mode="append")
    lance.write_dataset(table, uri, mode="append")
    asked: list[tuple[str, str]] = []
    for method in ("head", "get", "get_range", "get_tail"):
        original = getattr(LocalStore, method)

        def counted(self: LocalStore, target: str, *args: object, _name: str = method,
                    _original: object = original) -> object:
            asked.append((_name, target))
            return _original(self, target, *args)  # type: ignore[operator]

        monkeypatch.setattr(LocalStore, method, counted)
    report = certify(uri, all_versions=True)
    assert not report.must_findings
    about = [(name, target) for name, target in asked if target.startswith(str(external))]
    assert sorted(about) == sorted(("head", str(p)) for p in objects)
