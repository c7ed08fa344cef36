import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Redis } from 'ioredis';
import type { Context } from '../../context.ts';
import { type LoginLimiter, memoryLoginLimiter, redisLoginLimiter } from './login-limiter.ts';
import oauthRoutes from './oauth.routes.ts';
import rateLimitPlugin from './rate-limit.plugin.ts';
import { scheduleTokenPurge } from './token-purge.ts';

/**
 * The auth module's routes: the API-wide rate limit (registered on the root instance, hence fastify-plugin, and
 * first in the module list so it covers every module's routes), the OAuth endpoints and the purge of expired tokens.
 */
async function authRoutes(app: FastifyInstance, opts: { ctx: Context }): Promise<void> {
  const { ctx } = opts;
  const prefix = ctx.config.REDIS_KEY_PREFIX;
  let redis: Redis | undefined;
  if (ctx.config.REDIS_URL) {
    redis = new Redis(ctx.config.REDIS_URL, { maxRetriesPerRequest: 2, connectTimeout: 2_000 });
    const client = redis;
    let warned = 0;
    client.on('error', (err) => {
      // ioredis reconnects by itself; log now and then, not on every retry.
      if (Date.now() - warned > 30_000) {
        warned = Date.now();
        app.log.warn({ err: err.message }, 'redis unreachable; rate limits degrade until it is back');
      }
    });
    app.addHook('onClose', async () => {
      await client.quit().catch(() => client.disconnect());
    });
  }
  await app.register(rateLimitPlugin, { ctx, redis, prefix });
  const limiter: LoginLimiter = redis
    ? redisLoginLimiter(redis, ctx.config.LOGIN_FAILURES_PER_MINUTE, `${prefix}login:`)
    : memoryLoginLimiter(ctx.config.LOGIN_FAILURES_PER_MINUTE);
  await app.register(oauthRoutes, { ctx, limiter });
  scheduleTokenPurge(app, ctx);
}

export default fp(authRoutes, { name: 'auth-routes' });
