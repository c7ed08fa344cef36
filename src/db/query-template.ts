import { type Compilable, CompiledQuery, type QueryResult } from 'kysely';
import type { Db } from './database.ts';

// A slot's stand-in value while its template compiles: text no caller sends (it starts with a NUL character).
const SLOT = '\u0000slot:';

/** Shapes one template keeps compiled; a further shape compiles on every run (rare shapes, never wrong). */
export const MAX_SHAPES = 64;

type Values = Record<string, unknown>;

/** Where a compiled parameter comes from at run time: a value's path (name, array index, field), or a constant. */
type Source = { path: (string | number)[] } | { constant: unknown };

interface Compiled {
  sql: string;
  sources: Source[];
}

/** How a value keeps its place in the key: null and undefined as themselves, anything else as a stand-in. */
function mark(value: unknown): string {
  return value === null ? 'n' : value === undefined ? 'u' : '';
}

/** A stand-in for the value at `path` (null and undefined stay themselves); only what a statement binds. */
function slotOf(value: unknown, path: (string | number)[]): unknown {
  if (value === null || value === undefined) return value;
  if (typeof value === 'object' && !(value instanceof Date)) {
    // An expression or a nested object would become a stand-in text: only values a statement binds may be given.
    throw new Error(`a query template's value ${path.join('.')} is not a bindable value`);
  }
  return `${SLOT}${JSON.stringify(path)}`;
}

/**
 * The stand-ins of some values, and the key of their shape. An array keeps its length, each element its own slot;
 * an element may be a row (an object of values: `values(rows)`), whose fields keep their names and order. Null and
 * undefined stay themselves (Kysely writes them into the SQL: `is null`, a column left out). So everything of the
 * values that can change the text is in the key.
 */
function slotsOf(values: Values): { slots: Values; key: string } {
  const slots: Values = {};
  const key: string[] = [];
  for (const [name, value] of Object.entries(values)) {
    if (!Array.isArray(value)) {
      slots[name] = slotOf(value, [name]);
      key.push(`${name}${mark(value)}`);
      continue;
    }
    const items = value.map((item, i) => {
      if (item === null || typeof item !== 'object' || item instanceof Date) {
        return { slot: slotOf(item, [name, i]), key: mark(item) };
      }
      const row = Object.entries(item as Values);
      return {
        slot: Object.fromEntries(row.map(([field, v]) => [field, slotOf(v, [name, i, field])])),
        key: `{${row.map(([field, v]) => `${field}${mark(v)}`).join(',')}}`,
      };
    });
    slots[name] = items.map((x) => x.slot);
    key.push(`${name}[${items.length}:${items.map((x) => x.key).join(',')}]`);
  }
  return { slots, key: key.join(';') };
}

function sourceOf(parameter: unknown): Source {
  if (typeof parameter !== 'string' || !parameter.startsWith(SLOT)) return { constant: parameter };
  return { path: JSON.parse(parameter.slice(SLOT.length)) as (string | number)[] };
}

/** The value at a path of the values (the run's own, where the template compiled with stand-ins). */
function valueAt(values: Values, path: (string | number)[]): unknown {
  let value: unknown = values;
  for (const step of path) value = (value as Record<string | number, unknown>)[step];
  return value;
}

function compile<R>(query: Compilable<R>): Compiled {
  const compiled = query.compile();
  // A stand-in written into the text (sql.lit, or a value the builder looked at) would run as that text: a
  // programming error in the template, caught on its first run.
  if (compiled.sql.includes(SLOT)) throw new Error('a query template wrote a value into its SQL text');
  return { sql: compiled.sql, sources: compiled.parameters.map(sourceOf) };
}

/**
 * A statement that Kysely builds and compiles once per engine and shape, then runs with each call's values bound in
 * its parameters. On a post's write path the builder chains and their compilation cost the main thread about as
 * much as SQLite's own work for the same statements (docs/benchmarks.md, twenty-sixth session).
 *
 * `values` are what a statement binds: text, numbers, booleans, dates, and arrays of them or of rows of them.
 * `build` receives stand-ins for them and must only place them in the query as values: never look at them, nor
 * write them into the text with `sql.lit` (which throws). Null and undefined are handed over as themselves, arrays
 * keep their length and rows their fields, all part of the cache key, so `build` may test for those. Whatever else changes the text is `shape` (flags, literals;
 * its JSON is part of the key too).
 */
export function queryTemplate<V extends Values, R, S = undefined>(
  build: (db: Db, values: V, shape: S) => Compilable<R>,
): (db: Db, values: V, shape?: S) => Promise<QueryResult<R>> {
  const compiled = new Map<string, Compiled>();
  return async (db, values, shape) => {
    const executor = db.getExecutor();
    // A compiled query skips the plugins' transformQuery: a handle with plugins (a test's statement log) builds
    // the query with the values each time, as Kysely does.
    if (executor.plugins.length > 0) return db.executeQuery(build(db, values, shape as S));
    const { slots, key: valuesKey } = slotsOf(values);
    // The adapter names the engine: each writes its own SQL (placeholders, quoting, returning).
    const key = `${executor.adapter.constructor.name}|${JSON.stringify(shape)}|${valuesKey}`;
    let found = compiled.get(key);
    if (found === undefined) {
      found = compile(build(db, slots as V, shape as S));
      if (compiled.size < MAX_SHAPES) compiled.set(key, found);
    }
    const parameters = found.sources.map((s) => ('constant' in s ? s.constant : valueAt(values, s.path)));
    return db.executeQuery(CompiledQuery.raw(found.sql, parameters) as CompiledQuery<R>);
  };
}
