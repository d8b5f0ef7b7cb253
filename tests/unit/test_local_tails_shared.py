"""``get_tails`` on a batch large enough to share with a helper process (``reference.store.local_tails``): every
answer, refusal and remembered ``fstat`` is the one the run gives reading alone, and ``get_tail`` file by file (the
second source of truth); the helper really answers; a helper that cannot start, dies, is killed, answers garbage,
answers another chunk or hangs loses no file and leaves no process; an audit hook in the run sees every path either
process opens. Batches are made to share from a few files on (``_SHARED_FROM``) in chunks of two (``CHUNK``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from reference.errors import NotARegularFile, ObjectNotFound, StorageError
from reference.store import Tail, local_tails, tail_reader
from reference.store import local as local_store
from reference.store.base import ObjectStore
from reference.store.local import LocalStore

pytestmark = pytest.mark.skipif(not local_store._openat2_works or not hasattr(os, "memfd_create"),
                                reason="openat2 or memfd_create is not available here: no helper process is started")


@pytest.fixture(autouse=True)
def _shared_from_two_files(monkeypatch: pytest.MonkeyPatch) -> list[subprocess.Popen[bytes]]:
    """Share every batch of two files or more, in chunks of two; the helpers started are kept to look at."""
    monkeypatch.setattr(local_store, "_SHARED_FROM", 2)
    monkeypatch.setattr(local_tails, "CHUNK", 2)
    monkeypatch.setattr(local_tails, "helpers_work", True)
    started: list[subprocess.Popen[bytes]] = []
    real_start = local_tails.Helper.start.__func__  # type: ignore[attr-defined]

    def start(cls: type[local_tails.Helper], *args: object) -> local_tails.Helper | None:
        helper = real_start(cls, *args)
        if helper is not None:
            started.append(helper.process)
        return helper

    monkeypatch.setattr(local_tails.Helper, "start", classmethod(start))
    return started


def _directory(tmp_path: Path, files: int = 40) -> tuple[Path, list[str]]:
    """A data directory of ``files`` regular files of different sizes, with what a hostile dataset may put beside
    them (a FIFO, a directory, a link out, a missing name) spread among them; the URIs to read, in order."""
    data = tmp_path / "ds" / "data"
    data.mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.lance").write_bytes(b"not yours")
    names = []
    for n in range(files):
        name = f"{n:04d}.lance"
        (data / name).write_bytes(bytes([n % 256]) * (n * 37))
        names.append(name)
    os.mkfifo(data / "fifo.lance")
    (data / "dir.lance").mkdir()
    (data / "link.lance").symlink_to(outside / "secret.lance")
    for at, odd in zip((3, 11, 20, 33), ("fifo.lance", "dir.lance", "link.lance", "gone.lance"), strict=True):
        names.insert(at, odd)
    return data, [str(data / name) for name in names]


def _one_by_one(uris: list[str], length: int) -> list[Tail | StorageError]:
    """``get_tail`` of each URI alone (the interface's own ``get_tails``, which the local store's replaces)."""
    return ObjectStore.get_tails(LocalStore(), uris, length)


def _same(found: list[Tail | StorageError], expected: list[Tail | StorageError]) -> bool:
    return len(found) == len(expected) and all(
        f == e if isinstance(e, Tail) else (type(f) is type(e) and str(f) == str(e))
        for f, e in zip(found, expected, strict=True))


def _read_alone(uris: list[str], length: int, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Tail | StorageError],
                                                                                        dict[str, object]]:
    """The answers and remembered stats of a store reading without a helper."""
    with monkeypatch.context() as alone:
        alone.setattr(local_store, "_SHARED_FROM", 10**9)
        store = LocalStore()
        store.remember_stats()
        found = store.get_tails(uris, length)
        assert store._stats is not None
        return found, dict(store._stats)


@pytest.mark.parametrize("length", [16, 4096])
def test_the_helper_answers_what_the_run_answers_alone(tmp_path: Path, length: int,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       _shared_from_two_files: list[subprocess.Popen[bytes]]) -> None:
    """Every tail, size and refusal equals ``get_tail``'s file by file and the run's reading alone, and so does
    every remembered ``fstat``; the helper answered a share of the chunks and exited."""
    _, uris = _directory(tmp_path)
    answered: list[int] = []
    real_answer = local_tails.Helper.answer

    def answer(self: local_tails.Helper, number: int, patience: float) -> tail_reader.Columns | None:
        columns = real_answer(self, number, patience)
        if columns is not None:
            answered.append(number)
        return columns

    monkeypatch.setattr(local_tails.Helper, "answer", answer)
    # the run's own chunks of two files take microseconds: it waits for each answer (up to 5 s) instead of reading
    # what it asked itself, so that the helper surely answers
    monkeypatch.setattr(local_tails.Helper, "ready", lambda self: bool(self._poll.poll(5000)))
    store = LocalStore()
    store.remember_stats()
    found = store.get_tails(uris, length)
    assert _same(found, _one_by_one(uris, length))
    alone, alone_stats = _read_alone(uris, length, monkeypatch)
    assert _same(found, alone)
    assert store._stats == alone_stats and len(alone_stats) == 40
    assert answered, "the helper answered no chunk: the run read everything itself"
    by_name = {uri.rsplit("/", 1)[1]: tail for uri, tail in zip(uris, found, strict=True)}
    assert by_name["0039.lance"] == Tail((bytes([39]) * (39 * 37))[-length:], 39 * 37)
    assert isinstance(by_name["fifo.lance"], NotARegularFile)
    assert isinstance(by_name["link.lance"], NotARegularFile)  # the link out is not followed
    assert isinstance(by_name["dir.lance"], ObjectNotFound)
    assert isinstance(by_name["gone.lance"], ObjectNotFound)
    [process] = _shared_from_two_files
    assert process.returncode == 0


def _program(tmp_path: Path, body: str) -> str:
    """A helper program that loads the real one (as ``reader``) and does ``body`` in its place."""
    path = tmp_path / "helper.py"
    path.write_text(textwrap.dedent(f"""\
        import importlib.util, os, signal, sys, time
        spec = importlib.util.spec_from_file_location("reader", {tail_reader.__file__!r})
        reader = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(reader)
        """) + textwrap.dedent(body))
    return str(path)


FAILING_HELPERS = {
    "exits at once": "sys.exit(3)\n",
    "killed after its first answer": """\
        real_write = reader._write_all
        def write(fd, data):
            real_write(fd, data)
            os.kill(os.getpid(), signal.SIGKILL)
        reader._write_all = write
        sys.exit(reader.main(sys.argv[1:]))
        """,
    "answers garbage": """\
        reader.read_exactly(0, 4)
        os.write(1, reader.FRAME.pack(0, 7) + b"garbage")
        time.sleep(60)
        """,
    "answers another chunk": """\
        real_pack = reader.FRAME.pack
        class Frame:
            size = reader.FRAME.size
            def pack(self, number, size):
                return real_pack(number + 1, size)
        reader.FRAME = Frame()
        sys.exit(reader.main(sys.argv[1:]))
        """,
    "hangs": "time.sleep(60)\n",
    "stops listening": "os.close(0)\ntime.sleep(60)\n",
}


@pytest.mark.parametrize("failure", sorted(FAILING_HELPERS))
def test_a_failing_helper_loses_no_file(tmp_path: Path, failure: str, monkeypatch: pytest.MonkeyPatch,
                                        _shared_from_two_files: list[subprocess.Popen[bytes]]) -> None:
    """Whatever the helper does wrong, every file is answered as the run answers it alone (what was asked of the
    helper read by the run), and the helper is gone when ``get_tails`` returns: ended and reaped."""
    _, uris = _directory(tmp_path)
    monkeypatch.setattr(local_tails, "PROGRAM", _program(tmp_path, FAILING_HELPERS[failure]))
    monkeypatch.setattr(local_tails, "PATIENCE", 0.5)
    found = LocalStore().get_tails(uris, 64)
    assert _same(found, _one_by_one(uris, 64))
    [process] = _shared_from_two_files
    assert process.returncode is not None  # reaped: no process left behind
    assert process.stdout is not None and process.stdout.closed


def test_after_a_helper_failed_the_process_reads_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       _shared_from_two_files: list[subprocess.Popen[bytes]]) -> None:
    """A helper whose answer is garbage, taken by a run that waits for it, marks helpers as failing: the next
    batches start none, and are answered alike."""
    _, uris = _directory(tmp_path)
    monkeypatch.setattr(local_tails, "PROGRAM", _program(tmp_path, FAILING_HELPERS["answers garbage"]))
    monkeypatch.setattr(local_tails.Helper, "ready", lambda self: bool(self._poll.poll(5000)))
    assert _same(LocalStore().get_tails(uris, 64), _one_by_one(uris, 64))
    assert local_tails.helpers_work is False
    assert _same(LocalStore().get_tails(uris, 64), _one_by_one(uris, 64))
    assert len(_shared_from_two_files) == 1


def test_packed_columns_read_back() -> None:
    """A chunk's answers as the helper sends them (files read, refused and failed, an empty file among them) read
    back the same; a payload cut short, or with a byte more, reads back as nothing."""
    columns = ([0, 2, 0, 1, 0, 3], [0, 0o10644, 0, 2, 0, 5], [10, 0, 0, 0, 7, 0], [1.5, 0.0, 2.25, 0.0, 3.0, 0.0],
               [b"0123456789", b"", b"abcdefg"])
    payload = tail_reader.pack(columns)
    assert tail_reader.unpack(payload, 6) == columns
    assert tail_reader.unpack(payload[:-1], 6) is None
    assert tail_reader.unpack(payload + b"x", 6) is None
    assert tail_reader.unpack(payload, 5) is None


@pytest.mark.parametrize("executable", ["python3", "uwsgi", ""])
def test_a_helper_that_cannot_start_loses_no_file(tmp_path: Path, executable: str, monkeypatch: pytest.MonkeyPatch,
                                                  _shared_from_two_files: list[subprocess.Popen[bytes]]) -> None:
    """No interpreter to run (a missing one; an embedding program's own binary, never started; none known): the
    run reads every file itself."""
    _, uris = _directory(tmp_path)
    (tmp_path / "uwsgi").write_text("#!/bin/sh\nsleep 60\n")
    (tmp_path / "uwsgi").chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(tmp_path / executable) if executable else "")
    found = LocalStore().get_tails(uris, 64)
    assert _same(found, _one_by_one(uris, 64))
    assert _shared_from_two_files == []


def test_no_helper_is_handed_a_standard_stream_s_number(tmp_path: Path) -> None:
    """A directory opened as descriptor 0, 1 or 2 (a daemon with its standard streams closed) is not handed to a
    helper, whose own standard streams take those numbers."""
    opening = (local_store._SYS_OPENAT2 or 0, local_store._READ_BENEATH.flags, local_store._READ_BENEATH.resolve)
    for number in (0, 1, 2):
        assert local_tails.Helper.start(number, b"a.lance", 1, 64, opening) is None
    assert local_tails.helpers_work is True


def test_an_audit_hook_sees_every_path_either_process_opens(tmp_path: Path) -> None:
    """In a process of its own (an audit hook cannot be removed): with a hook recording "open" events (the
    fuzzer's), a shared batch announces each path once before it is read, whoever reads it, and nothing else
    under the dataset but the directory opened for them."""
    data, uris = _directory(tmp_path)
    script = textwrap.dedent(f"""\
        import json, sys
        from reference.store import local, local_tails
        from reference.store.local import LocalStore
        seen = []
        sys.addaudithook(lambda event, args: seen.append(args[0]) if event == "open" and isinstance(args[0], str)
                         and args[0].startswith({str(tmp_path)!r}) else None)
        local._SHARED_FROM, local_tails.CHUNK = 2, 2
        started = []
        real_start = local_tails.Helper.start.__func__
        def start(cls, *args):
            helper = real_start(cls, *args)
            started.append(helper is not None)
            return helper
        local_tails.Helper.start = classmethod(start)
        LocalStore().get_tails(json.loads(sys.argv[1]), 64)
        print(json.dumps({{"seen": seen, "started": started}}))
        """)
    done = subprocess.run([sys.executable, "-c", script, json.dumps(uris)], capture_output=True, text=True,
                          timeout=60, check=True)
    answer = json.loads(done.stdout)
    assert answer["started"] == [True]
    assert sorted(answer["seen"]) == sorted([*uris, str(data)])


def test_certify_reports_the_same_with_a_helper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 _shared_from_two_files: list[subprocess.Popen[bytes]]) -> None:
    """End to end, on a pylance-written table of 30 one-row files, one of them cut short and one gone: the report
    (its findings and evidence) of a certification whose data-file tails a helper shares is the one a
    certification reading alone writes."""
    lance = pytest.importorskip("lance", reason="pylance writes the table")
    import pyarrow as pa

    from conformance.certify import certify
    from conformance.report import render_json

    root = tmp_path / "ds"
    lance.write_dataset(pa.table({"id": list(range(30))}), str(root), max_rows_per_file=1)
    data = sorted((root / "data").glob("*.lance"))
    data[7].write_bytes(data[7].read_bytes()[:-9])
    data[19].unlink()
    shared = render_json(certify(str(root)))
    assert _shared_from_two_files, "no helper was started: the batch was not shared"
    with monkeypatch.context() as alone:
        alone.setattr(local_store, "_SHARED_FROM", 10**9)
        assert render_json(certify(str(root))) == shared
    assert shared.count('"requirement": "BASE-004"') == 2  # the file cut short and the one gone, in both


@pytest.mark.parametrize("shared", [True, False])
def test_a_device_among_the_files_is_refused_unopened(tmp_path: Path, shared: bool,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      _shared_from_two_files: list[subprocess.Popen[bytes]]) -> None:
    """A device node among a batch's files, read by the helper and the run (``shared``) or by the run alone, and
    by ``get_tail``, ``get`` and ``get_range`` alone: refused as a character device, and opened by no process
    (``inotify`` watches the directory: the kernel's word, not the code's); the regular files around it are read."""
    from device_kit import make_device, watching_opens

    data, uris = _directory(tmp_path, files=12)
    device = data / "device.lance"
    make_device(device)
    uris.insert(5, str(device))
    if not shared:
        monkeypatch.setattr(local_store, "_SHARED_FROM", 10**9)
    store = LocalStore()
    with watching_opens(data) as watch:
        found = store.get_tails(uris, 64)
        alone: list[object] = []
        for read in (lambda: store.get_tail(str(device), 64), lambda: store.get(str(device)),
                     lambda: store.get_range(str(device), 0, 8)):
            with pytest.raises(NotARegularFile) as refused:
                read()
            alone.append(refused.value)
        opened = watch.opened()
    assert isinstance(found[5], NotARegularFile) and "a character device" in str(found[5])
    assert all("a character device" in str(refusal) for refusal in alone)
    assert device not in opened, "the device node was opened"
    assert data / "0011.lance" in opened  # the watch sees the opens that happen
    assert _same(found, _one_by_one(uris, 64))
    assert bool(_shared_from_two_files) == shared


def test_a_link_on_the_way_to_a_device_is_refused_as_a_link(tmp_path: Path) -> None:
    """``lstat`` follows a link on the way, so a name that reaches a device through a linked directory looks like a
    device to it; such a name is refused as ``open_no_links`` always refused it (a link on the way), and the device
    is not opened."""
    from device_kit import make_device, watching_opens

    real = tmp_path / "real"
    real.mkdir()
    make_device(real / "x.lance")
    (tmp_path / "via").symlink_to(real)
    with watching_opens(real) as watch:
        with pytest.raises(NotARegularFile, match="symbolic link"):
            LocalStore().get(str(tmp_path / "via" / "x.lance"))
        assert real / "x.lance" not in watch.opened()
