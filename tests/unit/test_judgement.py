"""``cannot_judge``: the versions certify declines to judge (MAN-011), on manifests built in memory."""

from __future__ import annotations

from conformance.judgement import cannot_judge
from reference.codec import ManifestFile
from reference.layout import ManifestNaming
from reference.proto import table_pb2
from reference.table import Snapshot, build_snapshot


def _snapshot(reader_flags: int = 0, data_format: str = "2.0") -> Snapshot:
    manifest = table_pb2.Manifest(version=3, reader_feature_flags=reader_flags)
    manifest.data_format.file_format = "lance"
    manifest.data_format.version = data_format
    manifest_file = ManifestFile(manifest, None, None, None, 0)
    return build_snapshot("/r", 3, ManifestNaming.V2, "/r/_versions/m.manifest", manifest_file)


def test_known_flags_and_formats_are_judged() -> None:
    assert cannot_judge(_snapshot(reader_flags=1 | 2 | 8 | 16, data_format="2.1")) == []


def test_each_unknown_reader_bit_is_named() -> None:
    reasons = cannot_judge(_snapshot(reader_flags=1 | 64 | 1 << 33))
    assert len(reasons) == 1
    assert reasons[0].startswith("cannot judge: version 3") and "64, 8589934592" in reasons[0]


def test_an_unknown_data_format_version_is_named() -> None:
    reasons = cannot_judge(_snapshot(data_format="7.0"))
    assert len(reasons) == 1 and "'7.0'" in reasons[0]
