import { type Compilable, type CompiledQuery, createQueryId, type QueryResult } from 'kysely';
import type { Db } from './database.ts';

// A value's stand-in while its template compiles starts with this (a NUL character: no caller sends it). Its capital
// letter makes a stand-in changed by the builder (lower-cased, embedded in other text) recognisable as one that was.
const SLOT = '\u0000Slot:';
const CHANGED_SLOT = /slot:/i;

/** Shapes one template keeps compiled; a further shape compiles on every run (rare shapes, never wrong). */
export const MAX_SHAPES = 64;

/** Statements with more parameters than this are not kept (a user's deletion adjusts the counts of all their tags). */
export const MAX_KEPT_PARAMETERS = 500;

type Values = Record<string, unknown>;
type Path = (string | number)[];

/** Where a compiled parameter comes from at run time: a value's path (name, array index, field), or a constant. */
type Source = { path: Path } | { constant: unknown };

interface Compiled {
  /** Kysely's compiled query (its node keeps the statement's kind, which the drivers route by), parameters aside. */
  query: CompiledQuery<unknown>;
  sources: Source[];
}

/**
 * How a value keeps its place in the key. Null, undefined and booleans go to the builder as themselves and are keyed
 * by value: Kysely may write them into the SQL (`is null`, a column left out, `is true`). Text, numbers and dates
 * become stand-ins. Anything else (an expression, an object, a nested list) would run as a stand-in text: refused.
 */
function mark(value: unknown, name: string): string {
  if (value === null) return 'n';
  if (value === undefined) return 'u';
  if (typeof value === 'boolean') return value ? 't' : 'f';
  if (typeof value === 'object' && !(value instanceof Date)) {
    throw new Error(`a query template's value ${name} is not a bindable value`);
  }
  return '';
}

/** Whether a list's element is a row (an object of values: `values(rows)`) rather than one value. */
function isRow(item: unknown): item is Values {
  return item !== null && typeof item === 'object' && !(item instanceof Date);
}

/**
 * The key of the values' shape: everything of them that can change the text. An array keeps its length; an element
 * may be a row (an object of values: `values(rows)`), whose fields keep their names and order. Run on every call:
 * plain loops and one string.
 */
function keyOf(values: Values): string {
  let key = '';
  for (const name in values) {
    const value = values[name];
    if (!Array.isArray(value)) {
      key += `${JSON.stringify(name)}=${mark(value, name)};`;
      continue;
    }
    key += `${JSON.stringify(name)}[${value.length}:`;
    for (const item of value) {
      if (Array.isArray(item)) throw new Error(`a query template's value ${name} nests a list`);
      if (!isRow(item)) {
        key += `${mark(item, name)},`;
        continue;
      }
      key += '{';
      for (const field in item) key += `${JSON.stringify(field)}=${mark(item[field], `${name}.${field}`)},`;
      key += '},';
    }
    key += '];';
  }
  return key;
}

/** A stand-in for the value at `path`; null, undefined and booleans stay themselves (keyOf keyed them). */
function slotOf(value: unknown, path: Path, handedOut: Map<string, Path>): unknown {
  if (value === null || value === undefined || typeof value === 'boolean') return value;
  const slot = `${SLOT}${handedOut.size}`;
  handedOut.set(slot, path);
  return slot;
}

/** The stand-ins of some values (keyOf checked them) for the one build of their shape, and where each stands. */
function slotsOf(values: Values): { slots: Values; handedOut: Map<string, Path> } {
  const handedOut = new Map<string, Path>();
  const slots: Values = {};
  for (const [name, value] of Object.entries(values)) {
    slots[name] = !Array.isArray(value)
      ? slotOf(value, [name], handedOut)
      : value.map((item, i) =>
          isRow(item)
            ? Object.fromEntries(
                Object.entries(item).map(([field, v]) => [field, slotOf(v, [name, i, field], handedOut)]),
              )
            : slotOf(item, [name, i], handedOut),
        );
  }
  return { slots, handedOut };
}

/**
 * Where a compiled parameter comes from: the value its stand-in stands for, or a constant of the builder's own.
 * A stand-in the builder changed (lower-cased, quoted, put in other text, used in arithmetic) would bind the same
 * constant on every run: refused, like a list bound as one parameter (PostgreSQL's `= any($1)`).
 */
function sourceOf(parameter: unknown, handedOut: Map<string, Path>): Source {
  if (typeof parameter === 'string') {
    const path = handedOut.get(parameter);
    if (path !== undefined) return { path };
    if (CHANGED_SLOT.test(parameter)) throw new Error('a query template changed a value before binding it');
  }
  if (Array.isArray(parameter) && parameter.some((x) => typeof x === 'string' && CHANGED_SLOT.test(x))) {
    throw new Error('a query template bound a list of values as one parameter');
  }
  if (Number.isNaN(parameter)) throw new Error('a query template did arithmetic on a value');
  return { constant: parameter };
}

/** The value at a path of the values (the run's own, where the template compiled with stand-ins). */
function valueAt(values: Values, path: Path): unknown {
  let value: unknown = values;
  for (const step of path) value = (value as Record<string | number, unknown>)[step];
  return value;
}

/** Compiles a build on stand-ins and maps its parameters back to the values. */
function compile<R>(query: Compilable<R>, handedOut: Map<string, Path>): Compiled {
  const compiled = query.compile();
  // A stand-in written into the text (sql.lit) would run as that text, whatever the values.
  if (CHANGED_SLOT.test(compiled.sql)) throw new Error('a query template wrote a value into its SQL text');
  return {
    query: compiled as CompiledQuery<unknown>,
    sources: compiled.parameters.map((p) => sourceOf(p, handedOut)),
  };
}

/**
 * A statement that Kysely builds and compiles once per engine and shape, then runs with each call's values bound in
 * its parameters. On a post's write path the builder chains and their compilation cost the main thread about as
 * much as SQLite's own work for the same statements (docs/decisions.md, twenty-sixth session).
 *
 * `values` are what a statement binds: text, numbers, dates, booleans, and arrays of them or of rows of them.
 * `build` receives stand-ins for text, numbers and dates, and must only place them in the query as values: a
 * stand-in written into the text (`sql.lit`), changed (lower-cased, quoted, added to) or bound as a list throws on
 * the shape's first run. What `build` may look at are the values keyed by themselves: null, undefined, booleans, the
 * length of a list and the fields of a row. Comparisons of other values cannot be detected: whatever else changes
 * the text is `shape` (flags, literals; its JSON is part of the key).
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
      const { slots, handedOut } = slotsOf(values);
      found = compile(build(db, slots as V, shape as S), handedOut);
      if (compiled.size < MAX_SHAPES && found.sources.length <= MAX_KEPT_PARAMETERS) compiled.set(key, found);
    }
    const parameters = found.sources.map((s) => ('constant' in s ? s.constant : valueAt(values, s.path)));
    // Each run its own id, as each build would have: a driver may tell runs apart by it.
    return executor.executeQuery({
      ...found.query,
      parameters,
      queryId: createQueryId(),
    } as CompiledQuery<R>);
  };
}
