// LanceDB for Node (@lancedb/lancedb) as a writer under certification: the JSON-lines contract of
// docs/writer-contract.md on stdin/stdout, through LanceDB's public API only (connect, createTable, openTable with
// a branch, cloneTable, and a table's add, delete, tags, branches, checkout).
//
//   lancespec certify-writer --writer "cmd:node tests/thirdparty/node/writer.mjs" \
//       --capabilities tests/thirdparty/node/writer.capabilities.toml
//
// LanceDB keeps a table at {database}/{name}.lance (the capability file says root_suffix = ".lance"); a branch's
// root {main}/tree/{branch} is the table opened on that branch. The operations LanceDB's API cannot express
// (bases, target bases, rows per file, deep clone, a clone of a branch's version, relocate, cleanup) are declared
// in the capability file and answered here with invalid_input. Refusals carry the kind of the error LanceDB raises: LanceDB passes the Lance
// core's errors on as "lance error: {variant}: ..."; KINDS maps each variant (never the words after it).
import { createInterface } from "node:readline";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import * as lancedb from "@lancedb/lancedb";
import { Table as ArrowTable, vectorFromArray, Field, Schema, Int64, Float64, Utf8 } from "apache-arrow";

const ENTRY = fileURLToPath(import.meta.resolve("@lancedb/lancedb")); // {package}/dist/index.js
const VERSION = JSON.parse(readFileSync(new URL("../package.json", `file://${ENTRY}`), "utf8")).version;
const SUFFIX = ".lance";
const KINDS = {
  "Dataset already exists error": "dataset_exists",
  "Ref conflict error": "ref_exists",
  "Ref is invalid": "invalid_ref_name",
  "Ref not found error": "ref_not_found",
  "Version not found error": "ref_not_found",
  "Invalid user input": "invalid_input",
};

class Refusal extends Error {
  constructor(kind, message) {
    super(message);
    this.kind = kind;
  }
}

function classify(error, op) {
  const text = String(error?.message ?? error).trim();
  if (/^Table '.*' already exists/s.test(text)) return "dataset_exists"; // LanceDB's own TableAlreadyExists
  // a version that does not exist, named by the manifest the Lance core looked for
  if (/\/_versions\/\d+\.manifest was not found/.test(text)) return "ref_not_found";
  const variant = /lance error: ([^:.]+)/.exec(text);
  const kind = variant ? KINDS[variant[1]] : undefined;
  if (kind === "ref_exists" && !["tag_create", "branch_create"].includes(op)) return "invalid_input"; // a ref in use
  return kind ?? "invalid_input";
}

let storageOptions = {};
const connections = new Map();

function splitTable(uri) {
  const trimmed = uri.replace(/\/+$/, "");
  const cut = trimmed.lastIndexOf("/");
  const name = trimmed.slice(cut + 1);
  if (cut <= 0 || !name.endsWith(SUFFIX) || name === SUFFIX) {
    throw new Refusal("invalid_input", `LanceDB keeps a table at {database}/{name}${SUFFIX}; ${uri} is no such root`);
  }
  return [trimmed.slice(0, cut), name.slice(0, -SUFFIX.length)];
}

async function database(folder) {
  if (!connections.has(folder)) connections.set(folder, await lancedb.connect(folder, { storageOptions }));
  return connections.get(folder);
}

async function openTable(mainUri, branch) {
  const [folder, name] = splitTable(mainUri);
  const db = await database(folder);
  return branch ? db.openTable(name, undefined, { branch }) : db.openTable(name);
}

// The rows to write: an Arrow table of plain columns, or, for a blob column, row objects and a schema declaring
// the column with LanceDB's blob() (lance.blob.v2, the thresholds as its options). LanceDB's blob input is bytes
// or a whole-object URI: a range of an external object cannot be said.
function input(data) {
  const blobColumn = data.columns.find((c) => c.type === "blob");
  if (!blobColumn) return { rows: arrowTable(data), schema: undefined };
  const t = blobColumn.thresholds ?? {};
  const options = Object.fromEntries(Object.entries({
    inlineSizeThreshold: t.inline_size_threshold,
    dedicatedSizeThreshold: t.dedicated_size_threshold,
    packFileSizeThreshold: t.pack_file_size_threshold,
  }).filter(([, v]) => v !== undefined));
  const others = data.columns.filter((c) => c !== blobColumn);
  if (others.some((c) => c.type !== "int64")) throw new Refusal("invalid_input", "a blob table's other columns are ids");
  const schema = new Schema([...others.map((c) => new Field(c.name, new Int64(), true)),
    lancedb.blob(blobColumn.name, options)]);
  const rows = blobColumn.values.map((value, i) => {
    const row = Object.fromEntries(others.map((c) => [c.name, BigInt(c.values[i])]));
    if (value === null) row[blobColumn.name] = null;
    else if ("base64" in value) row[blobColumn.name] = { data: Buffer.from(value.base64, "base64"), uri: null };
    else if (value.position === undefined && value.size === undefined) row[blobColumn.name] = { data: null, uri: value.uri };
    else throw new Refusal("invalid_input", "LanceDB's blob input takes no range of an external object");
    return row;
  });
  return { rows, schema };
}

function arrowTable(data) {
  const types = { int64: new Int64(), float64: new Float64(), string: new Utf8() };
  const vectors = {};
  for (const col of data.columns) {
    if (!(col.type in types)) throw new Refusal("invalid_input", `the adapter writes no ${col.type} column`);
    const values = col.type === "int64" ? col.values.map((v) => (v === null ? null : BigInt(v))) : col.values;
    vectors[col.name] = vectorFromArray(values, types[col.type]);
  }
  return new ArrowTable(vectors);
}

function refuseExtras(msg) {
  const extras = ["bases", "target_bases", "target_all_bases", "max_rows_per_file"].filter(
    (k) => msg[k] !== undefined && msg[k] !== null && !(Array.isArray(msg[k]) && msg[k].length === 0),
  );
  if (extras.length) throw new Refusal("invalid_input", `LanceDB's API takes no ${extras.join(", ")}`);
}

// (branch, version) of a contract reference; a tag is checked out to learn the branch it points into.
async function resolve(msg, reference) {
  if (typeof reference === "string") {
    const table = await openTable(msg.main_uri, null);
    await table.checkout(reference);
    return [table.currentBranch(), await table.version()];
  }
  const [branch, version] = reference === null ? [msg.on_branch, null]
    : typeof reference === "number" ? [msg.on_branch, reference] : [reference.branch, reference.version];
  if (version !== null && version !== undefined) return [branch ?? null, version];
  return [branch ?? null, await (await openTable(msg.main_uri, branch)).version()];
}

const OPS = {
  async create(msg) {
    refuseExtras(msg);
    const [folder, name] = splitTable(msg.uri);
    const { rows, schema } = input(msg.data);
    const options = { new_table_enable_v2_manifest_paths: msg.manifest_naming === "v1" ? "false" : "true" };
    if (msg.data_storage_version || schema) options.new_table_data_storage_version = msg.data_storage_version || "2.2";
    const table = await (await database(folder)).createTable(name, rows, {
      mode: "create",
      storageOptions: { ...storageOptions, ...options },
      ...(schema ? { schema } : {}),
    });
    return { version: await table.version() };
  },
  async append(msg) {
    refuseExtras(msg);
    const { rows } = input(msg.data);
    const result = await (await openTable(msg.main_uri, msg.on_branch)).add(rows, { mode: "append" });
    return { version: result.version };
  },
  async overwrite(msg) {
    refuseExtras(msg);
    const table = await openTable(msg.main_uri, msg.on_branch);
    return { version: (await table.add(input(msg.data).rows, { mode: "overwrite" })).version };
  },
  async delete(msg) {
    const table = await openTable(msg.main_uri, msg.on_branch);
    const before = await table.version();
    const { version } = await table.delete(msg.predicate);
    return version === before ? { noop: true } : { version };
  },
  async tag_create(msg, move = false) {
    const [branch, version] = await resolve(msg, msg.reference);
    const tags = await (await openTable(msg.main_uri, branch)).tags();
    await (move ? tags.update(msg.tag, version) : tags.create(msg.tag, version));
    return { tag_version: version };
  },
  async tag_update(msg) {
    return OPS.tag_create(msg, true);
  },
  async tag_delete(msg) {
    await (await (await openTable(msg.main_uri, null)).tags()).delete(msg.tag);
    return {};
  },
  async branch_create(msg) {
    const [parent, version] = typeof msg.reference === "string" ? await resolve(msg, msg.reference)
      : msg.reference === null || typeof msg.reference === "number" ? [msg.on_branch, msg.reference]
      : [msg.reference.branch, msg.reference.version];
    const branches = await (await openTable(msg.main_uri, null)).branches();
    await branches.create(msg.branch, parent ?? undefined, version ?? undefined);
    return {};
  },
  async branch_delete(msg) {
    await (await (await openTable(msg.main_uri, null)).branches()).delete(msg.branch);
    return {};
  },
  async shallow_clone(msg) {
    // cloneTable names a source URI and a version or tag, never a branch (capability clone_from_branch).
    const [folder, name] = splitTable(msg.target_uri);
    const options = { isShallow: true };
    if (typeof msg.reference === "string") options.sourceTag = msg.reference;
    else if (msg.reference !== null && typeof msg.reference === "object") {
      if (msg.reference.branch) throw new Refusal("invalid_input", "cloneTable names no branch");
      if (msg.reference.version !== null) options.sourceVersion = msg.reference.version;
    } else if (msg.on_branch) throw new Refusal("invalid_input", "cloneTable names no branch");
    else if (msg.reference !== null) options.sourceVersion = msg.reference;
    const clone = await (await database(folder)).cloneTable(name, msg.main_uri, options);
    return { version: await clone.version() };
  },
};

async function handle(msg) {
  if (msg.op === "hello") {
    storageOptions = msg.storage_options ?? {};
    return { writer: "lancedb-node", version: VERSION };
  }
  if (msg.op === "bye") return {};
  const op = OPS[msg.op];
  if (!op) throw new Refusal("invalid_input", `LanceDB's API has no ${msg.op} (writer.capabilities.toml)`);
  return op(msg);
}

const out = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (!line.trim()) continue;
  const msg = JSON.parse(line);
  try {
    out({ id: msg.id, ok: true, result: await handle(msg) });
  } catch (error) {
    const kind = error instanceof Refusal ? error.kind : classify(error, msg.op);
    const message = String(error?.message ?? error).trim().split("\n")[0].slice(0, 500) || "refused";
    out({ id: msg.id, ok: false, error: { kind, message } });
  }
  if (msg.op === "bye") break;
}
for (const db of connections.values()) db.close?.();
