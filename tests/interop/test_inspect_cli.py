"""``lancespec inspect --format json`` on pylance-written shapes, cross-checked against pylance, and its one-line
errors (exit status 2) on inputs it cannot read."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import pytest

from conformance.shapes import Shape
from lancespec.cli import main
from reference.codec import decode_manifest_file, encode_manifest_file
from reference.table import Dataset

EXIT_UNREADABLE = 2
DELETION_EXTENSION = {"array": "arrow", "bitmap": "bin"}


def selector_args(open_kwargs: dict[str, Any]) -> list[str]:
    args = []
    for key in ("version", "tag", "branch"):
        if key in open_kwargs:
            args += [f"--{key}", str(open_kwargs[key])]
    return args


def inspect_json(capsys: pytest.CaptureFixture[str], uri: str, *args: str) -> dict[str, Any]:
    rc = main(["inspect", uri, "--format", "json", *args])
    out, err = capsys.readouterr()
    assert (rc, err) == (0, "")
    report: dict[str, Any] = json.loads(out)
    return report


def assert_matches_pylance(report: dict[str, Any], ds: Any, lance_uri: str, main_uri: str) -> None:
    assert report["uri"] == lance_uri
    assert report["version"] == ds.version
    assert report["versions"] == [v["version"] for v in lance.dataset(lance_uri).versions()]
    assert all(isinstance(v, int) for v in report["versions"])

    bases = ds.base_paths()
    assert all(set(b) == {"id", "name", "path", "is_dataset_root"} for b in report["bases"])
    assert {b["id"]: (b["name"], b["path"], b["is_dataset_root"]) for b in report["bases"]} == {
        i: (b.name, b.path, b.is_dataset_root) for i, b in bases.items()
    }

    fragments = {f.fragment_id: f for f in ds.get_fragments()}
    assert [f["id"] for f in report["fragments"]] == sorted(fragments)
    for frag in report["fragments"]:
        metadata = fragments[frag["id"]].metadata
        assert frag["physical_rows"] == metadata.physical_rows
        assert [(f["path"], f["base_id"], f["size"]) for f in frag["files"]] == [
            (d.path, d.base_id, d.file_size_bytes) for d in metadata.files
        ]
        for f in frag["files"]:
            assert set(f) >= {"path", "base_id", "uri", "size"}
            assert f["uri"].endswith("/" + f["path"]) and os.path.getsize(f["uri"]) == f["size"]
        deletion, expected = frag["deletion"], metadata.deletion_file
        if expected is None:
            assert deletion is None
        else:
            assert set(deletion) >= {"uri", "num_deleted_rows"}
            assert deletion["num_deleted_rows"] == expected.num_deleted_rows
            extension = DELETION_EXTENSION[expected.file_type]
            name = f"{frag['id']}-{expected.read_version}-{expected.id}.{extension}"
            assert deletion["uri"].endswith("/_deletions/" + name) and os.path.isfile(deletion["uri"])

    main_ds = lance.dataset(main_uri)
    assert report["tags"] == {name: t["version"] for name, t in main_ds.tags.list().items()}
    assert report["tag_branches"] == {name: t["branch"] for name, t in main_ds.tags.list().items()}
    assert report["branches"] == {
        name: lance.dataset(f"{main_uri}/tree/{name}").version for name in main_ds.branches.list()
    }


def test_inspect_json_matches_pylance(shape: Shape, capsys: pytest.CaptureFixture[str]) -> None:
    report = inspect_json(capsys, shape.uri, *selector_args(dict(shape.open_kwargs)))
    assert report["num_rows"] == shape.open_lance().count_rows()
    assert_matches_pylance(report, shape.open_lance(), shape.lance_uri, shape.uri)


def test_inspect_as_a_subprocess(build_shape: Callable[[str], Shape],
                                 capsys: pytest.CaptureFixture[str]) -> None:
    shape = build_shape("multi_base_root")
    done = subprocess.run([sys.executable, "-m", "lancespec", "inspect", shape.uri, "--format", "json"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(done.stdout) == inspect_json(capsys, shape.uri)


def test_version_selects_each_version(build_shape: Callable[[str], Shape],
                                      capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("manifest_v1", "manifest_v2"):
        shape = build_shape(name)
        versions = [v["version"] for v in lance.dataset(shape.uri).versions()]
        assert len(versions) >= 3
        for version in versions:
            report = inspect_json(capsys, shape.uri, "--version", str(version))
            assert_matches_pylance(report, lance.dataset(shape.uri, version=version), shape.uri, shape.uri)


def test_tag_selects_the_tagged_version(build_shape: Callable[[str], Shape],
                                        capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("tags", "branches"):
        shape = build_shape(name)
        tags = lance.dataset(shape.uri).tags.list()
        assert tags
        for tag, record in tags.items():
            report = inspect_json(capsys, shape.uri, "--tag", tag)
            assert (report["version"], report["branch"]) == (record["version"], record["branch"])
            root = f"{shape.uri}/tree/{record['branch']}" if record["branch"] else shape.uri
            assert_matches_pylance(report, lance.dataset(root, version=record["version"]), root, shape.uri)


def test_branch_selects_the_branch(build_shape: Callable[[str], Shape],
                                   capsys: pytest.CaptureFixture[str]) -> None:
    shape = build_shape("branches")
    for branch in lance.dataset(shape.uri).branches.list():
        root = f"{shape.uri}/tree/{branch}"
        report = inspect_json(capsys, shape.uri, "--branch", branch)
        assert report["branch"] == branch
        assert_matches_pylance(report, lance.dataset(root), root, shape.uri)
        for version in [v["version"] for v in lance.dataset(root).versions()]:
            report = inspect_json(capsys, shape.uri, "--branch", branch, "--version", str(version))
            assert_matches_pylance(report, lance.dataset(root, version=version), root, shape.uri)
    report = inspect_json(capsys, shape.uri, "--branch", "main")
    assert_matches_pylance(report, lance.dataset(shape.uri), shape.uri, shape.uri)


# --- inputs lancespec cannot read ------------------------------------------------------------------------


def one_line_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run ``lancespec`` expecting exit status 2 and exactly one line on stderr; return that line."""
    rc = main(list(argv))
    out, err = capsys.readouterr()
    assert rc == EXIT_UNREADABLE, err
    assert out == ""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


def newest_manifest(root: Path) -> Path:
    return Path(Dataset.open(str(root)).version_entries()[-1].uri)


def rewrite_manifest(path: Path, change: Callable[[Any], None]) -> None:
    decoded = decode_manifest_file(path.read_bytes())
    change(decoded.manifest)
    path.write_bytes(encode_manifest_file(decoded.manifest, decoded.transaction_bytes, decoded.index_section))


def test_not_a_dataset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert str(empty) in one_line_error(capsys, "inspect", str(empty), "--format", "json")


def test_truncated_manifest(build_shape: Callable[[str], Shape], copy_tree: Callable[[str], Path],
                            capsys: pytest.CaptureFixture[str]) -> None:
    root = copy_tree(build_shape("single_base").uri)
    manifest = newest_manifest(root)
    data = manifest.read_bytes()
    manifest.write_bytes(data[: len(data) // 2])
    assert str(manifest) in one_line_error(capsys, "inspect", str(root), "--format", "json")


def test_bad_footer(build_shape: Callable[[str], Shape], copy_tree: Callable[[str], Path],
                    capsys: pytest.CaptureFixture[str]) -> None:
    root = copy_tree(build_shape("manifest_v1").uri)
    manifest = newest_manifest(root)
    data = manifest.read_bytes()
    manifest.write_bytes(data[:-4] + b"XXXX")
    assert str(manifest) in one_line_error(capsys, "inspect", str(root), "--format", "json")


def test_unknown_reader_feature_flag(build_shape: Callable[[str], Shape], copy_tree: Callable[[str], Path],
                                     capsys: pytest.CaptureFixture[str]) -> None:
    root = copy_tree(build_shape("multi_base_nonroot").uri)
    manifest = newest_manifest(root)

    def set_bit(m: Any) -> None:
        m.reader_feature_flags |= 1 << 40

    rewrite_manifest(manifest, set_bit)
    line = one_line_error(capsys, "inspect", str(root), "--format", "json")
    assert str(manifest) in line and str(1 << 40) in line


def test_data_file_with_undefined_base_id(build_shape: Callable[[str], Shape],
                                          copy_tree: Callable[[str], Path],
                                          capsys: pytest.CaptureFixture[str]) -> None:
    root = copy_tree(build_shape("multi_base_nonroot").uri)
    manifest = newest_manifest(root)

    def bad_base(m: Any) -> None:
        m.fragments[0].files[0].base_id = 99

    rewrite_manifest(manifest, bad_base)
    line = one_line_error(capsys, "inspect", str(root), "--format", "json")
    assert str(manifest) in line and "99" in line


def test_data_file_in_a_relative_base(build_shape: Callable[[str], Shape], copy_tree: Callable[[str], Path],
                                      capsys: pytest.CaptureFixture[str]) -> None:
    """A base path that is not absolute (BASE-002) locates nothing: inspect says so in one line, as for a
    base id that names no base, rather than show files below the working directory."""
    root = copy_tree(build_shape("multi_base_nonroot").uri)
    manifest = newest_manifest(root)

    def relative(m: Any) -> None:
        for base in m.base_paths:
            base.path = "relative/dir"

    rewrite_manifest(manifest, relative)
    line = one_line_error(capsys, "inspect", str(root), "--format", "json")
    assert str(manifest) in line and "'relative/dir', which is not an absolute path" in line


def test_missing_version(build_shape: Callable[[str], Shape],
        capsys: pytest.CaptureFixture[str]) -> None:
    shape = build_shape("single_base")
    line = one_line_error(capsys, "inspect", shape.uri, "--format", "json", "--version", "99")
    assert f"{shape.uri}/_versions" in line and "99" in line


def test_missing_tag(build_shape: Callable[[str], Shape],
        capsys: pytest.CaptureFixture[str]) -> None:
    shape = build_shape("tags")
    line = one_line_error(capsys, "inspect", shape.uri, "--format", "json", "--tag", "nope")
    assert f"{shape.uri}/_refs/tags/nope.json" in line


def test_missing_branch(build_shape: Callable[[str], Shape],
        capsys: pytest.CaptureFixture[str]) -> None:
    shape = build_shape("branches")
    line = one_line_error(capsys, "inspect", shape.uri, "--format", "json", "--branch", "team/nope")
    assert "team/nope" in line


def test_unreadable_input_as_a_subprocess(build_shape: Callable[[str], Shape],
                                          copy_tree: Callable[[str], Path]) -> None:
    root = copy_tree(build_shape("single_base").uri)
    manifest = newest_manifest(root)
    manifest.write_bytes(manifest.read_bytes()[:10])
    done = subprocess.run([sys.executable, "-m", "lancespec", "inspect", str(root), "--format", "json"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == EXIT_UNREADABLE
    assert done.stdout == "" and "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1 and str(manifest) in done.stderr


@pytest.mark.parametrize("name", ["blob_v2", "indices", "schema_evolution", "multi_base_root", "branches"])
def test_text_reads_at_80_columns(build_shape: Callable[[str], Shape], name: str) -> None:
    """The text report fits an 80-column terminal (the root's and the bases' own paths aside, each alone on
    its line) and shows the schema, the indices and the blob sidecars; pylance and the filesystem say
    what they must be."""
    shape = build_shape(name)
    done = subprocess.run([sys.executable, "-m", "lancespec", "inspect", shape.uri, *selector_args(dict(
        shape.open_kwargs))], capture_output=True, text=True, check=False, env={**os.environ, "COLUMNS": "80"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    roots = (shape.uri, *shape.extra_roots)
    assert [line for line in lines if len(line) > 80 and not any(r in line for r in roots)] == []
    ds = shape.open_lance()
    schema_names = set(ds.schema.names)
    shown = {line.split()[0] for line in lines[lines.index(next(x for x in lines if x.startswith("schema"))) + 1:]
             if line.startswith("  ") and not line.startswith("    ")}
    assert schema_names <= shown
    for index in ds.describe_indices():
        assert any(line.startswith(f"  {index.name}: ") for line in lines), index.name
    sidecars = [p for p in Path(shape.lance_uri, "data").rglob("*.blob")]
    assert all(any(line.strip().startswith(p.name) for line in lines) for p in sidecars)
    assert bool(sidecars) == any(line.startswith("blob sidecars") for line in lines)


def test_a_database_folder_and_a_missing_path(build_shape: Callable[[str], Shape], tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A folder holding {name}.lance tables (a LanceDB database) is answered with the tables; a path that
    does not exist with "does not exist"."""
    folder = tmp_path / "db"
    shutil.copytree(build_shape("single_base").uri, folder / "events.lance")
    said = one_line_error(capsys, "inspect", str(folder))
    assert "LanceDB database folder" in said and "events.lance" in said
    assert one_line_error(capsys, "inspect", str(tmp_path / "nothing")).endswith("does not exist")
