// The OS page cache under a benchmark: read a database into it (--warm) or drop a SQLite file from it (--cold).
// Used by bench/run.ts and bench/adversarial.ts.
import { execFileSync } from 'node:child_process';
import { createReadStream, existsSync } from 'node:fs';
import { type Kysely, sql } from 'kysely';
import type { Database } from '../src/db/database.ts';

/**
 * Reads every file of the database once, so the measured requests find its pages in the OS page cache. On these
 * virtual machines the host reclaims page cache that has not been touched for a few minutes (kdamond), and the
 * first deep page of a random prefix then reads its blocks from disk: 1 to 1.8 s instead of 0.1 to 0.4 s
 * (docs/reliability.md, "Resource limits, fifth session"). SQLite: the file and its WAL; PostgreSQL: every table and
 * index through pg_prewarm's `read` mode (the extension is created if it is missing, which needs a superuser).
 */
export async function warmDatabase(
  url: string,
  db: Kysely<Database>,
  dialect: 'sqlite' | 'postgres',
): Promise<string> {
  const started = performance.now();
  let bytes = 0;
  if (dialect === 'sqlite') {
    const file = url.replace(/^sqlite:/, '');
    for (const path of [file, `${file}-wal`]) {
      try {
        for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) bytes += chunk.length;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
  } else {
    await sql`create extension if not exists pg_prewarm`.execute(db);
    // Reading 7 GB from disk takes longer than the connection's statement timeout (10 s, src/db/connect.ts).
    const r = await db.transaction().execute(async (trx) => {
      await sql`set local statement_timeout = 0`.execute(trx);
      return sql<{ blocks: string }>`
        select coalesce(sum(pg_prewarm(r.oid, 'read')), 0) as blocks from (
          select oid from pg_class where relnamespace = 'public'::regnamespace and relkind in ('r', 'i')
          union all
          select reltoastrelid from pg_class where relnamespace = 'public'::regnamespace and reltoastrelid <> 0
        ) r`.execute(trx);
    });
    bytes = Number(r.rows[0]?.blocks ?? 0) * 8192;
  }
  return `read ${Math.round(bytes / 2 ** 20)} MB in ${Math.round(performance.now() - started)} ms`;
}

/**
 * Drops the SQLite database's file and WAL from the OS page cache (GNU dd's `iflag=nocache count=0` asks the kernel
 * to drop the whole file's clean pages, posix_fadvise DONTNEED; no privilege needed), so the next requests read
 * from disk as they do once this machine has taken its page cache back. The server's own SQLite page caches stay as
 * they are.
 */
export function evictDatabase(url: string): void {
  const file = url.replace(/^sqlite:/, '');
  for (const path of [file, `${file}-wal`]) {
    if (existsSync(path)) execFileSync('dd', [`if=${path}`, 'iflag=nocache', 'count=0', 'status=none']);
  }
}
