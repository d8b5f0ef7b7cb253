"""Regenerate or check spec/README.md from spec/requirements.toml, spec/traceability.toml and the registered
checks (a tool for lancespec's developers; ``conformance.catalogue`` holds both files to their rules).

    python -m lancespec.cli.catalogue --write    # regenerate spec/README.md
    python -m lancespec.cli.catalogue --check    # exit 1 when spec/README.md is stale
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from conformance.catalogue import load_catalogue, readme_path
from conformance.checks import all_checks
from conformance.coverage import check_coverage, render_markdown
from conformance.traceability import check_matrix, load_matrix


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lancespec.cli.catalogue", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", action="store_true")
    group.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    catalogue, matrix, checks = load_catalogue(), load_matrix(), all_checks().values()
    check_matrix(matrix, catalogue)
    check_coverage(catalogue, checks)
    text = render_markdown(catalogue, matrix, checks)
    path = readme_path()
    if args.write:
        path.write_text(text)
        return 0
    if not path.exists() or path.read_text() != text:
        print(f"{path} is stale: run python -m lancespec.cli.catalogue --write", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
