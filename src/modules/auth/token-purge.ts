import type { FastifyInstance } from 'fastify';
import type { Context } from '../../context.ts';
import { deleteExpiredTokens } from './auth.repository.ts';

/** Tokens deleted per statement: short transactions, so writes waiting behind one wait little. */
const PURGE_BATCH = 2000;

/** Batches of one run; a run that deletes this many more goes on after a short pause instead of an interval. */
const BATCHES_PER_RUN = 50;

/**
 * Deletes expired tokens (auth.repository's deleteExpiredTokens), a batch per transaction, until none is left,
 * `maxBatches` ran or `stopped()` says so between batches; returns how many went and whether any were left. Without
 * it every guest token, login and refresh would stay in the table for good.
 */
export async function purgeExpiredTokens(
  ctx: Context,
  now = new Date(),
  maxBatches = BATCHES_PER_RUN,
  stopped: () => boolean = () => false,
): Promise<{ deleted: number; more: boolean }> {
  const cutoff = now.toISOString();
  let deleted = 0;
  for (let i = 0; i < maxBatches && !stopped(); i++) {
    const n = await ctx.db.transaction().execute((trx) => deleteExpiredTokens(trx, cutoff, PURGE_BATCH));
    deleted += n;
    if (n < PURGE_BATCH) return { deleted, more: false };
  }
  return { deleted, more: true };
}

/**
 * Purges expired tokens every TOKEN_PURGE_INTERVAL_SECONDS while the app runs (0: never). The first run comes at a
 * random point of the first interval, so processes started together do not purge together and one restarted more
 * often than the interval still purges; a run that left tokens behind goes on a second later. Closing waits for the
 * batch in flight only. Each process of a deployment runs its own: the deletes are idempotent.
 */
export function scheduleTokenPurge(app: FastifyInstance, ctx: Context): void {
  const intervalMs = ctx.config.TOKEN_PURGE_INTERVAL_SECONDS * 1000;
  if (intervalMs === 0) return;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let closed = false;
  const schedule = (ms: number) => {
    if (!closed) timer = setTimeout(tick, ms).unref();
  };
  const tick = () => {
    running = purgeExpiredTokens(ctx, new Date(), BATCHES_PER_RUN, () => closed)
      .then(({ deleted, more }) => {
        if (deleted > 0) app.log.info({ deleted, more }, 'expired tokens purged');
        schedule(more ? 1000 : intervalMs);
      })
      .catch((err) => {
        app.log.warn({ err }, 'expired tokens not purged; trying again next interval');
        schedule(intervalMs);
      })
      .finally(() => {
        running = undefined;
      });
  };
  app.addHook('onReady', async () => {
    schedule(Math.ceil(Math.random() * intervalMs));
  });
  // preClose: before the database handle closes in an onClose hook.
  app.addHook('preClose', async () => {
    closed = true;
    clearTimeout(timer);
    await running;
  });
}
