// A Fastify app whose /huge read returns more rows than a small reader heap holds, through a ReaderPool of its own.
// Run as a script (`node [V8 heap flags] test/platform/huge-read.ts DB_PATH`) it prints the statuses of /huge and
// then /small, and the errors behind them, as JSON: V8's heap flags are process-wide, so a test that gives them
// needs a process of its own.
import Fastify, { type FastifyInstance } from 'fastify';
import { Kysely, sql } from 'kysely';
import type { Database } from '../../src/db/database.ts';
import { ReaderPool, ReaderPoolDialect } from '../../src/db/reader-pool.ts';
import { installErrorHandler } from '../../src/http/error-handler.ts';

/**
 * The readers' heap in these tests. A reader's start-up alone fills about 14 MB of the spaces the old-generation
 * limit counts (old, large-object, trusted and code space, measured with v8.getHeapSpaceStatistics), so a 16 MB
 * limit left about 2 MB. Once, under CI's coverage run, the small read after the huge one answered 503 too: most
 * likely its replacement reader died of its own start-up (not reproduced in 80 tries at 16 MB; a failure now prints
 * the errors behind the answers).
 */
export const TEST_READER_HEAP_MB = 48;

/** The app and its reader pool (one thread of `heapMb`); /huge reads `rows` rows of 200 characters. */
export function hugeReadApp(path: string, heapMb: number, rows: number): FastifyInstance {
  const pool = new ReaderPool({ path, size: 1, heapMb });
  const readDb = new Kysely<Database>({ dialect: new ReaderPoolDialect(pool) });
  const app = Fastify({ logger: false });
  installErrorHandler(app);
  app.get('/huge', async () => {
    const r = await sql<{ x: number }>`
      with recursive c(x) as (select 1 union all select x + 1 from c where x < ${rows})
      select x, hex(zeroblob(100)) as s from c`.execute(readDb);
    return { rows: r.rows.length };
  });
  app.get('/small', async () => (await sql<{ n: number }>`select 1 as n`.execute(readDb)).rows);
  app.addHook('onClose', async () => readDb.destroy());
  return app;
}

if (import.meta.main) {
  const app = hugeReadApp(process.argv[2] as string, TEST_READER_HEAP_MB, 400_000);
  // The causes behind the answers (a 503's body says only "retry"), for the test's failure message.
  const errors: string[] = [];
  app.addHook('onError', async (request, _reply, err) => {
    errors.push(`${request.url}: ${err.message}`);
  });
  try {
    const huge = await app.inject({ method: 'GET', url: '/huge' });
    const small = await app.inject({ method: 'GET', url: '/small' });
    console.log(
      JSON.stringify({ huge: huge.statusCode, small: small.statusCode, smallBody: small.body, errors }),
    );
  } finally {
    await app.close();
  }
}
