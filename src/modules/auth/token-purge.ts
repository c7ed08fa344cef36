import type { FastifyInstance } from 'fastify';
import type { Context } from '../../context.ts';
import { deleteExpiredTokens } from './auth.repository.ts';

/** Tokens deleted per statement: short transactions, so writes waiting behind one wait little. */
const PURGE_BATCH = 2000;

/**
 * Deletes the expired tokens no check needs any more (auth.repository's deleteExpiredTokens), a batch per
 * transaction, until none is left or `maxBatches` ran; returns how many went. Without it every guest token, login
 * and refresh would stay in the table for good.
 */
export async function purgeExpiredTokens(ctx: Context, now = new Date(), maxBatches = 50): Promise<number> {
  const cutoff = now.toISOString();
  let total = 0;
  for (let i = 0; i < maxBatches; i++) {
    const deleted = await ctx.db
      .transaction()
      .execute((trx) => deleteExpiredTokens(trx, cutoff, PURGE_BATCH));
    total += deleted;
    if (deleted < PURGE_BATCH) break;
  }
  return total;
}

/**
 * Purges expired tokens every TOKEN_PURGE_INTERVAL_SECONDS while the app runs (0: never), starting one interval
 * after it is ready; a purge in flight is awaited before the app closes. Each process of a deployment runs its own: the deletes
 * are idempotent.
 */
export function scheduleTokenPurge(app: FastifyInstance, ctx: Context): void {
  const intervalMs = ctx.config.TOKEN_PURGE_INTERVAL_SECONDS * 1000;
  if (intervalMs === 0) return;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let closed = false;
  const tick = () => {
    running = purgeExpiredTokens(ctx)
      .then((deleted) => {
        if (deleted > 0) app.log.info({ deleted }, 'expired tokens purged');
      })
      .catch((err) => app.log.warn({ err }, 'expired tokens not purged; trying again next interval'))
      .finally(() => {
        running = undefined;
        if (!closed) timer = setTimeout(tick, intervalMs).unref();
      });
  };
  app.addHook('onReady', async () => {
    timer = setTimeout(tick, intervalMs).unref();
  });
  // preClose: before the database handle closes in an onClose hook.
  app.addHook('preClose', async () => {
    closed = true;
    clearTimeout(timer);
    await running;
  });
}
