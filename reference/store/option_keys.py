"""The storage option keys lancespec accepts, in one table: pylance's and lancespec's own.

pylance hands its storage options to Rust's ``object_store`` and silently drops a key no store knows, so a
typo (``aws_endpont``) sends the requests to AWS itself. lancespec refuses any key outside this table
(``check_storage_options``: one line naming the key, a near miss it probably meant, and the keys there are).
Keys are matched case-insensitively, as lancespec reads them.

Sources: ``object_store``'s configuration keys with their aliases (``AmazonS3ConfigKey``, ``GoogleConfigKey``,
``AzureConfigKey`` and the ``ClientConfigKey`` every store takes, bare or with the store's prefix ``aws_``,
``google_``, ``azure_``), the keys lance itself reads (``lance-io``'s object store and the DynamoDB commit
lock), and lancespec's ``lancespec_*`` keys (``reference.store.cloud_options``). lancespec's cloud stores hand the S3,
GCS, Azure and client keys to object_store verbatim; lance's own keys are accepted because pylance accepts them.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence

from ..errors import InvalidOption

__all__ = ["ACCEPTED_KEYS", "KEY_GROUPS", "check_storage_options", "parse_storage_options", "unknown_key_message"]

#: object_store's client options: every store takes them bare or with its own prefix.
CLIENT_KEYS = (
    "allow_http", "allow_invalid_certificates", "disable_system_certificates", "connect_timeout",
    "default_content_type", "http1_only", "http2_only", "http2_keep_alive_interval", "http2_keep_alive_timeout",
    "http2_keep_alive_while_idle", "http2_max_frame_size", "pool_idle_timeout", "pool_max_idle_per_host",
    "proxy_url", "proxy_ca_certificate", "proxy_excludes", "randomize_addresses", "read_timeout", "timeout",
    "user_agent",
)

#: object_store's S3 keys (each canonical name first, then its aliases).
S3_KEYS = (
    "aws_access_key_id", "access_key_id", "aws_secret_access_key", "secret_access_key", "aws_default_region",
    "default_region", "aws_region", "region", "aws_bucket", "aws_bucket_name", "bucket_name", "bucket",
    "aws_endpoint", "aws_endpoint_url", "endpoint_url", "endpoint", "aws_endpoint_url_s3", "aws_session_token",
    "aws_token", "session_token", "token", "aws_virtual_hosted_style_request", "virtual_hosted_style_request",
    "aws_s3_express", "s3_express", "aws_imdsv1_fallback", "imdsv1_fallback", "aws_metadata_endpoint",
    "metadata_endpoint", "aws_unsigned_payload", "unsigned_payload", "aws_checksum_algorithm", "checksum_algorithm",
    "aws_container_credentials_relative_uri", "container_credentials_relative_uri",
    "aws_container_credentials_full_uri", "container_credentials_full_uri", "aws_container_authorization_token_file",
    "container_authorization_token_file", "aws_web_identity_token_file", "web_identity_token_file", "aws_role_arn",
    "role_arn", "aws_role_session_name", "role_session_name", "aws_endpoint_url_sts", "endpoint_url_sts",
    "aws_skip_signature", "skip_signature", "aws_copy_if_not_exists", "copy_if_not_exists", "aws_conditional_put",
    "conditional_put", "aws_disable_tagging", "disable_tagging", "aws_disable_bulk_delete", "disable_bulk_delete",
    "aws_request_payer", "request_payer", "aws_server_side_encryption", "server_side_encryption",
    "aws_sse_kms_key_id", "sse_kms_key_id", "aws_sse_bucket_key_enabled", "sse_bucket_key_enabled",
    "aws_sse_customer_key_base64", "sse_customer_key_base64",
)

#: object_store's Google Cloud Storage keys.
GCS_KEYS = (
    "google_service_account", "service_account", "google_service_account_path", "service_account_path",
    "google_service_account_key", "service_account_key", "google_bucket", "google_bucket_name",
    "google_base_url", "base_url", "google_application_credentials", "application_credentials",
    "google_bearer_token", "bearer_token", "google_skip_signature",
)

#: object_store's Azure keys.
AZURE_KEYS = (
    "azure_storage_account_key", "azure_storage_access_key", "azure_storage_master_key", "master_key",
    "account_key", "access_key", "azure_storage_account_name", "account_name", "azure_storage_client_id",
    "azure_client_id", "client_id", "azure_storage_client_secret", "azure_client_secret", "client_secret",
    "azure_storage_tenant_id", "azure_storage_authority_id", "azure_tenant_id", "azure_authority_id", "tenant_id",
    "authority_id", "azure_storage_authority_host", "azure_authority_host", "authority_host",
    "azure_storage_sas_key", "azure_storage_sas_token", "sas_key", "sas_token", "azure_storage_token",
    "azure_storage_use_emulator", "use_emulator", "azure_storage_endpoint", "azure_endpoint", "azure_msi_endpoint",
    "azure_identity_endpoint", "identity_endpoint", "msi_endpoint", "azure_object_id", "object_id",
    "azure_msi_resource_id", "msi_resource_id", "azure_federated_token_file", "federated_token_file",
    "azure_use_fabric_endpoint", "use_fabric_endpoint", "azure_use_azure_cli", "use_azure_cli",
    "azure_skip_signature", "azure_container_name", "container_name", "azure_disable_tagging",
    "azure_fabric_token_service_url", "fabric_token_service_url", "azure_fabric_workload_host",
    "fabric_workload_host", "azure_fabric_session_token", "fabric_session_token",
    "azure_fabric_cluster_identifier", "fabric_cluster_identifier", "azure_credential_type", "credential_type",
    "azure_storage_encryption_key", "encryption_key",
)

#: Keys lance reads itself (lance-io's object store, the DynamoDB commit lock).
LANCE_KEYS = (
    "download_retry_count", "client_max_retries", "client_retry_timeout", "use_opendal", "expires_at_millis",
    "dynamodb_endpoint", "google_storage_token",
)

#: lancespec's own keys (reference.store.cloud_options).
LANCESPEC_KEYS = ("lancespec_max_attempts", "lancespec_connect_timeout", "lancespec_read_timeout",
                  "lancespec_io_parallelism", "lancespec_run_timeout", "lancespec_max_listed_objects")

#: The keys by where they come from, each group's canonical names as an error message lists them.
KEY_GROUPS: dict[str, tuple[str, ...]] = {
    "S3": S3_KEYS,
    "client": CLIENT_KEYS,
    "GCS": GCS_KEYS,
    "Azure": AZURE_KEYS,
    "lance": LANCE_KEYS,
    "lancespec": LANCESPEC_KEYS,
}

ACCEPTED_KEYS: frozenset[str] = frozenset(
    [*S3_KEYS, *GCS_KEYS, *AZURE_KEYS, *LANCE_KEYS, *LANCESPEC_KEYS, *CLIENT_KEYS]
    + [prefix + key for prefix in ("aws_", "google_", "azure_") for key in CLIENT_KEYS]
)
"""Every key accepted (lower case)."""

#: Named in the error message: the keys for an S3-compatible store (the rest: this module).
COMMON_KEYS = ("aws_access_key_id", "aws_secret_access_key", "aws_session_token", "aws_endpoint", "aws_region",
               "allow_http", "connect_timeout", "timeout", *LANCESPEC_KEYS)


def unknown_key_message(key: str) -> str:
    """The one line refusing ``key``: a near miss it probably meant, then the keys there are."""
    near = difflib.get_close_matches(key.lower(), sorted(ACCEPTED_KEYS), n=1, cutoff=0.75)
    hint = f" (did you mean {near[0]}?)" if near else ""
    return (f"unknown storage option {key!r}{hint}; accepted: {', '.join(COMMON_KEYS)} and the other keys of "
            f"object_store (S3, GCS, Azure, client) and lance, {len(ACCEPTED_KEYS)} in all "
            "(python -m reference.store.option_keys lists them)")


def check_storage_options(options: Mapping[str, str] | Iterable[str]) -> None:
    """Refuse (InvalidOption) the first key, in order, that no store accepts."""
    for key in options:
        if str(key).lower() not in ACCEPTED_KEYS:
            raise InvalidOption(unknown_key_message(str(key)))


def parse_storage_options(pairs: Sequence[str], flag: str = "--storage-option") -> dict[str, str]:
    """``["k=v", ...]`` given with ``flag`` -> ``{"k": "v"}``; InvalidOption naming ``flag`` on an entry
    without ``=`` or a key no store accepts."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InvalidOption(f"{flag} expects KEY=VALUE, got {pair!r}")
        out[key] = value
    try:
        check_storage_options(out)
    except InvalidOption as exc:
        raise InvalidOption(f"{flag}: {exc}") from None
    return out


def main() -> None:
    """Print every accepted key, one group a line."""
    for group, keys in KEY_GROUPS.items():
        print(f"{group}: {', '.join(keys)}")
    print(f"client keys also with a store's prefix: aws_, google_, azure_ (e.g. aws_allow_http); {len(ACCEPTED_KEYS)} "
          "keys in all, matched case-insensitively")


if __name__ == "__main__":
    main()
