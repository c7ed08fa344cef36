import cors from '@fastify/cors';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import type { Config } from './config.ts';
import type { Context } from './context.ts';
import { type ConnectOptions, closeDatabase, connectDatabase, type DbHandle } from './db/connect.ts';
import { migrateToLatest } from './db/migrate.ts';
import { ReadGate } from './db/read-gate.ts';
import { EventBus } from './events/bus.ts';
import { rejectUnknownFieldFloods } from './http/body-fields.ts';
import { answerClientError, answerUnmetExpectation, requestIdFor } from './http/client-error.ts';
import { rejectContentEncoding } from './http/content-encoding.ts';
import { corsOptions } from './http/cors.ts';
import { validateEnabledOperations } from './http/disabled.ts';
import { emptyBodyIsObject } from './http/empty-body.ts';
import { ErrorEnvelope, NoBody, NoQuery } from './http/envelope.ts';
import {
  collectRouteMethods,
  errorBody,
  installErrorHandler,
  installFixedPathMethodCheck,
  installNotFoundHandler,
} from './http/error-handler.ts';
import { installFormBodyParser } from './http/form-body.ts';
import { installJsonBodyParser } from './http/json-body.ts';
import { rejectMistypedJson } from './http/json-types.ts';
import { parseQueryString, rejectMalformedQuery } from './http/query-string.ts';
import { rejectRepeatedAuthorization } from './http/repeated-headers.ts';
import { RequestLogController, requestForLog } from './http/request-log.ts';
import { rejectUnstorableText } from './http/text-input.ts';
import { rejectLooseTextValues } from './http/text-values.ts';
import { lowerCaseUuids } from './http/uuid-case.ts';
import accessPlugin from './modules/auth/access.plugin.ts';
import { modules } from './modules/index.ts';
import metricsPlugin from './plugins/metrics.plugin.ts';
import openapiPlugin from './plugins/openapi.plugin.ts';

/** Options of buildApp beyond the configuration. */
export interface BuildOptions {
  /** An already open database (tests share one per file); otherwise DATABASE_URL is opened and closed with the app. */
  handle?: DbHandle;
  /** Skip migrations (the caller ran them). */
  skipMigrations?: boolean;
  /** Pino options or false; defaults to JSON logs at LOG_LEVEL. */
  logger?: boolean | object;
  /** A worker forked in place of one that exited, told to the modules' starts: the bootstrap client is not saved again. */
  replacement?: boolean;
}

/** Methods whose operations may take a body. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** The options the API opens its database with (tests open theirs with the same, bar durability and pool size). */
export function apiConnectOptions(config: Config): ConnectOptions {
  return {
    synchronous: config.SQLITE_SYNCHRONOUS,
    poolSize: 10,
    // A new PostgreSQL backend's first statements fill its catalog caches: an uncached /search/types took 80-240 ms
    // on new connections against 21-31 ms on used ones. Closed after 10 s idle (node-postgres's default), every pause
    // in traffic made the next requests pay that again; the API keeps the connections it opened instead.
    idleTimeoutMs: 0,
    pgGroupCommit: true,
    readers: config.SQLITE_READERS,
    readerHeapMb: config.SQLITE_READER_HEAP_MB,
    readerCacheMb: config.SQLITE_READER_CACHE_MB,
  };
}

/** Builds the Fastify app: plugins in order external -> infra -> modules, then the 404/405 and error handlers. */
export async function buildApp(
  config: Config,
  options: BuildOptions = {},
): Promise<{ app: FastifyInstance; ctx: Context }> {
  validateEnabledOperations(config.ENABLED_OPERATIONS);
  if (options.handle) return assembleApp(config, options.handle, options);
  const handle = connectDatabase(config.DATABASE_URL, apiConnectOptions(config));
  try {
    const built = await assembleApp(config, handle, options);
    built.app.addHook('onClose', () => closeDatabase(handle));
    return built;
  } catch (err) {
    // The API's pool keeps idle connections for good: left open, they would hold the process after a failed start.
    await closeDatabase(handle).catch(() => {});
    throw err;
  }
}

/** The app on an open database handle, which the caller closes. */
async function assembleApp(
  config: Config,
  handle: DbHandle,
  options: BuildOptions,
): Promise<{ app: FastifyInstance; ctx: Context }> {
  if (!options.skipMigrations) await migrateToLatest(handle.db, handle.dialect);
  const ctx: Context = {
    db: handle.db,
    readDb: handle.readDb,
    dialect: handle.dialect,
    config,
    bus: new EventBus(),
    // PostgreSQL rows are parsed and ranked on the event loop; SQLite's reader threads bound that work themselves.
    ...(handle.dialect === 'postgres' && config.PG_READ_SLOTS > 0
      ? { readGate: new ReadGate(config.PG_READ_SLOTS) }
      : {}),
  };
  for (const m of modules) m.subscribe?.(ctx);

  // Fastify's default 0 switched Node's request timeout off: a client that sent headers and then nothing held its
  // connection for good. Node checks the timeouts every 30 s by default, which a short test timeout would outlast.
  const requestTimeout = config.REQUEST_TIMEOUT_SECONDS * 1000;
  const app = Fastify({
    // Headers are never logged; a request's URL is, with secret-looking query parameters masked.
    logger:
      options.logger === undefined
        ? { level: config.LOG_LEVEL, serializers: { req: requestForLog } }
        : typeof options.logger === 'object'
          ? { serializers: { req: requestForLog }, ...options.logger }
          : options.logger,
    logController: new RequestLogController(),
    bodyLimit: 1024 * 1024,
    requestTimeout,
    http: {
      requestTimeout,
      headersTimeout: Math.min(60_000, requestTimeout),
      connectionsCheckingInterval: Math.min(30_000, requestTimeout / 4),
    },
    trustProxy: config.TRUST_PROXY,
    requestIdHeader: false,
    genReqId: requestIdFor,
    routerOptions: { querystringParser: parseQueryString, maxParamLength: 200 },
    clientErrorHandler: answerClientError,
    // The router refuses a malformed URL (bad percent-encoding) or an over-long path parameter before any hook or
    // error handler runs; without this Fastify answers with its own JSON, outside the envelope and the code set.
    frameworkErrors: (error, request, reply) => {
      const message =
        error.code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? 'A path segment is longer than 200 characters; check the uuid in the URL.'
          : 'The URL is malformed; check its percent-encoding.';
      (reply as FastifyReply)
        .header('x-request-id', request.id)
        .header('cache-control', 'no-store')
        .status(400)
        .send(errorBody('invalid_request', message, request.id));
    },
    ajv: {
      customOptions: { removeAdditional: false, coerceTypes: 'array', allErrors: true, useDefaults: true },
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  // An Expect other than 100-continue: Node's bare 417 would be outside the envelope, without a request id.
  app.server.on('checkExpectation', answerUnmetExpectation);

  // Hooks on every request take a callback rather than returning a promise: one microtask less each.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    // Whatever the answer (an unknown token's 401, a 404 before any check), one to a request with credentials is
    // for that caller only: the token check's own no-store came too late for the answers given before it.
    if (request.headers.authorization !== undefined) reply.header('cache-control', 'no-store');
    done();
  });
  // Two Authorization headers: a 400 before any access check reads the first.
  app.addHook('onRequest', rejectRepeatedAuthorization);
  // NUL characters and lone surrogates: a 400 before any handler, instead of a PostgreSQL error (500).
  app.addHook('preHandler', rejectUnstorableText);
  // A malformed percent escape in the query string: a 400 naming the parameter, before the validator sees the rest.
  app.addHook('preValidation', rejectMalformedQuery);
  // A flood of unknown body fields: a 400 before the validator names each one.
  app.addHook('preValidation', rejectUnknownFieldFloods);
  // JSON fields of the wrong JSON type: a 400 before the validator coerces them (it must, for query strings and forms).
  app.addHook('preValidation', rejectMistypedJson);
  // Query strings and forms: numbers in decimal digits only (Number() would read `0x10` as 16), one value where one is
  // taken (the validator would take `limit[]=5` as 5).
  app.addHook('preValidation', rejectLooseTextValues);
  // Uuids in any case find what their lower-case spelling finds, on every route.
  app.addHook('preHandler', lowerCaseUuids);
  // Form and JSON bodies: UTF-8 only, a form's percent escapes well-formed, a JSON field given twice refused.
  installFormBodyParser(app);
  installJsonBodyParser(app);
  // Fastify parses text/plain by default; the contract accepts only JSON and form bodies (415 for the rest).
  app.removeContentTypeParser('text/plain');

  app.addHook('onRoute', (route) => {
    const methods = [route.method].flat();
    // A body in gzip, br, ...: a 415 before a parser reads it as plain. On the operations that take a body only: a
    // root hook would put a preParsing step on every read too.
    if (methods.some((m) => BODY_METHODS.has(m))) {
      route.preParsing = [rejectContentEncoding, ...[route.preParsing ?? []].flat()];
    }
    // Every documented operation lists the error envelope, so clients and the OpenAPI document see its shape.
    if (!route.schema || route.schema.hide) return;
    const response = (route.schema.response ?? {}) as Record<string, unknown>;
    route.schema.response = { ...response, '4xx': ErrorEnvelope, '5xx': ErrorEnvelope };
    // An operation without query parameters refuses any, so a misspelt parameter is never silently ignored.
    route.schema.querystring ??= NoQuery;
    // Likewise an operation that takes no body refuses any property in one; a bare POST is an empty body.
    if (route.schema.body === undefined && methods.some((m) => BODY_METHODS.has(m))) {
      route.schema.body = NoBody;
      route.preValidation = [emptyBodyIsObject, ...[route.preValidation ?? []].flat()];
    }
  });
  installErrorHandler(app);
  const routes = collectRouteMethods(app);
  installNotFoundHandler(app, routes);
  if (config.CORS_ORIGINS.length > 0) await app.register(cors, corsOptions(config.CORS_ORIGINS));
  installFixedPathMethodCheck(app, routes);
  await app.register(openapiPlugin);
  await app.register(metricsPlugin);
  await app.register(accessPlugin, { ctx });
  for (const m of modules) if (m.routes) await app.register(m.routes, { ctx });
  for (const m of modules) await m.start?.(ctx, app.log, { replacement: options.replacement ?? false });
  return { app, ctx };
}
