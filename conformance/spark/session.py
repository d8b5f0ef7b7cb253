"""Starting Spark for lancespec: a session whose driver binds to 127.0.0.1 only.

Spark otherwise picks the machine's external interface for the driver and serves its web UI on every
interface; lancespec's sessions bind the driver (``spark.driver.bindAddress``, ``spark.driver.host`` and
``SPARK_LOCAL_IP``) to the loopback interface and turn the UI off. Executors run this very Python
(``spark.pyspark.python`` and ``PYSPARK_PYTHON``, which is what a session started from Python reads), so
they import the same lancespec and pylance.

``background_session`` starts one in a thread while the caller goes on (``spark-certify`` reads and judges
on the driver meanwhile): the JVM's start-up, seconds, is hidden where the caller has work of its own.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterator, Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING

from reference.errors import LanceSpecError

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession


class SparkUnavailable(LanceSpecError):
    """PySpark or a Java runtime is missing, or a running Spark is bound elsewhere: Spark cannot start here."""


__all__ = ["LOOPBACK", "BackgroundSession", "SparkUnavailable", "background_session", "loopback_conf", "require_spark",
           "spark_session", "spark_unavailable"]

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


def _loopback_settings(conf: Mapping[str, str] | None) -> dict[str, str]:
    """``loopback_conf()`` with ``conf`` on top, the driver's bind settings forced to 127.0.0.1, and the
    environment the JVM and its workers read set to match (in the caller's thread: a thread that changes the
    environment races every other thread that reads it)."""
    os.environ["SPARK_LOCAL_IP"] = LOOPBACK  # read by the JVM at launch: block manager, RPC, any UI
    settings = {**loopback_conf(), **(conf or {})}
    # A session started from Python takes its workers' interpreter from PYSPARK_PYTHON alone (the conf key
    # is read by spark-submit only): without it they run whatever "python3" is on PATH, and import the
    # lancespec installed there rather than this one.
    os.environ["PYSPARK_PYTHON"] = settings["spark.pyspark.python"]
    settings["spark.driver.bindAddress"] = settings["spark.driver.host"] = LOOPBACK
    return settings


def _start_context(master: str, app_name: str, settings: Mapping[str, str],
                   jvm_log: str | None) -> tuple[SparkContext, bool]:
    """This process's SparkContext and whether this call started it (False: the process had one, which is
    reused as it is), its bind address checked. When it launches the JVM and ``jvm_log`` is given, the JVM's
    standard output and error (and so its Python workers') go to that file; this process's own are untouched,
    so another thread may go on printing meanwhile."""
    require_spark()
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    with SparkContext._lock:
        context = SparkContext._active_spark_context
    new = context is None
    if context is None:
        conf = SparkConf().setMaster(master).setAppName(app_name).setAll(list(settings.items()))
        with warnings.catch_warnings():
            # pylance warns at every fork once imported; launching the JVM forks and at once execs java.
            warnings.filterwarnings("ignore", message="lance is not fork-safe")
            gateway = None
            if jvm_log is not None and SparkContext._gateway is None:  # as SparkContext would, to jvm_log
                with open(jvm_log, "ab") as log:
                    gateway = launch_gateway(conf, popen_kwargs={"stdout": log, "stderr": log})  # type: ignore[no-untyped-call]
            context = SparkContext(conf=conf, gateway=gateway)
    context.setLogLevel("ERROR")
    bound = context.getConf().get("spark.driver.bindAddress")
    if bound != LOOPBACK:
        raise SparkUnavailable(f"the running SparkSession binds its driver to {bound}, not {LOOPBACK}; stop it "
                               "first")
    return context, new


def _session_on_context(master: str, app_name: str, settings: Mapping[str, str]) -> SparkSession:
    """The SparkSession of the running context (``_start_context``), with ``settings``."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def spark_session(master: str = "local[*]", *, app_name: str = "lancespec",
                  conf: Mapping[str, str] | None = None, jvm_log: str | None = None) -> SparkSession:
    """A SparkSession on ``master`` (default ``local[*]``) bound to 127.0.0.1, with ``conf`` on top of
    ``loopback_conf()``. The driver's bind settings cannot be overridden. An existing session of this
    process is returned as it is (Spark allows one per process); its bind address is checked. ``jvm_log``:
    a file for what the JVM and its Python workers print (its start-up banner, its log), which otherwise
    shares this process's terminal."""
    settings = _loopback_settings(conf)
    _start_context(master, app_name, settings, jvm_log)
    return _session_on_context(master, app_name, settings)


class BackgroundSession:
    """``spark_session`` started in a thread of its own, so the JVM's start-up (seconds) runs beside the
    caller's own work. ``context()`` waits for the SparkContext, all that Spark jobs need; ``session()`` makes
    the SparkSession on it when first asked for (seconds more: the JVM loads its SQL classes), in the caller's
    thread. ``certify_with_spark`` takes one in place of a session: its jobs wait for the context in their
    threads while the driver reads and judges. Use it through ``background_session``, which stops what it
    started. ``started_in``: seconds from the start to the context being ready (None until then)."""

    def __init__(self, master: str = "local[*]", *, app_name: str = "lancespec",
                 conf: Mapping[str, str] | None = None, jvm_log: str | None = None) -> None:
        self.master, self._app_name = master, app_name
        self._settings = _loopback_settings(conf)
        self.started_in: float | None = None
        self._session: SparkSession | None = None
        self._lock = threading.Lock()
        self._began = time.perf_counter()
        self._outcome: Future[tuple[SparkContext, bool]] = Future()
        self._thread = threading.Thread(target=self._start, args=(jvm_log,), name="lancespec-spark-session",
                                        daemon=True)
        self._thread.start()

    def _start(self, jvm_log: str | None) -> None:
        try:
            started = _start_context(self.master, self._app_name, self._settings, jvm_log)
        except BaseException as exc:  # raised to whoever asks for the context
            self._outcome.set_exception(exc)
            return
        self.started_in = time.perf_counter() - self._began
        self._outcome.set_result(started)

    def ready(self) -> bool:
        """Whether the start has ended (started or failed)."""
        return self._outcome.done()

    def context(self) -> SparkContext:
        """The SparkContext, once started (waits); the start's failure raised here."""
        return self._outcome.result()[0]

    def session(self) -> SparkSession:
        """The SparkSession on the context, made when first asked for (waits for the context)."""
        self.context()
        with self._lock:
            if self._session is None:
                self._session = _session_on_context(self.master, self._app_name, self._settings)
            return self._session

    def close(self, *, quiet: bool = False) -> None:
        """Wait for the start to end and stop the session if the start made its SparkContext (one this process
        had stays up). The start's failure is raised, unless ``quiet`` (a caller already failing)."""
        self._thread.join()
        failure = self._outcome.exception()
        if failure is not None:
            if not quiet:
                raise failure
            return
        context, new = self._outcome.result()
        if new:
            (self._session or context).stop()


@contextlib.contextmanager
def background_session(master: str = "local[*]", *, app_name: str = "lancespec",
                       conf: Mapping[str, str] | None = None,
                       jvm_log: str | None = None) -> Iterator[BackgroundSession]:
    """A ``BackgroundSession`` for the block: the session starts at once in a thread, the block goes on; at
    the end the start is waited for and what it started is stopped. A failed start is raised when the block
    ends normally; when the block raises, its exception is the one that propagates."""
    starting = BackgroundSession(master, app_name=app_name, conf=conf, jvm_log=jvm_log)
    try:
        yield starting
    except BaseException:
        starting.close(quiet=True)
        raise
    starting.close()
