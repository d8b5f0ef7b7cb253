"""The scenario file format ``lancespec.scenario/1`` (docs/scenario-format.md): loading and validation.

A scenario is JSON: ``{"format", "name", "description", "requirements", "stores", "steps"}``. Loading
validates every step's keys and values and raises ``ScenarioError`` naming the file, the step and what is
wrong; a loaded ``Scenario`` is immutable and knows nothing of writers or stores. Each writer step becomes
an operation of the language (``Step.operation``, ``conformance.operations``) whose locations are
the scenario's ``bucket:path`` locations; a dataset handle stands for its root location (``Scenario.roots``).
"""

from __future__ import annotations

import glob
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from conformance import operations as lang
from conformance.payload import Blob, Blobs
from reference.errors import ERROR_KINDS, LanceSpecError


class ScenarioError(LanceSpecError):
    """A scenario file is not valid ``lancespec.scenario/1``."""


FORMAT = "lancespec.scenario/1"
BUCKETS = ("main", "cold", "warm", "hot")
STORES = ("local", "s3", "az")

_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_REQ_RE = re.compile(r"^[A-Z]+-\d{3}$")

_STEP_KEYS: dict[type, frozenset[str]] = {
    lang.Create: frozenset({"at", "data", "bases", "target_bases", "target_all_bases", "max_rows_per_file",
                            "manifest_naming", "data_storage_version"}),
    lang.Append: frozenset({"data", "target_bases", "target_all_bases", "max_rows_per_file"}),
    lang.Overwrite: frozenset({"data", "target_bases", "target_all_bases", "max_rows_per_file"}),
    lang.Delete: frozenset({"predicate"}),
    lang.AddBases: frozenset({"bases"}),
    lang.Tag: frozenset({"tag", "reference"}),
    lang.MoveTag: frozenset({"tag", "reference"}),
    lang.DeleteTag: frozenset({"tag"}),
    lang.Branch: frozenset({"branch", "reference", "as"}),
    lang.DeleteBranch: frozenset({"branch"}),
    lang.ShallowClone: frozenset({"target", "reference", "as"}),
    lang.DeepClone: frozenset({"target", "reference", "as"}),
    lang.Relocate: frozenset({"moves", "adopt_from"}),
    lang.Cleanup: frozenset({"retain_versions", "older_than_seconds", "delete_unverified",
                             "error_if_tagged_old_versions"}),
}

#: Writer operations under their wire names (``operations.BY_WIRE``) and the keys each accepts (besides op,
#: dataset, expect, refuse, note).
WRITER_OPS: dict[str, frozenset[str]] = {wire: _STEP_KEYS[cls] for wire, cls in lang.BY_WIRE.items()}

#: Steps the runner carries out itself.
HARNESS_OPS: dict[str, frozenset[str]] = {
    "copy_location": frozenset({"from", "to"}),
    "remove_location": frozenset({"at"}),
    "put_object": frozenset({"at", "data"}),
    "open": frozenset({"at", "as", "branch"}),
}

EXPECT_KEYS = frozenset({"dataset", "version", "versions", "rows", "ids", "bases", "unnamed_bases", "files", "tags",
                         "no_tags", "branches", "no_branches", "blobs", "absent"})

_COMMON = frozenset({"op", "dataset", "expect", "refuse", "note"})


@dataclass(frozen=True)
class Location:
    """``bucket:path``: a place the runner maps to a local directory or an S3 bucket."""

    bucket: str
    path: str

    def __str__(self) -> str:
        return f"{self.bucket}:{self.path}"

    @classmethod
    def parse(cls, text: Any, where: str) -> Location:
        if not isinstance(text, str) or ":" not in text:
            raise ScenarioError(f"a location is 'bucket:path', got {text!r}", where)
        bucket, _, path = text.partition(":")
        if bucket not in BUCKETS:
            raise ScenarioError(f"unknown bucket {bucket!r} in {text!r}; buckets: {', '.join(BUCKETS)}", where)
        parts = path.split("/")
        if not path or any(p in ("", ".", "..") for p in parts):
            raise ScenarioError(f"location path {path!r} must be relative, without empty, '.' or '..' parts",
                                where)
        return cls(bucket, path)


@dataclass(frozen=True)
class Refusal:
    """The kind a correct writer refuses with (judged); ``mentions``: what a person should find in its message
    (for readers of the file: refusals are judged on their kind, never on words)."""

    kind: str
    mentions: tuple[str, ...]


@dataclass(frozen=True)
class Step:
    """One operation. ``args`` holds the op's own keys as written (locations still as text);
    ``expect`` the expectation mapping (validated keys) or None; ``refuse`` the expected refusal."""

    index: int
    op: str
    dataset: str | None
    args: Mapping[str, Any] = field(hash=False)
    expect: Mapping[str, Any] | None = field(default=None, hash=False)
    refuse: Refusal | None = None
    note: str | None = None
    operation: lang.Operation | None = None
    """What a writer step asks of the writer (None for a harness step)."""

    @property
    def introduces(self) -> str | None:
        """The handle this step creates, if any."""
        if self.op == "create":
            return self.dataset
        value = self.args.get("as")
        return str(value) if value is not None else None


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    steps: tuple[Step, ...]
    requirements: tuple[str, ...] = ()
    stores: tuple[str, ...] = STORES
    source: str = ""
    roots: Mapping[str, str] = field(default_factory=dict, hash=False)
    """Every dataset handle and the root location it stands for."""
    tests: tuple[str, ...] | None = None
    """The features the scenario tests (capability-file names); None: every feature its steps take. A step's
    use of another feature only shapes the data, and falls back for a writer without it (``fallback``)."""
    document: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False, repr=False)
    """The document as loaded (what ``fallback`` rewrites and loads again)."""

    @property
    def operations(self) -> set[str]:
        return {s.op for s in self.steps}


# --- validation --------------------------------------------------------------------------------------


def _reference(value: Any, on: str | None, where: str) -> tuple[str | None, int | None, str | None]:
    """(branch, version, tag) of a scenario reference read on branch ``on`` of the handle."""
    if isinstance(value, str):
        return None, None, value
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return on, value, None
    if isinstance(value, dict) and set(value) <= {"branch", "version"}:
        branch, version = value.get("branch"), value.get("version")
        if (branch is None or isinstance(branch, str)) and (version is None or isinstance(version, int)):
            return (None if branch in (None, "main") else branch), version, None
    raise ScenarioError(f"reference must be null, a version, a tag or {{branch, version}}, got {value!r}", where)


def _blob(value: Any, where: str) -> Blob | None:
    if value is None:
        return None
    keys = set(value) if isinstance(value, dict) else None
    if keys == {"bytes"} and isinstance(value["bytes"], str):
        return Blob(text=value["bytes"])
    if keys == {"fill", "size"} and all(isinstance(value[k], int) for k in keys):
        return Blob(fill=value["fill"], size=value["size"])
    if keys == {"empty"} and value["empty"] is True:
        return Blob(text="")
    if keys and "at" in keys and keys <= {"at", "position", "size"}:
        return Blob(at=str(Location.parse(value["at"], where)), position=value.get("position"), size=value.get("size"))
    raise ScenarioError(f"unknown blob value {value!r}", where)


def _data(raw: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``start``, ``count``, ``data``, ``targets`` and ``max_rows_per_file`` of a writing step."""
    value = raw["data"]
    out: dict[str, Any] = {"max_rows_per_file": raw.get("max_rows_per_file")}
    if not isinstance(value, dict):
        raise ScenarioError("data must be an object", where)
    if "rows" in value:
        rows = value["rows"]
        if set(value) != {"rows"} or not (isinstance(rows, list) and len(rows) == 2
                                          and all(isinstance(x, int) and x >= 0 for x in rows)):
            raise ScenarioError(f"data {{'rows': [start, count]}} expected, got {value!r}", where)
        out["start"], out["count"] = rows
    elif "blobs" in value:
        if not set(value) <= {"blobs", "start", "thresholds"} or not isinstance(value["blobs"], list):
            raise ScenarioError(f"data {{'blobs': [...], 'start', 'thresholds'}} expected, got {value!r}", where)
        thresholds = value.get("thresholds", {})
        allowed = {"inline_size_threshold", "dedicated_size_threshold", "pack_file_size_threshold"}
        if not isinstance(thresholds, dict) or not set(thresholds) <= allowed:
            raise ScenarioError(f"thresholds may hold {sorted(allowed)}", where)
        values = tuple(_blob(v, where) for v in value["blobs"])
        out.update(start=int(value.get("start", 0)), count=len(values),
                   data=Blobs(values, tuple(sorted(thresholds.items()))))
    else:
        raise ScenarioError(f"data must be {{'rows': ...}} or {{'blobs': ...}}, got {value!r}", where)
    if "target_bases" in raw and "target_all_bases" in raw:
        raise ScenarioError("a step has target_bases or target_all_bases, not both", where)
    out["targets"] = tuple(raw["target_bases"]) if "target_bases" in raw else (
        None if "target_all_bases" not in raw else "all" if raw["target_all_bases"] else "bases")
    return out


def _bases(value: Any, where: str) -> tuple[lang.BaseSpec, ...]:
    if not isinstance(value, list):
        raise ScenarioError("bases must be a list", where)
    out = []
    for base in value:
        if not isinstance(base, dict) or not set(base) <= {"name", "at", "raw", "is_dataset_root", "id"}:
            raise ScenarioError(f"a base is {{name, at | raw, is_dataset_root, id}}, got {base!r}", where)
        if ("at" in base) == ("raw" in base):
            raise ScenarioError(f"a base has exactly one of 'at' and 'raw': {base!r}", where)
        if "raw" in base and not isinstance(base["raw"], str):
            raise ScenarioError("'raw' must be a string", where)
        place = base["raw"] if "raw" in base else str(Location.parse(base["at"], where))
        out.append(lang.BaseSpec(place, base.get("name"), bool(base.get("is_dataset_root")), raw="raw" in base,
                                 id=base.get("id")))
    return tuple(out)


def _check_expect(value: Any, where: str) -> None:
    if not isinstance(value, dict):
        raise ScenarioError("expect must be an object", where)
    unknown = set(value) - EXPECT_KEYS
    if unknown:
        raise ScenarioError(f"unknown expect key(s) {sorted(unknown)}; known: {sorted(EXPECT_KEYS)}", where)
    for key in ("version", "rows"):
        if key in value and not isinstance(value[key], int):
            raise ScenarioError(f"expect.{key} must be an integer", where)
    for key in ("versions", "ids"):
        if key in value and not (isinstance(value[key], list) and all(isinstance(x, int) for x in value[key])):
            raise ScenarioError(f"expect.{key} must be a list of integers", where)
    for loc, n in value.get("files", {}).items():
        Location.parse(loc, where)
        if not isinstance(n, int):
            raise ScenarioError(f"expect.files[{loc!r}] must be an integer", where)
    for name, loc in value.get("bases", {}).items():
        if not isinstance(name, str):
            raise ScenarioError("expect.bases keys are base names", where)
        Location.parse(loc, where)
    for loc in [*value.get("absent", []), *value.get("unnamed_bases", [])]:
        Location.parse(loc, where)
    if "tags" in value and not all(isinstance(v, int) for v in value["tags"].values()):
        raise ScenarioError("expect.tags maps names to versions", where)
    if "blobs" in value and not (isinstance(value["blobs"], dict) and set(value["blobs"]) == {"column", "sizes"}):
        raise ScenarioError("expect.blobs is {column, sizes}", where)


def _check_step(raw: Any, index: int, source: str, handles: dict[str, str]) -> Step:
    where = f"{source} step {index}"
    if not isinstance(raw, dict) or not isinstance(raw.get("op"), str):
        raise ScenarioError("a step is an object with an 'op'", where)
    op = raw["op"]
    where = f"{source} step {index} ({op})"
    if op in WRITER_OPS:
        allowed = WRITER_OPS[op] | _COMMON
    elif op in HARNESS_OPS:
        allowed = HARNESS_OPS[op] | {"op", "note"}
    else:
        raise ScenarioError(f"unknown op {op!r}; writer ops: {', '.join(WRITER_OPS)}; harness ops: "
                            f"{', '.join(HARNESS_OPS)}", where)
    unknown = set(raw) - allowed
    if unknown:
        raise ScenarioError(f"unknown key(s) {sorted(unknown)} for {op}", where)
    dataset = raw.get("dataset")
    if op in WRITER_OPS:
        if not isinstance(dataset, str) or not dataset:
            raise ScenarioError("a writer step names its 'dataset' handle", where)
        if op == "create" and not {"at", "data"} <= raw.keys():
            raise ScenarioError("create needs 'at' and 'data'", where)
        if op != "create" and dataset not in handles:
            raise ScenarioError(f"dataset handle {dataset!r} is not introduced by an earlier step", where)
    for key in ("at", "target", "from", "to", "adopt_from"):
        if key in raw:
            Location.parse(raw[key], where)
    if op == "put_object" and (_blob(raw["data"], where) or Blob()).content() is None:
        raise ScenarioError("put_object writes bytes: {bytes} or {fill, size}", where)
    if "moves" in raw:
        if not isinstance(raw["moves"], dict):
            raise ScenarioError("moves maps base names (or the location of an unnamed base) to locations", where)
        for key, loc in raw["moves"].items():
            Location.parse(loc, where)
            if ":" in key:
                Location.parse(key, where)
    if op == "relocate" and "moves" not in raw and "adopt_from" not in raw:
        raise ScenarioError("relocate needs 'moves' or 'adopt_from'", where)
    if op in ("shallow_clone", "deep_clone", "branch_create", "open") and not isinstance(raw.get("as"), str):
        raise ScenarioError(f"{op} needs 'as' (the new handle)", where)
    if "expect" in raw and "refuse" in raw:
        raise ScenarioError("a step has 'expect' or 'refuse', not both", where)
    expect = None
    if "expect" in raw:
        _check_expect(raw["expect"], where)
        expect = raw["expect"]
        target = expect.get("dataset")
        if target is not None and target not in {*handles, raw.get("as"), dataset}:
            raise ScenarioError(f"expect.dataset {target!r} is not a known handle", where)
    refuse = None
    if "refuse" in raw:
        spec = raw["refuse"]
        if not isinstance(spec, dict) or spec.get("kind") not in ERROR_KINDS or not set(spec) <= {"kind", "mentions"}:
            raise ScenarioError(f"refuse is {{kind, mentions}} with kind one of {', '.join(ERROR_KINDS)}", where)
        mentions = spec.get("mentions", [])
        if not isinstance(mentions, list) or not all(isinstance(m, str) and m for m in mentions):
            raise ScenarioError("refuse.mentions is a list of words", where)
        refuse = Refusal(spec["kind"], tuple(mentions))
    args = {k: v for k, v in raw.items() if k not in _COMMON}
    operation = _operation(op, raw, handles, where) if op in WRITER_OPS else None
    step = Step(index, op, dataset, args, expect, refuse, raw.get("note"), operation)  # dataset: None in a harness step
    if step.introduces and refuse is None:
        handles[step.introduces] = _introduced_root(raw, handles)
    return step


# --- steps as operations ------------------------------------------------------------------------------


def _introduced_root(raw: Mapping[str, Any], handles: Mapping[str, str]) -> str:
    """The root location of the handle a step introduces."""
    if raw["op"] == "create":
        return str(raw["at"])
    if raw["op"] == "branch_create":
        return lang.root_dir(lang.split_root(handles[raw["dataset"]])[0], raw["branch"])
    if raw["op"] == "open":
        return lang.root_dir(raw["at"], raw.get("branch"))
    return str(raw["target"])  # a clone


def _text(raw: Mapping[str, Any], key: str, where: str) -> str:
    if not isinstance(raw.get(key), str):
        raise ScenarioError(f"{raw['op']} needs '{key}' (a string)", where)
    return str(raw[key])


def _operation(op: str, raw: Mapping[str, Any], handles: Mapping[str, str], where: str) -> lang.Operation:
    """The operation a writer step asks for (``op``: its wire name)."""
    cls = lang.BY_WIRE[op]
    root = str(raw["at"]) if cls is lang.Create else handles[raw["dataset"]]
    family, on = lang.split_root(root)
    branch, version, tag = _reference(raw.get("reference"), on, where)
    if cls is lang.Create:
        return lang.Create(root, bases=_bases(raw.get("bases", []), where), **_data(raw, where),
                           manifest_naming=raw.get("manifest_naming", "v2"),
                           data_storage_version=raw.get("data_storage_version"))
    if cls in (lang.Append, lang.Overwrite):
        return cls(root, **_data(raw, where))
    if cls is lang.Delete:
        return lang.Delete(root, (), _text(raw, "predicate", where))
    if cls is lang.AddBases:
        return lang.AddBases(root, _bases(raw.get("bases"), where))
    if cls in (lang.Tag, lang.MoveTag):
        return cls(family, _text(raw, "tag", where), branch, version, tag)
    if cls is lang.DeleteTag:
        return lang.DeleteTag(family, _text(raw, "tag", where))
    if cls is lang.Branch:
        return lang.Branch(family, _text(raw, "branch", where), branch, version, tag)
    if cls is lang.DeleteBranch:
        return lang.DeleteBranch(family, _text(raw, "branch", where))
    if cls is lang.ShallowClone:
        return lang.ShallowClone(family, tag, _text(raw, "target", where), branch, version)
    if cls is lang.DeepClone:
        return lang.DeepClone(family, branch, version, _text(raw, "target", where), tag)
    if cls is lang.Relocate:
        return lang.Relocate(root, tuple(dict(raw.get("moves", {})).items()), raw.get("adopt_from"))
    seconds = raw.get("older_than_seconds")
    if seconds not in (None, 0):
        raise ScenarioError("older_than_seconds is 0 (everything is old) or absent (the writer's default)", where)
    return lang.Cleanup(root, seconds == 0, raw.get("retain_versions"), bool(raw.get("delete_unverified", False)),
                        bool(raw.get("error_if_tagged_old_versions", True)))


def parse_scenario(document: Any, source: str = "<scenario>") -> Scenario:
    """Validate a decoded scenario document."""
    if not isinstance(document, dict):
        raise ScenarioError("a scenario is a JSON object", source)
    allowed = {"format", "name", "description", "requirements", "stores", "steps", "origin", "tests"}
    unknown = set(document) - allowed
    if unknown:
        raise ScenarioError(f"unknown top-level key(s) {sorted(unknown)}", source)
    if document.get("format") != FORMAT:
        raise ScenarioError(f"format must be {FORMAT!r}, got {document.get('format')!r}", source)
    name = document.get("name")
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ScenarioError(f"name must match {_NAME_RE.pattern}, got {name!r}", source)
    description = document.get("description")
    if not isinstance(description, str) or not description.strip():
        raise ScenarioError("description is required", source)
    requirements = document.get("requirements", [])
    if not isinstance(requirements, list) or not all(isinstance(r, str) and _REQ_RE.match(r) for r in requirements):
        raise ScenarioError("requirements is a list of ids such as 'BASE-002'", source)
    stores = document.get("stores", list(STORES))
    if not isinstance(stores, list) or not stores or not set(stores) <= set(STORES):
        raise ScenarioError(f"stores is a non-empty subset of {list(STORES)}", source)
    raw_steps = document.get("steps")
    if not isinstance(raw_steps, list) or not raw_steps:
        raise ScenarioError("steps must be a non-empty list", source)
    tests = document.get("tests")
    if tests is not None and not (isinstance(tests, list) and all(isinstance(t, str) and t for t in tests)):
        raise ScenarioError("tests is a list of feature names (as capability files name them)", source)
    handles: dict[str, str] = {}
    steps = tuple(_check_step(raw, i, f"{source} [{name}]", handles) for i, raw in enumerate(raw_steps, 1))
    return Scenario(name, description.strip(), steps, tuple(requirements), tuple(stores), source, handles,
                    None if tests is None else tuple(tests), document)


def load_scenario(path: str | Path) -> Scenario:
    """Load and validate one scenario file."""
    path = Path(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ScenarioError(f"cannot read scenario: {exc}", str(path)) from exc
    return parse_scenario(document, str(path))


def _expand(patterns: Iterable[str]) -> list[Path]:
    out: list[Path] = []
    for pattern in patterns:
        matches = sorted(glob.glob(pattern, recursive=True))
        if not matches and not glob.has_magic(pattern):
            matches = [pattern]
        out.extend(Path(m) for m in matches)
    return out


def load_scenarios(patterns: Sequence[str]) -> list[Scenario]:
    """Load every scenario file matching the given paths or globs; names must be unique."""
    scenarios = [load_scenario(p) for p in _expand(patterns)]
    seen: dict[str, str] = {}
    for s in scenarios:
        if s.name in seen:
            raise ScenarioError(f"scenario name {s.name!r} is also used by {seen[s.name]}", s.source)
        seen[s.name] = s.source
    return sorted(scenarios, key=lambda s: s.name)


def builtin_dir() -> Path:
    """The directory of the shipped scenarios."""
    return Path(str(resources.files("conformance.scenarios") / "data"))


def builtin_scenarios(pattern: str = "*") -> list[Scenario]:
    """The shipped scenarios whose name matches ``pattern`` (a glob on the name)."""
    return load_scenarios([str(builtin_dir() / f"{pattern}.json")])
