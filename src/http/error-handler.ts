import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isForeignKeyViolation } from '../db/errors.ts';
import { ReadAbandonedError } from '../db/read-gate.ts';
import { nowSeconds } from './envelope.ts';
import { ApiError, type ErrorDetail } from './errors.ts';
import { NAME_TEXT, SHOWN_TEXT, VISIBLE_TEXT } from './schemas.ts';

interface AjvError {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

const CONTEXT_PREFIX: Record<string, string> = { body: '', querystring: '', params: '', headers: 'header ' };

/** Longest part of a field name echoed in an error: names come from the request, and 20 of 50 KB made 2 MB. */
const ECHOED_NAME = 60;

function fieldOf(e: AjvError, context: string | undefined): string {
  const path = e.instancePath
    .split('/')
    .filter(Boolean)
    .map((p, i) => (i === 0 ? p.slice(0, ECHOED_NAME) : `[${p.slice(0, ECHOED_NAME)}]`))
    .join('');
  if (e.keyword === 'required')
    return path ? `${path}[${e.params.missingProperty}]` : String(e.params.missingProperty);
  if (e.keyword === 'additionalProperties') {
    const extra = String(e.params.additionalProperty).slice(0, ECHOED_NAME);
    return path ? `${path}[${extra}]` : extra;
  }
  return path || (context === 'body' ? 'body' : '(root)');
}

/** A route schema part (TypeBox/JSON Schema) as far as messages need it. */
interface SchemaNode {
  properties?: Record<string, SchemaNode>;
  description?: string;
}

/** The schema of the property an error is about (the missing one for `required`), if the schema is known. */
function propertyOf(schema: SchemaNode | undefined, e: AjvError): SchemaNode | undefined {
  let node = schema;
  const segments = e.instancePath.split('/').filter(Boolean);
  if (e.keyword === 'required') segments.push(String(e.params.missingProperty));
  for (const seg of segments) node = node?.properties?.[seg];
  return node === schema ? undefined : node;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0] as number;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j] as number;
      row[j] = Math.min(above + 1, (row[j - 1] as number) + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length] as number;
}

/** Names other APIs use for the parameters of this one, in order of preference. */
const SYNONYMS: Record<string, string[]> = {
  sort: ['sortby', 'order'],
  orderby: ['sortby', 'order'],
  order_by: ['sortby', 'order'],
  sort_by: ['sortby', 'order'],
  filter: ['filterby'],
  where: ['filterby'],
  q: ['query'],
  search: ['query'],
  term: ['query'],
  per_page: ['limit'],
  page_size: ['limit'],
  size: ['limit'],
  count: ['limit'],
  skip: ['offset'],
  start: ['offset'],
  lang: ['language'],
  locale: ['language'],
};

// Longer than any accepted name by far: no suggestion, and no edit distance over 50 KB names.
const SUGGESTED_NAME_MAX = 64;

/** The accepted name a misspelt one most likely meant (`sort` -> `sortby`, `limt` -> `limit`), if any is close. */
function closest(name: string, accepted: string[]): string | undefined {
  if (name.length > SUGGESTED_NAME_MAX) return undefined;
  const n = name.toLowerCase();
  const synonym = Object.hasOwn(SYNONYMS, n) ? SYNONYMS[n]?.find((s) => accepted.includes(s)) : undefined;
  if (synonym) return synonym;
  let best: { name: string; score: number } | undefined;
  for (const a of accepted) {
    const score = a.startsWith(n) || n.startsWith(a) ? 1 : editDistance(n, a);
    if (score <= 2 && (!best || score < best.score)) best = { name: a, score };
  }
  return best?.name;
}

const FORMAT_EXAMPLE: Record<string, string> = {
  uuid: ' such as 01a20185-f906-7160-b5dd-42e27955ddcf',
  'date-time': ' such as 2026-01-31T12:00:00Z',
  email: ' such as ada@example.com',
};

// What NAME_TEXT and SHOWN_TEXT refuse, for their messages.
const NOTHING_UNSHOWN =
  'no control character or line separator, direction override or embedding, or invisible character (soft hyphen, zero-width space, word joiner)';

function messageOf(e: AjvError, context: string | undefined, schema: SchemaNode | undefined): string {
  const described = propertyOf(schema, e)?.description;
  const hint = described ? ` (${described})` : '';
  const what = context === 'querystring' ? 'parameter' : 'field';
  switch (e.keyword) {
    case 'required':
      return `is required${hint}`;
    case 'additionalProperties': {
      // Only the top level is looked up: nested objects (filterby, sortby) are checked by their own parsers.
      const accepted = e.instancePath === '' ? Object.keys(schema?.properties ?? {}) : [];
      if (schema && e.instancePath === '' && accepted.length === 0) {
        return `is not accepted: this operation takes no ${what}s here; remove it (see /docs)`;
      }
      const guess = closest(String(e.params.additionalProperty), accepted);
      return [
        `is not an accepted ${what} here`,
        guess ? `; did you mean ${guess}?` : '',
        accepted.length > 0 ? ` Accepted: ${accepted.join(', ')}.` : '; check the spelling against /docs',
      ].join('');
    }
    case 'enum':
      return `must be one of: ${(e.params.allowedValues as unknown[]).join(', ')}`;
    case 'type': {
      if (e.instancePath === '' && e.params.type === 'object' && context === 'body') {
        return 'must be a JSON object (or form fields) with the fields listed in /docs';
      }
      const type = e.params.type === 'integer' ? 'a whole number' : `of type ${e.params.type}`;
      // A repeated query parameter arrives as an array and fails here, so say so where that can happen.
      return context === 'querystring'
        ? `must be ${type} (a parameter given twice is not accepted)`
        : `must be ${type}`;
    }
    case 'format':
      return `must be a valid ${e.params.format}${FORMAT_EXAMPLE[String(e.params.format)] ?? ''}`;
    case 'minLength':
      return `must have at least ${e.params.limit} characters`;
    case 'maxLength':
      return `must have at most ${e.params.limit} characters`;
    case 'minimum':
      return `must be at least ${e.params.limit}${hint}`;
    case 'maximum':
      return `must be at most ${e.params.limit}${hint}`;
    case 'pattern':
      if (e.params.pattern === VISIBLE_TEXT) return 'must contain a visible character, not only spaces';
      if (e.params.pattern === SHOWN_TEXT) return `must have ${NOTHING_UNSHOWN}`;
      if (e.params.pattern === NAME_TEXT)
        return `must contain a visible character, and have ${NOTHING_UNSHOWN}`;
      return described
        ? `has characters that are not allowed here: ${described}`
        : `must match the pattern ${e.params.pattern}`;
    default:
      return e.message ?? 'is not valid';
  }
}

/**
 * Turns Ajv's validation errors into field details that say how to fix each. With the route's schema of that part
 * of the request, messages add the property's description and, for an unknown name, the accepted ones.
 */
export function validationDetails(
  errors: AjvError[],
  context: string | undefined,
  schema?: unknown,
): ErrorDetail[] {
  const prefix = CONTEXT_PREFIX[context ?? ''] ?? '';
  const seen = new Set<string>();
  const out: ErrorDetail[] = [];
  // anyOf/oneOf wrappers repeat what their branches said.
  const wrapper = (e: AjvError) => e.keyword === 'anyOf' || e.keyword === 'oneOf' || e.keyword === 'if';
  // A nullable field's value failed both branches: what the value itself broke says more than "must be null".
  const nullOnly = (e: AjvError) =>
    (e.keyword === 'type' && e.params.type === 'null') ||
    (e.keyword === 'const' && e.params.allowedValue === null);
  const brokeMore = new Set(errors.filter((e) => !nullOnly(e) && !wrapper(e)).map((e) => e.instancePath));
  for (const e of errors) {
    if (wrapper(e)) continue;
    if (nullOnly(e) && brokeMore.has(e.instancePath)) continue;
    const detail = {
      field: prefix + fieldOf(e, context),
      message: messageOf(e, context, schema as SchemaNode | undefined),
    };
    const key = `${detail.field}|${detail.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(detail);
  }
  return out.slice(0, 20);
}

/** The route's schema of one request part (body, querystring, params, headers), for teaching messages. */
export function schemaOf(request: FastifyRequest, context: string | undefined): unknown {
  const schema = request.routeOptions?.schema as Record<string, unknown> | undefined;
  return context ? schema?.[context] : undefined;
}

const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  '57P01', // admin_shutdown
  '57P03', // cannot_connect_now
  '57014', // statement timeout / query_canceled
  '53300', // too_many_connections
  '53100', // disk_full
  '08000',
  '08003',
  '08006',
  '40001', // serialization_failure
  '40P01', // deadlock
  '55P03', // lock_not_available: a grouped transaction's lock timeout (pg-group-commit.ts), after its retries
  'ERR_SQLITE_ERROR',
]);

/** Whether an error means the storage cannot answer now (unreachable, busy, full): a 503, never a 500. */
export function isUnavailable(err: { code?: unknown; errcode?: unknown; message?: string }): boolean {
  const code = typeof err.code === 'string' ? err.code : '';
  if (UNAVAILABLE_CODES.has(code) && code !== 'ERR_SQLITE_ERROR') return true;
  if (code === 'ERR_SQLITE_ERROR') {
    // SQLITE_BUSY (5), SQLITE_FULL (13), SQLITE_IOERR (10), SQLITE_LOCKED (6), SQLITE_CANTOPEN (14).
    return [5, 6, 10, 13, 14].includes(Number(err.errcode) & 0xff);
  }
  // Kysely's, for a query started after the process closed its database (shutting down; only a request whose
  // client left is still running then).
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|driver has already been destroyed/.test(
    err.message ?? '',
  );
}

/** Builds the error envelope. */
export function errorBody(code: string, message: string, requestId: string, details?: ErrorDetail[]) {
  return {
    status: 'ERROR' as const,
    error: { code, message, request_id: requestId, ...(details && details.length > 0 ? { details } : {}) },
    timestamp: nowSeconds(),
  };
}

/** Every error becomes the envelope; anything unexpected is a logged 500 that leaks nothing. */
export function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler(
    (error: FastifyError & { validation?: AjvError[] }, request: FastifyRequest, reply: FastifyReply) => {
      if (error instanceof ApiError) {
        for (const [k, v] of Object.entries(error.headers)) reply.header(k, v);
        if (error.statusCode >= 500) {
          // The cause, when there is one, is for the operator only (a file system error's code, say).
          request.log.warn({ code: error.code, ...(error.cause ? { err: error.cause } : {}) }, error.message);
        }
        return reply
          .status(error.statusCode)
          .send(errorBody(error.code, error.message, request.id, error.details));
      }
      if (error.validation) {
        const details = validationDetails(
          error.validation,
          error.validationContext,
          schemaOf(request, error.validationContext),
        );
        const message = `The request is not valid: ${details.map((d) => `${d.field} ${d.message}`).join('; ')}`;
        return reply.status(400).send(errorBody('invalid_request', message, request.id, details));
      }
      switch (error.code) {
        case 'FST_ERR_CTP_BODY_TOO_LARGE':
        case 'FST_REQ_FILE_TOO_LARGE':
        case 'FST_FILES_LIMIT':
          return reply
            .status(413)
            .send(
              errorBody(
                'payload_too_large',
                `The request body is larger than this operation accepts (at most ${request.routeOptions?.bodyLimit ?? 1048576} bytes; media uploads: MEDIA_MAX_BYTES); send a smaller body.`,
                request.id,
              ),
            );
        case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
          return reply
            .status(415)
            .send(
              errorBody(
                'unsupported_media_type',
                `The body's content type ${JSON.stringify(String(request.headers['content-type'] ?? '').slice(0, 60))} is not accepted: send application/json or application/x-www-form-urlencoded (multipart/form-data for media uploads).`,
                request.id,
              ),
            );
        case 'FST_ERR_CTP_EMPTY_JSON_BODY':
        case 'FST_ERR_CTP_INVALID_JSON_BODY':
        case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
        case 'FST_ERR_CTP_EMPTY_TYPE':
        case 'FST_ERR_CTP_INVALID_TYPE':
          return reply
            .status(400)
            .send(
              errorBody(
                'invalid_request',
                `The request body could not be read: ${error.message}`,
                request.id,
              ),
            );
        case 'ERR_STREAM_PREMATURE_CLOSE':
          // The client closed the connection mid-body (an interrupted upload): its mistake, not ours, and nobody
          // reads the answer; not logged as an unhandled error. A stream of ours closing early stays a 500.
          if (!request.raw.destroyed && !request.raw.readableAborted) break;
          request.log.info({ code: error.code }, 'request body interrupted');
          return reply
            .status(400)
            .send(errorBody('invalid_request', 'The request body ended before it was complete.', request.id));
        case 'FST_ERR_BAD_URL':
        case 'FST_ERR_ASYNC_CONSTRAINT':
          return reply.status(400).send(errorBody('invalid_request', 'The URL is malformed.', request.id));
      }
      if (error.statusCode === 429) {
        return reply
          .status(429)
          .send(
            errorBody(
              'rate_limited',
              'Too many requests; wait for the time in Retry-After and try again.',
              request.id,
            ),
          );
      }
      if (error instanceof SyntaxError || error.statusCode === 400) {
        return reply
          .status(400)
          .send(errorBody('invalid_request', 'The request could not be parsed.', request.id));
      }
      if (isForeignKeyViolation(error)) {
        // The services check what a write refers to; a violation here means a concurrent request removed it.
        return reply
          .status(409)
          .send(
            errorBody(
              'conflict',
              'An item this request refers to (for example your account or the target) was removed while the request ran; nothing was changed. Check that it still exists and retry.',
              request.id,
            ),
          );
      }
      if (error instanceof ReadAbandonedError) {
        // Nobody is there to read it; the status is for the request log.
        request.log.info('client closed the connection before its read was computed');
        return reply
          .status(503)
          .send(
            errorBody('unavailable', 'The connection was closed before the answer was computed.', request.id),
          );
      }
      if (isUnavailable(error as never)) {
        request.log.error({ err: error }, 'storage unavailable');
        reply.header('retry-after', '1');
        return reply
          .status(503)
          .send(
            errorBody(
              'unavailable',
              'The service is temporarily unavailable; retry in a moment.',
              request.id,
            ),
          );
      }
      request.log.error({ err: error }, 'unhandled error');
      return reply
        .status(500)
        .send(
          errorBody(
            'internal_error',
            'Something went wrong on our side. Quote the request_id when you report it.',
            request.id,
          ),
        );
    },
  );
}

/** A 405 naming the methods the path allows. */
function sendMethodNotAllowed(
  request: FastifyRequest,
  reply: FastifyReply,
  path: string,
  allowed: Set<string>,
) {
  const allow = [...allowed].sort().join(', ');
  reply.header('allow', allow);
  return reply
    .status(405)
    .send(
      errorBody(
        'method_not_allowed',
        `${request.method} is not allowed on ${path}; allowed: ${allow}.`,
        request.id,
      ),
    );
}

/** The request's path: its URL without the query. */
function pathOf(url: string | undefined): string {
  const u = url ?? '/';
  const q = u.indexOf('?');
  return q === -1 ? u : u.slice(0, q);
}

/** The methods of every registered route: by URL pattern, and by fixed path (a URL without parameters). */
export interface RouteMethods {
  patterns: { re: RegExp; methods: Set<string> }[];
  fixedPaths: Map<string, Set<string>>;
}

/** Records each route's methods as it is registered, for the 404/405 answers; call before any route is added. */
export function collectRouteMethods(app: FastifyInstance): RouteMethods {
  const routes: RouteMethods = { patterns: [], fixedPaths: new Map() };
  app.addHook('onRoute', (route) => {
    if (route.url === '*' || route.url === '/*') return;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (!route.url.includes(':')) {
      const known = routes.fixedPaths.get(route.url) ?? new Set<string>();
      for (const m of methods) known.add(m);
      routes.fixedPaths.set(route.url, known);
    }
    const source = route.url
      .split('/')
      .map((seg) => (seg.startsWith(':') ? '[^/]+' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
      .join('/');
    const re = new RegExp(`^${source}$`);
    let entry = routes.patterns.find((p) => p.re.source === re.source);
    if (!entry) {
      entry = { re, methods: new Set() };
      routes.patterns.push(entry);
    }
    for (const m of methods) entry.methods.add(m);
  });
  return routes;
}

/** Unknown paths answer 404 not_found; known paths with another method 405 with Allow. */
export function installNotFoundHandler(app: FastifyInstance, routes: RouteMethods): void {
  app.setNotFoundHandler((request, reply) => {
    const path = pathOf(request.raw.url);
    const allowed = new Set<string>();
    for (const p of routes.patterns) if (p.re.test(path)) for (const m of p.methods) allowed.add(m);
    if (allowed.size > 0) return sendMethodNotAllowed(request, reply, path, allowed);
    return reply
      .status(404)
      .send(
        errorBody(
          'not_found',
          `No operation at ${request.method} ${path}. The API reference is at /docs.`,
          request.id,
        ),
      );
  });
}

/**
 * Answers 405 with Allow for a fixed path that a parameter route of the request's method would otherwise take
 * (`GET /tags/create` is not `GET /tags/{tag_uuid}` with an invalid uuid). Install after CORS (whose headers and
 * preflights come first) and before any access check.
 */
export function installFixedPathMethodCheck(app: FastifyInstance, routes: RouteMethods): void {
  // By the path alone, before any other check (as the not-found handler answers): reading request.routeOptions, an
  // object built per read, on every request made a cached tag read take 10-30% more CPU.
  app.addHook('onRequest', (request, reply, done) => {
    const path = pathOf(request.raw.url);
    const allowed = routes.fixedPaths.get(path);
    // OPTIONS is CORS's or the not-found handler's, as before.
    if (!allowed || allowed.has(request.method) || request.method === 'OPTIONS') return done();
    sendMethodNotAllowed(request, reply, path, allowed);
  });
}
