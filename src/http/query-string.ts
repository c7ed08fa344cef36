import qs from 'qs';
import { DROPPED_KEYS, prototypeKeysIn } from './text-input.ts';

const QS_OPTIONS: qs.IParseOptions = {
  depth: 3,
  arrayLimit: 100,
  parameterLimit: 300,
  allowPrototypes: false,
  duplicates: 'combine',
};

/** Parses a query string or form body with nested keys (`filterby[p][op]=v`), bounded in depth and size. */
export function parseNested(text: string): Record<string, unknown> {
  const parsed = qs.parse(text, QS_OPTIONS) as Record<string, unknown>;
  // qs drops prototype-member names silently; they are remembered so the request is refused (DROPPED_KEYS).
  const dropped = prototypeKeysIn(text);
  if (dropped.length > 0) Object.defineProperty(parsed, DROPPED_KEYS, { value: dropped, enumerable: false });
  return parsed;
}

// Parsing a list query (`filterby[tag_type]=hashtag&sortby[...]=desc&...`) was 15% of the CPU of a cached tag list
// page, and clients repeat the same few query strings: the parses of recent ones are kept, bounded in number and
// length, and each request gets its own copy, since validation coerces and fills in the object it is given.
const REMEMBERED_QUERIES = 512;
const REMEMBERED_LENGTH_MAX = 1024;
const remembered = new Map<string, Record<string, unknown>>();

/**
 * parseNested for URL query strings, remembering the parses of recent ones (never for bodies, which may hold
 * passwords). Returns a fresh object each call, equal to what parseNested returns.
 */
export function parseQueryString(text: string): Record<string, unknown> {
  if (text.length > REMEMBERED_LENGTH_MAX) return parseNested(text);
  const known = remembered.get(text);
  if (known) {
    // Most recently used last, so the oldest is the first in the Map's order.
    remembered.delete(text);
    remembered.set(text, known);
    return copyParsed(known) as Record<string, unknown>;
  }
  const parsed = parseNested(text);
  // A request with dropped names is refused: nothing worth remembering, and the mark would need copying.
  if (DROPPED_KEYS in parsed) return parsed;
  if (remembered.size >= REMEMBERED_QUERIES) remembered.delete(remembered.keys().next().value as string);
  remembered.set(text, parsed);
  return copyParsed(parsed) as Record<string, unknown>;
}

/** A deep copy of what qs returns: arrays, objects (with their prototype, plain or null) and strings. */
function copyParsed(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(copyParsed);
  if (typeof value !== 'object' || value === null) return value;
  const copy: Record<string, unknown> = Object.getPrototypeOf(value) === null ? Object.create(null) : {};
  // No key is `__proto__` or another prototype member: qs drops those, and such a parse is not remembered.
  for (const key of Object.keys(value)) copy[key] = copyParsed((value as Record<string, unknown>)[key]);
  return copy;
}
