"""No credential is looked up and no metadata service contacted unless the user configured that store
(issue 32; docs/security.md): a local dataset whose manifest registers an ``s3://`` base, certified with the
CI's AWS keys, profile and credential files in the environment and no storage option, reads none of them and
connects nowhere. The child process records, through an audit hook, every open of a credential file and
every connection or name lookup that is not loopback; the test fails on either. Connections object_store
makes (Rust, unseen by the audit hook) are caught by the proxy settings of the environment, which its HTTP
client honours: they point at a loopback listener that records every connection."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conformance_kit import build_reference_dataset, rewrite_manifest

from reference.proto import table_pb2

_AUDITED = r"""
import json, sys
watched, record = sys.argv[1].split(","), sys.argv[2]
seen = []

def hook(event, args):
    if event == "open" and isinstance(args[0], str) and args[0] in watched:
        seen.append(f"open {args[0]}")
    elif event == "socket.connect":
        address = args[1]
        host = address[0] if isinstance(address, tuple) else str(address)
        if host not in ("127.0.0.1", "::1") and not str(host).startswith("/"):
            seen.append(f"connect {address}")
    elif event == "socket.getaddrinfo" and args[0] not in ("127.0.0.1", "localhost", "::1"):
        seen.append(f"lookup {args[0]}")

sys.addaudithook(hook)
from lancespec.cli import main
try:
    code = main(sys.argv[3:])
finally:
    with open(record, "w") as out:
        json.dump(seen, out)
sys.exit(code)
"""


def _recording_proxy(env: dict[str, str]) -> tuple[socket.socket, list[bytes]]:
    """A loopback listener that records the start of every connection made to it, set in ``env`` as every
    proxy: object_store's HTTP client (Rust, unseen by the audit hook) honours these settings, so any request
    it makes lands here."""
    listener, proxied = socket.create_server(("127.0.0.1", 0)), []

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            proxied.append(conn.recv(200))
            conn.close()

    threading.Thread(target=accept, daemon=True).start()
    proxy = f"http://127.0.0.1:{listener.getsockname()[1]}"
    env |= {name: proxy for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy")}
    env |= {"NO_PROXY": "", "no_proxy": ""}
    return listener, proxied


def test_an_s3_base_in_a_local_dataset_reads_no_credential_and_contacts_nothing(tmp_path: Path) -> None:
    uri = build_reference_dataset(tmp_path / "w")

    def edit(m: table_pb2.Manifest) -> None:
        m.base_paths.add(id=9, path="s3://attacker-bucket/data", is_dataset_root=False)
        m.fragments[0].files[0].base_id = 9

    rewrite_manifest(uri, 2, edit)
    credentials, config = tmp_path / "credentials", tmp_path / "config"
    credentials.write_text("[ci]\naws_access_key_id = AKIAFROMFILE\naws_secret_access_key = secret\n")
    config.write_text("[profile ci]\nregion = eu-west-1\n")
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "AKIAFROMENV", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_PROFILE": "ci",
           "AWS_SHARED_CREDENTIALS_FILE": str(credentials), "AWS_CONFIG_FILE": str(config)}
    record = tmp_path / "seen.json"
    listener, proxied = _recording_proxy(env)

    def run(*options: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", _AUDITED, f"{credentials},{config}", str(record), "certify",
                               uri, "--format", "json", *options], capture_output=True, text=True, env=env,
                              timeout=60, check=False)

    done = run()
    assert json.loads(record.read_text()) == []  # no credential file opened, nothing but loopback contacted
    assert proxied == []  # nor anything by object_store
    # the listener sees object_store's requests: a store the user configures is contacted through it
    assert run("--storage-option", "aws_region=eu-west-1", "--storage-option", "lancespec_max_attempts=1").returncode
    listener.close()
    assert any(b"attacker-bucket" in seen or b"amazonaws.com" in seen or b"169.254.169.254" in seen
               for seen in proxied), proxied
    # a store the user did not configure is the setup's limit, not a breach: cannot read, one line, no finding
    assert done.returncode == 2, done.stderr
    assert json.loads(done.stdout)["outcome"] == "cannot_read"
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("lancespec: cannot read: s3://attacker-bucket/data") and "no S3 store is configured" in line


@pytest.mark.parametrize("scheme, base, store", [
    ("gs", "gs://attacker-bucket/data", "GCS"), ("az", "az://attacker-container/data", "Azure"),
])
def test_a_gcs_or_azure_base_reads_no_credential_and_contacts_nothing(tmp_path: Path, scheme: str, base: str,
                                                                      store: str) -> None:
    """The rule of configuration holds for every scheme of the storage layer: with a service-account file and
    Azure keys in the environment and no storage option, a local dataset's ``gs://`` or ``az://`` base opens
    no credential file and contacts nothing (object_store's own requests would reach the proxy listener)."""
    uri = build_reference_dataset(tmp_path / "w")

    def edit(m: table_pb2.Manifest) -> None:
        m.base_paths.add(id=9, path=base, is_dataset_root=False)
        m.fragments[0].files[0].base_id = 9

    rewrite_manifest(uri, 2, edit)
    account_file = tmp_path / "service-account.json"
    account_file.write_text('{"type": "service_account", "client_email": "ci@x", "private_key": "k"}')
    env = {**os.environ, "GOOGLE_APPLICATION_CREDENTIALS": str(account_file),
           "GOOGLE_SERVICE_ACCOUNT": str(account_file), "AZURE_STORAGE_ACCOUNT_NAME": "ciaccount",
           "AZURE_STORAGE_ACCOUNT_KEY": "a2V5", "AZURE_CLIENT_ID": "id", "AZURE_TENANT_ID": "t",
           "AZURE_CLIENT_SECRET": "s"}
    record = tmp_path / "seen.json"
    listener, proxied = _recording_proxy(env)
    done = subprocess.run([sys.executable, "-c", _AUDITED, str(account_file), str(record), "certify", uri,
                           "--format", "json"], capture_output=True, text=True, env=env, timeout=60, check=False)
    listener.close()
    assert json.loads(record.read_text()) == []  # the service-account file never opened, nothing contacted
    assert proxied == []
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"lancespec: cannot read: {base}") and f"no {store} store is configured" in line, line
