// Writes datasets with LanceDB for Node (@lancedb/lancedb, its own Lance core) through its public API, one
// table per shape, into the LanceDB database folder given as the only argument; prints the names of the
// tables it wrote as one JSON array. tests/thirdparty/test_lancedb_node.py certifies each table.
//
//   node write_shapes.mjs /tmp/db
import * as lancedb from "@lancedb/lancedb";

const DIM = 8;

function rows(start, count) {
  const out = [];
  for (let i = start; i < start + count; i++) {
    out.push({
      id: i,
      text: `row ${i} says word${i % 7}`,
      cat: `c${i % 4}`,
      value: i * 0.5,
      vector: Array.from({ length: DIM }, (_, j) => ((i * 7 + j * 3) % 11) / 11),
    });
  }
  return out;
}

const shapes = {
  // create, add, delete, update
  async basic(db) {
    const t = await db.createTable("basic", rows(0, 10));
    await t.add(rows(10, 5));
    await t.delete("id = 3");
    await t.update({ where: "id = 4", values: { text: "four" } });
  },
  // add a computed column, rename, cast, drop
  async schema_evolution(db) {
    const t = await db.createTable("schema_evolution", rows(0, 10));
    await t.addColumns([{ name: "double", valueSql: "id * 2" }]);
    await t.alterColumns([{ path: "text", rename: "label" }]);
    await t.alterColumns([{ path: "value", dataType: "float" }]);
    await t.dropColumns(["cat"]);
    await t.add(rows(20, 2).map(({ text, cat, ...rest }) => ({ ...rest, label: text, double: rest.id * 2 })));
  },
  // scalar, full-text and vector indices, then rows no index covers and optimize
  async indices(db) {
    const t = await db.createTable("indices", rows(0, 300));
    await t.createIndex("id", { config: lancedb.Index.btree() });
    await t.createIndex("cat", { config: lancedb.Index.bitmap() });
    await t.createIndex("text", { config: lancedb.Index.fts() });
    await t.createIndex("vector", { config: lancedb.Index.ivfPq({ numPartitions: 2, numSubVectors: 2 }) });
    await t.add(rows(300, 10));
    await t.optimize();
  },
  // many small writes and a delete, compacted by optimize
  async optimize(db) {
    const t = await db.createTable("optimize", rows(0, 5));
    for (let i = 0; i < 4; i++) await t.add(rows(5 + 5 * i, 5));
    await t.delete("id % 3 = 0");
    await t.optimize();
  },
  // upsert, upsert deleting what the source lacks
  async merge_insert(db) {
    const t = await db.createTable("merge_insert", rows(0, 10));
    await t.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(rows(5, 10));
    await t.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedBySourceDelete().execute(rows(0, 12));
  },
  // the sequence from the field (issue 26): add a computed column, rename it, drop it, optimize (compaction),
  // then restore version 2, where the column was added: its field id and fragment ids come back as they were
  async restore_after_schema_change(db) {
    const t = await db.createTable("restore_after_schema_change", rows(0, 10));
    await t.addColumns([{ name: "double", valueSql: "id * 2" }]);
    await t.alterColumns([{ path: "double", rename: "twice" }]);
    await t.dropColumns(["twice"]);
    await t.optimize();
    await t.checkout(2);
    await t.restore();
  },
  // tags, checkout and restore
  async tags_versions(db) {
    const t = await db.createTable("tags_versions", rows(0, 5));
    await t.add(rows(5, 5));
    const tags = await t.tags();
    await tags.create("first", 1);
    await tags.update("first", 2);
    await t.checkout(1);
    await t.restore();
  },
};

const folder = process.argv[2];
if (!folder) {
  console.error("usage: node write_shapes.mjs DATABASE_FOLDER");
  process.exit(2);
}
const db = await lancedb.connect(folder);
for (const write of Object.values(shapes)) await write(db);
console.log(JSON.stringify(Object.keys(shapes)));
