// In-process latency of every search operation, one request at a time (issue 8: "p99 under 50 ms in process"):
// `node bench/search-latency.ts --db URL [--runs N] [--cache off|on] [--only REGEX] [--stats-rare N] [--stats-dense SHARE]`.
// Builds the app on a seeded database (migrating it first), then times each query through app.inject as a guest and
// as bench_user, after warm-up requests, ten of them at once (so the pooled connections the timed requests reuse have
// run the query before): `--runs` passes over its queries (default 10), and at least 200 requests, so a p99 is not
// the slowest request's. The answer cache is off unless `--cache on`: a repeated query would otherwise time the
// cache. Prints a Markdown table: p50, p99 and max latency, CPU per request (every thread of the process) and the
// largest event-loop delay seen meanwhile. `--stats-rare N` sets the bound under which PostgreSQL's
// statistics call a word rare (searchTuning.statsRareMatches; 0 turns them off), `--stats-dense SHARE` the share of
// the documents from which they call a word dense (searchTuning.statsDenseShare; 0 turns it off), for comparisons.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { buildApp } from '../src/app.ts';
import { vocabulary } from '../src/cli/seed/vocabulary.ts';
import { BENCH_USERNAME } from '../src/cli/seed/world.ts';
import { argsWithoutCredentials, loadConfig } from '../src/config.ts';
import { connectDatabase } from '../src/db/connect.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { issueTokens, saveClient } from '../src/modules/auth/auth.service.ts';
import { searchTuning } from '../src/modules/search/search-ranking.service.ts';
import { commonestWords, rareWord } from './scenarios.ts';

const argv = process.argv.slice(2);
const arg = (flag: string) => {
  const i = argv.indexOf(flag);
  return i >= 0 ? argv[i + 1] : undefined;
};
const url = arg('--db') ?? 'sqlite:./data/bench.db';
const runs = Number(arg('--runs') ?? 10);
const only = arg('--only') ? new RegExp(arg('--only') as string) : undefined;
const cacheOff = arg('--cache') !== 'on';
/** The fewest requests timed per query and caller, whatever `--runs`. */
const MIN_SAMPLES = 200;
if (arg('--stats-rare') !== undefined) searchTuning.statsRareMatches = Number(arg('--stats-rare'));
if (arg('--stats-dense') !== undefined) searchTuning.statsDenseShare = Number(arg('--stats-dense'));

// Migrations may rewrite every row of a big world: no statement timeout for them.
const admin = connectDatabase(url, { poolSize: 1, statementTimeoutMs: 3_600_000 });
await migrateToLatest(admin.db, admin.dialect);
await admin.db.destroy();

const config = loadConfig(cacheOff ? { SEARCH_CACHE_ITEMS: '0' } : {}, {
  DATABASE_URL: url,
  LOG_LEVEL: 'silent',
  RATE_LIMIT_PER_MINUTE: 100_000_000,
});
const { app, ctx } = await buildApp(config, { logger: false, skipMigrations: true });
await app.ready();
const client = { id: 'search-latency', secret: 'search-latency-secret' };
await saveClient(ctx.db, { ...client, name: 'search latency bench', firstParty: true });
const guest = (await issueTokens(ctx, ctx.db, client.id, null)).access_token;
const bench = await ctx.db
  .selectFrom('users')
  .select('uuid')
  .where('username', '=', BENCH_USERNAME)
  .executeTakeFirst();
if (!bench) throw new Error(`no ${BENCH_USERNAME} in ${url}: seed the database first (npm run seed)`);
const user = (await issueTokens(ctx, ctx.db, client.id, bench.uuid)).access_token;

const q = (s: string) => encodeURIComponent(s);
const common = commonestWords();
// The deepest page (offset 9,900 of the 10,000 allowed) for 3-letter prefixes of words across the vocabulary's ranks,
// as bench/adversarial.ts asks it (docs/search.md, "Deep pages").
const prefixes = vocabulary('en', 1000)
  .filter((w) => w.length >= 3)
  .filter((_, i) => i % 50 === 0)
  .map((w) => w.slice(0, 3));
const deepest = (path: string, extra = '') =>
  prefixes.map((p) => `${path}?query=${q(p)}&offset=9900&limit=100${extra}`);
const cases: [string, string[]][] = [
  ['20 commonest words (rotating)', common.map((w) => `/search?query=${q(w)}`)],
  ['common word (love)', ['/search?query=love']],
  [`rare word (${rareWord()})`, [`/search?query=${q(rareWord())}`]],
  ['two words (coffee morning)', ['/search?query=coffee%20morning']],
  ['four common words', ['/search?query=the%20and%20of%20to']],
  ['prefix (mus)', ['/search?query=mus']],
  ['prefix (th)', ['/search?query=th']],
  ['language=en (the)', ['/search?query=the&language=en']],
  ['page 5 (the)', ['/search?query=the&page=5']],
  ['order=created_at (the)', ['/search?query=the&order=created_at']],
  ['/search/types (coffee)', ['/search/types?query=coffee&limit=5']],
  ['/search/types (5 commonest)', common.slice(0, 5).map((w) => `/search/types?query=${q(w)}&limit=5`)],
  ['/search/users prefix (ann)', ['/search/users?query=ann']],
  ['/search/users (the)', ['/search/users?query=the']],
  ['/search/networks (the)', ['/search/networks?query=the']],
  ['/search/hashtags (lo)', ['/search/hashtags?query=lo']],
  ['/search/complete (an)', ['/search/complete?query=an']],
  ['/search/complete (#lo)', ['/search/complete?query=%23lo']],
  ['offset 9,900, 3-letter prefixes', deepest('/search')],
  ['offset 9,900, prefixes, language=en', deepest('/search', '&language=en')],
  ['/search/types offset 9,900', deepest('/search/types')],
  ['/search/users offset 9,900', deepest('/search/users')],
  ['/search/networks offset 9,900', deepest('/search/networks')],
];

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
};
const loop = monitorEventLoopDelay({ resolution: 1 });
const get = async (path: string, token: string) => {
  const res = await app.inject({ method: 'GET', url: path, headers: { authorization: `Bearer ${token}` } });
  if (res.statusCode !== 200) throw new Error(`GET ${path}: ${res.statusCode} ${res.body.slice(0, 200)}`);
};

const rows: string[] = [];
for (const [name, paths] of cases) {
  if (only && !only.test(name)) continue;
  const cells: string[] = [];
  for (const token of [guest, user]) {
    for (const path of paths) await get(path, token);
    // Ten at once as well, so more than one pooled PostgreSQL connection has run the query: a backend's first
    // statements fill its catalog caches (80-240 ms for /search/types), a cost a server pays once per connection.
    await Promise.all(Array.from({ length: 10 }, (_, i) => get(paths[i % paths.length] as string, token)));
    const times: number[] = [];
    loop.reset();
    loop.enable();
    const cpu = process.cpuUsage();
    for (let i = 0; i < runs || times.length < MIN_SAMPLES; i++) {
      for (const path of paths) {
        const started = performance.now();
        await get(path, token);
        times.push(performance.now() - started);
      }
    }
    const used = process.cpuUsage(cpu);
    loop.disable();
    const f = (n: number) => n.toFixed(1);
    cells.push(
      `${f(percentile(times, 50))} / ${f(percentile(times, 99))} / ${f(Math.max(...times))} | ${f((used.user + used.system) / 1000 / times.length)} | ${f(loop.max / 1e6)}`,
    );
  }
  const row = `| ${name} | ${cells.join(' | ')} |`;
  rows.push(row);
  console.log(row);
}
await app.close();
console.log(
  [
    '',
    `Command: \`node bench/search-latency.ts ${argsWithoutCredentials(argv)}\` (${runs} runs per query and at least ${MIN_SAMPLES} requests, cache ${cacheOff ? 'off' : 'on'})`,
    '',
    '| query | guest p50 / p99 / max ms | guest CPU ms | guest event-loop max ms | bench_user p50 / p99 / max ms | bench_user CPU ms | bench_user event-loop max ms |',
    '|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n'),
);
