"""Starting Spark for lancespec: a session whose driver binds to 127.0.0.1 only.

Spark otherwise picks the machine's external interface for the driver and serves its web UI on every
interface; lancespec's sessions bind the driver (``spark.driver.bindAddress``, ``spark.driver.host`` and
``SPARK_LOCAL_IP``) to the loopback interface and turn the UI off. Executors run this very Python
(``spark.pyspark.python`` and ``PYSPARK_PYTHON``, which is what a session started from Python reads), so
they import the same lancespec and pylance.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import subprocess
import sys
import warnings
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from reference.errors import LanceSpecError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class SparkUnavailable(LanceSpecError):
    """PySpark or a Java runtime is missing, or a running Spark is bound elsewhere: Spark cannot start here."""


__all__ = ["LOOPBACK", "SparkUnavailable", "loopback_conf", "require_spark", "spark_session", "spark_unavailable"]

LOOPBACK = "127.0.0.1"


def spark_unavailable() -> str | None:
    """Why Spark cannot start on this machine (pyspark or Java missing), or None when it can."""
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed (pip install 'lancespec[spark]', or run setup.sh)"
    java_home = os.environ.get("JAVA_HOME")
    java = os.path.join(java_home, "bin", "java") if java_home else shutil.which("java")
    if not java or not os.path.exists(java):
        return "no Java runtime (java is not on PATH and JAVA_HOME is unset); setup.sh installs OpenJDK 17"
    try:
        subprocess.run([java, "-version"], check=True, capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"the Java runtime at {java} does not run: {exc}"
    return None


def require_spark() -> None:
    """Raise SparkUnavailable, saying what is missing, unless Spark can start here."""
    why = spark_unavailable()
    if why is not None:
        raise SparkUnavailable(why)


def loopback_conf() -> dict[str, str]:
    """The Spark settings of every lancespec session."""
    return {
        "spark.driver.bindAddress": LOOPBACK,
        "spark.driver.host": LOOPBACK,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
    }


@contextlib.contextmanager
def _output_to(path: str) -> Iterator[None]:
    """Standard output and error (the file descriptors a child inherits) go to ``path`` meanwhile."""
    sys.stdout.flush()
    sys.stderr.flush()
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    saved = [os.dup(1), os.dup(2)]
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (target, *saved):
            os.close(fd)


def spark_session(master: str = "local[*]", *, app_name: str = "lancespec",
                  conf: Mapping[str, str] | None = None, jvm_log: str | None = None) -> SparkSession:
    """A SparkSession on ``master`` (default ``local[*]``) bound to 127.0.0.1, with ``conf`` on top of
    ``loopback_conf()``. The driver's bind settings cannot be overridden. An existing session of this
    process is returned as it is (Spark allows one per process); its bind address is checked. ``jvm_log``:
    a file for what the JVM and its Python workers print (its start-up banner, its log), which otherwise
    shares this process's terminal."""
    require_spark()
    from pyspark.sql import SparkSession

    os.environ["SPARK_LOCAL_IP"] = LOOPBACK  # read by the JVM at launch: block manager, RPC, any UI
    settings = {**loopback_conf(), **(conf or {})}
    # A session started from Python takes its workers' interpreter from PYSPARK_PYTHON alone (the conf key
    # is read by spark-submit only): without it they run whatever "python3" is on PATH, and import the
    # lancespec installed there rather than this one.
    os.environ["PYSPARK_PYTHON"] = settings["spark.pyspark.python"]
    settings["spark.driver.bindAddress"] = settings["spark.driver.host"] = LOOPBACK
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    with warnings.catch_warnings():
        # pylance warns at every fork once imported; launching the JVM forks and at once execs java.
        warnings.filterwarnings("ignore", message="lance is not fork-safe")
        with _output_to(jvm_log) if jvm_log else contextlib.nullcontext():
            spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    bound = spark.sparkContext.getConf().get("spark.driver.bindAddress")
    if bound != LOOPBACK:
        raise SparkUnavailable(f"the running SparkSession binds its driver to {bound}, not {LOOPBACK}; stop it "
                               "first")
    return spark
