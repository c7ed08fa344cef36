// What handing a read to a reader thread costs (docs/benchmarks.md, thirty-eighth session):
// `node bench/reader-handoff.ts [--db sqlite:./data/bench.db] [--rounds N] [--concurrency N]`.
// Runs the three statements of an uncached tag list page as a guest sees it (the count, the page, the association
// uuids; a signed-in viewer's have more conditions) through a ReaderPool of two threads, `--concurrency` rounds at a
// time, then the same statements on one connection of the main thread as the API's main connection runs them
// (`all()`, rows as objects), and prints the wall time and each thread's CPU time a round, from /proc/self/task.
import { readdirSync, readFileSync } from 'node:fs';
import { ReaderPool } from '../src/db/reader-pool.ts';
import { NodeSqliteDatabase } from '../src/db/sqlite-driver.ts';

const argv = process.argv.slice(2);
const arg = (flag: string) => {
  const i = argv.indexOf(flag);
  return i >= 0 ? argv[i + 1] : undefined;
};
const url = arg('--db') ?? 'sqlite:./data/bench.db';
if (!url.startsWith('sqlite:'))
  throw new Error('--db must name a SQLite file (sqlite:PATH): only SQLite has readers');
const path = url.slice('sqlite:'.length);
const rounds = Number(arg('--rounds') ?? 6000);
const concurrency = Number(arg('--concurrency') ?? 8);
// As the API's readers keep them (SQLITE_READER_CACHE_MB's default).
const CACHE_MB = 16;
// sysconf(_SC_CLK_TCK): 100 on every Linux Node runs on (as in run.ts).
const CLOCK_TICKS = 100;

interface Statement {
  sql: string;
  parameters: unknown[];
}

// The visibility condition of the tag list for a guest, as tag.repository.ts writes it.
const VISIBLE = `(tags.tag_type = 'emotion' or (tags.standalone = 1
  and not exists (select 1 from tag_associations ta where ta.tag_uuid = tags.uuid)))
  or exists (select 1 from tag_associations ta where ta.tag_uuid = tags.uuid and ta.audience = 'public')`;

/** The statements of `GET /tags?filterby[tag_type]=hashtag&sortby[associations_count]=desc&sortby[created_at]=asc`. */
function tagListStatements(db: NodeSqliteDatabase): Statement[] {
  const page = {
    sql: `select * from tags where (${VISIBLE}) and tag_type = ?
      order by associations_count desc nulls last, created_at asc nulls first, uuid asc limit ? offset ?`,
    parameters: ['hashtag', 20, 0],
  };
  const uuids = db
    .prepare(page.sql)
    .all(page.parameters)
    .map((row) => (row as { uuid: string }).uuid);
  if (uuids.length === 0) throw new Error(`no hashtags in ${path}: seed the database first (npm run seed)`);
  return [
    { sql: `select count(*) as n from tags where (${VISIBLE}) and tag_type = ?`, parameters: ['hashtag'] },
    page,
    {
      sql: `select t.uuid, (select string_agg(n.uuid, ',' order by n.created_at desc, n.uuid desc) from (
          select ta.uuid, ta.created_at from tag_associations ta where ta.tag_uuid = t.uuid and ta.audience = 'public'
          order by ta.created_at desc nulls last, ta.uuid desc limit ?) n) as associations
        from tags as t where t.uuid in (${uuids.map(() => '?').join(', ')})`,
      parameters: [100, ...uuids],
    },
  ];
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
    // The name may hold spaces and parentheses; the fields after it start at the third (state): utime and stime,
    // the 14th and 15th, are its 11th and 12th.
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ticks.set(`${id} ${name}`, Number(fields[11]) + Number(fields[12]));
  }
  return ticks;
}

/** Times `work` and prints its wall time and the CPU time of every thread that used any, in µs a round. */
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
  console.log(`${label}: ${wall.toFixed(0)} µs wall, ${total.toFixed(0)} µs CPU a round (${cpu.join(', ')})`);
}

const direct = new NodeSqliteDatabase({ path, synchronous: 'NORMAL', readOnly: true });
direct.raw.exec(`PRAGMA cache_size = ${-CACHE_MB * 1024}`);
const statements = tagListStatements(direct);
const pool = new ReaderPool({ path, size: 2, cacheMb: CACHE_MB });
try {
  const round = async () => {
    for (const s of statements) await pool.query(s.sql, s.parameters);
  };
  // Both readers started, their statements prepared and their caches filled.
  await Promise.all(Array.from({ length: 500 }, round));
  let next = 0;
  await measure(`through a ReaderPool of 2, ${concurrency} rounds at a time`, async () => {
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next++ < rounds) await round();
      }),
    );
  });
  for (let i = 0; i < 500; i++) for (const s of statements) direct.prepare(s.sql).all(s.parameters);
  await measure('on one connection of the main thread', () => {
    for (let i = 0; i < rounds; i++) {
      for (const s of statements) direct.prepare(s.sql).all(s.parameters);
    }
  });
} finally {
  await pool.close();
  direct.raw.close();
}
