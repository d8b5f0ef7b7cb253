"""Incremental certification (``certify --since REPORT``, ``conformance.since``) on histories pylance writes:
after each change, the incremental run's JSON report equals a full run's (the second source of truth), less
``carried_over`` and ``evidence``, and ``carried_over`` names what was carried and what was judged again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

from conformance.certify import certify
from conformance.corpus.clean import rewrite_manifest, snapshot
from conformance.pytest_plugin import certify_or_fail
from conformance.shapes import SHAPES
from conformance.since import SinceRefused
from lancespec.cli import main
from reference.layout import TRANSACTIONS_DIR
from reference.proto import table_pb2


def _rows(start: int, count: int = 1) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + count), pa.int64())})


@pytest.fixture
def history(tmp_path: Path) -> str:
    """v1 create, v2-v3 appends, v4 overwrite (the files of v1-v3 leave the table), v5 append; tag
    ``stable`` on v2."""
    root = str(tmp_path / "ds")
    lance.write_dataset(_rows(0), root)
    lance.write_dataset(_rows(1), root, mode="append")
    lance.write_dataset(_rows(2), root, mode="append")
    lance.write_dataset(_rows(10, 2), root, mode="overwrite")
    lance.write_dataset(_rows(12), root, mode="append")
    lance.dataset(root).tags.create("stable", 2)
    return root


def _certify(root: str, out: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    code = main(["certify", root, "--all-versions", "--format", "json", "--output", str(out), "--quiet", *extra])
    return code, json.loads(out.read_text())


def _judged(report: dict[str, Any]) -> dict[str, Any]:
    """The report less what only says how it was made."""
    return {k: v for k, v in report.items() if k not in ("carried_over", "evidence")}


def _incremental_equals_full(root: str, tmp_path: Path, earlier: Path, name: str) -> dict[str, Any]:
    """Certify ``root`` since ``earlier`` and in full; assert the two reports say the same; return the
    incremental run's ``carried_over``."""
    code, incremental = _certify(root, tmp_path / f"{name}-since.json", "--since", str(earlier))
    full_code, full = _certify(root, tmp_path / f"{name}-full.json")
    assert code == full_code
    assert _judged(incremental) == _judged(full)
    assert full["carried_over"] is None
    carried: dict[str, Any] = incremental["carried_over"]
    assert carried["from"] == str(earlier)
    return carried


def _data_files(root: str, version: int) -> set[str]:
    return {f.path for fragment in lance.dataset(root, version=version).get_fragments()
            for f in fragment.data_files()}


def test_after_one_more_commit_only_the_new_version_is_judged(history: str, tmp_path: Path) -> None:
    code, first = _certify(history, tmp_path / "v5.json")
    assert code == 0 and first["versions"] == [1, 2, 3, 4, 5]
    lance.write_dataset(_rows(13), history, mode="append")
    carried = _incremental_equals_full(history, tmp_path, tmp_path / "v5.json", "v6")
    assert carried["versions"] == 5 and carried["new"] == ["v6"] and carried["changed"] == []


def test_a_deleted_data_file_of_an_old_version_rejudges_the_versions_holding_it(history: str,
                                                                                  tmp_path: Path) -> None:
    _certify(history, tmp_path / "before.json")
    added_by_v2 = _data_files(history, 2) - _data_files(history, 1)
    assert len(added_by_v2) == 1 and added_by_v2.isdisjoint(_data_files(history, 4))
    (Path(history) / "data" / added_by_v2.pop()).unlink()
    lance.write_dataset(_rows(13), history, mode="append")
    carried = _incremental_equals_full(history, tmp_path, tmp_path / "before.json", "deleted")
    assert carried["changed"] == ["v2", "v3"] and carried["new"] == ["v6"] and carried["versions"] == 3
    findings = json.loads((tmp_path / "deleted-full.json").read_text())["findings"]
    assert {f["version"] for f in findings if f["severity"] == "MUST"} == {2, 3}
    # and the incremental report is itself the basis of the next one
    lance.write_dataset(_rows(14), history, mode="append")
    again = _incremental_equals_full(history, tmp_path, tmp_path / "deleted-since.json", "next")
    assert again["changed"] == [] and again["new"] == ["v7"] and again["versions"] == 6


def test_a_moved_tag_is_judged_again(history: str, tmp_path: Path) -> None:
    _certify(history, tmp_path / "before.json")
    lance.dataset(history).tags.update("stable", 5)
    carried = _incremental_equals_full(history, tmp_path, tmp_path / "before.json", "moved")
    assert carried["versions"] == 5 and carried["changed"] == [] and carried["new"] == []


def test_a_tag_moved_to_a_version_that_is_gone_is_found(history: str, tmp_path: Path) -> None:
    """The refs are judged again on every run: a tag file rewritten to name a version that does not exist
    is a finding of the incremental run as of the full one."""
    _certify(history, tmp_path / "before.json")
    tag = next((Path(history) / "_refs" / "tags").iterdir())
    tag.write_text(tag.read_text().replace('"version":2', '"version":99').replace('"version": 2', '"version": 99'))
    _incremental_equals_full(history, tmp_path, tmp_path / "before.json", "dangling")
    findings = json.loads((tmp_path / "dangling-full.json").read_text())["findings"]
    assert any(f["version"] is None and f["path"].endswith(tag.name) for f in findings)


def test_a_changed_old_manifest_is_judged_again_and_said_so(history: str, tmp_path: Path) -> None:
    _certify(history, tmp_path / "before.json")

    def miscount(manifest: table_pb2.Manifest) -> None:
        manifest.fragments[0].physical_rows += 5

    rewrite_manifest(history, 3, miscount)
    carried = _incremental_equals_full(history, tmp_path, tmp_path / "before.json", "rewritten")
    assert "v3" in carried["changed"]
    findings = json.loads((tmp_path / "rewritten-full.json").read_text())["findings"]
    assert any(f["version"] == 3 and f["severity"] == "MUST" for f in findings)


def _transaction_file(root: str, version: int) -> Path:
    return Path(root, TRANSACTIONS_DIR, snapshot(root, version).manifest.transaction_file)


def test_a_damaged_transaction_file_rejudges_its_version_alone(history: str, tmp_path: Path) -> None:
    """A version's transaction file is tied to that version (``history.transaction`` reads it): damaged, it
    makes that version, and no other, judged again, and the full run finds HIST-002 there."""
    _certify(history, tmp_path / "before.json")
    _transaction_file(history, 2).write_bytes(b"not a transaction")
    carried = _incremental_equals_full(history, tmp_path, tmp_path / "before.json", "damaged")
    assert carried["changed"] == ["v2"] and carried["versions"] == 4
    findings = json.loads((tmp_path / "damaged-full.json").read_text())["findings"]
    assert {(f["requirement"], f["version"]) for f in findings if f["severity"] == "MUST"} == {("HIST-002", 2)}


def test_the_latest_transaction_rule_moves_with_the_latest_version(history: str, tmp_path: Path) -> None:
    """HIST-004 is about whichever version is the latest: the earlier run's finding on v5 is not carried once
    v6 is committed (a dataset check, run on every run)."""
    _transaction_file(history, 5).unlink()
    _certify(history, tmp_path / "before.json")
    before = json.loads((tmp_path / "before.json").read_text())["findings"]
    assert [f["version"] for f in before if f["requirement"] == "HIST-004"] == [5]
    lance.write_dataset(_rows(13), history, mode="append")
    carried = _incremental_equals_full(history, tmp_path, tmp_path / "before.json", "moved-on")
    assert carried["new"] == ["v6"]
    after = json.loads((tmp_path / "moved-on-full.json").read_text())["findings"]
    assert not any(f["requirement"] == "HIST-004" for f in after)


def test_the_text_report_says_what_was_carried(history: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    _certify(history, tmp_path / "before.json")
    lance.write_dataset(_rows(13), history, mode="append")
    capsys.readouterr()
    assert main(["certify", history, "--all-versions", "--since", str(tmp_path / "before.json")]) == 0
    out = capsys.readouterr().out
    assert (f"carried over from {tmp_path / 'before.json'}: the version checks of 5 version(s) (5 finding(s)); "
            "judged 1 new version(s)") in out


@pytest.mark.parametrize("case", ["other dataset", "other selection", "other checks", "other lancespec",
                                  "no evidence", "malformed evidence", "not a report"])
def test_a_report_that_cannot_be_the_basis_is_refused(history: str, tmp_path: Path, case: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    earlier = tmp_path / "before.json"
    _certify(history, earlier)
    report = json.loads(earlier.read_text())
    args = ["certify", history, "--all-versions", "--since", str(earlier), "--quiet"]
    expected = "other options"
    if case == "other dataset":
        shutil.copytree(history, tmp_path / "copy")
        args[1] = str(tmp_path / "copy")
    elif case == "other selection":
        args[2:3] = ["--version", "5"]
    elif case == "other checks":
        args += ["--only", "manifest"]
    elif case == "other lancespec":
        earlier.write_text(json.dumps({**report, "lancespec_version": "0.0.1"}))
        expected = "written by lancespec 0.0.1"
    elif case == "no evidence":
        earlier.write_text(json.dumps({**report, "evidence": None}))
        expected = "holds no evidence"
    elif case == "malformed evidence":
        report["evidence"]["roots"]["main"]["findings"] = [10**6]
        earlier.write_text(json.dumps(report))
        expected = "evidence is malformed"
    else:
        earlier.write_text("<testsuite/>")
        expected = "cannot read the earlier report"
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("lancespec: error: ") and expected in err


def test_the_api_and_the_pytest_plugin_take_since(history: str, tmp_path: Path) -> None:
    from conformance.report import render_json

    earlier = tmp_path / "before.json"
    earlier.write_text(render_json(certify(history, all_versions=True)))
    lance.write_dataset(_rows(13), history, mode="append")
    report = certify_or_fail(history, since=earlier)
    assert report.carried_over is not None and report.carried_over.versions == 5
    assert report.carried_over.new == ["v6"]
    with pytest.raises(SinceRefused):
        certify_or_fail(history, all_versions=False, since=earlier)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_every_pylance_shape_unchanged_is_carried_whole(name: str, tmp_path: Path) -> None:
    """On every shape pylance writes (clones, branches, bases, blobs, indices, deletions): run again with
    nothing changed, the versions judged are carried (the dataset checks see them unresolved) and the report
    equals a full run's."""
    from conformance.report import render_json, to_json

    shape = SHAPES[name](tmp_path / "shape")
    earlier = tmp_path / "earlier.json"
    first = certify(shape.uri, all_versions=True)
    earlier.write_text(render_json(first))
    again = to_json(certify(shape.uri, all_versions=True, since=str(earlier)))
    assert _judged(again) == _judged(to_json(certify(shape.uri, all_versions=True)))
    judged = sum(len(r["manifests"]) for r in json.loads(earlier.read_text())["evidence"]["roots"].values())
    assert again["carried_over"]["changed"] == [] and again["carried_over"]["versions"] == judged > 0


def test_a_commit_on_a_branch_is_judged_on_that_branch(tmp_path: Path) -> None:
    """On a dataset with branches (main, team/x, team/x/sub), one more commit on team/x: it is judged, main's
    versions are carried, and the report equals a full run's. team/x/sub's versions are judged again: their
    checks listed team/x's _versions/ (a dataset-root base of the sub-branch: does it hold a manifest?), and a
    listing is compared whole."""
    from conformance.report import render_json, to_json

    shape = SHAPES["branches"](tmp_path / "shape")
    earlier = tmp_path / "earlier.json"
    earlier.write_text(render_json(certify(shape.uri, all_versions=True)))
    branch = f"{shape.uri}/tree/team/x"
    before = lance.dataset(branch).version
    lance.write_dataset(lance.dataset(branch).to_table().slice(0, 1), branch, mode="append")
    again = to_json(certify(shape.uri, all_versions=True, since=str(earlier)))
    assert _judged(again) == _judged(to_json(certify(shape.uri, all_versions=True)))
    assert again["carried_over"]["new"] == [f"team/x@v{before + 1}"]
    changed = again["carried_over"]["changed"]
    assert changed and all(v.startswith("team/x/sub@") for v in changed)
    assert again["carried_over"]["versions"] == len(again["versions"]) + len(again["branch_versions"]["team/x"]) - 1
    assert again["branch_versions"]["team/x"][-1] == before + 1


def test_only_a_run_that_writes_a_json_report_gathers_evidence(history: str, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The evidence serves a later ``--since`` run, which reads a JSON report: a run writing only text or JUnit
    gathers none (a million files' identities), one writing JSON gathers it, and the verdict is the same."""
    from conformance import certify as certify_module

    sealed: list[str] = []
    seal = certify_module.Evidence.seal
    monkeypatch.setattr(certify_module.Evidence, "seal", lambda self, present: (sealed.append("sealed"),
                                                                               seal(self, present))[1])
    base = ["certify", history, "--all-versions", "--quiet"]
    assert main(base) == main([*base, "--format", "junit", "--output", str(tmp_path / "r.xml")]) == 0
    assert sealed == []
    code, report = _certify(history, tmp_path / "with.json")
    assert code == 0 and sealed == ["sealed"] and report["evidence"] is not None
