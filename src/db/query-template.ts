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
  /** The compiled text, parameters aside (Kysely's raw query of that text). */
  query: CompiledQuery<unknown>;
  sources: Source[];
}

/**
 * How a value keeps its place in the key: null and undefined as themselves, anything else as a stand-in. Only values
 * a statement binds: an expression or an object would run as a stand-in text.
 */
function mark(value: unknown, name: string): string {
  if (value === null) return 'n';
  if (value === undefined) return 'u';
  if (typeof value === 'object' && !(value instanceof Date)) {
    throw new Error(`a query template's value ${name} is not a bindable value`);
  }
  return '';
}

/**
 * The key of the values' shape: everything of them that can change the text. An array keeps its length; an element
 * may be a row (an object of values: `values(rows)`), whose fields keep their names and order. Null and undefined
 * keep their place (Kysely writes them into the SQL: `is null`, a column left out). Run on every call: plain loops.
 */
function keyOf(values: Values): string {
  let key = '';
  for (const name in values) {
    const value = values[name];
    if (!Array.isArray(value)) {
      key += `${name}${mark(value, name)};`;
      continue;
    }
    key += `${name}[${value.length}:`;
    for (const item of value) {
      if (item === null || typeof item !== 'object' || item instanceof Date) {
        key += `${mark(item, name)},`;
        continue;
      }
      key += '{';
      for (const field in item) key += `${field}${mark((item as Values)[field], `${name}.${field}`)},`;
      key += '},';
    }
    key += '];';
  }
  return key;
}

/** A stand-in for the value at `path` (null and undefined stay themselves). */
function slotOf(value: unknown, path: (string | number)[]): unknown {
  return value === null || value === undefined ? value : `${SLOT}${JSON.stringify(path)}`;
}

/** The stand-ins of some values (keyOf checked them), for the one build of their shape. */
function slotsOf(values: Values): Values {
  const slots: Values = {};
  for (const [name, value] of Object.entries(values)) {
    slots[name] = !Array.isArray(value)
      ? slotOf(value, [name])
      : value.map((item, i) =>
          item === null || typeof item !== 'object' || item instanceof Date
            ? slotOf(item, [name, i])
            : Object.fromEntries(
                Object.entries(item as Values).map(([field, v]) => [field, slotOf(v, [name, i, field])]),
              ),
        );
  }
  return slots;
}

const isSlot = (x: unknown) => typeof x === 'string' && x.startsWith(SLOT);

function sourceOf(parameter: unknown): Source {
  // A list bound as one parameter (PostgreSQL's `= any($1)`) would bind its stand-ins: lists are for `in (...)`.
  if (Array.isArray(parameter) && parameter.some(isSlot)) {
    throw new Error('a query template bound a list of values as one parameter');
  }
  if (!isSlot(parameter)) return { constant: parameter };
  return { path: JSON.parse((parameter as string).slice(SLOT.length)) as (string | number)[] };
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
  return { query: CompiledQuery.raw(compiled.sql), sources: compiled.parameters.map(sourceOf) };
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
    // The adapter names the engine: each writes its own SQL (placeholders, quoting, returning).
    const key = `${executor.adapter.constructor.name}|${shape === undefined ? '' : JSON.stringify(shape)}|${keyOf(values)}`;
    let found = compiled.get(key);
    if (found === undefined) {
      found = compile(build(db, slotsOf(values) as V, shape as S));
      if (compiled.size < MAX_SHAPES) compiled.set(key, found);
    }
    const parameters = found.sources.map((s) => ('constant' in s ? s.constant : valueAt(values, s.path)));
    // No plugin transforms the result (checked above): the query's id may be shared by its runs.
    return executor.executeQuery({ ...found.query, parameters } as CompiledQuery<R>);
  };
}
