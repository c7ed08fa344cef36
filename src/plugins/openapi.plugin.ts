import swagger from '@fastify/swagger';
import scalar from '@scalar/fastify-api-reference';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ERROR_STATUS, type ErrorCode } from '../http/errors.ts';

const DESCRIPTION = `Social network back end: search, karma, tags and tag associations, plus the users, friendships,
networks, posts, comments, media and messages they work on.

## Authentication in two steps

Every operation except \`/oauth/*\`, \`/health\`, \`/ready\`, \`/docs\`, \`/openapi.json\` and \`/metrics\` needs
\`Authorization: Bearer TOKEN\`. Tokens come from \`POST /oauth/token\` (OAuth 2.0, RFC 6749), authenticated as a
client (HTTP Basic \`client_id:client_secret\`). On the first start of an empty embedded database the server creates
a development client, prints its credentials and saves them to \`./data/dev-client.json\`.

1. **A guest token** (client credentials grant): enough for every *Public* operation (reading, searching,
   registering a user).

   \`\`\`sh
   curl -s -u "$CLIENT_ID:$CLIENT_SECRET" \\
     -d grant_type=client_credentials \\
     http://127.0.0.1:3000/oauth/token
   \`\`\`
2. **A user token** (password grant, first-party clients only): needed by *Logged* and *Owner* operations.

   \`\`\`sh
   curl -s -u "$CLIENT_ID:$CLIENT_SECRET" \\
     -d grant_type=password -d username=ada \\
     --data-urlencode 'password=correct horse battery' \\
     http://127.0.0.1:3000/oauth/token
   \`\`\`

Access tokens live one hour; the password grant also returns a refresh token (\`grant_type=refresh_token\`).

**Trying an operation here:** paste the \`access_token\` into *Bearer Token* in the *Authentication* box next to
this introduction, open an operation and press *Test Request*, then *Send*. Every operation says which token it needs:

| access | token |
|---|---|
| Public | a guest token or a user token |
| Logged | a user token |
| Owner | the user token of the item's owner (someone else's item answers \`404 object_not_found\`) |
| Admin | the user token of an administrator |

## Answers and errors

Success: \`{"status":"OK","data":...,"count":{"offset":0,"limit":20,"total":null},"timestamp":1795300000}\`
(\`count\` on lists only). Errors: \`{"status":"ERROR","error":{"code","message","request_id","details"},"timestamp"}\`;
the message says what was wrong and how to fix it, and \`details\` names each bad field. The codes:
${Object.entries(ERROR_STATUS)
  .map(([code, status]) => `\`${code}\` (${status})`)
  .join(', ')}. \`/oauth/*\` answers errors in the RFC 6749 shape \`{"error","error_description"}\`.

Lists take \`limit\` (1-100), \`offset\` or \`page\`, \`sortby[PROPERTY]=asc|desc\` and
\`filterby[PROPERTY][OP]=VALUE\` with OP one of eq, ne, gt, ge, lt, le, like; searches take \`query\`, \`order\` and
\`language\`. The guides in the project's \`docs/\` folder explain each area in plain words.`;

/** What the reference says about each code, when an operation can answer it. */
const WHEN: Record<ErrorCode, string> = {
  invalid_request:
    'a parameter or body field is missing, malformed, out of range or unknown; details names each',
  ambiguous_operation: 'neither X-HTTP-Method-Override nor _method says delete or update',
  unauthenticated: 'no bearer token, or an unknown, expired or revoked one',
  invalid_client: "the token's client is disabled",
  login_required: 'a guest token where a logged-in user is needed',
  forbidden: 'the user is not an administrator',
  not_found: 'no operation at that path',
  object_not_found: 'the item does not exist, you may not see it, or it is not yours',
  operation_disabled: 'the operation is switched off on this server (ENABLED_OPERATIONS)',
  method_not_allowed: 'the path exists with other methods (see Allow)',
  conflict: 'a unique value is already taken',
  payload_too_large: 'the body is over 1 MiB (media uploads: MEDIA_MAX_BYTES)',
  unsupported_media_type: 'the body is not JSON or form-encoded (multipart for media uploads)',
  rate_limited: 'too many requests with this token; wait Retry-After seconds',
  internal_error: 'a bug on our side; quote request_id',
  unavailable: 'the database is unreachable or busy; retry shortly',
};

/** A realistic message of each code, for the examples of the error responses. */
const EXAMPLE_MESSAGE: Record<ErrorCode, string> = {
  invalid_request:
    'The request is not valid: sort is not an accepted parameter here; did you mean sortby? Accepted: offset, page, limit, sortby, filterby, uuids.',
  ambiguous_operation:
    'POST /tag-associations/{uuid} deletes or updates: say which with the header X-HTTP-Method-Override: DELETE or PATCH, or the body field _method=delete or _method=update (or use the DELETE or PATCH method).',
  unauthenticated:
    'This operation needs a bearer token: send Authorization: Bearer TOKEN (get one from POST /oauth/token).',
  invalid_client:
    'The client this token was issued to is disabled; ask the operator to enable it, or get a token from another client.',
  login_required:
    'This operation needs a logged-in user; a guest token is not enough. Log in with the password grant of POST /oauth/token.',
  forbidden:
    'This operation is for administrators only; an operator can grant the role with `npm run cli -- users role USERNAME admin`.',
  not_found: 'No operation at GET /tag. The API reference is at /docs.',
  object_not_found:
    "No post with that uuid exists, or you may not see it: check the uuid, and that your token's user may see the post.",
  operation_disabled:
    'The operation tags.create is disabled on this server. An operator can switch it on with ENABLED_OPERATIONS=tags.create.',
  method_not_allowed: 'DELETE is not allowed on /health; allowed: GET, HEAD.',
  conflict: 'Already taken: username. Choose another value.',
  payload_too_large:
    'The request body is larger than this operation accepts (at most 1048576 bytes; media uploads: MEDIA_MAX_BYTES); send a smaller body.',
  unsupported_media_type:
    'The body\'s content type "text/plain" is not accepted: send application/json or application/x-www-form-urlencoded (multipart/form-data for media uploads).',
  rate_limited: 'Too many requests: at most 600 per minute per token. Retry in 1 minute.',
  internal_error: 'Something went wrong on our side. Quote the request_id when you report it.',
  unavailable: 'The service is temporarily unavailable; retry in a moment.',
};

/** Operations that answer 409 conflict, and when. */
const CONFLICTS: Record<string, string> = {
  'POST /users': 'the username or the email is taken (compared ignoring case)',
  'POST /connections': 'a connection with that user already exists',
  'POST /tags/create': 'a tag of that type with that name exists (compared ignoring case and accents)',
  'PUT /tags/{tag_uuid}/update': 'a tag of that type with that name exists',
  'POST /tag-association': 'the caller already associated that tag with that target',
  'POST /tag-associations/{tag_association_uuid}': 'the update would duplicate an association',
  'PATCH /tag-associations/{tag_association_uuid}': 'the update would duplicate an association',
  'POST /posts/{uuid}/emotions':
    'a reaction that your own take-back removed three times while it was written (PostgreSQL); send it again',
  'POST /comments/{uuid}/emotions':
    'a reaction that your own take-back removed three times while it was written (PostgreSQL); send it again',
};

const EXAMPLE_UUID = '01a20185-f906-7160-b5dd-42e27955ddcf';

/** Example request bodies of the operations a newcomer calls first (the others get generated ones). */
const BODY_EXAMPLES: Record<string, unknown> = {
  'POST /oauth/token': { grant_type: 'client_credentials' },
  'POST /users': {
    username: 'ada',
    email: 'ada@example.com',
    password: 'correct horse battery staple',
    display_name: 'Ada',
    language: 'en',
  },
  'POST /posts': {
    body: 'Learning this API one curl at a time #FirstSteps',
    visibility: 'public',
    language: 'en',
  },
  'POST /posts/{uuid}/comments': { body: 'Welcome aboard, @ada!' },
  'POST /posts/{uuid}/emotions': { name: 'like' },
  'POST /comments/{uuid}/emotions': { name: 'love' },
  'POST /connections': { user_uuid: EXAMPLE_UUID },
  'POST /networks': { name: 'Climbers of Lyon', description: 'Weekend climbing trips' },
  'POST /messages': { recipient_uuid: EXAMPLE_UUID, body: 'See you on Saturday?' },
};

/** Example values of query parameters, so the try-it console starts from a working request. */
const QUERY_EXAMPLES: Record<string, unknown> = { query: 'hello' };

const ACCESS_TEXT: Record<string, string> = {
  public: '**Access: Public**: a guest token or a user token.',
  logged: '**Access: Logged**: a user token (password grant); a guest token answers 403 login_required.',
  owner:
    "**Access: Owner**: the user token of the item's owner; someone else's item answers 404 object_not_found.",
  admin: '**Access: Admin**: the user token of an administrator.',
};

interface RouteMeta {
  access: string;
  /** The switchable operations the route serves (none: always on). */
  operations: string[];
}

// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document is edited as plain JSON.
type Json = any;

function errorResponse(
  codes: ErrorCode[],
  schema: Json,
  extra: Partial<Record<ErrorCode, string>> = {},
): Json {
  return {
    description: codes.map((c) => `\`${c}\`: ${extra[c] ?? WHEN[c]}`).join('; '),
    content: {
      'application/json': {
        schema,
        examples: Object.fromEntries(
          codes.map((code) => [
            code,
            {
              summary: code,
              value: {
                status: 'ERROR',
                error: {
                  code,
                  message: EXAMPLE_MESSAGE[code],
                  request_id: '9b7a7f0e-2c1d-4a53-9d57-3f2f3c6f1a11',
                },
                timestamp: 1795300000,
              },
            },
          ]),
        ),
      },
    },
  };
}

/** Whether a body schema accepts only the empty object. */
function takesNothing(schema: Json | undefined): boolean {
  return (
    schema?.type === 'object' &&
    schema.additionalProperties === false &&
    Object.keys(schema.properties ?? {}).length === 0
  );
}

/** Adds access levels, per-status error codes with examples, and parameter and body examples to every operation. */
function documentOperations(doc: Json, meta: Map<string, RouteMeta>): Json {
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const [method, op] of Object.entries<Json>(item)) {
      const key = `${method.toUpperCase()} ${path}`;
      const route = meta.get(key);
      if (!route || typeof op !== 'object') continue;
      const parts = [op.description];
      if (ACCESS_TEXT[route.access]) parts.unshift(ACCESS_TEXT[route.access]);
      if (route.operations.length > 0) {
        const each = route.operations.length > 1 ? ' (each switches on its own part)' : '';
        parts.push(
          `Switched off by default (\`404 operation_disabled\`); an operator switches it on with \`ENABLED_OPERATIONS=${route.operations.join(',')}\`${each}.`,
        );
      }
      op.description = parts.filter(Boolean).join('\n\n');

      for (const p of op.parameters ?? []) {
        if (p.in === 'path' && /uuid/.test(p.name)) p.example ??= EXAMPLE_UUID;
        if (p.in === 'query' && p.name in QUERY_EXAMPLES) p.example ??= QUERY_EXAMPLES[p.name];
        if (p.in === 'query' && (p.name === 'sortby' || p.name === 'filterby')) {
          // Nested keys in the query string: sortby[name]=asc, filterby[name][like]=java%.
          p.style = 'deepObject';
          p.explode = true;
        }
      }
      // An operation without body properties (NoBody) takes a bare request: its body is optional, not required.
      const noBody =
        op.requestBody !== undefined &&
        Object.values<Json>(op.requestBody.content ?? {}).every((m) => takesNothing(m.schema));
      if (noBody) {
        op.requestBody.required = false;
        op.requestBody.description ??= 'None: send no body, or an empty JSON object.';
      }
      const bodyExample = BODY_EXAMPLES[key];
      if (bodyExample && op.requestBody?.content) {
        for (const media of Object.values<Json>(op.requestBody.content)) media.example ??= bodyExample;
      }

      if (path.startsWith('/oauth/')) continue; // RFC 6749 error shapes, documented by the route itself
      const generic = op.responses?.['4XX'];
      const schema = generic?.content?.['application/json']?.schema;
      if (!schema) continue;
      const byStatus = new Map<number, ErrorCode[]>();
      const add = (code: ErrorCode) => {
        const status = ERROR_STATUS[code];
        byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
      };
      // Every operation refuses unknown query parameters, so each can answer invalid_request.
      add('invalid_request');
      if (/^\/tag-associations\/\{/.test(path) && method === 'post') add('ambiguous_operation');
      if (route.access !== 'none') {
        add('unauthenticated');
        add('invalid_client');
      }
      if (route.access === 'logged' || route.access === 'owner' || route.access === 'admin')
        add('login_required');
      if (route.access === 'admin') add('forbidden');
      if (path.includes('{')) add('object_not_found');
      if (route.operations.length > 0) add('operation_disabled');
      if (CONFLICTS[key]) add('conflict');
      if (op.requestBody) {
        add('payload_too_large');
        add('unsupported_media_type');
      }
      if (route.access !== 'none') add('rate_limited');
      const extra = CONFLICTS[key] ? { conflict: CONFLICTS[key] } : {};
      // The rest stays under 4XX: another method on the path, and items a body refers to (a recipient, a network).
      const listed = new Set([...byStatus.values()].flat());
      const others: ErrorCode[] = ['method_not_allowed'];
      if (op.requestBody && !noBody && !listed.has('object_not_found')) others.unshift('object_not_found');
      // Success answers first, then each error status, then the catch-alls, in the order a reader scans them.
      const responses: Json = {};
      for (const [status, r] of Object.entries<Json>(op.responses)) {
        if (status !== '4XX' && status !== '5XX') responses[status] = r;
      }
      for (const [status, codes] of [...byStatus].sort((a, b) => a[0] - b[0])) {
        responses[String(status)] ??= errorResponse(codes, schema, extra);
      }
      responses['4XX'] = errorResponse(others, schema, {
        object_not_found: 'an item the body refers to does not exist or you may not see it',
      });
      if (op.responses['5XX']) responses['5XX'] = errorResponse(['internal_error', 'unavailable'], schema);
      op.responses = responses;
    }
  }
  return doc;
}

/** OpenAPI 3.1 generated from the route schemas, served at /openapi.json, and the reference page at /docs. */
async function openapiPlugin(app: FastifyInstance): Promise<void> {
  const meta = new Map<string, RouteMeta>();
  app.addHook('onRoute', (route) => {
    const config = (route.config ?? {}) as { access?: string; operation?: string; operations?: string[] };
    const operations = config.operation ? [config.operation] : (config.operations ?? []);
    const path = route.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    for (const m of Array.isArray(route.method) ? route.method : [route.method]) {
      meta.set(`${m} ${path}`, { access: config.access ?? 'none', operations });
    }
  });
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Social network API', version: '1.0.0', description: DESCRIPTION },
      servers: [{ url: '/' }],
      components: {
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description:
              'An access token from POST /oauth/token: a guest token (client_credentials) or a user token (password).',
          },
        },
      },
      security: [{ bearer: [] }],
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`) },
    transformObject: (documentObject) =>
      documentOperations((documentObject as { openapiObject: Json }).openapiObject, meta),
  });
  app.get('/openapi.json', { config: { access: 'none' }, schema: { hide: true } }, async () => app.swagger());
  // Browsers ask for /favicon.ico when they open /docs; an empty answer keeps a 404 out of their console.
  app.get('/favicon.ico', { config: { access: 'none' }, schema: { hide: true } }, async (_request, reply) =>
    reply.status(204).send(),
  );
  await app.register(scalar, {
    routePrefix: '/docs',
    configuration: {
      url: '/openapi.json',
      title: 'Social network API',
      // The page must work offline and send nothing anywhere but this server.
      withDefaultFonts: false,
      telemetry: false,
      agent: { disabled: true },
      mcp: { disabled: true },
      showDeveloperTools: 'never',
      hideClientButton: true,
      documentDownloadType: 'json',
      authentication: { preferredSecurityScheme: 'bearer' },
    },
  });
}

export default fp(openapiPlugin, { name: 'openapi' });
