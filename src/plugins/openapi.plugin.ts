import swagger from '@fastify/swagger';
import scalar from '@scalar/fastify-api-reference';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ERROR_STATUS } from '../http/errors.ts';

const DESCRIPTION = `Social network back end: search, karma, tags and tag associations.

**Authentication.** Every operation except /oauth/*, /health, /ready, /docs, /openapi.json and /metrics needs
\`Authorization: Bearer TOKEN\`. Get a guest token with the client credentials grant, or a user token with the
password grant (first-party clients only), from \`POST /oauth/token\`.

**Envelope.** Success: \`{"status":"OK","data":...,"count":{...},"timestamp":...}\`. Errors:
\`{"status":"ERROR","error":{"code","message","details"},"timestamp"}\` with these codes:
${Object.entries(ERROR_STATUS)
  .map(([code, status]) => `\`${code}\` (${status})`)
  .join(', ')}.`;

/** OpenAPI 3.1 generated from the route schemas, served at /openapi.json, and the reference page at /docs. */
async function openapiPlugin(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Social network API', version: '1.0.0', description: DESCRIPTION },
      servers: [{ url: '/' }],
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'Access token from POST /oauth/token' },
        },
      },
      security: [{ bearer: [] }],
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });
  app.get('/openapi.json', { config: { access: 'none' }, schema: { hide: true } }, async () => app.swagger());
  await app.register(scalar, {
    routePrefix: '/docs',
    configuration: { url: '/openapi.json', title: 'Social network API' },
  });
}

export default fp(openapiPlugin, { name: 'openapi' });
