import type { FastifyReply, FastifyRequest } from 'fastify';
import { bodyWithProperties } from './body-fields.ts';
import { ApiError } from './errors.ts';

/** A JSON type a schema can name. */
export type JsonType = 'string' | 'number' | 'integer' | 'boolean' | 'null' | 'array' | 'object';

/** A property's schema, as far as the type checks read it. */
export interface PropertySchema {
  type?: JsonType | JsonType[];
  const?: unknown;
  enum?: unknown[];
  anyOf?: PropertySchema[];
  oneOf?: PropertySchema[];
}

/** The JSON types a property's schema admits, or undefined when it does not say (no check then). */
export function admitted(schema: PropertySchema | undefined, depth = 0): Set<JsonType> | undefined {
  if (!schema || depth > 3) return undefined;
  const out = new Set<JsonType>();
  if (schema.type !== undefined) for (const t of [schema.type].flat()) out.add(t);
  for (const value of [...(schema.const === undefined ? [] : [schema.const]), ...(schema.enum ?? [])]) {
    out.add(typeOf(value));
  }
  for (const member of [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])]) {
    const inner = admitted(member, depth + 1);
    if (!inner) return undefined;
    for (const t of inner) out.add(t);
  }
  return out.size > 0 ? out : undefined;
}

function typeOf(value: unknown): JsonType {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value as JsonType;
}

function fits(value: unknown, types: Set<JsonType>): boolean {
  const t = typeOf(value);
  return types.has(t) || (t === 'integer' && types.has('number'));
}

/** Whether the request's body was sent as JSON (where the client chose each value's type). */
export function isJson(request: FastifyRequest): boolean {
  const type = String(request.headers['content-type'] ?? '').toLowerCase();
  return type.startsWith('application/json') || /^[^;]*\+json/.test(type);
}

/**
 * Refuses a JSON body whose top-level fields have another JSON type than their schema's (`{"body": 123}`,
 * `{"points": "2"}`, `{"user_uuid": ["..."]}`) with 400, before validation. The validator coerces types, as query
 * strings and form bodies need (every value there is text), and would store 123 as "123"; in JSON the client chose
 * the type, so a wrong one is an error, not a guess.
 */
export function rejectMistypedJson(
  request: FastifyRequest,
  _reply: FastifyReply,
  done: (err?: Error) => void,
): void {
  const found = bodyWithProperties(request);
  if (!found || !isJson(request)) {
    done();
    return;
  }
  const { body } = found;
  const properties = found.schema.properties as Record<string, PropertySchema>;
  for (const [key, value] of Object.entries(body)) {
    const types = Object.hasOwn(properties, key) ? admitted(properties[key]) : undefined;
    if (!types || fits(value, types)) continue;
    const expected = [...types].map((t) => (t === 'integer' ? 'a whole number' : t)).join(' or ');
    const message = `must be ${expected} (JSON type ${typeOf(value)} given)`;
    done(new ApiError('invalid_request', `Invalid ${key}: ${message}.`, [{ field: key, message }]));
    return;
  }
  done();
}
