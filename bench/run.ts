// Benchmark harness: `npm run bench -- [--quick] [--db URL] [--duration S] [--connections N] [--workers N]
//   [--users N --posts N] [--label L] [--out FILE] [--like-runs N] [--only REGEX] [--no-warm] [--warmup S]
//   [--cpu-prof DIR] [--size-floors]`.
// Seeds the database when it is empty, starts the API on it in its own process (WORKERS=N), the floor server in
// another, drives both with autocannon from this process, times the Lemmy-style LIKE '%term%' searches on the same
// database in process, and writes its section of docs/benchmarks.md (other sections and notes stay).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { sql } from 'kysely';
import { BENCH_USERNAME } from '../src/cli/seed/world.ts';
import { argsWithoutCredentials, urlWithoutCredentials } from '../src/config.ts';
import { connectDatabase } from '../src/db/connect.ts';
import { createPostgresDatabaseIfMissing } from '../src/db/create-database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { compactIndex, vacuumWithIndexes } from '../src/modules/search/search-index.repository.ts';
import { searchTuning } from '../src/modules/search/search-ranking.service.ts';
import { warmDatabase } from './page-cache.ts';
import { CLOCK_TICKS, postgresCpuSeconds, statTicks } from './proc-stat.ts';
import { BENCH_POST_TEXT, NO_CACHE, type Scenario, scenarios, TAG_READ } from './scenarios.ts';

interface Options {
  quick: boolean;
  db: string;
  duration: number;
  connections: number;
  workers: number;
  users: number;
  posts: number;
  label: string;
  out: string;
  likeRuns: number;
  /** Only the scenarios whose name matches (a regular expression). */
  only: RegExp | undefined;
  /** Read the database into the OS page cache before the API starts (bench/page-cache.ts). */
  warm: boolean;
  /** Seconds each scenario (and the floor) runs unmeasured before its measured run. */
  warmup: number;
  /** Where the API writes V8 CPU profiles when it stops (`--cpu-prof DIR`), if anywhere. */
  cpuProf: string | undefined;
  /** After each read scenario, the floor answering that scenario's own answer (`--size-floors`). */
  sizeFloors: boolean;
}

function parseArgs(argv: string[]): Options {
  const get = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const quick = argv.includes('--quick');
  const db = get('--db') ?? (quick ? 'sqlite:./data/bench-quick.db' : 'sqlite:./data/bench.db');
  const workers = Number(get('--workers') ?? process.env.WORKERS ?? 1);
  const engine = db.startsWith('sqlite:') ? 'sqlite' : 'postgres';
  return {
    quick,
    db,
    duration: Number(get('--duration') ?? (quick ? 3 : 10)),
    connections: Number(get('--connections') ?? 50),
    workers,
    users: Number(get('--users') ?? (quick ? 1000 : 100_000)),
    posts: Number(get('--posts') ?? (quick ? 10_000 : 1_000_000)),
    label: get('--label') ?? (quick ? `quick-${engine}` : `${engine}-workers${workers}`),
    out: get('--out') ?? 'docs/benchmarks.md',
    likeRuns: Number(get('--like-runs') ?? (quick ? 20 : 10)),
    only: get('--only') === undefined ? undefined : new RegExp(get('--only') as string),
    // A database read cold from disk measures the disk: on SQLite a write's page misses stall the event loop (POST
    // /posts 300 a second with a p99 of 5.2 s, against 618 and 280 ms warm, on the same machine). The full runs in
    // docs/benchmarks.md were warmed, so a plain `npm run bench` measures what they did; `--warm` is still accepted.
    warm: !argv.includes('--no-warm'),
    warmup: Number(get('--warmup') ?? (quick ? 0 : 1)),
    // V8 CPU profiles of the API's processes, written to DIR when they stop (node --cpu-prof).
    cpuProf: get('--cpu-prof'),
    // A cached read's p99 is bounded by what sending its answer costs here (the tag list's is 20 times the tag's).
    sizeFloors: argv.includes('--size-floors'),
  };
}

const API_PORT = 3900;
const FLOOR_PORT = 3901;
const CLIENT = { id: 'bench', secret: 'bench-client-secret' };

function startProcess(args: string[], env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
}

/**
 * Read scenarios that get a floor of their own answer's size: cached plain GETs, one path, no load beside them (an
 * uncached read is bounded by its computation, far below any floor).
 */
function hasSizeFloor(s: Scenario): boolean {
  return (
    s.method === 'GET' && !s.requests && !s.connectionHeaders && !s.alongside && !s.headers['cache-control']
  );
}

/** A scenario's answer as its first request gets it, for a floor of that size. */
async function answerOf(base: string, s: Scenario): Promise<string> {
  const res = await fetch(`${base}${s.path}`, { headers: s.headers });
  if (!res.ok) throw new Error(`${s.name} answered ${res.status}`);
  return res.text();
}

/** The body of the tag read scenario's answer, for the floor to answer with. */
function tagAnswer(base: string, all: Scenario[]): Promise<string> {
  return answerOf(base, all.find((s) => s.name === TAG_READ) as Scenario);
}

/** A row of a floor run: the API's columns do not apply. */
function floorRow(name: string, result: autocannon.Result, ratio: string): Row {
  return {
    name,
    rps: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    max: result.latency.max,
    errors: result.errors,
    non2xx: result.non2xx,
    rss: Number.NaN,
    elP99: Number.NaN,
    cpuUs: Number.NaN,
    dbCpuUs: Number.NaN,
    ratio,
  };
}

async function waitFor(url: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    try {
      const r = await fetch(url);
      if (r.ok) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not come up`);
}

/**
 * CPU time (user and system, every thread) a process and its children (cluster workers) have used, in seconds:
 * per request, it tells a change's cost apart from the machine's speed of the moment, which moves throughput.
 */
function cpuSeconds(pid: number): number {
  return sumOverProcesses(pid, (p) => statTicks(readFileSync(`/proc/${p}/stat`, 'utf8'))) / CLOCK_TICKS;
}

/** A figure read from /proc for a process and each of its children (cluster workers), summed; NaN if one cannot be. */
function sumOverProcesses(pid: number, read: (pid: number) => number): number {
  let sum = 0;
  for (const p of [pid, ...childPids(pid)]) {
    try {
      sum += read(p);
    } catch {
      return Number.NaN; // not Linux, or the process is gone
    }
  }
  return sum;
}

function childPids(pid: number): number[] {
  try {
    return execFileSync('ps', ['--ppid', String(pid), '-o', 'pid='], { encoding: 'utf8' })
      .split('\n')
      .map((l) => Number(l.trim()))
      .filter((n) => n > 0);
  } catch {
    return []; // none: ps exits 1
  }
}

/** Resident set size of a process and its children (cluster workers), in MB. */
function rssMb(pid: number): number {
  try {
    const out = execFileSync('ps', ['--ppid', String(pid), '-p', String(pid), '-o', 'rss='], {
      encoding: 'utf8',
    });
    return Math.round(out.split('\n').reduce((s, l) => s + (Number(l.trim()) || 0), 0) / 1024);
  } catch {
    return Number.NaN;
  }
}

/**
 * The peak resident set size (VmHWM) of a process, plus its children's (cluster workers, each its own peak), in MB:
 * the most memory it held at any moment since it started, which a sample at a scenario's end can miss.
 */
function peakRssMb(pid: number): number {
  const kb = sumOverProcesses(pid, (p) =>
    Number(/^VmHWM:\s+(\d+)/m.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] ?? Number.NaN),
  );
  return Math.round(kb / 1024);
}

/**
 * Waits until the API answers /ready (a database round trip) within 50 ms again: requests autocannon gave up on may still be queued in
 * the API (node:sqlite runs on its event loop), and must not be billed to the next scenario. Returns the seconds.
 */
async function drain(base: string): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < 120_000) {
    const t = performance.now();
    try {
      const res = await fetch(`${base}/ready`, { signal: AbortSignal.timeout(30_000) });
      await res.arrayBuffer();
      if (performance.now() - t < 50) break;
    } catch {
      // still busy
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return Math.round((Date.now() - started) / 100) / 10;
}

/** The event-loop delay p99 since the last read (prom-client resets the histogram on each collect). */
async function eventLoopP99Ms(): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${API_PORT}/metrics`)).text();
  const m = /^nodejs_eventloop_lag_p99_seconds\s+([\d.e+-]+)/m.exec(text);
  return m ? Math.round(Number(m[1]) * 1000 * 10) / 10 : Number.NaN;
}

interface Row {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  max: number;
  errors: number;
  non2xx: number;
  rss: number;
  elP99: number;
  /** The API's CPU time (all its processes and threads) per request of the scenario, in microseconds. */
  cpuUs: number;
  /** On PostgreSQL, the server's CPU time (every `postgres` process here) per request, in microseconds. */
  dbCpuUs: number;
  ratio: string;
}

interface LikeRow {
  query: string;
  oursP50: number;
  likeP50: number;
  likeP99: number;
  matches: number;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;

/** Reads the whole database once (see warmDatabase), with its own connection. */
async function warm(url: string): Promise<string> {
  const handle = connectDatabase(url, { poolSize: 1 });
  try {
    return await warmDatabase(url, handle.db, handle.dialect);
  } finally {
    await handle.db.destroy();
  }
}

/** Seeds the database through the world generator when it has no users yet (creating a missing PostgreSQL one). */
async function seedIfEmpty(opts: Options): Promise<string> {
  const created = await createPostgresDatabaseIfMissing(opts.db);
  if (created) console.log(`created the database ${created}`);
  // Migrations (e.g. a reindex) may rewrite every row of a big world: no 10 s statement timeout here.
  const handle = connectDatabase(opts.db, { poolSize: 1, statementTimeoutMs: 3_600_000 });
  let users = 0;
  let posts = 0;
  try {
    await migrateToLatest(handle.db, handle.dialect);
    users = Number(
      (
        await handle.db
          .selectFrom('users')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
    posts = Number(
      (
        await handle.db
          .selectFrom('posts')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  } finally {
    await handle.db.destroy();
  }
  if (users > 0) return `existing world: ${users} users, ${posts} posts`;
  const args = [
    'src/cli/seed/main.ts',
    '--users',
    String(opts.users),
    '--posts',
    String(opts.posts),
    '--db',
    opts.db,
  ];
  console.log(`seeding: node ${argsWithoutCredentials(args)}`);
  const started = Date.now();
  const out = execFileSync(process.execPath, args, {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const seconds = Math.round((Date.now() - started) / 100) / 10;
  return `seeded by this run in ${seconds} s: ${out.trim().split('\n').pop()}`;
}

/**
 * Deletes, through the API, every post of bench_user that starts like the write scenario's (this run's and earlier
 * runs', whatever hashtag and mention they carried), then compacts the search index, so each run reads the world as
 * seeded: thousands of identical posts at the top of the index change what the reads after them measure (they are
 * the newest documents a search looks at first; docs/benchmarks.md, "Benchmarking").
 */
async function removeBenchPosts(opts: Options, list: Scenario[], base: string): Promise<number> {
  const isWrite = (s: Scenario | undefined) => s?.method === 'POST' && s.path === '/posts';
  const write = list.map((s) => (isWrite(s) ? s : s.alongside?.scenario)).find(isWrite);
  if (!write) return 0;
  const handle = connectDatabase(opts.db, { poolSize: 1, statementTimeoutMs: 600_000 });
  let removed = 0;
  try {
    // Posts acknowledged while a pass read the list come in the next one.
    for (let pass = 0; pass < 5; pass++) {
      const rows = await handle.db
        .selectFrom('posts')
        .innerJoin('users', 'users.uuid', 'posts.user_uuid')
        .select('posts.uuid')
        .where('users.username', '=', BENCH_USERNAME)
        .where('posts.body', 'like', `${BENCH_POST_TEXT}%`)
        .execute();
      if (rows.length === 0) break;
      const queue = rows.map((r) => r.uuid);
      const worker = async () => {
        for (let uuid = queue.pop(); uuid !== undefined; uuid = queue.pop()) {
          const res = await fetch(`${base}/posts/${uuid}/delete`, {
            method: 'POST',
            headers: { authorization: write.headers.authorization ?? '' },
          });
          await res.arrayBuffer();
          if (res.ok) removed++;
          else if (res.status !== 404) throw new Error(`deleting bench post ${uuid}: HTTP ${res.status}`);
        }
      };
      await Promise.all(Array.from({ length: 8 }, worker));
    }
    if (removed > 0) {
      // Deletes leave markers in FTS5's segments (and dead rows on PostgreSQL) that every later search reads past:
      // compacted as `npm run cli -- search compact` does (docs/search.md, "Keeping the index compact").
      const started = Date.now();
      const steps = await compactIndex(handle.db, handle.dialect, searchTuning.recentDocs);
      console.log(`compacted the search index: ${steps} merge steps in ${Date.now() - started} ms`);
      if (handle.dialect === 'postgres') {
        // The deleted posts' rows stay, dead, in the index ranges reads walk first (a tag's newest associations)
        // until autovacuum comes: uncached GET /tags/{uuid} went from 2,471 to 1,600 req/s after a few runs.
        await sql
          .raw(vacuumWithIndexes('posts, comments, tag_associations, tags, karma, users'))
          .execute(handle.db);
      }
    }
  } finally {
    await handle.db.destroy();
  }
  return removed;
}

/** Fewest sequential requests our side of the Lemmy comparison is timed over (LIKE takes `--like-runs`). */
const OURS_MIN_RUNS = 25;

/** The search done as Lemmy does it: a LIKE/ILIKE '%term%' scan over posts.body, newest 20, in process. */
async function likeBaseline(opts: Options, list: Scenario[], base: string, runs: number): Promise<LikeRow[]> {
  const handle = connectDatabase(opts.db, { poolSize: 1, statementTimeoutMs: 600_000 });
  const rows: LikeRow[] = [];
  try {
    for (const s of list) {
      if (!s.likeTerms) continue;
      const queries = s.requests ? s.likeTerms.map((t) => [t]) : [s.likeTerms];
      for (const terms of queries) {
        const path = `/search?query=${encodeURIComponent(terms.join(' '))}`;
        const ours: number[] = [];
        // Ours costs milliseconds a run where LIKE costs hundreds: its median is taken over more runs, so one slow
        // request in five does not decide it.
        for (let i = 0; i < Math.max(runs, OURS_MIN_RUNS); i++) {
          const t = performance.now();
          // Uncached: the same query repeated would otherwise be answered by the exact answer cache.
          const res = await fetch(`${base}${path}`, { headers: { ...s.headers, ...NO_CACHE } });
          await res.arrayBuffer();
          if (!res.ok) throw new Error(`GET ${path}: HTTP ${res.status}`);
          ours.push(performance.now() - t);
        }
        const like: number[] = [];
        let matches = 0;
        for (let i = 0; i < runs; i++) {
          const t = performance.now();
          let q = handle.db.selectFrom('posts').select(['uuid', 'body', 'created_at']);
          for (const term of terms) {
            q =
              handle.dialect === 'postgres'
                ? q.where(sql<boolean>`body ilike ${`%${term}%`}`)
                : q.where('body', 'like', `%${term}%`);
          }
          const found = await q
            .where('visibility', '=', 'public')
            .orderBy('created_at', 'desc')
            .limit(20)
            .execute();
          like.push(performance.now() - t);
          matches = found.length;
        }
        rows.push({
          query: terms.join(' '),
          oursP50: round(percentile(ours, 50)),
          likeP50: round(percentile(like, 50)),
          likeP99: round(percentile(like, 99)),
          matches,
        });
        console.log(
          `LIKE '%${terms.join(' ')}%': ${round(percentile(like, 50))} ms vs ours ${round(percentile(ours, 50))} ms`,
        );
      }
    }
  } finally {
    await handle.db.destroy();
  }
  return rows;
}

/** Replaces (or appends) this run's section of the output file, keeping every other section and the notes. */
function writeSection(file: string, label: string, body: string): void {
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    text = '# Benchmarks\n';
  }
  const start = `<!-- run:${label} -->`;
  const end = `<!-- /run:${label} -->`;
  const block = `${start}\n${body}\n${end}`;
  const i = text.indexOf(start);
  const j = text.indexOf(end);
  const next =
    i >= 0 && j > i
      ? `${text.slice(0, i)}${block}${text.slice(j + end.length)}`
      : `${text.trimEnd()}\n\n${block}\n`;
  writeFileSync(file, next);
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const started = Date.now();
  const world = await seedIfEmpty(opts);
  console.log(world);
  const warmed = opts.warm ? await warm(opts.db) : undefined;
  // The API's column counts SQLite's work (it runs inside the API); PostgreSQL's runs in its own processes.
  const dbCpuSeconds = opts.db.startsWith('sqlite:') ? () => Number.NaN : postgresCpuSeconds;
  if (warmed) console.log(`warmed the database: ${warmed}`);
  const env = {
    DATABASE_URL: opts.db,
    PORT: String(API_PORT),
    LOG_LEVEL: 'warn',
    BOOTSTRAP_CLIENT: `${CLIENT.id}:${CLIENT.secret}`,
    RATE_LIMIT_PER_MINUTE: '100000000',
    // bench_user and the many-users scenario's users log in once each.
    TOKEN_REQUESTS_PER_MINUTE: '1000',
    WORKERS: String(opts.workers),
  };
  const profile = opts.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProf}`] : [];
  const api = startProcess([...profile, 'src/server.ts'], env);
  let floor: ChildProcess | undefined;
  try {
    await waitFor(`http://127.0.0.1:${API_PORT}/ready`);
    const base = `http://127.0.0.1:${API_PORT}`;
    const all = await scenarios(base, CLIENT);
    const list = all.filter((s) => !opts.only || opts.only.test(s.name));
    // The issue's floor answers "a constant JSON of the same size" as the tag read: that read's own answer (4 KB
    // for a hashtag with 100 recent associations, where a fixed tag of 5 was 0.5 KB until the sixteenth session).
    const floorBody = await tagAnswer(base, all);
    const sized = opts.sizeFloors ? list.filter(hasSizeFloor) : [];
    const sizedBodies = await Promise.all(sized.map((s) => answerOf(base, s)));
    // A file, not the environment: the tag list's answer alone is 80 KB, near Linux's limit for one variable.
    const bodiesFile =
      sized.length > 0 ? join(tmpdir(), `bench-floor-bodies-${process.pid}.json`) : undefined;
    if (bodiesFile) writeFileSync(bodiesFile, JSON.stringify(sizedBodies));
    floor = startProcess(['bench/floor.ts', String(FLOOR_PORT)], {
      FLOOR_BODY: floorBody,
      ...(bodiesFile ? { FLOOR_BODIES_FILE: bodiesFile } : {}),
    });
    await waitFor(`http://127.0.0.1:${FLOOR_PORT}/floor`);
    if (bodiesFile) rmSync(bodiesFile, { force: true }); // read by the floor as it started
    console.log(`floor answers ${Buffer.byteLength(floorBody)} bytes, as GET /tags/{uuid} does`);
    const earlier = await removeBenchPosts(opts, list, base);
    if (earlier > 0) console.log(`removed ${earlier} posts left by earlier runs' POST scenario`);
    const rows: Row[] = [];
    // The writes driven beside a read have no row of their own: their failures are kept here.
    const failedBeside: string[] = [];
    const drive = (url: string, s?: Scenario, connections = opts.connections, duration = opts.duration) => {
      // Connection i of a many-users scenario sends the i-th user's headers.
      let next = 0;
      const perConnection = s?.connectionHeaders;
      return autocannon({
        url,
        duration,
        connections,
        method: s?.method ?? 'GET',
        headers: s?.headers,
        requests: s?.requests,
        ...(perConnection
          ? {
              setupClient: (client: { setHeaders: (h: Record<string, string>) => void }) => {
                client.setHeaders(perConnection[next++ % perConnection.length] as Record<string, string>);
              },
            }
          : {}),
      } as autocannon.Options);
    };

    // An unmeasured run first, so each measured run starts on code the JIT has compiled and an answer computed: a
    // server serves warm, and the first second of a cold one decided the p99 of a cached read (docs/benchmarks.md).
    const warmUp = async (url: string, s?: Scenario, connections = opts.connections) => {
      if (opts.warmup > 0) await drive(url, s, connections, opts.warmup);
    };
    await warmUp(`http://127.0.0.1:${FLOOR_PORT}/floor`);
    const floorResult = await drive(`http://127.0.0.1:${FLOOR_PORT}/floor`);
    const floorRps = floorResult.requests.average;
    rows.push(floorRow('floor: bare Fastify, constant JSON', floorResult, '1.00'));
    console.log(`floor: ${Math.round(floorRps)} req/s`);

    for (const s of list) {
      const waited = await drain(base);
      if (waited > 1)
        console.log(`(waited ${waited} s for the API to finish the previous scenario's backlog)`);
      const beside = s.alongside;
      await Promise.all([
        warmUp(`${base}${s.path}`, s),
        beside ? warmUp(`${base}${beside.scenario.path}`, beside.scenario, beside.connections) : undefined,
      ]);
      await drain(base);
      await eventLoopP99Ms(); // reading the metric resets its window
      const cpuBefore = cpuSeconds(api.pid as number);
      const dbCpuBefore = dbCpuSeconds();
      const [r, other] = await Promise.all([
        drive(`${base}${s.path}`, s),
        beside ? drive(`${base}${beside.scenario.path}`, beside.scenario, beside.connections) : undefined,
      ]);
      if (other) {
        console.log(
          `${s.name}: alongside, ${beside?.scenario.name} at ${Math.round(other.requests.average)}/s, non-2xx ${other.non2xx}`,
        );
      }
      const served = r.requests.total + (other?.requests.total ?? 0);
      const rss = rssMb(api.pid as number);
      const el = await eventLoopP99Ms();
      const row: Row = {
        name: s.name,
        rps: Math.round(r.requests.average),
        p50: r.latency.p50,
        p99: r.latency.p99,
        max: r.latency.max,
        errors: r.errors,
        non2xx: r.non2xx,
        rss,
        elP99: el,
        cpuUs: Math.round(((cpuSeconds(api.pid as number) - cpuBefore) * 1e6) / served),
        dbCpuUs: Math.round(((dbCpuSeconds() - dbCpuBefore) * 1e6) / served),
        ratio: s.method === 'POST' ? '-' : (r.requests.average / floorRps).toFixed(2),
      };
      if (other) row.name = `${s.name} (${Math.round(other.requests.average)} posts/s beside)`;
      if (other && (other.errors > 0 || other.non2xx > 0))
        failedBeside.push(
          `${beside?.scenario.name} beside ${s.name}: ${other.errors} errors, ${other.non2xx} non-2xx`,
        );
      rows.push(row);
      if (r.non2xx > 0) {
        const codes = Object.entries(
          (r as { statusCodeStats?: Record<string, { count: number }> }).statusCodeStats ?? {},
        )
          .map(([code, v]) => `${code}: ${v.count}`)
          .join(', ');
        console.log(`${s.name}: status codes ${codes}`);
        row.name = `${s.name} (status codes ${codes})`;
      }
      console.log(
        `${s.name}: ${Math.round(r.requests.average)} req/s p50 ${r.latency.p50} p99 ${r.latency.p99} ms, non-2xx ${r.non2xx}, errors ${r.errors}`,
      );
      const at = sized.indexOf(s);
      if (at >= 0) {
        const url = `http://127.0.0.1:${FLOOR_PORT}/floor/${at}`;
        await warmUp(url);
        const f = await drive(url);
        const bytes = Buffer.byteLength(sizedBodies[at] as string);
        rows.push(floorRow(`floor at this answer's size (${bytes} bytes)`, f, '-'));
        console.log(
          `floor at ${bytes} bytes: ${Math.round(f.requests.average)} req/s p99 ${f.latency.p99} ms`,
        );
      }
    }
    await drain(base);
    const written = await removeBenchPosts(opts, list, base);
    if (written > 0) console.log(`removed the ${written} posts of the POST scenario`);
    await drain(base);
    const likes = opts.likeRuns > 0 ? await likeBaseline(opts, list, base, opts.likeRuns) : [];

    const peakRss = peakRssMb(api.pid as number);
    const cpu = cpus()[0]?.model ?? 'unknown cpu';
    const command = `npm run bench -- ${argsWithoutCredentials(process.argv.slice(2))}`.trim();
    const reads = rows.slice(1).filter((r) => r.ratio !== '-');
    const md = [
      `## Run \`${opts.label}\``,
      '',
      `Command: \`${command}\``,
      '',
      `Machine: ${cpus().length} cores (${cpu}), ${Math.round(totalmem() / 2 ** 30)} GiB; Node ${process.version}; load average at the end ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}.`,
      `Database ${urlWithoutCredentials(opts.db)} (${world}); ${opts.connections} connections, ${opts.duration} s per scenario;`,
      ...(warmed
        ? [`Warmed first: ${warmed}.`]
        : ['Not warmed (`--no-warm`): the database was read from wherever it was.']),
      ...(opts.warmup > 0
        ? [
            `Each scenario and the floor ran ${opts.warmup} s unmeasured before their measured run (\`--warmup\`).`,
          ]
        : []),
      `API workers: ${opts.workers}. Latencies are autocannon's (whole milliseconds); errors are requests autocannon gave up on after 10 s. Run took ${Math.round((Date.now() - started) / 1000)} s, finished ${new Date().toISOString()}.`,
      '',
      '| scenario | req/s | p50 ms | p99 ms | max ms | errors | non-2xx | API RSS MB | event-loop p99 ms | API CPU µs/request | PostgreSQL CPU µs/request | ratio to floor |',
      '|---|---|---|---|---|---|---|---|---|---|---|---|',
      ...rows.map(
        (r) =>
          `| ${r.name} | ${r.rps} | ${r.p50} | ${r.p99} | ${r.max} | ${r.errors} | ${r.non2xx} | ${Number.isNaN(r.rss) ? '-' : r.rss} | ${Number.isNaN(r.elP99) ? '-' : r.elP99} | ${Number.isNaN(r.cpuUs) ? '-' : r.cpuUs} | ${Number.isNaN(r.dbCpuUs) ? '-' : r.dbCpuUs} | ${r.ratio} |`,
      ),
      '',
      `Read scenarios together: ${reads.reduce((s, r) => s + r.rps, 0)} req/s summed over ${reads.length} scenarios.`,
      `API peak RSS over the whole run (VmHWM${opts.workers > 1 ? ', summed over the processes' : ''}): ${Number.isNaN(peakRss) ? '-' : `${peakRss} MB`}.`,
      '',
      ...(likes.length === 0
        ? [
            opts.likeRuns > 0
              ? 'Lemmy-style comparison skipped: no search scenario with a query to compare ran (`--only`).'
              : 'Lemmy-style comparison skipped (`--like-runs 0`).',
          ]
        : [
            `Lemmy-style search on the same database (\`${opts.db.startsWith('sqlite:') ? "body LIKE '%term%'" : "body ILIKE '%term%'"}\` per term, public posts, newest 20, in process, ${opts.likeRuns} runs) against ours (GET /search over HTTP with \`Cache-Control: no-cache\`, so uncached, sequential, ${Math.max(opts.likeRuns, OURS_MIN_RUNS)} runs):`,
            '',
            '| query | ours p50 ms (HTTP) | LIKE p50 ms | LIKE p99 ms | LIKE rows | LIKE p50 / ours p50 |',
            '|---|---|---|---|---|---|',
            ...likes.map(
              (l) =>
                `| ${l.query} | ${l.oursP50} | ${l.likeP50} | ${l.likeP99} | ${l.matches} | ${round(l.likeP50 / l.oursP50, 1)} |`,
            ),
          ]),
    ].join('\n');
    writeSection(opts.out, opts.label, md);
    console.log(md);
    console.log(`wrote ${opts.out} (section ${opts.label})`);
    // A run whose requests failed measured something else than the scenarios: the report stays, the exit says so.
    const failed = [...rows.filter((r) => r.errors > 0 || r.non2xx > 0).map((r) => r.name), ...failedBeside];
    if (failed.length > 0) {
      console.error(`failed requests in: ${failed.join('; ')}`);
      process.exitCode = 1;
    }
  } finally {
    api.kill('SIGTERM');
    floor?.kill('SIGTERM');
  }
}

await main();
