"""Negative tests of the refs, clones and history checks: for every requirement they judge, a clean
dataset written by the reference writer (certify --all-versions finds no MUST), then exactly one thing
altered on storage, then the requirement must be reported and no unrelated MUST may fire.

Certify runs with the areas in ``AREAS`` (the checks that exist today: these three and the manifest
checks); widen it as the layout, bases, files and portability checks land.
The breaches that are cases of the golden corpus (conformance/corpus/breach_*.py) are tested there, by
tests/fixtures/test_breach_cases.py; what stays here is what those cases do not show (variants, messages,
what must NOT be reported).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

import pyarrow as pa
import pytest
from conformance_kit import certify_both_ways

from conformance.certify import certify
from conformance.findings import Finding, Report
from reference import clone, flags, ops, refs
from reference.codec import decode_transaction, encode_manifest_file, encode_transaction
from reference.layout import TRANSACTIONS_DIR, manifest_name, transaction_file_name
from reference.proto import table_pb2
from reference.table import Dataset

AREAS = None  # every area

#: What else a clone whose source is gone breaks: its data files (BASE-004) and deletion files (DEL-001)
#: no longer exist (the files checks, when certify runs them).
GONE_FILES = ("BASE-004", "DEL-001")

#: Requirements a clean reference-writer dataset must never be reported for, SHOULDs included.
NEVER_ON_CLEAN = {"REF-005", "HIST-004", "HIST-005"}


# --- helpers ---------------------------------------------------------------------------------------------


def rows(start: int, count: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + count), pa.int64()),
                     "name": pa.array([f"r{i}" for i in range(start, start + count)], pa.string())})


def certify_all(uri: str | Path) -> Report:
    return certify_both_ways(str(uri), all_versions=True, areas=AREAS)


def assert_clean(*uris: str | Path) -> None:
    for uri in uris:
        report = certify_all(uri)
        assert report.readable
        assert report.must_findings == [], report.must_findings
        assert not {f.requirement for f in report.findings} & NEVER_ON_CLEAN, report.findings


def findings_of(report: Report, requirement: str) -> list[Finding]:
    return [f for f in report.findings if f.requirement == requirement]


def assert_only(report: Report, requirement: str, *also: str) -> list[Finding]:
    """``requirement`` is reported; every MUST finding is ``requirement`` or one of ``also``."""
    found = findings_of(report, requirement)
    assert found, f"{requirement} not reported; findings: {report.findings}"
    unrelated = [f for f in report.must_findings if f.requirement not in {requirement, *also}]
    assert unrelated == [], unrelated
    return found


def manifest_path(root: str | Path, version: int) -> Path:
    found = [e.uri for e in Dataset(str(root)).version_entries() if e.version == version]
    assert len(found) == 1, f"{root} has no version {version}"
    return Path(found[0])


def rewrite_manifest(root: str | Path, version: int, edit: Callable[[table_pb2.Manifest], None], *,
                     transaction: bytes | None = None, new_version: int | None = None) -> Path:
    """Re-encode ``version``'s manifest after ``edit`` (keeping its inline transaction unless
    ``transaction`` replaces it, and its index section); ``new_version`` also renames the file."""
    snapshot = Dataset(str(root)).snapshot(version, strict=False)
    original = snapshot.manifest_file
    manifest = table_pb2.Manifest()
    manifest.CopyFrom(original.manifest)
    edit(manifest)
    data = encode_manifest_file(manifest, transaction if transaction is not None else original.transaction_bytes,
                                original.index_section)
    path = Path(snapshot.manifest_uri)
    if new_version is not None:
        path.unlink()
        path = path.with_name(manifest_name(new_version, snapshot.naming))
    path.write_bytes(data)
    return path


def transaction_path(root: str | Path, version: int) -> Path:
    name = Dataset(str(root)).snapshot(version, strict=False).manifest.transaction_file
    return Path(root) / TRANSACTIONS_DIR / name


def edit_json(path: Path, edit: Callable[[dict[str, object]], object]) -> None:
    obj = json.loads(path.read_text())
    edit(obj)
    path.write_text(json.dumps(obj, indent=2))


def messages(found: Iterable[Finding]) -> str:
    return " | ".join(f.message for f in found)


# --- clean datasets ----------------------------------------------------------------------------------------


@pytest.fixture
def main(tmp_path: Path) -> str:
    """Three versions (create of two fragments, two appends), tags t1 -> 1 and t2 -> 2."""
    root = str(tmp_path / "ds")
    ops.create(root, rows(0, 6), max_rows_per_file=3)
    dataset = Dataset.open(root)
    ops.append(dataset, rows(6, 2))
    ops.append(dataset, rows(8, 2))
    refs.create_tag(dataset, "t1", 1)
    refs.create_tag(dataset, "t2", 2)
    assert_clean(root)
    return root


@pytest.fixture
def branched(tmp_path: Path) -> str:
    """Main v1..v3; branch feat forked from main v2 with its own append (feat v3); a tag on feat v3."""
    root = str(tmp_path / "ds")
    ops.create(root, rows(0, 4), max_rows_per_file=2)
    dataset = Dataset.open(root)
    ops.append(dataset, rows(4, 2))
    feat = refs.create_branch(dataset, "feat", 2)
    ops.append(feat, rows(100, 2))
    ops.append(dataset, rows(6, 2))
    refs.create_tag(dataset, "on-feat", ("feat", 3))
    assert_clean(root)
    return root


def _source(tmp_path: Path) -> Dataset:
    """A source: v1 create, v2 delete (a deletion file), tag release -> 2, v3 append."""
    root = str(tmp_path / "source")
    ops.create(root, rows(0, 6), max_rows_per_file=3)
    source = Dataset.open(root)
    ops.delete(source, "id = 1")
    refs.create_tag(source, "release", 2)
    ops.append(source, rows(6, 2))
    return source


@pytest.fixture
def shallow(tmp_path: Path) -> tuple[str, str]:
    """(source root, clone root): a shallow clone of the tagged source v2, then an append on the clone."""
    source = _source(tmp_path)
    target = clone.shallow_clone(source, 2, str(tmp_path / "clone"))
    ops.append(target, rows(50, 2))
    assert_clean(target.uri)
    return source.uri, target.uri


@pytest.fixture
def deep(tmp_path: Path) -> tuple[str, str]:
    """(source root, clone root): a deep clone of source v2, then an append on the clone."""
    source = _source(tmp_path)
    target = clone.deep_clone(source, 2, str(tmp_path / "deep"))
    ops.append(target, rows(50, 2))
    assert_clean(target.uri)
    return source.uri, target.uri


# --- refs.tags: REF-001, REF-002, REF-005 ------------------------------------------------------------------


def test_ref001_tag_with_invalid_json_does_not_hide_the_others(main: str) -> None:
    tags = Path(main) / "_refs" / "tags"
    (tags / "t1.json").write_text("{not json")
    edit_json(tags / "t2.json", lambda obj: obj.update(version=99))
    report = certify_all(main)
    found = assert_only(report, "REF-001", "REF-002")
    assert [Path(f.path).name for f in found] == ["t1.json"]
    assert [Path(f.path).name for f in findings_of(report, "REF-002")] == ["t2.json"]


def test_ref001_tag_with_non_integer_version(main: str) -> None:
    edit_json(Path(main) / "_refs" / "tags" / "t1.json", lambda obj: obj.update(version="1"))
    assert_only(certify_all(main), "REF-001")


def test_ref002_tag_names_a_version_missing_on_its_branch(branched: str) -> None:
    # feat has versions 2 and 3 only: version 1 exists on main, not on feat
    edit_json(Path(branched) / "_refs" / "tags" / "on-feat.json", lambda obj: obj.update(version=1))
    found = assert_only(certify_all(branched), "REF-002")
    assert "'feat'" in messages(found)


def test_ref002_tag_on_branch_main_is_a_tag_on_main(main: str) -> None:
    """pylance 14.0.2 checks out a tag whose branch is "main" as a tag on main: no finding."""
    edit_json(Path(main) / "_refs" / "tags" / "t1.json", lambda obj: obj.update(branch="main"))
    assert findings_of(certify_all(main), "REF-002") == []


def test_ref_checks_run_once_for_the_main_root(branched: str) -> None:
    edit_json(Path(branched) / "_refs" / "tags" / "on-feat.json", lambda obj: obj.update(version=99))
    found = findings_of(certify_all(branched), "REF-002")
    assert len(found) == 1 and found[0].branch is None


# --- refs.branches: REF-003, REF-004, REF-005 --------------------------------------------------------------


def test_ref003_branch_file_not_json(branched: str) -> None:
    (Path(branched) / "_refs" / "branches" / "feat.json").write_text("[1, 2")
    assert_only(certify(branched, areas=AREAS), "REF-003")


def test_all_versions_survives_a_bad_branch_file(branched: str) -> None:
    (Path(branched) / "_refs" / "branches" / "feat.json").write_text("[1, 2")
    assert_only(certify_all(branched), "REF-003")


def test_ref003_branch_without_a_dataset(branched: str) -> None:
    shutil.rmtree(Path(branched) / "tree" / "feat")
    (Path(branched) / "_refs" / "tags" / "on-feat.json").unlink()  # (that tag would be REF-002)
    found = assert_only(certify_all(branched), "REF-003")
    assert "no manifest" in messages(found)


def test_ref004_fork_version_deleted(branched: str) -> None:
    manifest_path(branched, 2).unlink()
    found = assert_only(certify_all(branched), "REF-004")
    assert "version 2 of main" in messages(found)


def test_ref005_branch_with_wrong_manifest_size(branched: str) -> None:
    edit_json(Path(branched) / "_refs" / "branches" / "feat.json", lambda obj: obj.update(manifestSize=7))
    report = certify_all(branched)
    assert_only(report, "REF-005")
    assert report.must_findings == []


def test_ref005_branch_manifest_size_is_the_fork_manifest(branched: str) -> None:
    """As pylance 14.0.2 records it: the size of the parent's manifest at parentVersion, not of the
    branch's own first manifest (which differs: it carries the Clone transaction and the base)."""
    record = Dataset(branched).branches()["feat"]
    assert record.manifest_size == manifest_path(branched, 2).stat().st_size
    assert record.manifest_size != manifest_path(f"{branched}/tree/feat", 2).stat().st_size


# --- clones.lineage: CLONE-001..004 ------------------------------------------------------------------------


def test_clone001_shallow_clone_source_removed(shallow: tuple[str, str]) -> None:
    source, target = shallow
    shutil.rmtree(source)
    report = certify_all(target)
    # the inherited files are gone with the source: their own checks (data, deletion files) may say so too
    found = assert_only(report, "CLONE-001", *GONE_FILES)
    assert source in [f.path for f in found]
    assert findings_of(report, "CLONE-005") == []  # an unreachable source is CLONE-001's alone


def test_clone001_inherited_non_root_base_removed(tmp_path: Path) -> None:
    base = tmp_path / "base"
    root = str(tmp_path / "ds")
    ops.create(root, rows(0, 4), max_rows_per_file=2, initial_bases=[ops.DatasetBasePath(str(base), name="b")],
               target_bases=["b"])
    target = clone.shallow_clone(Dataset.open(root), 1, str(tmp_path / "clone"))
    assert_clean(target.uri)
    shutil.rmtree(base)
    found = assert_only(certify_all(target.uri), "CLONE-001", *GONE_FILES)
    assert str(base) in [f.path for f in found]


def test_clone002_first_version_differs_from_the_source_version(shallow: tuple[str, str], tmp_path: Path) -> None:
    source = Dataset(shallow[0])
    target = clone.shallow_clone(source, 2, str(tmp_path / "renumbered"))
    assert_clean(target.uri)
    rewrite_manifest(target.uri, 2, lambda m: setattr(m, "version", 5), new_version=5)
    found = assert_only(certify_all(target.uri), "CLONE-002")
    assert "first version is 5" in messages(found)


def _move_new_file_into_source(clone_root: str, source_root: str, version: int, base_id: int) -> str:
    """Point the data file ``version`` added at the source base, and copy it there so it exists."""
    before = {(f.id, d.path) for f in Dataset(clone_root).snapshot(version - 1, strict=False).manifest.fragments
              for d in f.files}
    snapshot = Dataset(clone_root).snapshot(version, strict=False)
    new = [(i, j) for i, f in enumerate(snapshot.manifest.fragments) for j, d in enumerate(f.files)
           if (f.id, d.path) not in before]
    assert len(new) == 1
    i, j = new[0]
    path = snapshot.manifest.fragments[i].files[j].path
    shutil.copy(Path(clone_root) / "data" / path, Path(source_root) / "data" / path)

    def edit(manifest: table_pb2.Manifest) -> None:
        manifest.fragments[i].files[j].base_id = base_id

    rewrite_manifest(clone_root, version, edit)
    return path


def test_clone003_branch_write_lands_in_main(branched: str) -> None:
    feat = f"{branched}/tree/feat"
    [base] = Dataset(feat).snapshot(3).bases
    _move_new_file_into_source(feat, branched, 3, base.id)
    found = assert_only(certify_all(branched), "CLONE-003")
    assert [f.branch for f in found] == ["feat"]


def test_clone003_write_into_an_inherited_storage_base_is_not_the_source(tmp_path: Path) -> None:
    """A clone may target a base it inherited (pylance 14.0.2 lets it): a base is storage, not the source."""
    base = tmp_path / "base"
    root = str(tmp_path / "ds")
    ops.create(root, rows(0, 4), max_rows_per_file=2, initial_bases=[ops.DatasetBasePath(str(base), name="b")],
               target_bases=["b"])
    target = clone.shallow_clone(Dataset.open(root), 1, str(tmp_path / "clone"))
    ops.append(target, rows(10, 2), target_bases=["b"])
    written = Dataset(target.uri).snapshot().fragments[-1].files[0].uri
    assert written is not None and written.startswith(str(base))
    assert findings_of(certify_all(target.uri), "CLONE-003") == []


def test_clone004_deep_clone_file_points_at_the_source(deep: tuple[str, str]) -> None:
    source, target = deep

    def edit(manifest: table_pb2.Manifest) -> None:
        manifest.base_paths.add(id=0, is_dataset_root=True, path=source)
        manifest.fragments[0].files[0].base_id = 0
        manifest.reader_feature_flags |= flags.BASE_PATHS
        manifest.writer_feature_flags |= flags.BASE_PATHS

    rewrite_manifest(target, 2, edit)
    found = assert_only(certify_all(target), "CLONE-004")
    assert len(found) == 1 and source in found[0].message


def test_clone004_later_version_of_deep_clone_points_at_the_source(deep: tuple[str, str]) -> None:
    source, target = deep
    path = _move_new_file_into_source_deep(target, source)
    found = assert_only(certify_all(target), "CLONE-004")
    assert path in messages(found)


def _move_new_file_into_source_deep(target: str, source: str) -> str:
    def edit(manifest: table_pb2.Manifest) -> None:
        manifest.base_paths.add(id=0, is_dataset_root=True, path=source)
        manifest.reader_feature_flags |= flags.BASE_PATHS
        manifest.writer_feature_flags |= flags.BASE_PATHS

    rewrite_manifest(target, 3, edit)
    return _move_new_file_into_source(target, source, 3, 0)


# --- clones.source_protected: CLONE-005 ----------------------------------------------------------------------


def test_clone005_untagged_source_version(tmp_path: Path) -> None:
    source = _source(tmp_path)
    untagged = clone.shallow_clone(source, 3, str(tmp_path / "untagged"))
    tagged = clone.shallow_clone(source, 2, str(tmp_path / "tagged"))
    report = certify_all(untagged.uri)
    assert report.must_findings == []
    found = findings_of(report, "CLONE-005")
    assert len(found) == 1 and found[0].severity == "SHOULD" and "version 3" in found[0].message
    assert findings_of(certify_all(tagged.uri), "CLONE-005") == []


def test_clone005_branch_source_needs_a_tag_on_that_branch(branched: str, tmp_path: Path) -> None:
    main = Dataset(branched)
    tagged = clone.shallow_clone(main.branch("feat"), 3, str(tmp_path / "from-feat-3"))  # tag on-feat -> feat v3
    untagged = clone.shallow_clone(main.branch("feat"), 2, str(tmp_path / "from-feat-2"))
    assert findings_of(certify_all(tagged.uri), "CLONE-005") == []
    found = findings_of(certify_all(untagged.uri), "CLONE-005")
    assert len(found) == 1 and "'feat'" in found[0].message


def test_clone005_not_for_branches_or_deep_clones(branched: str, deep: tuple[str, str]) -> None:
    assert findings_of(certify_all(branched), "CLONE-005") == []
    assert findings_of(certify_all(deep[1]), "CLONE-005") == []


# --- history.manifests_readable: HIST-001, MAN-015 -----------------------------------------------------------


def test_hist001_truncated_old_manifest(main: str) -> None:
    path = manifest_path(main, 1)
    path.write_bytes(path.read_bytes()[:20])
    report = certify_all(main)
    found = assert_only(report, "HIST-001", "MAN-015")
    assert [f.version for f in found] == [1]  # reported once: certify's finding and the check's merge
    assert [f.version for f in findings_of(report, "MAN-015")] == [1]


def test_hist001_unselected_versions_are_read_too(main: str) -> None:
    path = manifest_path(main, 1)
    path.write_bytes(path.read_bytes()[:20])
    report = certify(main, areas=AREAS)  # only the latest version is selected
    assert report.readable
    found = assert_only(report, "HIST-001", "MAN-015")
    assert [f.version for f in found] == [1]


def test_man015_bad_footer_magic(main: str) -> None:
    path = manifest_path(main, 2)
    data = path.read_bytes()
    path.write_bytes(data[:-4] + b"LANX")
    found = assert_only(certify_all(main), "MAN-015", "HIST-001")
    assert "magic" in messages(found)


def test_hist001_unreadable_branch_manifest(branched: str) -> None:
    path = manifest_path(f"{branched}/tree/feat", 3)
    path.write_bytes(b"")
    found = assert_only(certify_all(branched), "HIST-001", "MAN-015")
    assert [(f.branch, f.version) for f in found] == [("feat", 3)]


# --- history.transactions: HIST-002, HIST-003, HIST-004 -------------------------------------------------------


def test_hist002_transaction_file_does_not_decode(main: str) -> None:
    transaction_path(main, 3).write_bytes(b"\xff\xff\xff\xff")
    found = assert_only(certify_all(main), "HIST-002")
    assert [f.version for f in found] == [3] and "decode" in found[0].message


def test_hist003_clone_read_version_is_the_source_version(shallow: tuple[str, str]) -> None:
    _, target = shallow
    old = transaction_path(target, 2)
    txn = decode_transaction(old.read_bytes())
    assert txn.read_version == txn.clone.ref_version == 2
    txn.read_version = 1
    data = encode_transaction(txn)
    name = transaction_file_name(1, txn.uuid)
    old.unlink()
    (old.parent / name).write_bytes(data)
    rewrite_manifest(target, 2, lambda m: setattr(m, "transaction_file", name), transaction=data)
    found = assert_only(certify_all(target), "HIST-003")
    assert [f.version for f in found] == [2]


def test_hist004_older_transaction_files_may_go(main: str) -> None:
    transaction_path(main, 2).unlink()
    report = certify_all(main)
    assert report.must_findings == [] and findings_of(report, "HIST-004") == []


# --- history.timestamps: HIST-005 ------------------------------------------------------------------------------


def test_clone001_follows_a_relocated_source(tmp_path: Path) -> None:
    """A shallow clone whose source was copied elsewhere and its base relocated: once the original is gone,
    the latest version is still whole (the source check follows the relocated base, not ref_path)."""
    from reference import relocate

    src, moved = tmp_path / "src", tmp_path / "moved"
    ops.create(str(src), pa.table({"a": [1, 2, 3]}))
    target = clone.shallow_clone(Dataset(str(src)), 1, str(tmp_path / "clone"))
    shutil.copytree(src, moved)
    relocate.relocate(target, {0: str(moved)})
    shutil.rmtree(src)
    assert [f for f in certify(str(tmp_path / "clone")).findings if f.severity == "MUST"] == []
