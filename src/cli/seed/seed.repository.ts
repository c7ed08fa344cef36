// Set-based writes of the bulk seeding path: many rows per statement, and the schema objects a bulk load sets aside
// for its duration. Only the world generator uses these.
import { CompiledQuery, type Insertable, sql } from 'kysely';
import type { Database, Db, Dialect } from '../../db/database.ts';

/** Bound parameters per statement we stay under (SQLite allows 32,766, PostgreSQL 65,535). */
const MAX_PARAMETERS = 30_000;
/** Rows per multi-row statement on SQLite: beyond a few hundred the statement's size stops paying. */
const SQLITE_ROWS_PER_STATEMENT = 256;

/** SQL text by table, columns and row count: built once, so the driver's prepared-statement cache hits. */
const statements = new Map<string, string>();

/**
 * Inserts rows (each with the first row's columns; table and column names come from the code, values are bound)
 * with prepared multi-row statements and no query building: on
 * SQLite `VALUES` lists of fixed sizes (256, then powers of two for the rest, so every statement text is reused), on
 * PostgreSQL one `INSERT ... SELECT FROM unnest(arrays)` per chunk (one short statement however many rows).
 */
export class RowInserter {
  readonly #dialect: Dialect;
  /** PostgreSQL column types by table (for the unnest casts), read once per table. */
  readonly #types = new Map<string, Map<string, string>>();

  constructor(dialect: Dialect) {
    this.#dialect = dialect;
  }

  /** Inserts the rows into `table` inside the caller's transaction. */
  async insert<T extends keyof Database & string>(
    db: Db,
    table: T,
    rows: Insertable<Database[T]>[],
  ): Promise<void> {
    if (rows.length === 0) return;
    const columns = Object.keys(rows[0] as object);
    const records = rows as unknown as Record<string, unknown>[];
    if (this.#dialect === 'postgres') {
      await this.#insertUnnest(db, table, columns, records);
      return;
    }
    const perStatement = Math.min(SQLITE_ROWS_PER_STATEMENT, Math.floor(MAX_PARAMETERS / columns.length));
    let i = 0;
    while (i < records.length) {
      const left = records.length - i;
      // The largest power of two not above what is left, capped: at most log2(cap) distinct texts per table.
      const n = left >= perStatement ? perStatement : 2 ** Math.floor(Math.log2(left));
      const params: unknown[] = [];
      for (let r = i; r < i + n; r++) {
        const row = records[r] as Record<string, unknown>;
        for (const c of columns) params.push(row[c] ?? null);
      }
      await db.executeQuery(CompiledQuery.raw(valuesInsert(table, columns, n), params));
      i += n;
    }
  }

  async #insertUnnest(db: Db, table: string, columns: string[], rows: Record<string, unknown>[]) {
    const types = await this.#columnTypes(db, table);
    const casts = columns.map((c, i) => {
      const type = types.get(c);
      if (!type) throw new Error(`insert into ${table}: no column ${c}`);
      return `$${i + 1}::${type}[]`;
    });
    const text = `insert into "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) select * from unnest(${casts.join(', ')})`;
    // pg sends each array as one text parameter; chunks keep a message small.
    for (let i = 0; i < rows.length; i += 20_000) {
      const chunk = rows.slice(i, i + 20_000);
      const arrays = columns.map((c) => chunk.map((row) => row[c] ?? null));
      await db.executeQuery(CompiledQuery.raw(text, arrays));
    }
  }

  async #columnTypes(db: Db, table: string): Promise<Map<string, string>> {
    let types = this.#types.get(table);
    if (!types) {
      const r = await sql<{ column_name: string; udt_name: string }>`
        select column_name, udt_name from information_schema.columns
        where table_schema = current_schema() and table_name = ${table}`.execute(db);
      types = new Map(r.rows.map((c) => [c.column_name, c.udt_name]));
      this.#types.set(table, types);
    }
    return types;
  }
}

function valuesInsert(table: string, columns: string[], n: number): string {
  const key = `${table}(${columns.join(',')})x${n}`;
  let text = statements.get(key);
  if (!text) {
    const tuple = `(${columns.map(() => '?').join(', ')})`;
    text = `insert into "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) values ${Array(n).fill(tuple).join(', ')}`;
    statements.set(key, text);
  }
  return text;
}

/** The search index's own tables: their triggers feed the full-text structures and stay on. */
export const SEARCH_TABLES = ['search_docs', 'search_names'];

/** A secondary index set aside, with its table. */
export interface SuspendedIndex {
  table: string;
  ddl: string;
}

/** What a bulk load set aside, as the statements that put it back. */
export interface SuspendedSchema {
  /** CREATE INDEX statements of the dropped secondary indexes. */
  indexes: SuspendedIndex[];
  /** SQLite: CREATE TRIGGER statements of the dropped triggers; PostgreSQL: ALTER TABLE ... ENABLE TRIGGER. */
  triggers: string[];
  /**
   * PostgreSQL: ALTER TABLE ... ADD CONSTRAINT statements of the dropped foreign keys (adding one checks every row
   * at once); SQLite: empty, its foreign key checks are switched off on the connection instead (sqliteForeignKeys).
   */
  foreignKeys: string[];
  /** Whether the base tables' search triggers are among them (the search index must be rebuilt). */
  search: boolean;
}

/**
 * Drops the secondary indexes of `tables` (not those behind primary keys and unique constraints, which the writes
 * rely on), on PostgreSQL their foreign keys, with `searchTriggers` the search-index triggers on them (`search_*` on
 * base tables; those on search_docs/search_names, which feed the full-text structures, stay); returns what
 * restoreSchema needs. Other triggers (e.g. the tag associations' audience copy) stay on. Inserting into a table
 * without its secondary
 * indexes and building each index once, sorted, afterwards is several times faster than keeping a dozen indexes on
 * random keys (user uuids) up to date row by row once they outgrow the cache.
 */
export async function suspendSchema(
  db: Db,
  dialect: Dialect,
  tables: string[],
  options: { searchTriggers: boolean },
): Promise<SuspendedSchema> {
  if (dialect === 'sqlite') {
    const objects = await sql<{ type: string; name: string; tbl_name: string; sql: string }>`
      select type, name, tbl_name, sql from sqlite_master
      where type in ('index', 'trigger') and sql is not null and tbl_name in (${sql.join(tables)})
      order by type, name`.execute(db);
    const indexes = objects.rows.filter((o) => o.type === 'index');
    const triggers = objects.rows.filter(
      (o) =>
        options.searchTriggers &&
        o.type === 'trigger' &&
        o.name.startsWith('search_') &&
        !SEARCH_TABLES.includes(o.tbl_name),
    );
    for (const i of indexes) await sql`drop index ${sql.id(i.name)}`.execute(db);
    for (const t of triggers) await sql`drop trigger ${sql.id(t.name)}`.execute(db);
    return {
      indexes: indexes.map((i) => ({ table: i.tbl_name, ddl: i.sql })),
      triggers: triggers.map((t) => t.sql),
      foreignKeys: [],
      search: triggers.length > 0,
    };
  }
  const indexes = await sql<{ name: string; table: string; ddl: string }>`
    select ic.relname as name, t.relname as table, pg_get_indexdef(i.indexrelid) as ddl
    from pg_index i
    join pg_class ic on ic.oid = i.indexrelid
    join pg_class t on t.oid = i.indrelid
    where t.relnamespace = current_schema()::regnamespace and t.relname in (${sql.join(tables)})
      and not exists (select 1 from pg_constraint c where c.conindid = i.indexrelid)
    order by ic.relname`.execute(db);
  const triggers = await sql<{ name: string; table: string }>`
    select tg.tgname as name, t.relname as table
    from pg_trigger tg join pg_class t on t.oid = tg.tgrelid
    where not tg.tgisinternal and tg.tgenabled <> 'D'
      and t.relnamespace = current_schema()::regnamespace and t.relname in (${sql.join(tables)})
      and ${options.searchTriggers} and tg.tgname like 'search\\_%' and t.relname not in (${sql.join(SEARCH_TABLES)})
    order by t.relname, tg.tgname`.execute(db);
  // Each foreign key is checked by a trigger per inserted row (an index probe and a row lock on the parent).
  const foreignKeys = await sql<{ name: string; table: string; ddl: string }>`
    select c.conname as name, t.relname as table, pg_get_constraintdef(c.oid) as ddl
    from pg_constraint c join pg_class t on t.oid = c.conrelid
    where c.contype = 'f' and t.relnamespace = current_schema()::regnamespace and t.relname in (${sql.join(tables)})
    order by t.relname, c.conname`.execute(db);
  for (const f of foreignKeys.rows) {
    await sql`alter table ${sql.id(f.table)} drop constraint ${sql.id(f.name)}`.execute(db);
  }
  for (const i of indexes.rows) await sql`drop index ${sql.id(i.name)}`.execute(db);
  for (const t of triggers.rows) {
    await sql`alter table ${sql.id(t.table)} disable trigger ${sql.id(t.name)}`.execute(db);
  }
  return {
    indexes: indexes.rows.map((i) => ({ table: i.table, ddl: i.ddl })),
    triggers: triggers.rows.map((t) => `alter table ${quote(t.table)} enable trigger ${quote(t.name)}`),
    foreignKeys: foreignKeys.rows.map(
      (f) => `alter table ${quote(f.table)} add constraint ${quote(f.name)} ${f.ddl}`,
    ),
    search: triggers.rows.length > 0,
  };
}

function quote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * Runs statements that suspendSchema read from this very database's catalog (not from any request): triggers,
 * indexes (calling `onIndex` after each), then foreign keys, each of which checks all its rows at once.
 */
export async function restoreSchema(
  db: Db,
  dialect: Dialect,
  statements: { triggers: string[]; indexes: SuspendedIndex[]; foreignKeys: string[] },
  onIndex: () => void = () => {},
): Promise<void> {
  if (dialect === 'postgres') {
    // Index builds sort in memory up to this much, with parallel workers where the server allows them.
    await sql`set local maintenance_work_mem = '1GB'`.execute(db);
    await sql`set local statement_timeout = 0`.execute(db);
  }
  for (const statement of statements.triggers) await sql.raw(statement).execute(db);
  for (const index of statements.indexes) {
    await sql.raw(index.ddl).execute(db);
    onIndex();
  }
  for (const statement of statements.foreignKeys) await sql.raw(statement).execute(db);
}

/**
 * SQLite: switches the connection's foreign key enforcement (each inserted row probes its parents); switching it
 * back on checks every row at once and throws on the first violation. Outside any transaction (SQLite ignores the
 * pragma inside one).
 */
export async function sqliteForeignKeys(db: Db, on: boolean): Promise<void> {
  await sql.raw(`pragma foreign_keys = ${on ? 'on' : 'off'}`).execute(db);
  if (!on) return;
  const violations = await sql<{ table: string; parent: string }>`pragma foreign_key_check`.execute(db);
  const first = violations.rows[0];
  if (first) {
    throw new Error(
      `${violations.rows.length} rows break a foreign key (first: ${first.table} -> ${first.parent})`,
    );
  }
}

/** Adds each delta to its tag's associations_count: one statement per chunk on PostgreSQL, one per tag on SQLite. */
export async function addToTagCounts(db: Db, dialect: Dialect, deltas: Map<string, number>): Promise<void> {
  await addToCounts(db, dialect, 'tags', 'associations_count', deltas);
}

/** Adds each delta to its user's karma total: one statement per chunk on PostgreSQL, one per user on SQLite. */
export async function addToUsersKarma(db: Db, dialect: Dialect, deltas: Map<string, number>): Promise<void> {
  await addToCounts(db, dialect, 'users', 'karma', deltas);
}

async function addToCounts(
  db: Db,
  dialect: Dialect,
  table: 'users' | 'tags',
  column: 'karma' | 'associations_count',
  deltas: Map<string, number>,
): Promise<void> {
  // Rows in uuid order, as the API's writers lock them.
  const entries = [...deltas].filter(([, d]) => d !== 0).sort((a, b) => (a[0] < b[0] ? -1 : 1));
  if (dialect === 'sqlite') {
    // In-process prepared statements are cheaper than building a VALUES list.
    const update = `update ${table} set ${column} = ${column} + ? where uuid = ?`;
    for (const [uuid, delta] of entries) await db.executeQuery(CompiledQuery.raw(update, [delta, uuid]));
    return;
  }
  for (let i = 0; i < entries.length; i += 20_000) {
    const chunk = entries.slice(i, i + 20_000);
    await db.executeQuery(
      CompiledQuery.raw(
        `update ${table} as t set ${column} = t.${column} + v.delta
         from unnest($1::text[], $2::integer[]) as v(uuid, delta) where t.uuid = v.uuid`,
        [chunk.map(([uuid]) => uuid), chunk.map(([, delta]) => delta)],
      ),
    );
  }
}
