"""The embedded S3-compatible server: moto's S3 in server mode, made safe for conditional writes.

moto answers ``PutObject`` with ``If-None-Match: *`` correctly one request at a time, but it checks the
condition and then stores the object without a lock around both, so two concurrent conditional PUTs on
one key can both succeed. The Lance commit protocol rests on exactly that primitive, so this server wraps
moto's WSGI application in one process-wide lock held for the whole of every write request (``PUT``,
``POST``, ``DELETE``): a conditional write is then atomic with respect to every other write. Reads run
unlocked and concurrently. ``--unlocked`` serves moto as it is, a storage personality on which a
commit checker must be able to fail.

The server runs in a separate process, because pylance's Rust calls may hold the GIL for long stretches
and a server thread inside the test process could then deadlock with its own client::

    python -m simulator.s3 --port 9000 [--host 127.0.0.1] [--unlocked]

``--port 0`` binds a free port. Either way, once the socket is listening the process prints one line
``LANCESPEC_S3_LISTENING http://HOST:PORT`` on stdout, then serves (threaded) until killed.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import http.client
import logging
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from typing import IO, TYPE_CHECKING, Any

from reference.errors import LanceSpecError

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment


class S3ServerError(LanceSpecError):
    """The embedded S3 server could not be started or did not come up."""


__all__ = [
    "ANNOUNCE_PREFIX",
    "WRITE_METHODS",
    "EmbeddedS3Server",
    "S3ServerError",
    "WriteLockMiddleware",
    "main",
    "make_app",
]

ANNOUNCE_PREFIX = "LANCESPEC_S3_LISTENING "
"""The first stdout line of a serving process is this prefix followed by its endpoint URL."""

WRITE_METHODS = frozenset({"PUT", "POST", "DELETE"})
"""HTTP methods that may change the store; under the lock they run one at a time."""

TEST_CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
LOOPBACK = "127.0.0.1"


# --- the WSGI application ---------------------------------------------------------------------------


class WriteLockMiddleware:
    """Runs every write request (``WRITE_METHODS``) of the wrapped app under one lock, one at a time.

    The lock is held until the response body has been produced in full, so the store's check-then-store
    of a conditional write cannot interleave with any other write. Other methods pass straight through.
    """

    def __init__(self, app: WSGIApplication) -> None:
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if str(environ.get("REQUEST_METHOD", "")).upper() not in WRITE_METHODS:
            return self.app(environ, start_response)
        with self.lock:
            result = self.app(environ, start_response)
            try:
                body = b"".join(result)
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
        return [body]


def make_app(locked: bool = True) -> WSGIApplication:
    """moto's S3-serving WSGI app (the one ``moto_server`` runs), under the write lock unless ``locked`` is false."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    app: WSGIApplication = DomainDispatcherApplication(create_backend_app)
    return WriteLockMiddleware(app) if locked else app


# --- the serving process ----------------------------------------------------------------------------


def _exit_when_stdin_closes() -> None:
    """End the process when its stdin reaches EOF: the parent that holds the pipe's other end is gone."""
    try:
        while sys.stdin.buffer.read(4096):
            pass
    finally:
        os._exit(0)


def main(argv: Sequence[str] | None = None) -> None:
    """Serve the S3-compatible endpoint until killed (see the module docstring for the options)."""
    parser = argparse.ArgumentParser(
        prog="python -m simulator.s3", description="An S3-compatible server (moto) for tests."
    )
    parser.add_argument("--port", type=int, required=True, help="port to listen on; 0 picks a free one")
    parser.add_argument("--host", default=LOOPBACK, help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--unlocked", action="store_true", help="serve without the write lock: conditional PUTs can race"
    )
    parser.add_argument("--verbose", action="store_true", help="log every request on stderr")
    parser.add_argument(
        "--switch-interval", type=float, help="set sys.setswitchinterval (a tiny value makes thread races more likely)"
    )
    parser.add_argument("--exit-with-stdin", action="store_true", help="exit when stdin is closed (the parent is gone)")
    args = parser.parse_args(argv)

    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.INFO if args.verbose else logging.WARNING)
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval)
    if args.exit_with_stdin:
        threading.Thread(target=_exit_when_stdin_closes, name="stdin-watch", daemon=True).start()

    server = make_server(args.host, args.port, make_app(locked=not args.unlocked), threaded=True)
    address, port = server.server_address[:2]
    host = address.decode() if isinstance(address, bytes) else str(address)
    host_text = f"[{host}]" if ":" in host else host
    print(f"{ANNOUNCE_PREFIX}http://{host_text}:{port}", flush=True)
    try:
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()
    finally:
        server.server_close()


# --- the controller ---------------------------------------------------------------------------------


class EmbeddedS3Server:
    """An S3-compatible server in a child process on 127.0.0.1 and a free port.

    ``start()`` returns once the server answers HTTP, or raises S3ServerError (with the child's stderr)
    after ``startup_timeout`` seconds. ``stop()`` kills the child; so do leaving a ``with`` block,
    interpreter exit and (the child's stdin is a pipe) the parent's death. ``locked=False`` serves moto
    without the write lock; ``port`` 0 (the default) lets the child pick a free port.
    """

    def __init__(
        self, *, locked: bool = True, startup_timeout: float = 30.0, switch_interval: float | None = None,
        port: int = 0,
    ) -> None:
        self.locked = locked
        self.port = port
        self.startup_timeout = startup_timeout
        self.switch_interval = switch_interval
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._endpoint: str | None = None
        self._client: Any = None

    # lifecycle

    def start(self) -> EmbeddedS3Server:
        """Launch the child process and wait for it to answer; a no-op if already running."""
        if self._proc is not None:
            return self
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed in stop())
        self._proc = subprocess.Popen(
            self.command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, close_fds=True
        )
        atexit.register(self.stop)
        try:
            deadline = time.monotonic() + self.startup_timeout
            self._endpoint = self._await_announcement(deadline)
            self._await_http(deadline)
        except BaseException:
            self.stop()
            raise
        return self

    def command(self) -> list[str]:
        """The child's command line: this module, on 127.0.0.1 and ``port`` (0: a port the child picks)."""
        cmd = [sys.executable, "-m", "simulator.s3", "--host", LOOPBACK, "--port", str(self.port),
               "--exit-with-stdin"]
        if not self.locked:
            cmd.append("--unlocked")
        if self.switch_interval is not None:
            cmd += ["--switch-interval", repr(self.switch_interval)]
        return cmd

    def stop(self) -> None:
        """Kill the child process (politely first) and release its pipes; safe to call repeatedly."""
        proc, self._proc = self._proc, None
        atexit.unregister(self.stop)
        self._client = None
        if proc is not None:
            from .emulators import stop_child

            stop_child(proc)
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def __enter__(self) -> EmbeddedS3Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int:
        return self._running_proc().pid

    # what clients need

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:PORT``."""
        if self._endpoint is None or self._proc is None:
            raise S3ServerError("the embedded S3 server is not running")
        return self._endpoint

    def storage_options(self) -> dict[str, str]:
        """Storage options that both pylance and lancespec's cloud store accept for this endpoint."""
        return {**TEST_CREDENTIALS, "aws_endpoint": self.endpoint, "aws_region": "us-east-1", "allow_http": "true"}

    def client(self) -> Any:
        """A boto3 S3 client for this endpoint (path-style addressing), the simulator's own probe client."""
        if self._client is None:
            from .preflight import s3_client

            self._client = s3_client(self.endpoint, self.storage_options())
        return self._client

    def create_bucket(self, name: str) -> str:
        """Create bucket ``name`` (in us-east-1) and return its URI ``s3://name``."""
        self.client().create_bucket(Bucket=name)
        return f"s3://{name}"

    # internals

    def _running_proc(self) -> subprocess.Popen[bytes]:
        if self._proc is None:
            raise S3ServerError("the embedded S3 server is not running")
        return self._proc

    def _stderr_text(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.flush()
        self._stderr.seek(0)
        text = self._stderr.read().decode("utf-8", "replace").strip()
        return text[-4000:] if text else "(nothing on stderr)"

    def _fail(self, why: str) -> S3ServerError:
        proc = self._proc
        code = proc.poll() if proc is not None else None
        status = f"exited with code {code}" if code is not None else "still running"
        return S3ServerError(f"embedded S3 server {why} (process {status}); its stderr:\n{self._stderr_text()}")

    def _await_announcement(self, deadline: float) -> str:
        """Read the child's ``ANNOUNCE_PREFIX`` line, then keep draining its stdout in the background."""
        proc = self._running_proc()
        stdout = proc.stdout
        assert stdout is not None
        lines: queue.Queue[str | None] = queue.Queue()

        def drain() -> None:
            for raw in stdout:
                line = raw.decode("utf-8", "replace").strip()
                if line.startswith(ANNOUNCE_PREFIX):  # printed once; only the first item is taken
                    lines.put(line[len(ANNOUNCE_PREFIX) :])
            lines.put(None)  # EOF: the process has ended or closed stdout

        threading.Thread(target=drain, name="s3-server-stdout", daemon=True).start()
        try:
            endpoint = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise self._fail(f"did not report a listening port within {self.startup_timeout:g} s") from None
        if endpoint is None:
            proc.wait(timeout=5)
            raise self._fail("ended before listening")
        if not endpoint.startswith(f"http://{LOOPBACK}:"):
            raise self._fail(f"listens on {endpoint}, not on {LOOPBACK}")
        return endpoint

    def _await_http(self, deadline: float) -> None:
        """Poll ``GET /`` until the server answers with any HTTP status."""
        port, last_error = int(self.endpoint.rsplit(":", 1)[1]), ""
        while time.monotonic() < deadline:
            if self._running_proc().poll() is not None:
                raise self._fail("ended during the health check")
            conn = http.client.HTTPConnection(LOOPBACK, port, timeout=2)
            try:
                conn.request("GET", "/")
                conn.getresponse().read()
                return
            except (OSError, http.client.HTTPException) as exc:  # refused, reset or timed out: not up yet
                last_error = str(exc)
            finally:
                conn.close()
            time.sleep(0.05)
        raise self._fail(f"did not answer HTTP within {self.startup_timeout:g} s (last error: {last_error})")


if __name__ == "__main__":
    main()
