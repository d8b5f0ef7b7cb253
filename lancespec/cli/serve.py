"""``lancespec serve EMULATOR``: start a storage emulator on 127.0.0.1 for the ``s3://`` and ``az://`` examples
and print the storage options that reach it.

``serve s3`` starts the embedded S3 server (``simulator.s3``: moto, with conditional writes made
atomic) and creates a bucket; ``serve az`` starts Azurite (``simulator.emulators``: Microsoft's Azure
Storage emulator, installed by setup.sh) and creates a container. Either prints the storage options to use, one
``--storage-option KEY=VALUE`` a line on stdout (``--format json``: one JSON document with the endpoint, the
bucket or container URI and the options), and serves until Ctrl-C, which stops it with one line on stderr and
exit 0 (the way to stop it). Exit 1 when the server ends on its own, 2 when it cannot start (the port is taken,
the emulator is not installed, the command line is wrong). There is no ``serve gs``: the one GCS emulator
installable here, fake-gcs-server, refuses object_store's uploads (docs/stores.md), so pylance cannot write to it.
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import sys
import time
from typing import Any

from .options import EXIT_FAILED, EXIT_OK

#: The emulators ``serve`` can start.
EMULATORS = ("s3", "az")
DEFAULT_PORT = 9000
#: Azurite's own default blob port.
DEFAULT_AZURITE_PORT = 10000
DEFAULT_BUCKET = "lancespec"
#: Seconds between checks that the server still runs.
POLL_SECONDS = 0.2


def register(sub: Any) -> None:
    """Add ``serve`` to the ``lancespec`` subcommands ``sub``."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "serve", help="start a storage emulator on 127.0.0.1 (s3: the embedded S3 server; az: Azurite) and print "
                      "its options",
        description="Start the emulator on 127.0.0.1, create a bucket (s3) or container (az) and print the storage "
                    "options that reach it "
                    "(one --storage-option KEY=VALUE a line; --format json: one document); serve until Ctrl-C. "
                    "Exit 0 stopped by Ctrl-C, 1 the server ended on its own, 2 it cannot start.")
    parser.add_argument("emulator", choices=EMULATORS,
                        help="s3: the embedded S3-compatible server (moto); az: Azurite (Azure Blob Storage)")
    parser.add_argument("--port", type=int, default=None,
                        help=f"the port on 127.0.0.1 (default {DEFAULT_PORT} for s3, {DEFAULT_AZURITE_PORT} for az; "
                             "0 picks a free one)")
    parser.add_argument("--bucket", default=DEFAULT_BUCKET,
                        help=f"the bucket (s3) or container (az) to create (default {DEFAULT_BUCKET})")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text: --storage-option lines; json: {endpoint, bucket, storage_options} (bucket: the "
                             "s3:// or az:// URI)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from reference.errors import InvalidOption

    port = args.port if args.port is not None else DEFAULT_AZURITE_PORT if args.emulator == "az" else DEFAULT_PORT
    if not 0 <= port <= 65535:
        raise InvalidOption(f"--port must be from 0 to 65535, not {port}")
    if port and not _free(port):
        raise InvalidOption(f"--port {port} is taken on 127.0.0.1; choose another (--port 0 picks a free one)")
    signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C stops it, even started where SIGINT is ignored
    server = _emulator(args.emulator, port)
    label, what = ("Azurite", "container") if args.emulator == "az" else ("S3", "bucket")
    try:
        server.start()
        bucket = server.create_container(args.bucket) if args.emulator == "az" else server.create_bucket(args.bucket)
        options = server.storage_options()
        # stderr first: whoever has read the options from stdout then finds this line there too
        print(f"lancespec serve: {label} on {server.endpoint}, {what} {bucket}; Ctrl-C stops it", file=sys.stderr,
              flush=True)
        if args.format == "json":
            print(json.dumps({"endpoint": server.endpoint, "bucket": bucket, "storage_options": options}), flush=True)
        else:
            print("\n".join(f"--storage-option {k}={v}" for k, v in options.items()), flush=True)
        while server.running:
            time.sleep(POLL_SECONDS)
    except KeyboardInterrupt:
        server.stop()
        print("lancespec serve: stopped", file=sys.stderr)
        return EXIT_OK
    finally:
        server.stop()
    print(f"lancespec serve: {'Azurite' if args.emulator == 'az' else 'the S3 server'} ended on its own",
          file=sys.stderr)
    return EXIT_FAILED


def _emulator(name: str, port: int) -> Any:
    """The server ``name`` names (``EMULATORS``), on ``port``, not started."""
    if name == "az":
        from simulator.emulators import AzuriteServer

        return AzuriteServer(port=port)
    from simulator.s3 import EmbeddedS3Server

    return EmbeddedS3Server(port=port)


def _free(port: int) -> bool:
    """Whether ``port`` can be bound on 127.0.0.1 now."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
