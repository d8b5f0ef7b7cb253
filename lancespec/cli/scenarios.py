"""The writer scenarios (docs/scenario-format.md, docs/writer-contract.md): ``lancespec certify-writer``
runs them against a writer; ``lancespec check-scenarios FILE...`` validates scenario files (exit 1 when one
is invalid, one line per file)."""

from __future__ import annotations

import argparse
from typing import Any

from conformance.scenarios.format import STORES
from reference.errors import InvalidOption

from .options import EXIT_FAILED, EXIT_OK, add_quiet_option, add_report_options, emit_report, exits


def register(sub: Any) -> None:
    """Add ``certify-writer`` and ``check-scenarios`` to the ``lancespec`` subcommands ``sub``."""
    writer = sub.add_parser("certify-writer", help="run the writer scenarios against a writer",
                            description="The first line is the verdict: CERTIFIED (every run applied every step), "
                            "PARTIAL (some steps needed features the writer does not declare: the line says how "
                            "many runs ran in full, in part and not at all, and for want of which features), or "
                            "NOT CERTIFIED. " + exits("0 CERTIFIED or PARTIAL (nothing failed; expected divergences "
                            "allowed), 1 NOT CERTIFIED (a step, a certification or a comparison failed)"))
    writer.add_argument("--writer", required=True, metavar="WRITER", help="reference, pylance, lancedb, or cmd:COMMAND")
    writer.add_argument("--scenarios", action="append", metavar="GLOB",
                        help="scenario names (a glob on the shipped ones) or scenario files (a path glob); repeat")
    writer.add_argument("--store", action="append", choices=STORES,
                        help="run on this store only (default local and s3; s3 starts the embedded server, az "
                             "starts Azurite); repeat")
    writer.add_argument("--capabilities", metavar="FILE", help="the writer's capability file (TOML)")
    add_report_options(writer, ("text", "json", "junit", "html"),
                       "html: the scenario x store grid as one self-contained page (docs/reports.md)")
    writer.add_argument("--no-compare", action="store_true", help="do not compare results with the reference")
    writer.add_argument("--workdir", metavar="DIR", help="keep the runs' local data here (default: a temp dir)")
    writer.set_defaults(func=run_certify_writer)

    check = sub.add_parser("check-scenarios", help="validate scenario files (lancespec.scenario/1)",
                           description="Prints one line per file, ok or what is invalid. "
                           + exits("0 every file is valid, 1 a file is invalid"))
    check.add_argument("files", nargs="+", metavar="FILE", help="scenario files")
    add_quiet_option(check)
    check.set_defaults(func=run_check)


def run_certify_writer(args: argparse.Namespace) -> int:
    from conformance.scenarios import builtin_scenarios, load_scenarios
    from conformance.scenarios.certify_writer import RENDERERS, certify_writer, make_writer
    from lancespec.progress import progress_bar
    from lancespec.render.commands import writer_html
    from simulator.emulators import AzuriteServer
    from simulator.s3 import EmbeddedS3Server

    scenarios = []
    for pattern in args.scenarios or ["*"]:
        if pattern.endswith(".json") or "/" in pattern:
            scenarios += load_scenarios([pattern])
        else:
            scenarios += builtin_scenarios(pattern)
    if not scenarios:
        raise InvalidOption(f"no scenario matches {args.scenarios}")
    unique = {s.name: s for s in scenarios}
    writer = make_writer(args.writer, args.capabilities)
    with progress_bar("certifying writer", quiet=args.quiet) as progress:
        report = certify_writer(writer, list(unique.values()), stores=args.store or ["local", "s3"],
                                workdir=args.workdir, compare=not args.no_compare,
                                start_s3=lambda: EmbeddedS3Server().start(), start_az=lambda: AzuriteServer().start(),
                                progress=progress)
    emit_report(report, {**RENDERERS, "html": writer_html}, args)
    return report.exit_code


def run_check(args: argparse.Namespace) -> int:
    from conformance.scenarios import ScenarioError, load_scenario

    status = EXIT_OK
    for path in args.files:
        try:
            scenario = load_scenario(path)
        except ScenarioError as exc:
            print(f"invalid: {exc}")
            status = EXIT_FAILED
        else:
            if not args.quiet:
                print(f"ok: {path}: {scenario.name} ({len(scenario.steps)} steps)")
    return status
