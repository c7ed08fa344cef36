import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, type ErrorDetail } from './errors.ts';

const MAX_DEPTH = 8;

/** A parsed JSON, query or form object, or the router's params: never an array, stream or file. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  // Path parameters come from the router as an object whose prototype is itself a null-prototype object.
  return proto === Object.prototype || proto === null || Object.getPrototypeOf(proto) === null;
}

/**
 * Set by the query string and form parser (parseNested in query-string.ts) on what it returns: the parameter names
 * it dropped because a part of them is a member of `Object.prototype` (`filterby[constructor][eq]`, `__proto__[x]`).
 * qs drops them to keep the prototype safe, which would answer an unfiltered page; rejectUnstorableText refuses them
 * instead.
 */
export const DROPPED_KEYS = Symbol('dropped parameter names');

// Any member name of Object.prototype (`__proto__` among them) anywhere in a text.
const PROTOTYPE_MEMBER = new RegExp(
  Object.getOwnPropertyNames(Object.prototype)
    .map((name) => name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('|'),
);

/** The names in a query string or form body that qs drops as prototype members (at most a few, for the message). */
export function prototypeKeysIn(text: string): string[] {
  // Without a percent escape a name decodes to itself ('+' to a space, which no member name holds), so a text in
  // which no member name occurs has none among its names: the common case, one scan instead of a decode per pair.
  if (!text.includes('%') && !PROTOTYPE_MEMBER.test(text)) return [];
  const found: string[] = [];
  for (const pair of text.split('&')) {
    // Where qs ends a name: at `]=` when there is one (`a=x[constructor]=y` names `a=x[constructor]`), else at `=`.
    const bracketEquals = pair.indexOf(']=');
    const end = bracketEquals === -1 ? pair.indexOf('=') : bracketEquals + 1;
    const raw = end === -1 ? pair : pair.slice(0, end);
    const spaced = raw.replaceAll('+', ' ');
    let key: string;
    try {
      key = decodeURIComponent(spaced);
    } catch {
      // A name with a broken escape (`filterby[constructor]%`) is read as it came, as a lenient parser reads it.
      // parseNested refuses such a query before calling this; the rule holds for any other caller.
      key = spaced;
    }
    if (
      key
        .split(/[[\]]/)
        .some((part) => part !== '' && (part === '__proto__' || Object.hasOwn(Object.prototype, part)))
    ) {
      found.push(key.slice(0, 60));
      if (found.length === 3) break;
    }
  }
  return found;
}

function droppedKeys(part: unknown): string[] | undefined {
  if (typeof part !== 'object' || part === null) return undefined;
  return (part as { [DROPPED_KEYS]?: string[] })[DROPPED_KEYS];
}

function problem(text: string): string | undefined {
  if (text.includes('\u0000')) return 'contains a NUL character (\\u0000); remove it';
  if (!text.isWellFormed()) return 'is not well-formed Unicode (a lone surrogate); send valid UTF-8 text';
  return undefined;
}

/** The first value (string key or value, or number) in a parsed request part that the engines cannot store alike. */
function findBadText(value: unknown, path: string, depth: number): ErrorDetail | undefined {
  if (typeof value === 'string') {
    const message = problem(value);
    return message ? { field: path, message } : undefined;
  }
  // `1e999` or `Infinity` pass Ajv's integer coercion as Infinity; no column can hold it.
  if (typeof value === 'number' && !Number.isFinite(value)) {
    return { field: path, message: 'must be a finite number; give a whole number in the documented range' };
  }
  if (depth >= MAX_DEPTH) return undefined;
  if (Array.isArray(value)) {
    for (const item of value) {
      const found = findBadText(item, path, depth + 1);
      if (found) return found;
    }
    return undefined;
  }
  if (!isPlainObject(value)) return undefined;
  for (const [key, item] of Object.entries(value)) {
    const field = path === '' ? key : `${path}[${key}]`;
    const keyProblem = problem(key);
    if (keyProblem) return { field: field.slice(0, 100), message: keyProblem };
    const found = findBadText(item, field, depth + 1);
    if (found) return found;
  }
  return undefined;
}

/**
 * Refuses text that would be stored differently or not at all: PostgreSQL rejects NUL characters in text (a 500
 * otherwise) where SQLite keeps them, and lone surrogates become U+FFFD on the way to either engine. Runs on the
 * path parameters, query string and parsed body of every request, before any handler or owner lookup.
 */
export function rejectUnstorableText(
  request: FastifyRequest,
  _reply: FastifyReply,
  done: (err?: Error) => void,
): void {
  // A callback hook, not an async one: it runs on every request, and one microtask less counts there.
  const found =
    findBadText(request.params, '', 0) ??
    findBadText(request.query, '', 0) ??
    findBadText(request.body, '', 0);
  if (!found) {
    const dropped = droppedKeys(request.query) ?? droppedKeys(request.body);
    if (dropped) {
      const message =
        'is not a parameter name this API knows (names of Object.prototype members are refused)';
      const details = dropped.map((field) => ({ field, message }));
      done(new ApiError('invalid_request', `Invalid ${dropped.join(', ')}: ${message}.`, details));
      return;
    }
    done();
    return;
  }
  done(new ApiError('invalid_request', `Invalid ${found.field || 'input'}: ${found.message}.`, [found]));
}
