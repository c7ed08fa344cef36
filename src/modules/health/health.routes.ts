import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { Type } from 'typebox';
import type { Context } from '../../context.ts';
import { ApiError } from '../../http/errors.ts';

const Health = Type.Object(
  { status: Type.Literal('OK'), timestamp: Type.Integer() },
  { additionalProperties: false },
);

/** Liveness and readiness probes. */
export default async function healthRoutes(app: FastifyInstance, opts: { ctx: Context }): Promise<void> {
  app.get(
    '/health',
    {
      config: { access: 'none' },
      schema: {
        tags: ['health'],
        summary: 'Liveness: the process answers',
        security: [],
        response: { 200: Health },
      },
    },
    async () => ({ status: 'OK' as const, timestamp: Math.floor(Date.now() / 1000) }),
  );
  app.get(
    '/ready',
    {
      config: { access: 'none' },
      schema: {
        tags: ['health'],
        summary: 'Readiness: the database answers',
        security: [],
        response: { 200: Health },
      },
    },
    async () => {
      try {
        await sql`select 1`.execute(opts.ctx.db);
      } catch {
        throw new ApiError('unavailable', 'The database is not reachable.');
      }
      return { status: 'OK' as const, timestamp: Math.floor(Date.now() / 1000) };
    },
  );
}
