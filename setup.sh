#!/usr/bin/env bash
# One command installs everything lancespec needs to run its tests on a fresh machine:
# the package (editable) with its test, S3-server, Spark and developer extras, and a Java runtime for Spark.
# Idempotent: on a machine that already has everything it only re-checks.
set -euo pipefail
cd "$(dirname "$0")"

PYTHON="${PYTHON:-python3}"

"$PYTHON" -m pip install --disable-pip-version-check -q -e ".[dev,spark]"

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

# Node packages the tests use where node is present (tools/node/package.json: s3rver, a third-party S3 server
# that certify-store is tested against). Without npm those tests skip, saying why.
if command -v npm >/dev/null 2>&1; then
  npm install --prefix tools/node --no-audit --no-fund --silent >/dev/null
else
  echo "lancespec setup: npm not found; the tests that need Node packages (s3rver) will skip" >&2
fi

java_version="$(java -version 2>&1 | head -n 1 | sed -E 's/.*version "([^"]+)".*/\1/' || true)"
echo "lancespec setup complete: $("$PYTHON" -c 'import lance, pyspark; print("pylance", lance.__version__, "pyspark", pyspark.__version__)'), java ${java_version:-missing}"
