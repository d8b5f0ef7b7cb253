"""Resolution laws (Storage Layout spec "File Metadata Base References": two-step resolution; docs/lance-format.md
§10.1),
over base-path sets of every scheme, checked both on ``layout.resolve`` and on the table layer's
``build_snapshot`` (what every reader of lancespec goes through).

* every file resolves to exactly one URI (BASE-003, BASE-004);
* ``is_dataset_root`` adds the kind's standard subdirectory and nothing else (BASE-004, BASE-005);
* a file without ``base_id`` resolves under the root, whatever bases exist, id 0 included (BASE-004, F-003);
* moving the root moves every root-relative file and no other (PORT-001, PORT-003).
"""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from conformance.strategies import SCHEMES, base_sets, data_file_names, manifests, root_uris
from reference.codec import ManifestFile
from reference.errors import UnresolvableFile
from reference.layout import Base, FileKind, ManifestNaming, bases_by_id, resolve
from reference.proto import table_pb2
from reference.store.uri import join
from reference.table import Snapshot, build_snapshot

KINDS = list(FileKind)


def snapshot_of(root: str, manifest: table_pb2.Manifest) -> Snapshot:
    return build_snapshot(root, manifest.version, ManifestNaming.V2, f"{root}/_versions/x.manifest",
                          ManifestFile(manifest, None, None, None, 0))


def directory_for(root: str, bases: dict[int, Base], base_id: int | None, kind: FileKind) -> str:
    """Storage Layout spec, written out once more: absent -> root/{subdir}; root base -> base/{subdir}; other ->
    base."""
    if base_id is None:
        return f"{root.rstrip('/')}/{kind.value}"
    base = bases[base_id]
    return f"{base.path.rstrip('/')}/{kind.value}" if base.is_dataset_root else base.path.rstrip("/")


@given(root=root_uris(), manifest=manifests(bases=base_sets(max_size=5)))
def test_every_file_resolves_to_exactly_one_uri(root: str, manifest: table_pb2.Manifest) -> None:
    """BASE-003, BASE-004: each file of a valid manifest resolves, to the one location its ``base_id`` and
    kind select; no other candidate directory (the root's subdirectories, any base) holds it; distinct
    files never share a URI."""
    snap = snapshot_of(root, manifest)
    bases = bases_by_id(snap.bases)
    assert snap.problems() == []
    candidates = {f"{root}/{k.value}" for k in KINDS} | {b.path for b in snap.bases} | {
        f"{b.path}/{k.value}" for b in snap.bases for k in KINDS}
    uris = []
    for fragment in snap.fragments:
        files = [*fragment.files, *([fragment.deletion.file] if fragment.deletion else [])]
        for f in files:
            assert f.uri is not None
            want = directory_for(root, bases, f.base_id, f.kind)
            assert f.uri == f"{want}/{f.path}"
            holders = {c for c in candidates if f.uri == f"{c}/{f.path}"}
            assert holders == {want}
            assert f.uri == resolve(root, bases, f.base_id, f.kind, f.path)  # a function: same input, same URI
            uris.append(f.uri)
    assert len(uris) == len(set(uris))


@given(base=base_sets(min_size=1, max_size=1).map(lambda b: b[0]), root=root_uris(),
       kind=st.sampled_from(KINDS), name=data_file_names(), nested=st.sampled_from(["", "sub/", "a/b/"]))
def test_is_dataset_root_adds_the_subdirectory_and_nothing_else(base: Base, root: str, kind: FileKind,
                                                                name: str, nested: str) -> None:
    """BASE-004: a dataset-root base inserts ``{subdir}/`` between its path and the file path; a non-root base
    inserts nothing; flipping the flag changes the URI by exactly that segment, for every kind (deletion
    files too: the resolution rules allow them in a non-root base; BASE-005 only advises against it)."""
    path = nested + name
    as_root = Base(base.id, base.name, base.path, True)
    as_plain = Base(base.id, base.name, base.path, False)
    in_root = resolve(root, {base.id: as_root}, base.id, kind, path)
    assert in_root == join(base.path, kind.value, path)
    plain = resolve(root, {base.id: as_plain}, base.id, kind, path)
    assert plain == join(base.path, path)
    assert in_root.replace(f"/{kind.value}/", "/", 1) == plain
    assert in_root.startswith(base.path.rstrip("/") + "/") and plain.startswith(base.path.rstrip("/") + "/")


@given(bases=base_sets(max_size=5), root=root_uris(), kind=st.sampled_from(KINDS), name=data_file_names())
def test_a_file_without_base_id_resolves_under_the_root(bases: list[Base], root: str, kind: FileKind,
                                                         name: str) -> None:
    """BASE-004: no ``base_id`` means the current root's standard subdirectory, whatever bases exist; an id 0
    entry (what clones register, F-003) changes nothing."""
    assert resolve(root, bases_by_id(bases), None, kind, name) == f"{root}/{kind.value}/{name}"
    zero = [Base(0, None, "/elsewhere/src", True), *(b for b in bases if b.id != 0)]
    assert resolve(root, bases_by_id(zero), None, kind, name) == f"{root}/{kind.value}/{name}"


@given(manifest=manifests(bases=base_sets(max_size=5), min_fragments=1), old=root_uris(), new=root_uris())
def test_moving_the_root_moves_root_relative_files_and_no_other(manifest: table_pb2.Manifest, old: str,
                                                                new: str) -> None:
    """PORT-001/PORT-003: a copied root opened elsewhere finds every file it holds under the new location;
    every file that lives in a base resolves exactly as before."""
    assume(old != new)
    before, after = snapshot_of(old, manifest), snapshot_of(new, manifest)
    pairs = list(zip(before.files(), after.files(), strict=True))
    assert pairs
    for a, b in pairs:
        assert a.uri is not None and b.uri is not None
        if a.base_id is None:
            assert a.uri.startswith(old + "/") and b.uri == new + a.uri[len(old):]
        else:
            assert a.uri == b.uri


@given(manifest=manifests(bases=base_sets(max_size=3), min_fragments=1), root=root_uris(),
       bad=st.integers(301, 10_000))
def test_an_unknown_base_id_is_unresolvable(manifest: table_pb2.Manifest, root: str, bad: int) -> None:
    """BASE-003: a ``base_id`` naming no entry is a problem of that file, never a guess at a location."""
    manifest.fragments[0].files[0].base_id = bad
    snap = snapshot_of(root, manifest)
    broken = snap.fragments[0].files[0]
    assert broken.uri is None and isinstance(broken.problem, UnresolvableFile)
    assert str(bad) in str(broken.problem)


@given(bases=base_sets(min_size=1, max_size=6, schemes=SCHEMES))
def test_generated_base_sets_are_well_formed(bases: list[Base]) -> None:
    """The strategy itself: unique ids, unique names, absolute paths that never overlap (BASE-001, BASE-002,
    BASE-006, BASE-007)."""
    ids = [b.id for b in bases]
    names = [b.name for b in bases if b.name is not None]
    assert len(set(ids)) == len(ids) and len(set(names)) == len(names)
    for a in bases:
        assert a.path.startswith(("/", "file:///")) or "://" in a.path
        for b in bases:
            if a is not b:
                assert not (a.path + "/").startswith(b.path + "/")
