"""What certify cannot judge: a version whose manifest needs a feature lancespec does not know.

The Table Format says a reader that does not recognise a set reader feature flag should not attempt to
read the dataset (MAN-011). certify is such a reader: it declines to judge that version instead of
failing it, and the report says "cannot judge: ..." (exit 2). A data_format version it does not know is
the same case: it cannot say which data files are right.
"""

from __future__ import annotations

from reference import flags as feature_flags
from reference.table import Head

from .checks.manifest import DATA_FORMAT_FILE_VERSIONS


def cannot_judge(snapshot: Head) -> list[str]:
    """Why certify cannot judge ``snapshot``, one sentence per reason; empty when it can."""
    manifest, version = snapshot.manifest, snapshot.version
    reasons = []
    unknown = feature_flags.unknown_bits(manifest.reader_feature_flags)
    if unknown:
        bits = ", ".join(map(str, unknown))
        reasons.append(f"cannot judge: version {version} sets reader feature flag bit(s) {bits}, which lancespec "
                       f"does not know; a reader should not attempt to read it (MAN-011) [{snapshot.manifest_uri}]")
    declared = manifest.data_format.version
    if declared not in DATA_FORMAT_FILE_VERSIONS:
        reasons.append(f"cannot judge: version {version} declares data_format version {declared!r}, a file format "
                       f"version lancespec does not know [{snapshot.manifest_uri}]")
    return reasons
