"""Budgets per run and per element (issue 32; docs/security.md): what a dataset's own metadata asks to be
read or decoded is counted before the work it causes, and going past a limit is a finding or one line
naming the limit and its option, in seconds and under 1 GB."""

from __future__ import annotations

import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conformance_kit import build_reference_dataset, rewrite_manifest
from test_hostile_datasets import findings, run_cli

from reference.codec.datafile import OFFSET_ENTRY, V2_FOOTER, V2_FOOTER_SIZE
from reference.proto import table_pb2

GIB = 1 << 30


_MEASURE = ("import os, resource, subprocess, sys\n"
            "done = subprocess.run(sys.argv[2:])\n"
            "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n"
            "if done.returncode < 0:\n    os.kill(os.getpid(), -done.returncode)\n"
            "sys.exit(done.returncode)\n")


def measured(*argv: str, timeout: float = 20) -> tuple[subprocess.CompletedProcess[str], int]:
    """``run_cli``'s checks on ``lancespec *argv`` run in a child of its own, and that child's peak resident
    memory in KB (``ru_maxrss`` of a process that waited for it alone: the test process's own children's
    maximum would carry any earlier test's)."""
    with tempfile.TemporaryDirectory() as scratch:
        record = os.path.join(scratch, "peak")
        proc = subprocess.Popen([sys.executable, "-c", _MEASURE, record, sys.executable, "-m", "lancespec", *argv],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
        assert proc.returncode >= 0, f"killed by signal {-proc.returncode}"
        assert "Traceback" not in out + err, err
        with open(record) as peak:
            return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), int(peak.read())


def _spanning(path: Path, size: int) -> None:
    """Rewrite the v2 data file at ``path`` as a sparse file of ``size`` bytes whose metadata sits at its end
    and whose global buffer 0 (the FileDescriptor) spans everything before it."""
    data = path.read_bytes()
    cms, cmo, gbo, n_buffers, n_columns, major, minor, magic = V2_FOOTER.unpack_from(data, len(data) - V2_FOOTER_SIZE)
    tail = bytearray(data[cms:])
    delta = size - len(data)
    for i in range(n_columns):  # column metadata positions move with the tail
        at = cmo - cms + OFFSET_ENTRY.size * i
        position, length = OFFSET_ENTRY.unpack_from(tail, at)
        OFFSET_ENTRY.pack_into(tail, at, position + delta, length)
    OFFSET_ENTRY.pack_into(tail, gbo - cms, 0, cmo + delta)
    V2_FOOTER.pack_into(tail, len(tail) - V2_FOOTER_SIZE, cms + delta, cmo + delta, gbo + delta, n_buffers,
                        n_columns, major, minor, magic)
    with open(path, "wb") as out:
        out.truncate(size - len(tail))
        out.seek(size - len(tail))
        out.write(tail)


def test_a_footer_spanning_a_sparse_3_gib_file_reads_no_3_gib(tmp_path: Path) -> None:
    uri = build_reference_dataset(tmp_path)
    target = sorted((Path(uri) / "data").glob("*.lance"))[0]
    _spanning(target, 3 * GIB)
    assert target.stat().st_size == 3 * GIB and os.stat(target).st_blocks * 512 < 10_000_000
    done, peak_kb = measured("certify", uri, "--format", "json")
    assert done.returncode == 1, done.stderr
    assert any("--max-object-bytes" in str(f["message"]) and f["path"] == str(target) for f in findings(done)), \
        findings(done)
    assert peak_kb < 1_000_000


def _fragment(content: bytes) -> bytes:
    """``content`` as one ``fragments`` element (field 2, length-delimited) of a Manifest section."""
    return b"\x12" + _varint(len(content)) + content


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes(out + bytes([value]))


def _manifest_of(tmp_path: Path, body: bytes) -> str:
    versions = tmp_path / "ds" / "_versions"
    versions.mkdir(parents=True)
    section = table_pb2.Manifest(version=1).SerializeToString() + body
    (versions / "18446744073709551614.manifest").write_bytes(
        struct.pack("<I", len(section)) + section + struct.pack("<QHH4s", 0, 0, 2, b"LANC"))
    return str(tmp_path / "ds")


@pytest.mark.parametrize("what, body", [
    ("5,000,000 schema fields", b"\x0a\x00" * 5_000_000),
    ("2,000,000 base paths", b"\x92\x01\x00" * 2_000_000),
    ("2,000,000 data files", _fragment(b"\x12\x00" * 2_000_000)),
], ids=["fields", "base-paths", "data-files"])
def test_millions_of_empty_entries_are_refused_in_one_line(tmp_path: Path, what: str, body: bytes) -> None:
    """Fields, base paths and data files (here all in one fragment), not only fragments, are counted before
    decoding."""
    uri = _manifest_of(tmp_path, body)
    for command in ("certify", "inspect"):
        done, peak_kb = measured(command, uri)
        assert done.returncode == 2, (what, done.stdout, done.stderr)
        assert "above the limit of 1000000 (raise it with --max-manifest-entries)" in done.stdout + done.stderr
        assert peak_kb < 1_000_000
    assert len(done.stderr.strip().splitlines()) == 1  # inspect's one line


def test_certifying_the_latest_version_keeps_no_manifest_per_version(tmp_path: Path) -> None:
    """Eight versions of 300,000 empty fragments each: certify of the latest walks the history one manifest
    at a time (2.4 GB before, when every version's snapshot was kept)."""
    versions = tmp_path / "ds" / "_versions"
    versions.mkdir(parents=True)
    for v in range(1, 9):
        section = table_pb2.Manifest(version=v).SerializeToString() + b"\x12\x00" * 300_000
        (versions / f"{(1 << 64) - 1 - v}.manifest").write_bytes(
            struct.pack("<I", len(section)) + section + struct.pack("<QHH4s", 0, 0, 2, b"LANC"))
    done, peak_kb = measured("certify", str(tmp_path / "ds"), "--format", "json")
    assert done.returncode in (0, 1, 2) and '"versions"' in done.stdout, done.stderr
    assert peak_kb < 1_000_000


def test_twenty_thousand_bases_are_compared_in_linear_time(tmp_path: Path) -> None:
    """BASE-007 compared every pair of bases (20,000: past 60 s); sorted, it meets only the pairs that
    overlap: here the one base registered twice."""
    uri = build_reference_dataset(tmp_path / "w")
    elsewhere = tmp_path / "elsewhere"

    def edit(m: table_pb2.Manifest) -> None:
        for i in range(20_000):
            m.base_paths.add(id=100 + i, path=str(elsewhere / f"b{i}"), is_dataset_root=False)
        m.base_paths.add(id=99, path=str(elsewhere / "b7"), is_dataset_root=False)

    rewrite_manifest(uri, 2, edit)
    done = run_cli("certify", uri, "--format", "json", timeout=20)
    overlaps = [f for f in findings(done) if f["requirement"] == "BASE-007"]
    assert len(overlaps) == 1 and "equals" in str(overlaps[0]["message"]), overlaps


def test_five_thousand_branches_are_inspected_once_each(tmp_path: Path) -> None:
    """inspect read every branch file once per branch (5,000 branches: past 60 s)."""
    uri = build_reference_dataset(tmp_path)
    refs = Path(uri) / "_refs" / "branches"
    refs.mkdir(parents=True)
    for i in range(5000):
        (refs / f"b{i}.json").write_text('{"parentBranch": null, "parentVersion": 1}')
    done = run_cli("inspect", uri, "--format", "json", timeout=20)
    assert done.returncode == 0, done.stderr
    branches = json.loads(done.stdout)["branches"]
    assert len(branches) == 5000 and branches["b7"] is None  # no tree/b7 holds a version


@pytest.mark.parametrize("depth", [2000])
def test_a_data_directory_nested_thousands_deep_is_no_internal_error(tmp_path: Path, depth: int) -> None:
    """``data/`` nested 2,000 deep ended certify in exit 3 with no report (a RecursionError in the local
    walk); the walk is iterative, and a path the system cannot open is one line or a finding."""
    uri = build_reference_dataset(tmp_path)
    fds = [os.open(Path(uri) / "data", os.O_RDONLY | os.O_DIRECTORY)]
    try:
        for _ in range(depth):  # relative to the last level: the whole path is longer than PATH_MAX
            os.mkdir("d", dir_fd=fds[-1])
            inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fds[-1])
            os.close(fds.pop())
            fds.append(inner)
        os.close(fds.pop())
        done, peak_kb = measured("certify", uri, "--all-versions", "--format", "json")
        assert done.returncode in (0, 1, 2), done.stderr
        assert json.loads(done.stdout)["exit_code"] == done.returncode
        assert peak_kb < 1_000_000
    finally:
        for fd in fds:
            os.close(fd)
        _remove_chain(Path(uri) / "data", "d")


def _remove_chain(top: Path, name: str) -> None:
    """Remove the chain ``top/name/name/...`` without recursion (shutil.rmtree, pytest's cleanup included,
    recurses once per level): the level below the first is moved up in its place, one level at a time."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        while name in os.listdir(fd):
            below = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            try:
                deeper = name in os.listdir(below)
            finally:
                os.close(below)
            if deeper:
                os.rename(f"{name}/{name}", f"{name}.up", src_dir_fd=fd, dst_dir_fd=fd)
            os.rmdir(name, dir_fd=fd)
            if deeper:
                os.rename(f"{name}.up", name, src_dir_fd=fd, dst_dir_fd=fd)
    finally:
        os.close(fd)


@pytest.mark.parametrize("command", ["certify", "inspect"])
@pytest.mark.parametrize("uri", ["", "  "])
def test_an_empty_dataset_uri_is_one_line(command: str, uri: str) -> None:
    """An empty URI named the working directory: certify walked it (exit 3), inspect too."""
    done = run_cli(command, uri, timeout=20)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"lancespec {command}: error: argument uri: the dataset URI is empty (see lancespec {command} --help)"]


def test_a_tag_holding_a_5000_digit_integer_is_a_finding(tmp_path: Path) -> None:
    """Python refuses to convert integers of more than 4,300 digits (ValueError, not a JSON error): exit 3
    before, hiding every other finding."""
    uri = build_reference_dataset(tmp_path, tags=True)
    tag = Path(uri) / "_refs" / "tags" / "first.json"
    tag.write_text('{"branch": null, "version": ' + "9" * 5000 + "}")
    done = run_cli("certify", uri, "--all-versions", "--format", "json", timeout=20)
    assert done.returncode == 1, done.stderr
    assert any(f["requirement"] == "REF-001" and f["path"] == str(tag) and "too long" in str(f["message"])
               for f in findings(done)), findings(done)
    inspected = run_cli("inspect", uri, timeout=20)
    assert inspected.returncode == 2 and len(inspected.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("option, named", [
    ("aws_region=us-east-1\r\nx-injected: 1", "aws_region holds a control character"),
    ("aws_endpoint=http://127.0.0.1:99999", "port is not a port number"),
    ("timeout=inf", "timeout must be at most 3600 s"),
    ("connect_timeout=1e400", "connect_timeout must be at most 3600 s"),
    ("lancespec_io_parallelism=100000000", "lancespec_io_parallelism must be at most 1024"),
    ("lancespec_max_attempts=99999999999999999999999", "lancespec_max_attempts must be at most 100"),
], ids=["crlf", "port", "timeout-inf", "huge-duration", "parallelism", "attempts"])
def test_a_bad_storage_option_value_is_one_line(option: str, named: str) -> None:
    """Bad values ended in exit 3 (a port past 65535), went on (an infinite timeout), or pre-allocated a pool
    past 60 s (a parallelism of 100,000,000)."""
    for command in ("certify", "inspect"):
        done = run_cli(command, "s3://bucket/ds", "--storage-option", "aws_endpoint=http://127.0.0.1:9",
                       "--storage-option", option, "--storage-option", "allow_http=true", timeout=20)
        assert done.returncode == 2, done.stderr
        assert named in done.stdout + done.stderr, (done.stdout, done.stderr)
    assert len(done.stderr.strip().splitlines()) == 1  # inspect's one line


@pytest.mark.parametrize("linked", ["_versions", "data", "_refs"])
def test_a_directory_link_in_the_middle_of_a_path_is_not_followed(tmp_path: Path, linked: str) -> None:
    """``_versions``, ``data`` or ``_refs`` linked to another dataset's: inspect showed that dataset's versions
    as this one's. A link at any directory on the way is refused, naming it; the command line's own root is
    made canonical first (its links are the user's)."""
    uri = build_reference_dataset(tmp_path / "inside", tags=True)
    other = build_reference_dataset(tmp_path / "other", tags=True)
    shutil.rmtree(Path(uri) / linked)
    (Path(uri) / linked).symlink_to(Path(other) / linked)
    done = run_cli("certify", uri, "--all-versions", "--format", "json", timeout=20)
    assert done.returncode in (1, 2), done.stderr
    assert "symbolic link" in done.stdout + done.stderr
    assert str(Path(other) / linked) not in done.stdout + done.stderr  # nothing read there is reported
    inspected = run_cli("inspect", uri, "--format", "json", timeout=20)
    if linked == "data":  # inspect reads no data file: the fragments are shown as the manifest records them
        assert inspected.returncode == 0
    else:
        assert inspected.returncode == 2 and "symbolic link" in inspected.stderr, inspected.stderr
        assert len(inspected.stderr.strip().splitlines()) == 1


def test_the_users_own_root_may_lie_behind_a_link(tmp_path: Path) -> None:
    uri = build_reference_dataset(tmp_path / "real")
    (tmp_path / "via").symlink_to(Path(uri))
    done = run_cli("certify", str(tmp_path / "via"), "--format", "json", timeout=20)
    assert done.returncode == 0, done.stdout
    assert json.loads(done.stdout)["uri"] == uri


@pytest.mark.parametrize("command", ["certify", "inspect"])
def test_versions_and_refs_are_counted_for_the_run_before_they_are_read(tmp_path: Path, command: str) -> None:
    """Versions and refs are counts a dataset chooses (200,000 empty manifests cost 40 s): above
    --max-versions or --max-refs the run stops in one line naming the option, before reading any of them."""
    uri = build_reference_dataset(tmp_path)
    versions = Path(uri) / "_versions"
    for i in range(1, 1501):
        (versions / f"{18446744073709551615 - 1000 - i:020d}.manifest").write_bytes(b"")
    done = run_cli(command, uri, "--max-versions", "1000", timeout=20)
    assert done.returncode == 2
    assert "above the limit of 1000 (raise it with --max-versions)" in done.stderr, done.stderr
    uri = build_reference_dataset(tmp_path / "refs")
    tags = Path(uri) / "_refs" / "tags"
    tags.mkdir(parents=True)
    for i in range(150):
        (tags / f"t{i}.json").write_text('{"branch": null, "version": 1}')
    done = run_cli(command, uri, "--max-refs", "100", timeout=20)
    assert done.returncode == 2
    assert "above the limit of 100 (raise it with --max-refs)" in done.stderr, done.stderr


def test_an_uncompressed_deletion_file_of_millions_of_offsets_is_judged_in_bounded_memory(
        tmp_path: Path) -> None:
    """An uncompressed .arrow deletion file of 4,200,000 offsets (17 MB) for a fragment of four rows: judged
    by DEL-003 and DEL-004 as any other, in memory a few times the file's (one sort, no hash table), and
    never decoded into Python integers by the reader (more offsets than physical_rows; issue 32)."""
    import pyarrow as pa
    import pyarrow.ipc as ipc
    from test_hostile_datasets import deletion_file

    uri = build_reference_dataset(tmp_path, deletions=("arrow",))
    schema = pa.schema([pa.field("row_id", pa.uint32(), nullable=False)])
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, schema) as writer:
        writer.write_batch(pa.record_batch([pa.array(range(4_200_000), pa.uint32())], schema=schema))
    deletion_file(uri).write_bytes(sink.getvalue().to_pybytes())
    done, peak_kb = measured("certify", uri, "--format", "json", timeout=60)
    assert done.returncode == 1, done.stderr
    said = {f["requirement"]: str(f["message"]) for f in findings(done)}
    assert "4200000 distinct offsets" in said.get("DEL-003", ""), said
    assert "4199996 deleted offset(s) are not below physical_rows" in said.get("DEL-004", ""), said
    assert peak_kb < 400_000  # 1.47 GB before: a hash table of the offsets


def test_an_index_bitmap_of_many_fragments_is_asked_never_expanded(tmp_path: Path) -> None:
    """The IDX-002 breach case with each index's ``fragment_bitmap`` replaced by 58 KB of runs holding 2^28
    fragment ids (fragment 0 still among them): expanded once per fragment it took 1.2 GB at 2^24 ids, and
    under an address-space limit its MemoryError was taken for "covers nothing", a false CONFORMANT (an
    outside review). The finding stands, in bounded memory."""
    from pyroaring import BitMap

    from reference.codec import decode_manifest_file, encode_manifest_file

    cases = Path(__file__).resolve().parents[2] / "fixtures" / "cases"
    case = cases / "breach-idx-002-rewritten-fragment-still-covered"
    ds = tmp_path / "ds"
    shutil.copytree(case / "data" / "ds", ds)
    many = BitMap()
    many.add_range(0, 1 << 28)
    many.run_optimize()
    replaced = 0
    for path in (ds / "_versions").glob("*.manifest"):
        decoded = decode_manifest_file(path.read_bytes(), str(path))
        if decoded.index_section is None:
            continue
        for index in decoded.index_section.indices:
            index.fragment_bitmap = many.serialize()
            replaced += 1
        path.write_bytes(encode_manifest_file(decoded.manifest, decoded.transaction_bytes, decoded.index_section))
    assert replaced
    done, peak_kb = measured("certify", str(ds), "--all-versions", "--format", "json")
    assert done.returncode == 1, done.stderr
    assert any(f["requirement"] == "IDX-002" for f in json.loads(done.stdout)["findings"])
    assert peak_kb < 1_000_000, peak_kb


def test_ten_million_row_ids_in_one_range_cost_an_array_not_a_dict(tmp_path: Path) -> None:
    """A 418-byte manifest whose one fragment claims 10,000,000 rows and holds them in one id range: ROW-001
    compared the ids in a dict (12 s, 2.6 GB; an outside review), the same a real 10M-row table with stable
    row ids paid. Now an array of 8 bytes an id, and the fragment's real rows are MAN-004's to count."""
    import lance
    import pyarrow as pa

    from reference.codec import decode_manifest_file, encode_manifest_file
    from reference.proto import rowids_pb2

    ds = tmp_path / "ds"
    lance.write_dataset(pa.table({"id": [1, 2, 3]}), str(ds), enable_stable_row_ids=True)
    (path,) = (ds / "_versions").glob("*.manifest")
    decoded = decode_manifest_file(path.read_bytes(), str(path))
    sequence = rowids_pb2.RowIdSequence()
    segment = sequence.segments.add()
    segment.range.start, segment.range.end = 0, 10_000_000
    decoded.manifest.fragments[0].inline_row_ids = sequence.SerializeToString()
    decoded.manifest.fragments[0].physical_rows = 10_000_000
    decoded.manifest.next_row_id = 10_000_000
    path.write_bytes(encode_manifest_file(decoded.manifest, decoded.transaction_bytes, decoded.index_section))
    done, peak_kb = measured("certify", str(ds), "--format", "json")
    assert done.returncode == 1, done.stderr
    found = json.loads(done.stdout)["findings"]
    assert [f["requirement"] for f in found if f["severity"] == "MUST"] == ["MAN-004"], found
    assert peak_kb < 1_000_000, peak_kb


def _with_sparse_buffers(path: Path, hole: int, copies: int) -> int:
    """Move the v2 data file's metadata past a hole ending at ``hole`` and add ``copies`` global buffers, each
    naming ``[0, hole)``: a file of a few KB on disk whose metadata asks for ``copies`` times ``hole`` bytes.
    Its new size."""
    data = path.read_bytes()
    cms, cmo, gbo, n_buffers, n_columns, major, minor, magic = V2_FOOTER.unpack_from(data, len(data) - V2_FOOTER_SIZE)
    delta = hole - cms
    tail = bytearray(data[cms:gbo + OFFSET_ENTRY.size * n_buffers])
    for i in range(n_columns):
        at = cmo - cms + OFFSET_ENTRY.size * i
        position, length = OFFSET_ENTRY.unpack_from(tail, at)
        OFFSET_ENTRY.pack_into(tail, at, position + delta, length)
    tail += OFFSET_ENTRY.pack(0, hole) * copies
    tail += V2_FOOTER.pack(hole, cmo + delta, gbo + delta, n_buffers + copies, n_columns, major, minor, magic)
    with open(path, "r+b") as out:
        out.truncate(cms)
        out.seek(hole)
        out.write(tail)
    return hole + len(tail)


@pytest.mark.parametrize("limited", [False, True])
def test_a_blob_files_repeated_sparse_buffers_are_copied_once_and_as_holes(tmp_path: Path, limited: bool) -> None:
    """A blob v2 data file of a few KB on disk whose global-buffer table names a 64 MiB hole 50 times (an
    outside review: 300 times 256 MiB read, and as many real blocks written to TMPDIR). The copy reads the
    span once and leaves its zeros a hole; where the temporary space cannot hold the copy (a file-size limit
    here), the run stops "cannot read", exit 2, naming TMPDIR: before, an exit 3."""
    import lance
    import pyarrow as pa

    ds = tmp_path / "ds"
    table = pa.Table.from_arrays([pa.array([0, 1, 2], pa.int64()), lance.blob_array([b"a" * 40, b"b" * 60, b"c"])],
                                 schema=pa.schema([pa.field("id", pa.int64()), lance.blob_field("blob")]))
    lance.write_dataset(table, str(ds), data_storage_version="2.2")
    (data_file,) = (ds / "data").glob("*.lance")
    size = _with_sparse_buffers(data_file, 64 << 20, 50)
    rewrite_manifest(str(ds), 1, lambda m: setattr(m.fragments[0].files[0], "file_size_bytes", size))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    limit = ["python3", "-c", "import resource, os, sys; resource.setrlimit(resource.RLIMIT_FSIZE, (8 << 20, 8 << 20));"
             " os.execvp(sys.argv[1], sys.argv[1:])"] if limited else []
    done = subprocess.run([*limit, sys.executable, "-m", "lancespec", "certify", str(ds)], capture_output=True,
                          text=True, timeout=30, env={**os.environ, "TMPDIR": str(scratch)}, check=False)
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    if limited:
        assert done.returncode == 2 and "more temporary space (TMPDIR)" in done.stderr, done.stderr
    else:
        assert done.returncode in (0, 1) and "BLOB" not in done.stdout, done.stdout
