"""``lancespec spark-certify`` and the loopback-only session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.certify import certify
from conformance.report import to_json
from conformance.shapes import SHAPES
from conformance.spark import LOOPBACK
from lancespec.cli import main

pytestmark = pytest.mark.spark

_LOOPBACK_HEX = {"0100007F", "0000000000000000FFFF00000100007F", "00000000000000000000000001000000"}


def _listening(pid: int) -> list[str]:
    """Local addresses (hex, as /proc/net/tcp* shows them) of the sockets process ``pid`` listens on."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table in ("tcp", "tcp6"):
        path = Path(f"/proc/{pid}/net/{table}")
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                found.append(fields[1].split(":")[0])
    return found


@pytest.mark.skipif(not Path("/proc/self/net/tcp").exists(), reason="reads /proc (Linux)")
def test_spark_listens_on_loopback_only(spark: Any) -> None:
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.driver.bindAddress") == conf.get("spark.driver.host") == LOOPBACK
    assert conf.get("spark.ui.enabled") == "false"
    jvm = spark.sparkContext._gateway.proc.pid
    addresses = _listening(jvm)
    assert addresses, "the driver JVM listens on something (RPC, block manager)"
    assert set(addresses) <= _LOOPBACK_HEX, f"the driver JVM listens beyond loopback: {addresses}"


def test_workers_import_this_lancespec(spark: Any) -> None:
    """Executors run the driver's interpreter and import the very lancespec under test (not one that another
    interpreter on PATH would find)."""
    import conformance

    def where(_: object) -> list[tuple[str, str]]:
        import sys

        import conformance as conformance

        return [(sys.executable, conformance.__file__ or "")]

    found = set(spark.sparkContext.parallelize(range(2), 2).mapPartitions(where).collect())
    assert found == {(sys.executable, conformance.__file__)}


def test_spark_certify_command_in_process(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shape = SHAPES["deletions_bitmap"](tmp_path / "shape")
    code = main(["spark-certify", shape.uri, "--master", "local[2]", "--all-versions", "--format", "json"])
    out, err = capsys.readouterr()
    expected = to_json(certify(shape.uri, all_versions=True))
    document = json.loads(out)
    assert document["evidence"]["selection"]["offloaded"]  # a Spark run's evidence is for Spark runs only
    assert (code, _judged(document)) == (expected["exit_code"], _judged(expected))
    assert "task(s)" in err
    assert not spark.sparkContext._jsc.sc().isStopped(), "a session the caller started stays up"


def _judged(document: dict[str, Any]) -> dict[str, Any]:
    """A JSON report less what says how it was made (``evidence``, ``carried_over``)."""
    return {k: v for k, v in document.items() if k not in ("evidence", "carried_over")}


def test_spark_certify_since(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``spark-certify --since``: after one more commit only the new version goes to the executors, and the
    report equals certify's in full; a report of plain certify is refused (exit 2)."""
    import lance
    import pyarrow as pa

    uri = str(tmp_path / "ds")
    for i in range(3):
        lance.write_dataset(pa.table({"id": [i]}), uri, mode="append" if i else "create")
    earlier, later = tmp_path / "earlier.json", tmp_path / "later.json"
    common = ["spark-certify", uri, "--master", "local[2]", "--all-versions", "--format", "json", "--quiet"]
    assert main([*common, "--output", str(earlier)]) == 0
    lance.write_dataset(pa.table({"id": [3]}), uri, mode="append")
    assert main([*common, "--output", str(later), "--since", str(earlier)]) == 0
    document = json.loads(later.read_text())
    assert document["carried_over"]["versions"] == 3 and document["carried_over"]["new"] == ["v4"]
    assert _judged(document) == _judged(to_json(certify(uri, all_versions=True)))
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(to_json(certify(uri, all_versions=True))))
    capsys.readouterr()
    assert main([*common, "--output", str(tmp_path / "refused.json"), "--since", str(plain)]) == 2
    assert "the Spark offload" in capsys.readouterr().err


def test_spark_certify_command_starts_local_spark(tmp_path: Path) -> None:
    """The installed command, in its own process: starts local[*], exits 1 on a MUST breach, and prints
    what ``certify`` prints."""
    shape = SHAPES["single_base"](tmp_path / "shape")
    victim = next((Path(shape.uri) / "data").glob("*.lance"))
    victim.unlink()
    command = [sys.executable, "-m", "lancespec", "spark-certify", shape.uri, "--all-versions"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    local = subprocess.run([sys.executable, "-m", "lancespec", "certify", shape.uri, "--all-versions"],
                           capture_output=True, text=True, timeout=300)
    assert (done.returncode, local.returncode) == (1, 1), done.stderr[-2000:]
    assert done.stdout == local.stdout
    assert "spark (local[*])" in done.stderr


def test_spark_certify_rejects_unknown_area(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["spark-certify", str(tmp_path), "--only", "nonsense"])
    assert exc.value.code == 2


def test_spark_certify_cannot_read_is_one_line(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A dataset that is not there is "cannot read", as in certify: one line, no requirement id."""
    assert main(["spark-certify", str(tmp_path / "nothing"), "--master", "local[2]"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"lancespec: cannot read: {tmp_path / 'nothing'}: does not exist\n"


def test_certify_with_a_session_still_starting(spark: Any, tmp_path: Path) -> None:
    """``certify_with_spark`` on a ``background_session`` (as ``spark-certify`` starts it: the jobs wait for the
    context in their threads) gives certify's report; in a process that has a SparkContext the start reuses it,
    and leaves it up when the block ends."""
    from conformance.spark import background_session, certify_with_spark

    shape = SHAPES["deletions_bitmap"](tmp_path / "shape")
    with background_session("local[2]") as starting:
        result = certify_with_spark(starting, shape.uri, all_versions=True)
        assert starting.context() is spark.sparkContext
    expected = certify(shape.uri, all_versions=True)
    assert result.tasks > 0
    assert _judged(to_json(result.report)) == _judged(to_json(expected))
    assert result.findings_df.count() == len(expected.findings)
    assert not spark.sparkContext._jsc.sc().isStopped(), "a context the process had stays up"


def test_spark_certify_without_java_is_one_line(tmp_path: Path) -> None:
    """No Java runtime: exit 2 and one line, before any Spark starts."""
    shape = SHAPES["single_base"](tmp_path / "shape")
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-java")}
    done = subprocess.run([sys.executable, "-m", "lancespec", "spark-certify", shape.uri], env=env,
                          capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stdout) == (2, "")
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("lancespec: error: Spark cannot start here: no Java runtime")


def test_spark_certify_says_when_spark_fails_to_start(tmp_path: Path) -> None:
    """Spark failing in its own thread (a master URL spark-submit refuses) ends the command, as when it started
    before the driver's checks: exit 3, the log's path and the error on stderr, no report."""
    shape = SHAPES["single_base"](tmp_path / "shape")
    done = subprocess.run([sys.executable, "-m", "lancespec", "spark-certify", shape.uri, "--master", "nonsense["],
                          capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stdout) == (3, ""), done.stderr[-2000:]
    assert "lancespec: what Spark printed is in " in done.stderr
    assert "JAVA_GATEWAY_EXITED" in done.stderr
