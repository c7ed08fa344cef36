import { type RawBuilder, type SelectQueryBuilder, sql } from 'kysely';
import { Type } from 'typebox';
import type { Dialect } from '../db/database.ts';
import { ApiError, type ErrorDetail } from './errors.ts';
import { resolveWindow, type Window } from './paging.ts';

/** Kind of a listable property; decides how a filter value is parsed and which operators apply. */
export type PropertyType = 'uuid' | 'string' | 'integer' | 'datetime' | 'enum';

/** One whitelisted property of a listed resource, mapped to a trusted column name. */
export interface PropertySpec {
  column: string;
  type: PropertyType;
  values?: readonly string[];
  /** Column compared by eq, ne and like instead of `column` (a normalized key), with the value normalized alike. */
  keyColumn?: string;
  normalize?: (value: string) => string;
}

/** The whitelist of a resource: property name to its spec. */
export type Whitelist = Record<string, PropertySpec>;

/** Comparison operators of filterby. */
export const OPERATORS = { eq: '=', gt: '>', ge: '>=', lt: '<', le: '<=', ne: '<>', like: 'like' } as const;
type Operator = keyof typeof OPERATORS;

/** A parsed, validated list request: nothing in it is raw request text except bound values. */
export interface ListQuery extends Window {
  sort: { column: string; direction: 'asc' | 'desc' }[];
  /** `in` only from a `like` on an enumeration, resolved against its values (likeToEnumValues). */
  filters: { column: string; op: Operator | 'in'; value: string | number | string[] }[];
  uuids: string[] | undefined;
}

export const MAX_FILTERS = 10;
export const MAX_SORTS = 5;
export const MAX_UUIDS = 100;
const INT32_MAX = 2_147_483_647;
const MIN_TIME = Date.parse('0001-01-01T00:00:00.000Z');
const MAX_TIME = Date.parse('9999-12-31T23:59:59.999Z');

/** Whether `YYYY-MM-DD` names a day that exists (no 2026-02-30, no month 13). */
function isCalendarDate(ymd: string): boolean {
  const [y, m, d] = ymd.split('-').map(Number) as [number, number, number];
  // setUTCFullYear, unlike Date.UTC, takes years 0001 to 0099 literally; a day that does not exist rolls over.
  const check = new Date(Date.UTC(2000, 0, 1));
  check.setUTCFullYear(y, m - 1, d);
  return check.getUTCFullYear() === y && check.getUTCMonth() === m - 1 && check.getUTCDate() === d;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Query-string schema of sortby, filterby and uuids, for route schemas (parsed further by parseListQuery). */
export function listQuerySchema(whitelist: Whitelist) {
  const names = Object.keys(whitelist).join(', ');
  return {
    sortby: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description: `sortby[PROPERTY]=asc|desc, several allowed, applied in order; properties: ${names}.`,
      }),
    ),
    filterby: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description: `filterby[PROPERTY][OP]=VALUE with OP in eq, gt, ge, lt, le, ne, like (filterby[PROPERTY]=VALUE means eq); properties: ${names}.`,
      }),
    ),
    uuids: Type.Optional(
      Type.Union([Type.String(), Type.Array(Type.String())], {
        description:
          'uuids to fetch (array or comma-separated, at most 100); all other filters are then ignored.',
      }),
    ),
  };
}

/** Splits an array-or-comma-list parameter into trimmed uuids, validating each. */
export function parseUuidList(field: string, raw: unknown, details: ErrorDetail[]): string[] | undefined {
  if (raw === undefined) return undefined;
  const items: unknown[] = Array.isArray(raw) ? raw : [raw];
  if (!items.every((v) => typeof v === 'string')) {
    details.push({ field, message: 'must be uuid strings, as an array or comma-separated' });
    return undefined;
  }
  const out: string[] = [];
  for (const p of (items as string[]).flatMap((v) => v.split(','))) {
    const v = p.trim();
    if (v === '') continue;
    if (!UUID_RE.test(v)) {
      details.push({ field, message: `${JSON.stringify(v.slice(0, 60))} is not a uuid` });
      return undefined;
    }
    out.push(v.toLowerCase());
  }
  if (out.length > MAX_UUIDS) {
    details.push({ field, message: `at most ${MAX_UUIDS} uuids` });
    return undefined;
  }
  return [...new Set(out)];
}

function parseValue(name: string, spec: PropertySpec, op: Operator, raw: unknown, details: ErrorDetail[]) {
  const field = `filterby[${name}][${op}]`;
  if (typeof raw !== 'string') {
    details.push({ field, message: 'give one value (a repeated or nested value is not accepted)' });
    return undefined;
  }
  if (raw.length > 200) {
    details.push({ field, message: 'a value may have at most 200 characters' });
    return undefined;
  }
  if (op === 'like') {
    if (spec.type !== 'string' && spec.type !== 'uuid' && spec.type !== 'enum') {
      details.push({ field, message: `like applies to text properties; ${name} is ${spec.type}` });
      return undefined;
    }
    // Checked as it will be compared: normalizing (NFKC for tag names) turns a full-width ＼ or ﹨ into \ , and a
    // pattern ending in a lone one is an error on PostgreSQL (a 500), where the raw text passed the check.
    const pattern = spec.normalize ? spec.normalize(raw) : raw.toLowerCase();
    if (pattern.length > 200) {
      details.push({ field, message: 'a value may have at most 200 characters, counted once normalized' });
      return undefined;
    }
    if (/(^|[^\\])(\\\\)*\\$/.test(pattern)) {
      details.push({
        field,
        message: 'the pattern ends with a lone \\ ; write \\\\ for a literal backslash',
      });
      return undefined;
    }
    // A uuid is matched by its prefix: a leading wildcard would read every row of a large table (p99 0.7 s on
    // 1,000,000 associations, docs/reliability.md Part B), and no one knows the middle of a uuid.
    if (spec.type === 'uuid' && /^[%_]/.test(pattern)) {
      details.push({
        field,
        message: `uuids are matched by prefix; start the pattern with the first characters, such as ${name} like 0190ab%`,
      });
      return undefined;
    }
    return pattern;
  }
  switch (spec.type) {
    case 'integer': {
      // Integer properties are 32-bit columns: PostgreSQL refuses a larger bound value with an error (a 500).
      if (!/^-?\d{1,15}$/.test(raw) || Math.abs(Number(raw)) > INT32_MAX) {
        details.push({
          field,
          message: `${name} is a whole number from -${INT32_MAX} to ${INT32_MAX}; got ${JSON.stringify(raw.slice(0, 40))}`,
        });
        return undefined;
      }
      return Number(raw);
    }
    case 'datetime': {
      const m = /^(\d{4}-\d{2}-\d{2})(?:[T ]([\d:.]+)(Z|[+-]\d{2}:?\d{2})?)?$/.exec(raw);
      // A time without an offset is UTC, as every time here is: Date.parse would read it in the server's zone.
      const t = m ? Date.parse(m[2] === undefined ? m[1]! : `${m[1]}T${m[2]}${m[3] ?? 'Z'}`) : Number.NaN;
      // Years 0001 to 9999 only: PostgreSQL refuses year 0 and the +YYYYYY form of later years (a 500).
      // Date.parse rolls impossible days over (2026-02-30 becomes March 2), so the date part must round-trip.
      if (Number.isNaN(t) || t < MIN_TIME || t > MAX_TIME || !isCalendarDate(raw.slice(0, 10))) {
        details.push({
          field,
          message: `${name} is a date-time YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ with a real calendar date, from year 0001 to 9999, such as 2026-01-31T12:00:00Z; got ${JSON.stringify(raw.slice(0, 40))}`,
        });
        return undefined;
      }
      return new Date(t).toISOString();
    }
    case 'uuid': {
      if (!UUID_RE.test(raw)) {
        details.push({ field, message: `${name} is a uuid (use like for partial matches)` });
        return undefined;
      }
      return raw.toLowerCase();
    }
    case 'enum': {
      if (!spec.values?.includes(raw)) {
        details.push({ field, message: `${name} is one of: ${spec.values?.join(', ')}` });
        return undefined;
      }
      return raw;
    }
    default:
      if ((op === 'eq' || op === 'ne') && spec.normalize) return spec.normalize(raw);
      return raw;
  }
}

function isPlainRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Validates paging, sortby, filterby and uuids against a whitelist; every problem is listed in one 400. */
export function parseListQuery(
  query: Record<string, unknown>,
  whitelist: Whitelist,
  maxOffset: number,
): ListQuery {
  const details: ErrorDetail[] = [];
  const names = Object.keys(whitelist).join(', ');
  const sort: ListQuery['sort'] = [];
  const filters: ListQuery['filters'] = [];

  const sortby = query.sortby;
  if (sortby !== undefined) {
    if (!isPlainRecord(sortby)) {
      details.push({ field: 'sortby', message: 'write sortby[PROPERTY]=asc or desc' });
    } else {
      const entries = Object.entries(sortby);
      if (entries.length > MAX_SORTS)
        details.push({ field: 'sortby', message: `at most ${MAX_SORTS} sort keys` });
      for (const [name, dir] of entries.slice(0, MAX_SORTS)) {
        const spec = Object.hasOwn(whitelist, name) ? whitelist[name] : undefined;
        if (!spec) {
          details.push({
            field: `sortby[${name.slice(0, 60)}]`,
            message: `unknown property; sortable: ${names}`,
          });
        } else if (dir !== 'asc' && dir !== 'desc') {
          details.push({ field: `sortby[${name}]`, message: 'direction is asc or desc' });
        } else {
          sort.push({ column: spec.column, direction: dir });
        }
      }
    }
  }

  const uuids = parseUuidList('uuids', query.uuids, details);

  // The spec: when uuids is given, every other filter is ignored, so it is not read at all (an unknown property
  // there is no 400).
  const filterby = uuids ? undefined : query.filterby;
  if (filterby !== undefined) {
    if (!isPlainRecord(filterby)) {
      details.push({ field: 'filterby', message: 'write filterby[PROPERTY][OP]=VALUE' });
    } else {
      const entries: [string, string, unknown][] = [];
      for (const [name, v] of Object.entries(filterby)) {
        if (isPlainRecord(v)) for (const [op, value] of Object.entries(v)) entries.push([name, op, value]);
        else entries.push([name, 'eq', v]);
      }
      if (entries.length > MAX_FILTERS) {
        details.push({ field: 'filterby', message: `at most ${MAX_FILTERS} filter clauses` });
      }
      for (const [name, op, raw] of entries.slice(0, MAX_FILTERS)) {
        const spec = Object.hasOwn(whitelist, name) ? whitelist[name] : undefined;
        if (!spec) {
          details.push({
            field: `filterby[${name.slice(0, 60)}]`,
            message: `unknown property; filterable: ${names}`,
          });
          continue;
        }
        if (!Object.hasOwn(OPERATORS, op)) {
          details.push({
            field: `filterby[${name}][${op.slice(0, 20)}]`,
            message: 'unknown operator; use eq, gt, ge, lt, le, ne or like',
          });
          continue;
        }
        const value = parseValue(name, spec, op as Operator, raw, details);
        if (value === undefined) continue;
        if (op === 'like' && spec.type === 'enum') {
          // An enumeration has a handful of values: the pattern picks some of them here, and the column is
          // compared with those (an index lookup) instead of scanning every row with LIKE.
          filters.push({
            column: spec.column,
            op: 'in',
            value: likeToEnumValues(String(value), spec.values ?? []),
          });
          continue;
        }
        const useKey = spec.keyColumn && (op === 'eq' || op === 'ne' || op === 'like');
        filters.push({
          column: useKey ? (spec.keyColumn as string) : spec.column,
          op: op as Operator,
          value,
        });
      }
    }
  }

  let window: Window = { offset: 0, limit: 20 };
  try {
    window = resolveWindow(query as { offset?: number; page?: number; limit?: number }, maxOffset);
  } catch (err) {
    if (err instanceof ApiError && err.details) details.push(...err.details);
    else throw err;
  }
  if (details.length > 0) {
    throw new ApiError(
      'invalid_request',
      `The list parameters are not valid: ${details.map((d) => `${d.field}: ${d.message}`).join('; ')}`,
      details,
    );
  }
  return { ...window, sort, filters, uuids };
}

/**
 * The values of an enumeration a `like` pattern matches, with SQL's semantics as the lists use them (value and
 * pattern lower-cased; `%` any run, `_` one character, `\` makes the next character literal). Matched by
 * likeMatches, not a regular expression: a pattern of many `%` made a backtracking regex take seconds to minutes
 * on the event loop (50 `%` and a `b` stalled the server).
 */
export function likeToEnumValues(pattern: string, values: readonly string[]): string[] {
  const tokens: LikeToken[] = [];
  const chars = [...pattern.toLowerCase()];
  for (let i = 0; i < chars.length; i++) {
    const ch = chars[i] as string;
    // A lone trailing backslash never gets here (parseValue refuses it); it would match nothing.
    if (ch === '\\') tokens.push(chars[++i] ?? '\u0000');
    else if (ch === '%') {
      // A run of % matches what one % does; the matcher then takes steps per run, not per %.
      if (tokens.at(-1) !== ANY) tokens.push(ANY);
    } else if (ch === '_') tokens.push(ONE);
    else tokens.push(ch);
  }
  return values.filter((v) => likeMatches(tokens, [...v.toLowerCase()]));
}

const ANY = Symbol('%');
const ONE = Symbol('_');
/** A parsed `like` pattern's element: a literal character, `%` or `_`. */
type LikeToken = string | typeof ANY | typeof ONE;

/**
 * Whether `text` (code points) matches the tokens, in at most length(text) x length(tokens) steps: on a mismatch
 * the last `%` takes one more character and matching resumes after it, since what an earlier `%` took never needs
 * to change.
 */
function likeMatches(tokens: readonly LikeToken[], text: readonly string[]): boolean {
  let p = 0;
  let t = 0;
  let lastAny = -1;
  let resumeAt = 0;
  while (t < text.length) {
    const token = tokens[p];
    if (token === ONE || (token !== undefined && token === text[t])) {
      p++;
      t++;
    } else if (token === ANY) {
      lastAny = p++;
      resumeAt = t;
    } else if (lastAny >= 0) {
      p = lastAny + 1;
      t = ++resumeAt;
    } else {
      return false;
    }
  }
  while (tokens[p] === ANY) p++;
  return p === tokens.length;
}

function condition(
  column: string,
  op: Operator | 'in',
  value: string | number | string[],
): RawBuilder<boolean> {
  const ref = sql.ref(column);
  if (op === 'in') {
    const list = value as string[];
    return list.length === 0 ? sql<boolean>`1 = 0` : sql<boolean>`${ref} in (${sql.join(list)})`;
  }
  if (op === 'like') return sql<boolean>`lower(${ref}) like ${value} escape '\\'`;
  return sql<boolean>`${ref} ${sql.raw(OPERATORS[op])} ${value}`;
}

/**
 * Adds the filters (or the uuid list) of a list query to a select. `skewed` (give it on SQLite only): columns
 * whose values are very unevenly used, e.g. a target type that is "post" nine times in ten. SQLite's statistics
 * hold only the average rows per value, so for `target_type = 'network'` it expects a third of the table and scans
 * it (250 ms over 1,000,000 associations) instead of reading the index; likelihood() tells it that a filter on one
 * value is selective. For the common value the index costs about a fifth more than the scan; for a rare one it is instant.
 */
// biome-ignore lint/suspicious/noExplicitAny: the helper works on any table's select.
export function applyFilters<QB extends SelectQueryBuilder<any, any, any>>(
  qb: QB,
  lq: ListQuery,
  uuidColumn: string,
  skewed?: ReadonlySet<string>,
): QB {
  let q = qb;
  if (lq.uuids) {
    q = q.where(sql.ref(uuidColumn), 'in', lq.uuids.length > 0 ? lq.uuids : ['']) as QB;
    return q;
  }
  for (const f of lq.filters) {
    const cond = condition(f.column, f.op, f.value);
    // One value (an `in` from a `like` may name them all, which the scan serves better).
    const single = f.op === 'eq' || (f.op === 'in' && (f.value as string[]).length === 1);
    const hinted = single && skewed?.has(f.column);
    q = q.where(hinted ? sql<boolean>`likelihood(${cond}, 0.05)` : cond) as QB;
  }
  return q;
}

/** The offset from which PostgreSQL lists read a page by a late row lookup (WindowOptions.lateRowsFrom). */
const LATE_ROWS_OFFSET = 1000;

/** How applyOrderAndWindow reads a page, where the caller knows better than the engine. */
export interface WindowOptions {
  /**
   * SQLite only: the caller knows from the exact count that the filters select few rows. SQLite's statistics hold
   * only averages, so it prefers walking the sort's index and testing each row against the filters, which reads
   * every row of the scope when few match (1.1 s from disk for the 0 `subtract` records among one user's 23,000). A
   * unary `+` (a no-op on SQLite) makes each key an expression no index serves, so it reads the matching rows through
   * the filters' index and sorts them. Never on PostgreSQL, where `+` on a text column is an error (its statistics
   * per column already weigh a selective filter).
   */
  sortMatches?: boolean;
  /**
   * From this offset on, the window's uuids are chosen first, with the uuid as the only column, and only those rows
   * are read (a late row lookup). PostgreSQL's index scan fetches the table row of every row an offset skips, where
   * an index-only scan of the same index reads none: bench_user's karma by uuid at offset 10,000 took 522 ms from a
   * cold cache, 26 ms this way (docs/reliability.md, "Resource limits, tenth session"). Undefined: never.
   */
  lateRowsFrom?: number;
}

/** The late row lookup of deep pages where it pays: PostgreSQL from LATE_ROWS_OFFSET on; SQLite never. */
export function lateRowsFor(dialect: Dialect): WindowOptions {
  return dialect === 'postgres' ? { lateRowsFrom: LATE_ROWS_OFFSET } : {};
}

/** Adds ordering (given keys, then the uuid tie-breaker; NULLs sort lowest on both engines) and the window. */
// biome-ignore lint/suspicious/noExplicitAny: the helper works on any table's select.
export function applyOrderAndWindow<QB extends SelectQueryBuilder<any, any, any>>(
  qb: QB,
  lq: ListQuery,
  uuidColumn: string,
  defaultSort: ListQuery['sort'] = [],
  options: WindowOptions = {},
): QB {
  const sort = lq.sort.length > 0 ? lq.sort : defaultSort;
  const ref = (column: string) => (options.sortMatches ? sql`+${sql.ref(column)}` : sql.ref(column));
  // biome-ignore lint/suspicious/noExplicitAny: ordering applies to the page query and to its uuid window alike.
  const ordered = <Q extends SelectQueryBuilder<any, any, any>>(query: Q): Q => {
    let q = query;
    for (const s of sort) {
      const key = sql`${ref(s.column)} ${sql.raw(s.direction)}`;
      // The uuid is a primary key, never NULL: no NULLS clause, so PostgreSQL walks its default-ordered index either
      // way instead of sorting every visible row (2.7 s for a page at offset 10,000 of 1,000,000 associations).
      if (s.column === uuidColumn) q = q.orderBy(key) as Q;
      else q = q.orderBy(sql`${key} ${sql.raw(s.direction === 'asc' ? 'nulls first' : 'nulls last')}`) as Q;
    }
    // A sort that names the uuid is total already. Naming it twice made SQLite sort the rows itself ("USE TEMP
    // B-TREE FOR RIGHT PART OF ORDER BY"), reading every skipped row's columns: 0.8 s for a deep
    // `/karma?sortby[uuid]` page read from disk, 44 ms without the repeat.
    if (!sort.some((s) => s.column === uuidColumn)) {
      const tieDirection = sort.length > 0 ? (sort[sort.length - 1]?.direction ?? 'asc') : 'asc';
      q = q.orderBy(sql`${ref(uuidColumn)} ${sql.raw(tieDirection)}`) as Q;
    }
    return q;
  };
  if (options.lateRowsFrom === undefined || lq.offset < options.lateRowsFrom) {
    return ordered(qb).limit(lq.limit).offset(lq.offset) as QB;
  }
  const window = ordered(qb.clearSelect().select(sql.ref(uuidColumn).as('window_uuid')))
    .limit(lq.limit)
    .offset(lq.offset);
  return ordered(qb.where(sql.ref(uuidColumn), 'in', window)).limit(lq.limit) as QB;
}
