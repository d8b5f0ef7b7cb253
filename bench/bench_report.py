"""How long the HTML certify pages take to build, and how large a 10,000-version page gets.

    python bench/bench_report.py               # every corpus root, then the 10,000-version page
    python bench/bench_report.py --out DIR     # also keep the pages and the big diagram in DIR

Not a lancespec-vs-pylance pair (pylance draws nothing), so not registered with ``run.py``: a script of its
own. Per golden corpus root (``certify --all-versions``), it prints the seconds spent certifying, reading
the lineage's inspect documents (``gather``) and building the page (model, Graphviz layout, HTML), and the
page's size. Then a page for a synthetic 10,000-version dataset: its inspect documents and certify report
are made here, not read from storage (writing 10,000 commits would measure the writer, not the page),
exactly as ``gather`` would return them: the latest document of every lane and one per version drawn on
its own. Needs Graphviz's ``dot``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lancespec.conformance.catalogue import load_catalogue  # type: ignore[import-not-found, unused-ignore]
from lancespec.conformance.certify import certify  # type: ignore[import-not-found, unused-ignore]
from lancespec.conformance.fetch import RunStorage  # type: ignore[import-not-found, unused-ignore]
from lancespec.conformance.fixtures.portable import materialize  # type: ignore[import-not-found, unused-ignore]
from lancespec.conformance.report import to_json  # type: ignore[import-not-found, unused-ignore]
from lancespec.reference.table import Dataset  # type: ignore[import-not-found, unused-ignore]
from lancespec.render.certify_page import certify_page, finding_refs  # type: ignore[import-not-found, unused-ignore]
from lancespec.render.gather import gather  # type: ignore[import-not-found, unused-ignore]
from lancespec.render.lineage import clone_source, pinned_versions, spans  # type: ignore[import-not-found, unused-ignore]

ROOT = Path(__file__).resolve().parent.parent
PAGE_LIMIT = 5 * 1024 * 1024


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
                uri = str(data / root)
                t0 = time.perf_counter()
                report = to_json(certify(uri, all_versions=True))
                t1 = time.perf_counter()
                docs = gather(Dataset(uri, RunStorage()), finding_refs(report))
                t2 = time.perf_counter()
                page = certify_page(report, docs)
                t3 = time.perf_counter()
                worst_page, worst_certify = max(worst_page, t3 - t1), max(worst_certify, t1 - t0)
                print(f"{case_dir.name:28} {root:12} {len(report['versions']):>8} {t1 - t0:>9.3f} {t2 - t1:>8.3f} "
                      f"{t3 - t2:>7.3f} {len(page.encode()) / 1024:>8.1f}")
                if out is not None:
                    (out / f"{case_dir.name}-{root.replace('/', '_')}.html").write_text(page)
    print(f"slowest corpus page (gather and build): {worst_page:.3f} s; slowest certify: {worst_certify:.3f} s")


def _doc(uri: str, version: int, versions: list[int], branch: str | None, head: dict[str, Any]) -> dict[str, Any]:
    """An inspect document of ``version``: one fragment per 200 versions so far, files spread over the root
    and two bases in two buckets."""
    bases = [{"id": 1, "name": "cold", "path": "s3://cold-archive/ds", "is_dataset_root": False},
             {"id": 2, "name": "hot", "path": "s3://hot-serving/extra", "is_dataset_root": False}]
    fragments = [{"id": i, "physical_rows": 1000, "num_rows": 1000, "deletion": None,
                  "files": [{"path": f"{i}.lance", "base_id": (None, 1, 2)[i % 3], "uri": "", "size": 65_536}]}
                 for i in range(1 + version // 200)]
    return {**head, "uri": uri, "version": version, "versions": versions, "branch": branch, "bases": bases,
            "fragments": fragments, "num_rows": 1000 * len(fragments), "index_files": [], "naming": "v2"}


def synthetic_docs(n: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The documents ``gather`` returns for an ``n``-version main lane with 30 tags, two branches and a
    shallow clone of an untagged version, and a certify report with findings on 25 versions."""
    main = "s3://hot-serving/ds"
    head: dict[str, Any] = {
        "format": "lancespec.inspect/1", "num_rows": 0,
        "tags": {f"release-{i}": 1 + i * (n // 30) for i in range(30)},
        "branches": {"experiment": n // 4 + 300, "hotfix": n - 1000 + 20},
        "branch_forks": {"experiment": {"parent_branch": None, "parent_version": n // 4},
                         "hotfix": {"parent_branch": None, "parent_version": n - 1000}},
        "clone": None}
    head["tag_branches"] = dict.fromkeys(head["tags"])
    clone_root = "s3://cold-archive/ds-copy"
    clone_head = {**head, "tags": {}, "tag_branches": {}, "branches": {}, "branch_forks": {},
                  "clone": {"shallow": True, "source": main, "source_branch": None, "source_version": n // 2 + 7}}
    lanes = [(main, None, list(range(1, n + 1)), head),
             (f"{main}/tree/experiment", "experiment", list(range(n // 4, n // 4 + 301)), head),
             (f"{main}/tree/hotfix", "hotfix", list(range(n - 1000, n - 979)), head),
             (clone_root, None, list(range(n // 2 + 7, n // 2 + 20)), clone_head)]
    report = {"format": "lancespec.certify/1", "lancespec_version": "bench", "uri": main, "conformant": False,
              "readable": True, "exit_code": 1, "cannot_judge": [], "internal_error": None,
              "versions": list(range(1, n + 1)), "checks": [], "requirements_checked": sorted(load_catalogue()),
              "summary": {"must": 13, "should": 13}, "findings": [
                  {"requirement": "BASE-004" if i % 2 else "MAN-013", "severity": "MUST" if i % 2 else "SHOULD",
                   "version": 37 + i * (n // 26), "branch": None, "path": f"{main}/data/{i}.lance",
                   "message": "synthetic"} for i in range(26)]}
    source = clone_source({**clone_head, "branch": None})
    refs = finding_refs(report) | ({source} if source is not None else set())
    docs = []
    for uri, branch, versions, lane_head in lanes:
        pinned = pinned_versions({**lane_head, "uri": main if uri.startswith(main) else uri}, branch, refs)
        docs.append(_doc(uri, versions[-1], versions, branch, lane_head))
        docs += [_doc(uri, span[0], versions, branch, lane_head) for span in spans(versions, pinned)
                 if len(span) == 1 and span[0] != versions[-1]]
    return docs, report


def big_page(n: int, out: Path | None) -> int:
    docs, report = synthetic_docs(n)
    t0 = time.perf_counter()
    page = certify_page(report, docs)
    seconds = time.perf_counter() - t0
    size = len(page.encode())
    nodes = page.count('class="node version')
    collapsed = page.count('class="node version collapsed')
    print(f"{n:,}-version synthetic dataset: {len(docs)} inspect documents, {nodes} version nodes "
          f"({collapsed} collapsed), page {size / 1024:.1f} KiB built in {seconds:.2f} s "
          f"({'under' if size < PAGE_LIMIT else 'OVER'} the 5 MB limit)")
    if out is not None:
        (out / f"synthetic-{n}.html").write_text(page)
    return 0 if size < PAGE_LIMIT else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, help="keep the pages here")
    parser.add_argument("--versions", type=int, default=10_000, help="versions of the synthetic dataset")
    parser.add_argument("--skip-corpus", action="store_true", help="only the synthetic page")
    args = parser.parse_args(argv)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
    if not args.skip_corpus:
        corpus_pages(args.out)
    return big_page(args.versions, args.out)


if __name__ == "__main__":
    sys.exit(main())
