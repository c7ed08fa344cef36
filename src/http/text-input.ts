import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, type ErrorDetail } from './errors.ts';

const MAX_DEPTH = 8;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  // Path parameters come from the router as an object whose prototype is itself a null-prototype object.
  return proto === Object.prototype || proto === null || Object.getPrototypeOf(proto) === null;
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
    done();
    return;
  }
  done(new ApiError('invalid_request', `Invalid ${found.field || 'input'}: ${found.message}.`, [found]));
}
