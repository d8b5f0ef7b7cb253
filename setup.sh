#!/usr/bin/env bash
# One command installs everything lancespec needs to run its tests on a fresh machine:
# the package (editable) with its test, S3-server and developer extras.
# Idempotent: on a machine that already has everything it only re-checks.
set -euo pipefail
cd "$(dirname "$0")"

PYTHON="${PYTHON:-python3}"

"$PYTHON" -m pip install --disable-pip-version-check -q -e ".[dev]"

echo "lancespec setup complete: $("$PYTHON" -c 'import lance, lancespec; print("pylance", lance.__version__)')"
