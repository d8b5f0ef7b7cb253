"""The lineage model (lancespec.render.lineage) of every golden corpus root, held to two other sources:
what ``lancespec inspect --format json`` says, command by command (one node per version, branch, tag and base), and
the case's own expectations in case.json (every version, branch and tag, with its row count). Plus the
collapsing of long histories and the grouping of locations, on small hand-made documents."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from report_kit import ALL_CASES, CASES, case_json, inspect_json, inspected_lineage

from conformance.corpus.portable import materialize
from conformance.fetch import RunStorage
from lancespec.render.dot import graphviz_available, to_dot, to_svg
from lancespec.render.gather import gather
from lancespec.render.lineage import COLLAPSE_RUN, Lineage, VersionRef, build_lineage, lane_name, spans
from reference.table import Dataset


def lineage_of(uri: str) -> Lineage:
    return build_lineage(gather(Dataset.open(uri, storage=RunStorage())))


def _dataset(lineage: Lineage, root: str) -> Any:
    return next(ds for ds in lineage.datasets if ds.root == root)


@pytest.mark.parametrize("case", ALL_CASES)
def test_one_node_per_version_branch_tag_and_base_as_inspect_says(case: str, corpus: Callable[[str], Path]) -> None:
    data = corpus(case)
    for root in case_json(case)["roots"]:
        uri = str(data / root)
        expected = inspected_lineage(uri)
        lineage = lineage_of(uri)
        if not expected.lanes:  # inspect refuses a root whose files cannot all be resolved (a relative base,
            # BASE-002): one line, exit 2; the page still draws the root from what can be read
            assert inspect_json(uri) is None and [ds.root for ds in lineage.datasets] == [uri]
            assert case == "py-relative-base-path"
            continue
        steps = [s for ds in lineage.datasets for lane in ds.lanes for s in lane.steps]
        assert not any(s.collapsed for s in steps)  # corpus histories are short: every version its own node
        assert {ds.root: {lane.branch: [v for s in lane.steps for v in s.versions] for lane in ds.lanes}
                for ds in lineage.datasets} == expected.lanes
        assert len(steps) == expected.versions
        assert {ds.root: {t.name: (t.branch, t.version) for t in ds.tags} for ds in lineage.datasets} == {
            r: {name: (lane_name(b), v) for name, (b, v) in tags.items()} for r, tags in expected.tags.items()}
        for ds in lineage.datasets:
            for tag in ds.tags:  # each tag hangs on the node of the version it pins
                step = lineage.step_for(VersionRef(ds.root, tag.branch, tag.version))
                assert step is not None and tag.step == step.id
        paths = {loc.path for loc in lineage.locations}
        assert expected.locations <= paths
        if expected.unreadable == 0:
            assert paths == expected.locations


@pytest.mark.parametrize("case", ALL_CASES)
def test_versions_rows_and_tags_are_the_cases_expectations(case: str, corpus: Callable[[str], Path]) -> None:
    """case.json lists every version of every root and branch, and every tag, with the rows a reader
    sees: the diagram's nodes are those, and each node readable shows those rows."""
    data = corpus(case)
    spec = case_json(case)
    for root in spec["roots"]:
        uri = str(data / root)
        ds = _dataset(lineage_of(uri), uri)
        entries = [e for e in spec["expected"] if e["root"] == root]
        versions = {(e["branch"], e["version"]) for e in entries if e["tag"] is None}
        assert {(lane.branch, v) for lane in ds.lanes for s in lane.steps for v in s.versions} == versions
        rows = {(lane.branch, s.versions[0]): s.num_rows for lane in ds.lanes for s in lane.steps}
        for e in entries:
            if e["tag"] is None and not e.get("error"):
                assert rows[(e["branch"], e["version"])] == e["num_rows"], e["target"]
        tags = {t.name: t for t in ds.tags}
        assert set(tags) == {e["tag"] for e in entries if e["tag"] is not None}
        for e in entries:
            if e["tag"] is not None and not e.get("error"):
                assert rows[(tags[e["tag"]].branch, tags[e["tag"]].version)] == e["num_rows"], e["target"]


CLONES = [  # case, root, shallow, the source's root and branch (None for main)
    ("ref-shallow-clone", "warm/clone", True, "main/src", None),
    ("ref-refs-across-branches", "cold/clone", True, "main/ds", "feat"),
    ("ref-clone-of-clone", "hot/c2", True, "cold/c1", None),
    ("py-clone-of-clone", "clone2", True, "clone1", None),
    ("py-branch-clone", "clone", True, "ds", "feat"),
    ("py-deep-clone", "clone", False, "source", None),
    ("ref-deep-clone", "cold/deep", False, "main/src", None),
]


@pytest.mark.parametrize(("case", "root", "shallow", "source", "branch"), CLONES)
def test_clone_sources(case: str, root: str, shallow: bool, source: str, branch: str | None,
                       corpus: Callable[[str], Path]) -> None:
    """A shallow clone leans on its source's version (its own first version, CLONE-002), tagged or not
    as the source's tags say; a deep clone names its source and draws no edge into it."""
    data = corpus(case)
    uri = str(data / root)
    lineage = lineage_of(uri)
    clone = _dataset(lineage, uri).clone
    assert clone is not None and clone.shallow is shallow
    assert clone.source.removesuffix(f"/tree/{branch}") == str(data / source)
    assert clone.source_branch == branch
    first = inspect_json(uri)
    assert first is not None and clone.source_version == first["versions"][0]
    dot = to_dot(lineage)
    if not shallow:
        assert clone.target is None and [ds.root for ds in lineage.datasets] == [uri]
        assert f"deep clone of {clone.source}" in dot and "shallow clone of" not in dot
        return
    step = lineage.step_for(VersionRef(str(data / source), branch, clone.source_version))
    assert step is not None and clone.target == step.id
    source_head = inspect_json(str(data / source))
    assert source_head is not None
    pinned = {(lane_name(source_head["tag_branches"][n]), v) for n, v in source_head["tags"].items()}
    assert clone.tagged is ((branch, clone.source_version) in pinned)
    start = _dataset(lineage, uri).lanes[0].steps[0].id
    assert f"{start} -> {step.id} [class=\"clone shallow{'' if clone.tagged else ' untagged'}\"" in dot


def test_an_untagged_source_is_marked() -> None:
    """py-clone-of-clone's second clone leans on an untagged version (test_clone_sources checks the
    corpus agrees); here the marking itself, on documents made by hand."""
    source = _doc("/b/src", [1, 2, 3], tags={"keep": 1})
    clone = _doc("/a/clone", [2, 3], clone={"shallow": True, "source": "/b/src", "source_branch": None,
                                              "source_version": 2})
    lineage = build_lineage([clone, source])
    assert lineage.datasets[0].clone is not None and lineage.datasets[0].clone.tagged is False
    assert "untagged" in to_dot(lineage)
    tagged = build_lineage([clone, _doc("/b/src", [1, 2, 3], tags={"keep": 2})])
    assert tagged.datasets[0].clone is not None and tagged.datasets[0].clone.tagged is True
    assert "untagged" not in to_dot(tagged)


def _doc(uri: str, versions: list[int], *, version: int | None = None, tags: dict[str, int] | None = None,
         clone: dict[str, Any] | None = None, bases: list[dict[str, Any]] | None = None,
         files: list[tuple[int | None, int | None]] | None = None) -> dict[str, Any]:
    """A minimal inspect document (docs/inspect-json.md) of ``version`` (default: the last)."""
    return {"format": "lancespec.inspect/1", "uri": uri, "version": versions[-1] if version is None else version,
            "branch": None, "naming": "v2", "versions": versions, "num_rows": 1, "bases": bases or [],
            "fragments": [{"id": i, "physical_rows": 1, "num_rows": 1, "deletion": None,
                           "files": [{"path": f"{i}.lance", "base_id": b, "uri": "", "size": size}]}
                          for i, (b, size) in enumerate(files or [])],
            "index_files": [], "tags": tags or {}, "tag_branches": dict.fromkeys(tags or {}),
            "branches": {}, "branch_forks": {}, "clone": clone}


def test_long_runs_between_refs_collapse_with_their_count() -> None:
    versions = list(range(1, 10_001))
    shown = spans(versions, {5000, 7})
    assert [s for s in shown if len(s) == 1] == [(1,), (7,), (5000,), (10_000,)]
    assert [len(s) for s in shown] == [1, 5, 1, 4992, 1, 4999, 1]
    assert sorted(v for s in shown for v in s) == versions
    assert spans([1, 2, 3, 4, 5, 6], set()) == [(1,), (2,), (3,), (4,), (5,), (6,)]  # a run of 4 stays
    assert len(spans(list(range(1, COLLAPSE_RUN + 3)), set())) == 3  # a run of COLLAPSE_RUN collapses


def test_a_marked_version_collapses_only_with_neighbours_marked_alike() -> None:
    docs = [_doc("/d/ds", list(range(1, 101)))]
    must, should = frozenset({"MUST FILE-001"}), frozenset({"SHOULD MAN-013"})

    def lengths(marks: dict[int, frozenset[str]]) -> list[int]:
        lineage = build_lineage(docs, {VersionRef("/d/ds", None, v): m for v, m in marks.items()})
        return [len(s.versions) for s in lineage.datasets[0].lanes[0].steps]

    assert lengths({}) == [1, 98, 1]
    assert lengths({50: must}) == [1, 48, 1, 49, 1]
    assert lengths(dict.fromkeys(range(1, 101), should)) == [1, 98, 1]  # every version the same divergence
    assert lengths({**dict.fromkeys(range(1, 101), should), 50: should | must}) == [1, 48, 1, 49, 1]
    assert lengths(dict.fromkeys(range(40, 61), must)) == [1, 38, 21, 39, 1]
    assert lengths(dict.fromkeys(range(40, 44), must)) == [1, 38, 1, 1, 1, 1, 56, 1]  # 4 marked: each apart


def test_locations_group_by_bucket_and_count_what_each_version_resolves_there() -> None:
    bases = [{"id": 1, "name": "hot", "path": "s3://hot/x", "is_dataset_root": False},
             {"id": 2, "name": None, "path": "s3://cold/y/", "is_dataset_root": False}]
    doc = _doc("s3://main/ds", [1], bases=bases, files=[(None, 10), (1, 100), (1, None), (2, 5), (9, 1)])
    lineage = build_lineage([doc])
    assert [(g.label, [loc.label for loc in g.locations]) for g in lineage.groups] == [
        ("bucket s3://cold", ["y"]), ("bucket s3://hot", ["x"]), ("bucket s3://main", ["ds"])]
    step = lineage.datasets[0].lanes[0].steps[0]
    assert {(u.location, u.files, u.size, u.unsized) for u in step.usage} == {
        ("s3://main/ds", 1, 10, 0), ("s3://hot/x", 2, 100, 1), ("s3://cold/y", 1, 5, 0)}
    assert step.unresolved == 1  # base id 9 names no base


def test_local_locations_group_by_the_directory_below_their_common_parent() -> None:
    bases = [{"id": 1, "name": None, "path": "/t/cold/b1", "is_dataset_root": False}]
    lineage = build_lineage([_doc("/t/main/ds", [1], bases=bases)])
    assert [(g.label, [loc.label for loc in g.locations]) for g in lineage.groups] == [
        ("file system /t/cold", ["b1"]), ("file system /t/main", ["ds"])]


def test_names_the_dataset_controls_cannot_break_the_dot_text() -> None:
    evil = 'x" -> y [label="owned"]; z \\N\n'
    lineage = build_lineage([_doc("/t/ds", [1, 2], tags={evil: 1})])
    dot = to_dot(lineage)
    assert r'label="tag x\" -> y [label=\"owned\"]; z \\N\\x0a"' in dot
    if not graphviz_available():
        pytest.skip("Graphviz's dot is not installed (apt-get install graphviz)")
    svg = to_svg(dot)
    assert svg.count('class="node') == 5  # main, v1, v2, the tag, the root: no node named y
    assert 'tag x&quot; &#45;&gt; y [label=&quot;owned&quot;]; z \\N\\x0a' in svg


def test_a_shallow_clone_whose_source_is_gone_points_to_a_missing_source(tmp_path: Path) -> None:
    """ref-shallow-clone with its source's manifests removed: the clone is drawn, its source named as not
    readable, and the edge goes to that missing node."""
    data = materialize(CASES / "ref-shallow-clone" / "data", tmp_path / "case")
    shutil.rmtree(data / "main" / "src" / "_versions")
    lineage = lineage_of(str(data / "warm" / "clone"))
    assert [ds.root for ds in lineage.datasets] == [str(data / "warm" / "clone")]
    clone = lineage.datasets[0].clone
    assert clone is not None and clone.shallow and clone.target is None and clone.tagged is None
    dot = to_dot(lineage)
    assert 'class="missing"' in dot and f"{lineage.datasets[0].id}src" in dot
    assert "source not readable" in dot and str(data / "main" / "src") in dot
