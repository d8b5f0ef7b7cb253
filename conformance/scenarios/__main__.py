"""``python -m lancespec.conformance.scenarios FILE...``: validate scenario files (exit 1 on problems)."""

from __future__ import annotations

import sys

from .format import ScenarioError, load_scenario


def main(argv: list[str]) -> int:
    status = 0
    for path in argv or []:
        try:
            scenario = load_scenario(path)
        except ScenarioError as exc:
            print(f"invalid: {exc}")
            status = 1
        else:
            print(f"ok: {path}: {scenario.name} ({len(scenario.steps)} steps)")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
