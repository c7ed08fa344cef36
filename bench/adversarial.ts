// Adversarial requests against a seeded database (docs/reliability.md, Part B, resource limits):
//   npm run bench:adversarial -- --db sqlite:./data/bench.db [--per-kind 100] [--concurrency 4] [--out FILE] [--warm | --cold]
// Starts the API on the database in its own process, then sends, per kind: leading-wildcard `like` filters on every
// text property of every list, sorts on every sortable property at the deepest offset, 100-uuid lists and
// 200-character searches (plus searches at the maximum offset). It reports p50/p99/max latency per kind, the latency
// of cheap requests (GET /health, GET /tags/{uuid}) sent at the same time, and the server's own event-loop delay
// p99 (perf_hooks.monitorEventLoopDelay through prom-client's nodejs_eventloop_lag_p99_seconds on /metrics).
// The list of operations and their sortable/filterable properties comes from /openapi.json.
import { writeFileSync } from 'node:fs';
import { sql } from 'kysely';
import { urlWithoutCredentials } from '../src/config.ts';
import { connectDatabase } from '../src/db/connect.ts';
import { LIST_MAX_OFFSET } from '../src/http/paging.ts';
import { CLIENT, call, kill, login, startServer } from '../test/reliability/crash-harness.ts';
import { operationsOf } from '../test/reliability/openapi-model.ts';
import { evictDatabase, warmDatabase } from './page-cache.ts';

function arg(flag: string, fallback: string): string {
  const i = process.argv.indexOf(flag);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
}

const DB = arg('--db', process.env.DATABASE_URL ?? 'sqlite:./data/bench.db');
const PER_KIND = Number(arg('--per-kind', '60'));
const CONCURRENCY = Number(arg('--concurrency', '4'));
const OUT = arg('--out', '');
/** Read the database's files once before measuring (see warmDatabase). */
const WARM = process.argv.includes('--warm');
/** SQLite: drop the database's files from the page cache before each kind (see evictDatabase). */
const COLD = process.argv.includes('--cold');

interface Sample {
  kind: string;
  url: string;
  ms: number;
  status: number;
}

function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

async function timed(
  base: string,
  url: string,
  token: string,
): Promise<{ ms: number; status: number; body: string }> {
  const started = performance.now();
  const res = await fetch(`${base}${url}`, { headers: { authorization: `Bearer ${token}` } });
  const body = await res.text();
  return { ms: performance.now() - started, status: res.status, body };
}

async function eventLoopP99(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const m = /^nodejs_eventloop_lag_p99_seconds\s+([0-9.e+-]+)/m.exec(text);
  return m ? Number(m[1]) * 1000 : Number.NaN;
}

function pick<T>(xs: T[]): T {
  return xs[Math.floor(Math.random() * xs.length)] as T;
}

async function main(): Promise<void> {
  // Words and uuids of the world, read directly (the API has no "random sample" operation).
  const handle = connectDatabase(DB, { poolSize: 2 });
  const db = handle.db;
  const bodies = (await sql<{ body: string }>`SELECT body FROM posts ORDER BY uuid LIMIT 500`.execute(db))
    .rows;
  const words = [
    ...new Set(bodies.flatMap((b) => b.body.split(/\s+/)).filter((w) => /^\p{L}{3,}$/u.test(w))),
  ];
  const uuidsOf = async (table: string) =>
    (
      await sql<{ uuid: string }>`SELECT uuid FROM ${sql.table(table)} ORDER BY uuid DESC LIMIT 1000`.execute(
        db,
      )
    ).rows.map((r) => r.uuid);
  const pools: Record<string, string[]> = {
    '/tags': await uuidsOf('tags'),
    '/tag-associations': await uuidsOf('tag_associations'),
    '/karma': await uuidsOf('karma'),
    '/connections': await uuidsOf('connections'),
  };
  const counts = Object.fromEntries(
    await Promise.all(
      ['posts', 'users', 'tags', 'tag_associations', 'karma', 'comments'].map(async (t) => [
        t,
        Number((await sql<{ n: number }>`SELECT count(*) AS n FROM ${sql.table(t)}`.execute(db)).rows[0]?.n),
      ]),
    ),
  );
  if (WARM) console.log(`warmed the database: ${await warmDatabase(DB, db, handle.dialect)}`);
  if (COLD && handle.dialect !== 'sqlite') throw new Error('--cold evicts SQLite files only');
  await db.destroy();
  console.log(`world: ${JSON.stringify(counts)}`);

  const server = await startServer({
    DATABASE_URL: DB,
    BOOTSTRAP_CLIENT: `${CLIENT.id}:${CLIENT.secret}`,
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '100000000',
  });
  try {
    const basic = `Basic ${Buffer.from(`${CLIENT.id}:${CLIENT.secret}`).toString('base64')}`;
    const guest = (
      await call(server.base, 'POST', '/oauth/token', basic, { grant_type: 'client_credentials' }, true)
    ).body.access_token as string;
    const user = await login(server.base, 'bench_user', 'password123');
    const doc = (await call(server.base, 'GET', '/openapi.json', null)).body;
    const ops = operationsOf(doc);
    const lists = ops.filter((o) => o.method === 'GET' && o.sortable.length > 0);
    const searches = ops.filter((o) => o.method === 'GET' && o.path.startsWith('/search'));
    const tokenFor = (path: string) =>
      ['/karma', '/connections', '/search/friends', '/search/mentions'].includes(path) ? user : guest;

    // Build the adversarial requests per kind.
    const kinds: Record<string, string[]> = {
      'like-leading-wildcard': [],
      'sort-deepest-offset': [],
      'uuids-100': [],
      'search-200-chars': [],
      'search-max-offset': [],
    };
    for (const op of lists) {
      const probe = await timed(server.base, `${op.path}?limit=1`, tokenFor(op.path));
      const total = Number(JSON.parse(probe.body).count?.total ?? 0);
      for (const prop of op.filterable) {
        const url = `${op.path}?filterby[${prop}][like]=${encodeURIComponent(`%${pick(words).slice(1, 3)}%`)}`;
        const r = await timed(server.base, url, tokenFor(op.path));
        if (r.status === 200) kinds['like-leading-wildcard']?.push(`${op.path}?filterby[${prop}][like]=`);
      }
      // The last page, or the deepest page a list accepts (LIST_MAX_OFFSET).
      const deepest = Math.max(0, Math.min(total - 100, LIST_MAX_OFFSET));
      for (const prop of op.sortable) {
        for (const dir of ['asc', 'desc']) {
          kinds['sort-deepest-offset']?.push(`${op.path}?sortby[${prop}]=${dir}&limit=100&offset=${deepest}`);
        }
      }
      if (pools[op.path]?.length) kinds['uuids-100']?.push(`${op.path}?uuids=`);
    }
    for (const op of searches) {
      kinds['search-200-chars']?.push(`${op.path}?query=`);
      if (op.params.some((p) => p.name === 'offset'))
        kinds['search-max-offset']?.push(`${op.path}?offset=9900&limit=100&query=`);
    }
    const concrete = (kind: string, template: string): string => {
      if (kind === 'like-leading-wildcard')
        return `${template}${encodeURIComponent(`%${pick(words).slice(1, 4)}%`)}`;
      if (kind === 'uuids-100') {
        const pool = pools[template.split('?')[0] as string] ?? [];
        return `${template}${Array.from({ length: 100 }, () => pick(pool)).join(',')}`;
      }
      if (kind === 'search-200-chars') {
        // The longest query there is: 200 characters in the 16 words a query may hold (more is a 400), the last
        // made of several words run together.
        const q = Array.from({ length: 15 }, () => pick(words)).join(' ');
        let last = '';
        while (q.length + 1 + last.length < 200) last += pick(words);
        return `${template}${encodeURIComponent(`${q} ${last}`.slice(0, 200))}`;
      }
      if (kind === 'search-max-offset') return `${template}${encodeURIComponent(pick(words).slice(0, 3))}`;
      return template;
    };

    // Cheap requests run all along; their latency and the server's event-loop delay are what others would feel.
    await eventLoopP99(server.base); // resets the server's histogram
    const cheap: number[] = [];
    const tagUuid = pools['/tags']?.[0] ?? '';
    let running = true;
    const cheapLoop = (async () => {
      while (running) {
        const r = await timed(server.base, Math.random() < 0.5 ? '/health' : `/tags/${tagUuid}`, guest);
        cheap.push(r.ms);
        await new Promise((res) => setTimeout(res, 5));
      }
    })();

    const samples: Sample[] = [];
    const loopLag: Record<string, number> = {};
    for (const [kind, templates] of Object.entries(kinds)) {
      if (templates.length === 0) continue;
      if (COLD) evictDatabase(DB);
      await eventLoopP99(server.base);
      const queue = Array.from({ length: Math.max(PER_KIND, templates.length) }, (_, i) =>
        concrete(kind, templates[i % templates.length] as string),
      );
      const worker = async () => {
        for (let url = queue.shift(); url !== undefined; url = queue.shift()) {
          const path = url.split('?')[0] as string;
          const r = await timed(server.base, url, tokenFor(path));
          samples.push({ kind, url, ms: r.ms, status: r.status });
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
      loopLag[kind] = await eventLoopP99(server.base);
    }
    running = false;
    await cheapLoop;

    const rows = Object.keys(kinds)
      .filter((k) => samples.some((s) => s.kind === k))
      .map((kind) => {
        const ks = samples.filter((s) => s.kind === kind);
        const ms = ks.map((s) => s.ms);
        const worst = ks.reduce((a, b) => (b.ms > a.ms ? b : a));
        const statuses: Record<string, number> = {};
        for (const s of ks) statuses[s.status] = (statuses[s.status] ?? 0) + 1;
        return {
          kind,
          requests: ks.length,
          p50: Math.round(percentile(ms, 50)),
          p99: Math.round(percentile(ms, 99)),
          max: Math.round(worst.ms),
          eventLoopP99: Math.round(loopLag[kind] ?? Number.NaN),
          statuses,
          slowest: worst.url.slice(0, 160),
        };
      });
    const result = {
      db: urlWithoutCredentials(DB),
      warmed: WARM,
      cold: COLD,
      world: counts,
      concurrency: CONCURRENCY,
      rows,
      cheap: {
        requests: cheap.length,
        p50: Math.round(percentile(cheap, 50)),
        p99: Math.round(percentile(cheap, 99)),
        max: Math.round(Math.max(...cheap)),
      },
    };
    console.log(
      '| kind | requests | p50 ms | p99 ms | max ms | server event-loop p99 ms | statuses | slowest |',
    );
    console.log('|---|---|---|---|---|---|---|---|');
    for (const r of rows) {
      console.log(
        `| ${r.kind} | ${r.requests} | ${r.p50} | ${r.p99} | ${r.max} | ${r.eventLoopP99} | ${JSON.stringify(r.statuses)} | \`${r.slowest}\` |`,
      );
    }
    console.log(`cheap requests alongside: ${JSON.stringify(result.cheap)}`);
    // Per operation and kind, to show where the time goes.
    const byPath = new Map<string, number[]>();
    for (const s of samples) {
      const key = `${s.kind} ${s.url.split('?')[0]} ${(s.url.match(/(sortby|filterby)\[[a-z_]+\]/) ?? [''])[0]}`;
      byPath.set(key, [...(byPath.get(key) ?? []), s.ms]);
    }
    const slow = [...byPath.entries()]
      .map(([key, ms]) => ({ key, n: ms.length, p99: Math.round(percentile(ms, 99)) }))
      .sort((a, b) => b.p99 - a.p99);
    console.log('slowest operations (kind, path, property): p99 ms over n requests');
    for (const x of slow.slice(0, 15)) console.log(`  ${x.key}: ${x.p99} ms (n=${x.n})`);
    Object.assign(result, { byOperation: slow });
    if (OUT) writeFileSync(OUT, `${JSON.stringify(result, null, 2)}\n`);
  } finally {
    await kill(server);
  }
}

await main();
