"""How long the HTML certify pages take to build, and how large a 10,000-version page gets.

    python bench/bench_report.py               # every corpus root, then the 10,000-version page
    python bench/bench_report.py --out DIR     # also keep the pages and the big diagram in DIR

Not a lancespec-vs-pylance pair (pylance draws nothing), so not registered with ``run.py``: a script of its
own. Per golden corpus root (``certify --all-versions``), it prints the seconds spent certifying, reading
the lineage's inspect documents (``gather``) and building the page (model, Graphviz layout, HTML), and the
page's size. Then the same for a 10,000-version dataset written here by pylance (``write_versions``; the
writing is timed apart): its certification, the inspect documents of the versions drawn, the page, its
version nodes and size. Needs Graphviz's ``dot``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from conformance.certify import certify
from conformance.corpus.portable import materialize
from conformance.fetch import RunStorage
from conformance.report import to_json
from lancespec.render.certify_page import certify_page, finding_marks  # type: ignore[import-not-found, unused-ignore]
from lancespec.render.gather import gather  # type: ignore[import-not-found, unused-ignore]
from reference.table import Dataset

ROOT = Path(__file__).resolve().parent.parent
PAGE_LIMIT = 5 * 1024 * 1024


def build_page(uri: str) -> tuple[dict[str, Any], list[dict[str, Any]], str, tuple[float, float, float]]:
    """certify --all-versions, gather and the page for ``uri``: the report, the documents, the page and the
    seconds of each step."""
    t0 = time.perf_counter()
    report = to_json(certify(uri, all_versions=True))
    t1 = time.perf_counter()
    docs = gather(Dataset(uri, RunStorage()), finding_marks(report))
    t2 = time.perf_counter()
    page = certify_page(report, docs)
    return report, docs, page, (t1 - t0, t2 - t1, time.perf_counter() - t2)


def corpus_pages(out: Path | None) -> None:
    print(f"{'case':28} {'root':12} {'versions':>8} {'certify s':>9} {'gather s':>8} {'page s':>7} {'page KB':>8}")
    worst_page = worst_certify = 0.0
    with tempfile.TemporaryDirectory(prefix="lancespec-bench-report-") as tmp:
        cases = sorted((ROOT / "fixtures" / "cases").iterdir())
        warm = materialize(cases[0] / "data", Path(tmp) / "warm-up")  # the codec child process starts here
        certify(str(warm / json.loads((cases[0] / "case.json").read_text())["roots"][0]), all_versions=True)
        for case_dir in cases:
            case = json.loads((case_dir / "case.json").read_text())
            data = materialize(case_dir / "data", Path(tmp) / case_dir.name)
            for root in case["roots"]:
                report, _, page, (certifying, gathering, building) = build_page(str(data / root))
                worst_page, worst_certify = max(worst_page, gathering + building), max(worst_certify, certifying)
                print(f"{case_dir.name:28} {root:12} {len(report['versions']):>8} {certifying:>9.3f} "
                      f"{gathering:>8.3f} {building:>7.3f} {len(page.encode()) / 1024:>8.1f}")
                if out is not None:
                    (out / f"{case_dir.name}-{root.replace('/', '_')}.html").write_text(page)
    print(f"slowest corpus page (gather and build): {worst_page:.3f} s; slowest certify: {worst_certify:.3f} s")


def write_versions(n: int, tmp: Path) -> tuple[str, float]:
    """A dataset of ``n`` main versions written by pylance in ``tmp/hot/ds``: one-row appends, an overwrite
    every 200 versions (so no manifest grows past 200 fragments), 30 tags, two branches (30 and 5 commits),
    a shallow clone of an untagged version in ``tmp/cold`` (another "bucket"), and the data file each
    version before an overwrite alone holds deleted from 26 of them (a MUST finding on those versions and
    nowhere else). Returns the root and the seconds writing took."""
    import lance
    import pyarrow as pa

    root = str(tmp / "hot" / "ds")
    row = pa.table({"x": [1]})
    t0 = time.perf_counter()
    lance.write_dataset(row, root)
    for v in range(2, n + 1):
        lance.write_dataset(row, root, mode="overwrite" if v % 200 == 0 else "append")
    dataset = lance.dataset(root)
    for i in range(30):
        dataset.tags.create(f"release-{i}", 1 + i * (n // 30))
    for name, fork, commits in (("experiment", n // 4, 30), ("hotfix", n - n // 10, 5)):
        dataset.create_branch(name, fork)
        for _ in range(commits):
            lance.write_dataset(row, f"{root}/tree/{name}", mode="append")
    dataset.shallow_clone(str(tmp / "cold" / "ds-copy"), n // 2 + 7)
    for epoch in range(1, 27):
        if 200 * epoch <= n:
            last = lance.dataset(root, version=200 * epoch - 1).get_fragments()[-1]
            (Path(root) / "data" / last.metadata.data_files()[0].path).unlink()
    return root, time.perf_counter() - t0


def big_page(n: int, out: Path | None) -> int:
    with tempfile.TemporaryDirectory(prefix="lancespec-bench-report-big-") as tmp:
        root, wrote = write_versions(n, Path(tmp))
        report, docs, page, (certifying, gathering, building) = build_page(root)
    size = len(page.encode())
    nodes = page.count('class="node version')
    collapsed = page.count('class="node version collapsed')
    marked = len({(f["branch"], f["version"]) for f in report["findings"]})
    print(f"{n:,}-version pylance dataset (written in {wrote:.0f} s): {len(report['versions'])} versions certified "
          f"in {certifying:.1f} s, {len(report['findings'])} findings on {marked} versions; {len(docs)} inspect "
          f"documents read in {gathering:.1f} s; {nodes} version nodes ({collapsed} collapsed); page "
          f"{size / 1024:.1f} KiB built in {building:.2f} s "
          f"({'under' if size < PAGE_LIMIT else 'OVER'} the 5 MB limit)")
    if out is not None:
        (out / f"versions-{n}.html").write_text(page)
    return 0 if size < PAGE_LIMIT else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, help="keep the pages here")
    parser.add_argument("--versions", type=int, default=10_000, help="main versions of the big dataset")
    parser.add_argument("--skip-corpus", action="store_true", help="only the big dataset's page")
    args = parser.parse_args(argv)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
    if not args.skip_corpus:
        corpus_pages(args.out)
    return big_page(args.versions, args.out)


if __name__ == "__main__":
    sys.exit(main())
