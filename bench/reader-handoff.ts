// What handing a read to a reader thread costs (docs/benchmarks.md, thirty-eighth session):
// `node bench/reader-handoff.ts [--db sqlite:./data/bench.db] [--rounds N] [--concurrency N]`.
// Reads an uncached tag list page as a guest (the count, the page, the association uuids: the repository calls
// tag.service.ts makes, in its order) through the API's reader pool of two threads, `--concurrency` pages at a time,
// then through a connection without readers, whose reads run on the main thread, and prints the wall time and each
// thread's CPU time a page, from /proc/self/task.
import { readdirSync, readFileSync } from 'node:fs';
import { apiConnectOptions } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { connectDatabase } from '../src/db/connect.ts';
import type { Db } from '../src/db/database.ts';
import { parseListQuery } from '../src/http/list-query.ts';
import { LIST_MAX_OFFSET } from '../src/http/paging.ts';
import { countTagRows, listTagRows, TAG_WHITELIST } from '../src/modules/tag/tag.repository.ts';
import { ASSOCIATIONS_IN_TAG } from '../src/modules/tag/tag.service.ts';
import { findNewestAssociationUuids } from '../src/modules/tag-association/tag-association.repository.ts';
import { CLOCK_TICKS, statTicks } from './proc-stat.ts';

const argv = process.argv.slice(2);
const arg = (flag: string) => {
  const i = argv.indexOf(flag);
  return i >= 0 ? argv[i + 1] : undefined;
};
const url = arg('--db') ?? 'sqlite:./data/bench.db';
if (!url.startsWith('sqlite:'))
  throw new Error('--db must name a SQLite file (sqlite:PATH): only SQLite has readers');
const rounds = Number(arg('--rounds') ?? 6000);
const concurrency = Number(arg('--concurrency') ?? 8);

/** `GET /tags?filterby[tag_type]=hashtag&sortby[associations_count]=desc&sortby[created_at]=asc&limit=20`. */
const TAG_LIST = parseListQuery(
  { filterby: { tag_type: 'hashtag' }, sortby: { associations_count: 'desc', created_at: 'asc' }, limit: 20 },
  TAG_WHITELIST,
  LIST_MAX_OFFSET,
);

/** One uncached tag list page as tag.service.ts reads it for a guest: the page and the count, then the uuids. */
async function readTagPage(db: Db): Promise<void> {
  const [rows] = await Promise.all([listTagRows(db, TAG_LIST, null), countTagRows(db, TAG_LIST, null)]);
  if (rows.length === 0) throw new Error(`no hashtags in ${url}: seed the database first (npm run seed)`);
  await findNewestAssociationUuids(
    db,
    'sqlite',
    rows.map((r) => r.uuid),
    ASSOCIATIONS_IN_TAG,
    null,
  );
}

/**
 * CPU time (user + system, in clock ticks) of each thread of this process, by thread id and name. A thread that ends
 * during a measurement loses its time; the readers and the main thread live through it.
 */
function threadTicks(): Map<string, number> {
  const ticks = new Map<string, number>();
  for (const id of readdirSync('/proc/self/task')) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/self/task/${id}/stat`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    ticks.set(`${id} ${name}`, statTicks(stat));
  }
  return ticks;
}

/** Times `work` and prints its wall time and the CPU time of every thread that used any, in µs a page. */
async function measure(label: string, work: () => Promise<void> | void): Promise<void> {
  const before = threadTicks();
  const started = performance.now();
  await work();
  const wall = ((performance.now() - started) * 1000) / rounds;
  const cpu: string[] = [];
  let total = 0;
  for (const [thread, after] of threadTicks()) {
    const us = ((after - (before.get(thread) ?? 0)) * 1e6) / CLOCK_TICKS / rounds;
    if (us <= 0) continue;
    total += us;
    cpu.push(`${thread.split(' ')[1]} ${us.toFixed(0)}`);
  }
  console.log(`${label}: ${wall.toFixed(0)} µs wall, ${total.toFixed(0)} µs CPU a page (${cpu.join(', ')})`);
}

// As the API opens it with the default settings (reader threads included); no writes, so no group commit.
const pooled = connectDatabase(url, { ...apiConnectOptions(loadConfig({})), groupCommit: false });
const direct = connectDatabase(url, { groupCommit: false });
try {
  /** `rounds` pages through `db`, `at` at a time, after 500 unmeasured ones (threads started, statements prepared). */
  const drive = async (label: string, db: Db, at: number) => {
    for (let i = 0; i < 500; i++) await readTagPage(db);
    let next = 0;
    await measure(label, async () => {
      await Promise.all(
        Array.from({ length: at }, async () => {
          while (next++ < rounds) await readTagPage(db);
        }),
      );
    });
  };
  await drive(`through a reader pool of 2, ${concurrency} pages at a time`, pooled.readDb, concurrency);
  await drive('on the main thread', direct.readDb, 1);
} finally {
  await pooled.readDb.destroy();
  await pooled.db.destroy();
  await direct.db.destroy();
}
