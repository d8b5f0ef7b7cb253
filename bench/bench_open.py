"""Opening datasets and resolving every file they reference.

* ``open-10k-fragments``: open a 10,000-fragment dataset (1,000 under ``--quick``) at its latest version
  and resolve the full URI of every data file.
* ``open-20-versions``: open every version of a 20-version dataset (each version appends fragments) and
  resolve every data file of every version.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import lance
import pyarrow as pa
from harness import CheckFailed, Context, benchmark
from lance.fragment import write_fragments

from reference.table import Dataset

# --- open-10k-fragments -----------------------------------------------------------------------------


@dataclass(frozen=True)
class OpenInputs:
    uri: str
    fragments: int


def _one_row_per_fragment(start: int, rows: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + rows), pa.int64())})


def build_one_version(directory: Path, fragments: int) -> None:
    """``directory/ds``: one version of ``fragments`` one-row fragments, written by one
    ``write_fragments`` call and made version 1 by one commit."""
    uri = str(directory / "ds")
    table = _one_row_per_fragment(0, fragments)
    frags = write_fragments(table, uri, max_rows_per_file=1)
    lance.LanceDataset.commit(uri, lance.LanceOperation.Overwrite(table.schema, frags))


def open_lancespec(inputs: OpenInputs) -> list[str]:
    snapshot = Dataset.open(inputs.uri).snapshot()
    return [f.uri for f in snapshot.files() if f.uri is not None]


def open_pylance(inputs: OpenInputs) -> list[str]:
    ds = lance.dataset(inputs.uri)
    data_dir = ds.uri + "/data/"
    return [data_dir + df.path for frag in ds.get_fragments() for df in frag.metadata.data_files()]


def same_files(inputs: OpenInputs, ls_files: list[str], pl_files: list[str]) -> str:
    if len(ls_files) != len(pl_files):
        raise CheckFailed(f"lancespec resolved {len(ls_files)} files, pylance {len(pl_files)}")
    if len(ls_files) != inputs.fragments:
        raise CheckFailed(f"both sides resolved {len(ls_files)} files, expected {inputs.fragments}")
    if sorted(ls_files) != sorted(pl_files):
        only_ls = sorted(set(ls_files) - set(pl_files))[:3]
        only_pl = sorted(set(pl_files) - set(ls_files))[:3]
        raise CheckFailed(f"the file URIs differ: only lancespec {only_ls}, only pylance {only_pl}")
    return f"{len(ls_files):,} files, same URIs both sides"


@benchmark(
    "open-10k-fragments",
    measures="open a 10,000-fragment dataset (1,000 with --quick) and resolve every data file's URI",
    lancespec=open_lancespec,
    pylance=open_pylance,
    check=same_files,
)
def setup_open(ctx: Context) -> OpenInputs:
    fragments = ctx.size(10_000, 1_000)

    directory = ctx.cached(f"open-{fragments}-fragments", lambda d: build_one_version(d, fragments))
    uri = str(directory / "ds")
    found = len(lance.dataset(uri).get_fragments())
    if found != fragments:
        raise CheckFailed(f"the input dataset has {found} fragments, expected {fragments}")
    return OpenInputs(uri, fragments)


# --- open-20-versions -------------------------------------------------------------------------------

VERSIONS = 20


@dataclass(frozen=True)
class VersionsInputs:
    uri: str
    versions: int
    per_version: int


def versions_lancespec(inputs: VersionsInputs) -> list[int]:
    dataset = Dataset.open(inputs.uri)
    return [sum(1 for f in dataset.snapshot(v).files() if f.uri is not None) for v in dataset.versions()]


def versions_pylance(inputs: VersionsInputs) -> list[int]:
    ds = lance.dataset(inputs.uri)
    counts = []
    for info in ds.versions():
        at = ds.checkout_version(info["version"])
        data_dir = at.uri + "/data/"
        counts.append(
            len([data_dir + df.path for frag in at.get_fragments() for df in frag.metadata.data_files()])
        )
    return counts


def same_counts(inputs: VersionsInputs, ls_counts: list[int], pl_counts: list[int]) -> str:
    if ls_counts != pl_counts:
        raise CheckFailed(f"files per version differ: lancespec {ls_counts}, pylance {pl_counts}")
    expected = [inputs.per_version * v for v in range(1, inputs.versions + 1)]
    if ls_counts != expected:
        raise CheckFailed(f"files per version {ls_counts}, expected {expected}")
    return f"{len(ls_counts)} versions, {sum(ls_counts):,} files in all, same counts both sides"


@benchmark(
    "open-20-versions",
    measures="open each of 20 versions (each appends 500 one-row fragments; 50 with --quick) and resolve "
    "every data file",
    lancespec=versions_lancespec,
    pylance=versions_pylance,
    check=same_counts,
)
def setup_versions(ctx: Context) -> VersionsInputs:
    per_version = ctx.size(500, 50)

    def build(directory: Path) -> None:
        uri = str(directory / "ds")
        for v in range(VERSIONS):
            table = _one_row_per_fragment(v * per_version, per_version)
            lance.write_dataset(table, uri, mode="create" if v == 0 else "append", max_rows_per_file=1)

    directory = ctx.cached(f"versions-{VERSIONS}x{per_version}", build)
    uri = str(directory / "ds")
    found = len(lance.dataset(uri).versions())
    if found != VERSIONS:
        raise CheckFailed(f"the input dataset has {found} versions, expected {VERSIONS}")
    return VersionsInputs(uri, VERSIONS, per_version)
