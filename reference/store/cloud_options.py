"""Storage options read for the cloud stores (``reference.store.cloud``): which keys go to which store, the
tuning lancespec adds, and the rule of configuration.

**The rule of configuration** (docs/security.md; any store that replaces this one must keep it): a cloud store
is *configured* when the user gave a storage option of its own (``option_keys``: an S3 key for ``s3://``, a GCS
key for ``gs://``, an Azure key for ``az://``; the client keys every store shares, bare, and the run's tuning
options, ``TUNING_OPTIONS``, which lancespec itself sets, do not count). A store nobody configured makes no
request at all: every call raises StoreConfigError naming the URI and the options that would configure it,
before any credential is looked up and before any connection is made. So a dataset naming an ``s3://`` base
cannot make lancespec read the environment's keys or profile files, contact the instance-metadata address, or
send a request anywhere the user did not point it. ``memory://`` needs no configuration (nothing leaves the
process).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any
from urllib.parse import urlparse

from ..errors import StoreConfigError
from .base import DEFAULT_IO_PARALLELISM, MAX_IO_PARALLELISM
from .option_keys import AZURE_KEYS, CLIENT_KEYS, GCS_KEYS, S3_KEYS

__all__ = ["CREDENTIALS_OPTIONS", "CREDENTIAL_OPTIONS", "DEFAULT_MAX_ATTEMPTS", "ENDPOINT_OPTION", "FAMILIES",
           "TUNING_OPTIONS", "CloudOptions", "parse_duration"]

FAMILIES = {"s3": "s3", "s3a": "s3", "gs": "gs", "az": "az", "abfs": "az", "abfss": "az", "adl": "az",
            "azure": "az", "memory": "memory"}
"""Each scheme served by a cloud store, and the store family that serves it."""
_OWN_KEYS = {"s3": frozenset(S3_KEYS), "gs": frozenset(GCS_KEYS), "az": frozenset(AZURE_KEYS)}
_PREFIX = {"s3": "aws_", "gs": "google_", "az": "azure_"}
_NAMES = {"s3": "S3 (aws_endpoint, aws_region or credentials)",
          "gs": "GCS (google_service_account, google_base_url, ...)",
          "az": "Azure (account_name, azure_endpoint, ...)"}

ENDPOINT_OPTION = {"s3": "aws_endpoint", "gs": "google_base_url", "az": "azure_endpoint", "memory": "none"}
"""The storage option naming each family's endpoint (named when a store cannot be reached)."""
CREDENTIALS_OPTIONS = {"s3": "aws_access_key_id, aws_secret_access_key",
                       "gs": "google_service_account_key or google_application_credentials",
                       "az": "account_name, account_key or sas_token", "memory": "none"}
"""The storage options carrying each family's credentials (named when a request is refused)."""

DEFAULT_MAX_ATTEMPTS = 5
DEFAULT_CONNECT_TIMEOUT_S = 5.0
DEFAULT_TIMEOUT_S = 30.0
"""object_store's own default for a whole request (pylance's ``timeout``): a body that trickles ends there."""
DEFAULT_MAX_LISTED_OBJECTS = 50_000_000
MAX_DURATION_S = 3600.0
"""The longest ``connect_timeout`` or ``timeout`` accepted (a run must end)."""
MAX_RUN_S = 86_400.0
"""The longest ``lancespec_run_timeout`` accepted."""
MAX_ATTEMPTS = 100

_ALIASES: dict[str, tuple[str, ...]] = {
    "access_key_id": ("aws_access_key_id", "access_key_id"),
    "secret_access_key": ("aws_secret_access_key", "secret_access_key"),
    "session_token": ("aws_session_token", "session_token", "aws_token", "token"),
    "endpoint": ("aws_endpoint", "endpoint", "aws_endpoint_url", "endpoint_url"),
    "allow_http": ("allow_http", "aws_allow_http", "google_allow_http", "azure_allow_http"),
    "max_attempts": ("lancespec_max_attempts",),
    "connect_timeout": ("connect_timeout", "lancespec_connect_timeout"),
    "timeout": ("timeout", "lancespec_read_timeout"),
    "io_parallelism": ("lancespec_io_parallelism",),
    "run_timeout": ("lancespec_run_timeout",),
    "max_listed_objects": ("lancespec_max_listed_objects",),
}
TUNING_OPTIONS = frozenset(k for name in ("max_attempts", "connect_timeout", "timeout", "io_parallelism",
                                          "run_timeout", "max_listed_objects") for k in _ALIASES[name])
"""The storage options (lowercase) that tune requests and configure no store (``RunStorage`` sets
``lancespec_io_parallelism`` on every run)."""
CREDENTIAL_OPTIONS = frozenset(_ALIASES["access_key_id"] + _ALIASES["secret_access_key"] + _ALIASES["session_token"]
                               + ("account_key", "azure_storage_account_key", "access_key", "master_key",
                                  "azure_storage_sas_key", "sas_token", "client_secret", "bearer_token",
                                  "google_service_account_key", "service_account_key"))
"""The storage options (lowercase) that carry credentials: never printed."""
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """Seconds from ``"2.5"``, ``"500ms"``, ``"10s"``, ``"2m"`` or ``"1h"``; ValueError otherwise."""
    value = text.strip().lower()
    for unit in sorted(_DURATION_UNITS, key=len, reverse=True):
        if value.endswith(unit) and value[: -len(unit)].strip():
            return float(value[: -len(unit)]) * _DURATION_UNITS[unit]
    return float(value)


def _positive(value: str | None, default: float, parse: Callable[[str], Any], name: str, most: float) -> Any:
    """``value`` parsed, or ``default`` when absent; StoreConfigError naming the option when not positive or
    above ``most`` (``inf`` and ``nan`` included)."""
    if value is None:
        return default
    try:
        parsed = parse(value)
    except (ValueError, OverflowError):
        parsed = 0
    what = "integer" if parse is int else "duration"
    if not parsed > 0:
        raise StoreConfigError(f"storage option {name} must be a positive {what}, not {value!r}")
    if not parsed <= most:
        raise StoreConfigError(f"storage option {name} must be at most {most:g}{'' if parse is int else ' s'}, "
                               f"not {value!r}")
    return parsed


class CloudOptions:
    """Storage options resolved for object_store. Built, StoreConfigError naming the option on a value no store
    could use (a control character, an endpoint that is no http(s) URL or whose port is no port, a duration
    that is not finite or above ``MAX_DURATION_S``, a parallelism above ``MAX_IO_PARALLELISM``): the command
    line builds one for every run, local ones too (issue 32). ``refuse_unusable_combinations``: the options
    that only together are wrong for a cloud store, checked when one is built."""

    def __init__(self, storage_options: Mapping[str, str] | None = None) -> None:
        self.options = options = {str(k).lower(): str(v) for k, v in (storage_options or {}).items()}
        for key, value in options.items():
            if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):  # CR/LF would split a header or a URL
                shown = "(hidden)" if key in CREDENTIAL_OPTIONS else repr(value[:60])
                raise StoreConfigError(f"storage option {key} holds a control character: {shown}")

        def pick(name: str) -> str | None:
            return next((options[k] for k in _ALIASES[name] if options.get(k)), None)

        self.allow_http = (pick("allow_http") or "").strip().lower() in ("true", "1", "yes", "on")
        self.endpoint = pick("endpoint")
        if self.endpoint is not None:
            scheme = urlparse(self.endpoint).scheme.lower()
            if scheme not in ("http", "https"):
                raise StoreConfigError("the S3 endpoint (storage option aws_endpoint) must be an http:// or "
                                       "https:// URL", self.endpoint)
            try:
                urlparse(self.endpoint).port  # noqa: B018 - raises ValueError for a port that is no port
            except ValueError as exc:
                raise StoreConfigError(f"the S3 endpoint's port is not a port number (0-65535): {exc}",
                                       self.endpoint) from exc
        self._half_key_pair = (pick("access_key_id") is None) != (pick("secret_access_key") is None)
        self.max_attempts = _positive(pick("max_attempts"), DEFAULT_MAX_ATTEMPTS, int, "lancespec_max_attempts",
                                      MAX_ATTEMPTS)
        self.io_parallelism = _positive(pick("io_parallelism"), DEFAULT_IO_PARALLELISM, int,
                                        "lancespec_io_parallelism", MAX_IO_PARALLELISM)
        self.connect_timeout = _positive(pick("connect_timeout"), DEFAULT_CONNECT_TIMEOUT_S, parse_duration,
                                         "connect_timeout", MAX_DURATION_S)
        self.timeout = _positive(pick("timeout"), DEFAULT_TIMEOUT_S, parse_duration, "timeout", MAX_DURATION_S)
        self.run_timeout: float | None = _positive(pick("run_timeout"), 0, parse_duration, "lancespec_run_timeout",
                                                   MAX_RUN_S) or None
        self.max_listed_objects = _positive(pick("max_listed_objects"), DEFAULT_MAX_LISTED_OBJECTS, int,
                                            "lancespec_max_listed_objects", 1 << 40)

    def refuse_unusable_combinations(self) -> None:
        """StoreConfigError, naming the options, where they are wrong only together: an ``http://`` S3 endpoint
        without ``allow_http``, ``allow_http`` without an endpoint (requests would go to the cloud over HTTPS),
        half an S3 key pair."""
        if self.endpoint is not None:
            if urlparse(self.endpoint).scheme.lower() == "http" and not self.allow_http:
                raise StoreConfigError("refusing plain-HTTP S3 endpoint; set storage option allow_http=true to "
                                       "permit it", self.endpoint)
        elif self.allow_http and not any(k in self.options for k in _OWN_KEYS["gs"] | _OWN_KEYS["az"]):
            raise StoreConfigError("storage option allow_http is set but no endpoint is: requests would go to the "
                                   "cloud over HTTPS; add --storage-option aws_endpoint=http://HOST:PORT (or drop "
                                   "allow_http)")
        if self._half_key_pair:
            raise StoreConfigError("give both storage options aws_access_key_id and aws_secret_access_key, "
                                   "or neither")

    def configured(self, family: str) -> bool:
        """Whether the user configured the stores of ``family`` (the rule of configuration, module docstring)."""
        if family == "memory":
            return True
        own, prefix = _OWN_KEYS[family], _PREFIX[family]
        return any(k in own or (k.startswith(prefix) and k not in TUNING_OPTIONS) for k in self.options)

    def refusal(self, family: str) -> str:
        """Why a store of ``family`` nobody configured reads nothing."""
        what = "S3" if family == "s3" else _NAMES[family].split(" ")[0]
        return f"no {what} store is configured, so nothing is read from it (give a storage option of {_NAMES[family]})"

    def store_config(self, family: str) -> dict[str, str]:
        """The options object_store's store of ``family`` takes as its configuration (its own keys, verbatim)."""
        own = _OWN_KEYS[family]
        config = {k: v for k, v in self.options.items() if k in own and v != ""}
        if family == "s3" and not any(k in config for k in ("aws_region", "region", "aws_default_region",
                                                            "default_region")):
            config["aws_region"] = "us-east-1"
        return config

    def client_options(self) -> dict[str, Any]:
        """object_store's client options: the client keys given (bare or with a store's prefix), lancespec's
        timeouts and its pool size."""
        out: dict[str, Any] = {}
        for key, value in self.options.items():
            bare = next((key[len(p):] for p in _PREFIX.values() if key.startswith(p)), key)
            if bare in CLIENT_KEYS and bare not in ("timeout", "connect_timeout"):
                out[bare] = value
        out.update(allow_http=self.allow_http, connect_timeout=timedelta(seconds=self.connect_timeout),
                   timeout=timedelta(seconds=self.timeout), pool_max_idle_per_host=str(self.io_parallelism))
        return out

    def retry_config(self, attempts: int | None = None) -> dict[str, Any]:
        """object_store's retries: ``attempts`` in all (default ``lancespec_max_attempts``), jittered exponential
        backoff from 50 ms up to 2 s, and no retry begun after the attempts could have taken their timeouts."""
        attempts = self.max_attempts if attempts is None else attempts
        return {"max_retries": attempts - 1,
                "retry_timeout": timedelta(seconds=attempts * (self.timeout + self.connect_timeout)),
                "backoff": {"init_backoff": timedelta(milliseconds=50), "max_backoff": timedelta(seconds=2),
                            "base": 2}}
