import type { FastifyReply, FastifyRequest } from 'fastify';
import qs from 'qs';
import { ApiError } from './errors.ts';
import { DROPPED_KEYS, prototypeKeysIn } from './text-input.ts';

/**
 * Set by parseNested on what it returns (an empty object then) when a parameter's name or value is not well-formed
 * percent-encoded UTF-8: that parameter's name, cut short. The query string hook and the form parser refuse it.
 */
export const MALFORMED_PARAMETER = Symbol('parameter with malformed percent-encoding');

/**
 * Set by parseNested on what it returns (an empty object then) when the text holds more parameters than qs reads
 * (PARAMETER_LIMIT): qs would drop the rest silently, a filter or a password change among them.
 */
export const TOO_MANY_PARAMETERS = Symbol('more parameters than are read');

/** Parameters of a query string or form body, counting the empty pieces between `&`s as qs does. */
export const PARAMETER_LIMIT = 300;

/** Thrown by strictDecode out of qs.parse, caught by parseNested. */
class MalformedEscape extends Error {
  readonly parameter: string;
  constructor(parameter: string) {
    super('malformed percent-encoding');
    this.parameter = parameter;
  }
}

// The name of the pair qs decodes now: qs decodes each pair's name, then its value, synchronously.
let decodingName = '';

/**
 * qs's decoder, but throwing where qs's own returns the text as it came: `%ZZ`, a lone `%`, or escapes that are
 * not UTF-8 (`caf%E9`, Latin-1) would otherwise be kept literally (and stored), and a name broken so would escape
 * the prototype-name check, which reads decoded names.
 */
function strictDecode(text: string, _default: unknown, _charset: unknown, type: 'key' | 'value'): string {
  const spaced = text.includes('+') ? text.replaceAll('+', ' ') : text;
  let decoded = spaced;
  if (spaced.includes('%')) {
    try {
      decoded = decodeURIComponent(spaced);
    } catch {
      throw new MalformedEscape((type === 'key' ? spaced : decodingName).slice(0, 60));
    }
  }
  if (type === 'key') decodingName = decoded;
  return decoded;
}

const QS_OPTIONS: qs.IParseOptions = {
  depth: 3,
  arrayLimit: 100,
  parameterLimit: PARAMETER_LIMIT,
  allowPrototypes: false,
  duplicates: 'combine',
  decoder: strictDecode as qs.IParseOptions['decoder'],
};

/** The 400 for a parameter of a query string or form body whose percent-encoding is malformed. */
export function malformedEncoding(parameter: string, where: 'query string' | 'form body'): ApiError {
  const message =
    'is not well-formed percent-encoded UTF-8: a "%" must start an escape of UTF-8 bytes such as %25 (a "%") or %C3%A9 ("é")';
  return new ApiError(
    'invalid_request',
    `Invalid ${parameter} in the ${where}: ${message}; encode the text as UTF-8, then percent-encode it.`,
    [{ field: parameter, message }],
  );
}

/** The parameter parseNested found malformed in what it returned, if any. */
export function malformedParameterOf(parsed: unknown): string | undefined {
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  return (parsed as { [MALFORMED_PARAMETER]?: string })[MALFORMED_PARAMETER];
}

/** The 400 for what parseNested marked refused (a malformed escape, too many parameters), if anything. */
export function refusalOf(parsed: unknown, where: 'query string' | 'form body'): ApiError | undefined {
  const parameter = malformedParameterOf(parsed);
  if (parameter !== undefined) return malformedEncoding(parameter, where);
  if (typeof parsed !== 'object' || parsed === null || !(TOO_MANY_PARAMETERS in parsed)) return undefined;
  const message = `holds more than ${PARAMETER_LIMIT} parameters (empty ones between "&"s count)`;
  return new ApiError('invalid_request', `The ${where} ${message}; send fewer.`, [{ field: where, message }]);
}

/** Whether qs, reading at most PARAMETER_LIMIT pieces between `&`s, would drop a parameter of `text`. */
function dropsParameters(text: string): boolean {
  if (text.length < PARAMETER_LIMIT) return false;
  let at = -1;
  for (let pieces = 1; pieces <= PARAMETER_LIMIT; pieces++) {
    at = text.indexOf('&', at + 1);
    if (at === -1) return false;
  }
  // What follows the last piece read: only more empty pieces lose nothing.
  for (let i = at + 1; i < text.length; i++) if (text[i] !== '&') return true;
  return false;
}

/** An empty parse marked with `mark` (and `value`), which the query string hook and the form parser refuse. */
function refusedParse(mark: symbol, value: unknown): Record<string, unknown> {
  const refused: Record<string, unknown> = {};
  Object.defineProperty(refused, mark, { value, enumerable: false });
  return refused;
}

/** Parses a query string or form body with nested keys (`filterby[p][op]=v`), bounded in depth and size. */
export function parseNested(text: string): Record<string, unknown> {
  // Not thrown on: the router calls the query string parser before any hook could answer for it.
  if (dropsParameters(text)) return refusedParse(TOO_MANY_PARAMETERS, true);
  let parsed: Record<string, unknown>;
  try {
    parsed = qs.parse(text, QS_OPTIONS) as Record<string, unknown>;
  } catch (err) {
    if (!(err instanceof MalformedEscape)) throw err;
    return refusedParse(MALFORMED_PARAMETER, err.parameter);
  }
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
  // A request with dropped names, a malformed escape or too many parameters is refused: nothing worth remembering,
  // and the mark would need copying.
  if (DROPPED_KEYS in parsed || MALFORMED_PARAMETER in parsed || TOO_MANY_PARAMETERS in parsed) return parsed;
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

/**
 * preValidation hook: a query string with a malformed percent escape (MALFORMED_PARAMETER) is a 400 naming the
 * parameter, and one with too many parameters a 400 too, before the validator judges the empty query parseNested
 * left in its place.
 */
export function rejectMalformedQuery(
  request: FastifyRequest,
  _reply: FastifyReply,
  done: (err?: Error) => void,
): void {
  done(refusalOf(request.query, 'query string'));
}
