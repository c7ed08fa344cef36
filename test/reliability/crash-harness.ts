// Crash durability (docs/reliability.md, Part B): the real server runs as a child process; a stream of acknowledged
// writes (posts with hashtags, comments, reactions) runs against it; SIGKILL arrives at a random moment; then, with
// the server down, every acknowledged write must be there with all its consequences (karma record, tag associations,
// search document), no write may be half-applied, PRAGMA integrity_check must say ok and `cli check` must pass.
//
// Full run: `npm run test:crash` (CRASH_SQLITE_CYCLES=100, CRASH_PG_CYCLES=20 by default; PostgreSQL needs
// TEST_PG_URL). The CI form is test/reliability/crash.test.ts.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type RawBuilder, sql } from 'kysely';
import { connectDatabase } from '../../src/db/connect.ts';
import type { TestDialect } from '../helper.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
export const CLIENT = { id: 'crash-client', secret: 'crash-client-secret' };

/** What one crash run found. */
export interface CrashReport {
  dialect: string;
  cycles: number;
  acknowledged: { posts: number; comments: number; reactions: number };
  lost: string[];
  halfApplied: string[];
  integrity: string[];
  checkFailures: string[];
  killDelaysMs: number[];
  seconds: number;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const address = s.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

export interface Server {
  child: ChildProcess;
  base: string;
  output: string[];
}

/** How long a server may take to answer /health after it is spawned. */
const START_DEADLINE_MS = 60_000;

export async function startServer(env: Record<string, string>): Promise<Server> {
  const port = await freePort();
  const output: string[] = [];
  const child = spawn(process.execPath, ['src/server.ts'], {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1', WORKERS: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (d) => output.push(String(d)));
  child.stderr?.on('data', (d) => output.push(String(d)));
  const base = `http://127.0.0.1:${port}`;
  // Generous: under coverage with the machine loaded (two 1M-post seeds beside CI) a start took over 20 s, and these
  // tests judge what survives a crash, not how fast the server starts.
  const startedAt = Date.now();
  const deadline = startedAt + START_DEADLINE_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited at start: ${output.join('')}`);
    try {
      const res = await fetch(`${base}/health`);
      if (res.ok) return { child, base, output };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 30));
  }
  child.kill('SIGKILL');
  throw new Error(`server did not start in ${Date.now() - startedAt} ms: ${output.join('')}`);
}

export async function kill(server: Server): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  const exited = new Promise((r) => server.child.once('exit', r));
  server.child.kill('SIGKILL');
  await exited;
}

export async function call(
  base: string,
  method: string,
  path: string,
  token: string | null,
  payload?: unknown,
  form = false,
  // biome-ignore lint/suspicious/noExplicitAny: answers are inspected freely.
): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = token.startsWith('Basic ') ? token : `Bearer ${token}`;
  let body: string | undefined;
  if (payload !== undefined) {
    headers['content-type'] = form ? 'application/x-www-form-urlencoded' : 'application/json';
    body = form ? new URLSearchParams(payload as Record<string, string>).toString() : JSON.stringify(payload);
  }
  const res = await fetch(`${base}${path}`, { method, headers, ...(body ? { body } : {}) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

export async function login(base: string, username: string, password: string): Promise<string> {
  const basic = `Basic ${Buffer.from(`${CLIENT.id}:${CLIENT.secret}`).toString('base64')}`;
  const res = await call(
    base,
    'POST',
    '/oauth/token',
    basic,
    { grant_type: 'password', username, password },
    true,
  );
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.access_token;
}

interface Acked {
  posts: { uuid: string; tags: string[] }[];
  comments: { uuid: string; post: string }[];
  reactions: { uuid: string; post: string }[];
}

/** One writer: post (with hashtags), comment on it, react to it; records each write once it is acknowledged. */
async function writer(
  base: string,
  tokens: { a: string; b: string },
  cycle: number,
  w: number,
  acked: Acked,
  stop: { stopped: boolean },
): Promise<void> {
  for (let i = 0; !stop.stopped; i++) {
    try {
      const tags = [`crash${cycle}w${w}`, 'durable', `n${i}`];
      const post = await call(base, 'POST', '/posts', tokens.a, {
        body: `cycle ${cycle} writer ${w} item ${i} ${tags.map((t) => `#${t}`).join(' ')} survives`,
      });
      if (post.status !== 201) throw new Error(`POST /posts answered ${post.status}`);
      acked.posts.push({ uuid: post.body.data.uuid, tags });
      const uuid = post.body.data.uuid as string;
      const comment = await call(base, 'POST', `/posts/${uuid}/comments`, tokens.b, {
        body: `reply #echo${w} ok`,
      });
      if (comment.status !== 201) throw new Error(`POST comment answered ${comment.status}`);
      acked.comments.push({ uuid: comment.body.data.uuid, post: uuid });
      const reaction = await call(base, 'POST', `/posts/${uuid}/emotions`, tokens.b, { name: 'like' });
      if (reaction.status !== 201 && reaction.status !== 200)
        throw new Error(`POST emotion answered ${reaction.status}`);
      acked.reactions.push({ uuid: reaction.body.data.uuid, post: uuid });
    } catch (err) {
      // After the kill every request fails; before it, any failure is a finding.
      if (!stop.stopped) throw err;
      return;
    }
  }
}

async function runCheckCommand(env: Record<string, string>): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['src/cli/main.ts', 'check'], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout?.on('data', (d) => {
      output += String(d);
    });
    child.stderr?.on('data', (d) => {
      output += String(d);
    });
    child.on('exit', (code) => resolve({ code: code ?? 1, output }));
  });
}

/** Checks the database with the server down: acknowledged writes present and complete, nothing half-applied. */
async function verify(url: string, acked: Acked, report: CrashReport, cycle: number): Promise<void> {
  const handle = connectDatabase(url, { synchronous: 'FULL', poolSize: 2 });
  const db = handle.db;
  try {
    if (handle.dialect === 'sqlite') {
      const r = await sql<{ integrity_check: string }>`PRAGMA integrity_check`.execute(db);
      const verdict = r.rows.map((x) => x.integrity_check).join('; ');
      if (verdict !== 'ok') report.integrity.push(`cycle ${cycle}: ${verdict}`);
    }
    const has = async (query: RawBuilder<{ n: number }>) => Number((await query.execute(db)).rows[0]?.n ?? 0);
    for (const p of acked.posts) {
      if (!(await has(sql`SELECT count(*) AS n FROM posts WHERE uuid = ${p.uuid}`))) {
        report.lost.push(`cycle ${cycle}: post ${p.uuid}`);
      }
      const tagged = await has(sql`SELECT count(DISTINCT t.name_key) AS n FROM tag_associations a
        JOIN tags t ON t.uuid = a.tag_uuid WHERE a.target_uuid = ${p.uuid} AND t.tag_type = 'hashtag'`);
      if (tagged !== p.tags.length) {
        report.lost.push(
          `cycle ${cycle}: post ${p.uuid} has ${tagged} of ${p.tags.length} hashtag associations`,
        );
      }
    }
    for (const c of acked.comments) {
      if (!(await has(sql`SELECT count(*) AS n FROM comments WHERE uuid = ${c.uuid}`))) {
        report.lost.push(`cycle ${cycle}: comment ${c.uuid}`);
      }
    }
    for (const r of acked.reactions) {
      if (!(await has(sql`SELECT count(*) AS n FROM tag_associations WHERE uuid = ${r.uuid}`))) {
        report.lost.push(`cycle ${cycle}: reaction ${r.uuid}`);
      }
    }
    // Half-applied writes anywhere in the database (acknowledged or cut off by the kill).
    const orphans: [string, RawBuilder<{ n: number }>][] = [
      [
        'posts without their karma record',
        sql`SELECT count(*) AS n FROM posts p WHERE NOT EXISTS
        (SELECT 1 FROM karma k WHERE k.source_uuid = p.uuid AND k.event = 'postCreated')`,
      ],
      [
        'posts without hashtag associations',
        sql`SELECT count(*) AS n FROM posts p WHERE NOT EXISTS
        (SELECT 1 FROM tag_associations a WHERE a.target_uuid = p.uuid)`,
      ],
      [
        'posts without a search document',
        sql`SELECT count(*) AS n FROM posts p WHERE NOT EXISTS
        (SELECT 1 FROM search_docs d WHERE d.uuid = p.uuid)`,
      ],
      [
        'comments without their karma record',
        sql`SELECT count(*) AS n FROM comments c WHERE NOT EXISTS
        (SELECT 1 FROM karma k WHERE k.source_uuid = c.uuid AND k.event = 'commentCreated')`,
      ],
      [
        'comments without a search document',
        sql`SELECT count(*) AS n FROM comments c WHERE NOT EXISTS
        (SELECT 1 FROM search_docs d WHERE d.uuid = c.uuid)`,
      ],
      [
        'comments without hashtag associations',
        sql`SELECT count(*) AS n FROM comments c WHERE NOT EXISTS
        (SELECT 1 FROM tag_associations a WHERE a.target_uuid = c.uuid)`,
      ],
      [
        'reactions without the author karma record',
        sql`SELECT count(*) AS n FROM tag_associations a
        JOIN tags t ON t.uuid = a.tag_uuid WHERE t.tag_type = 'emotion' AND NOT EXISTS
        (SELECT 1 FROM karma k WHERE k.source_uuid = a.uuid AND k.event = 'emotionReceived')`,
      ],
      [
        'tags whose associations_count differs from their associations',
        sql`SELECT count(*) AS n FROM tags t
        WHERE t.associations_count <> (SELECT count(*) FROM tag_associations a WHERE a.tag_uuid = t.uuid)`,
      ],
    ];
    for (const [label, query] of orphans) {
      const n = await has(query);
      if (n > 0) report.halfApplied.push(`cycle ${cycle}: ${n} ${label}`);
    }
  } finally {
    await db.destroy();
  }
}

/** Runs `cycles` kill-and-restart cycles on a fresh database of the dialect. */
export async function runCrashCycles(
  dialect: TestDialect,
  cycles: number,
  log: (line: string) => void = () => {},
): Promise<CrashReport> {
  const started = Date.now();
  const { url, drop } = await dialect.create();
  const dir = mkdtempSync(join(tmpdir(), 'crash-'));
  const rules = join(dir, 'karma.json');
  // No daily cap: every post, comment and reaction must have its karma record.
  writeFileSync(rules, JSON.stringify({ daily_cap: null }));
  const env = {
    DATABASE_URL: url,
    BOOTSTRAP_CLIENT: `${CLIENT.id}:${CLIENT.secret}`,
    KARMA_RULES: rules,
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '1000000',
    SQLITE_SYNCHRONOUS: 'FULL',
    MEDIA_DIR: join(dir, 'media'),
  };
  const report: CrashReport = {
    dialect: dialect.name,
    cycles,
    acknowledged: { posts: 0, comments: 0, reactions: 0 },
    lost: [],
    halfApplied: [],
    integrity: [],
    checkFailures: [],
    killDelaysMs: [],
    seconds: 0,
  };
  let server: Server | undefined;
  const timings = { start: 0, verify: 0 };
  try {
    server = await startServer(env);
    const basic = `Basic ${Buffer.from(`${CLIENT.id}:${CLIENT.secret}`).toString('base64')}`;
    const guest = await call(
      server.base,
      'POST',
      '/oauth/token',
      basic,
      { grant_type: 'client_credentials' },
      true,
    );
    for (const name of ['crash_author', 'crash_reader']) {
      const res = await call(server.base, 'POST', '/users', guest.body.access_token, {
        username: name,
        email: `${name}@example.test`,
        password: 'crash-password-1',
      });
      if (res.status !== 201)
        throw new Error(`POST /users answered ${res.status} ${JSON.stringify(res.body)}`);
    }
    const tokens = {
      a: await login(server.base, 'crash_author', 'crash-password-1'),
      b: await login(server.base, 'crash_reader', 'crash-password-1'),
    };
    await kill(server);
    for (let cycle = 1; cycle <= cycles; cycle++) {
      const t1 = Date.now();
      server = await startServer(env);
      timings.start += Date.now() - t1;
      const acked: Acked = { posts: [], comments: [], reactions: [] };
      const stop = { stopped: false };
      const writers = [0, 1, 2, 3].map((w) => writer(server?.base ?? '', tokens, cycle, w, acked, stop));
      // The kill lands at a random moment once writes are flowing (the first acknowledgement), not during start-up.
      const flowing = Date.now() + 10_000;
      while (acked.posts.length === 0 && Date.now() < flowing) await new Promise((r) => setTimeout(r, 5));
      const delay = Math.floor(Math.random() * 400);
      report.killDelaysMs.push(delay);
      await new Promise((r) => setTimeout(r, delay));
      stop.stopped = true;
      await kill(server);
      await Promise.all(writers);
      report.acknowledged.posts += acked.posts.length;
      report.acknowledged.comments += acked.comments.length;
      report.acknowledged.reactions += acked.reactions.length;
      const t0 = Date.now();
      const [check] = await Promise.all([runCheckCommand(env), verify(url, acked, report, cycle)]);
      timings.verify += Date.now() - t0;
      if (check.code !== 0) report.checkFailures.push(`cycle ${cycle}: ${check.output.trim().slice(0, 500)}`);
      for (const list of [report.lost, report.halfApplied, report.integrity, report.checkFailures]) {
        for (const line of list.filter((l) => l.startsWith(`cycle ${cycle}:`))) log(`  PROBLEM ${line}`);
      }
      log(
        `${dialect.name} cycle ${cycle}/${cycles}: killed after ${delay} ms, acknowledged ${acked.posts.length} posts, ${acked.comments.length} comments, ${acked.reactions.length} reactions; problems so far ${report.lost.length + report.halfApplied.length + report.integrity.length + report.checkFailures.length}`,
      );
    }
  } finally {
    if (server) await kill(server);
    await drop();
    rmSync(dir, { recursive: true, force: true });
  }
  report.seconds = (Date.now() - started) / 1000;
  log(`${dialect.name}: server starts took ${timings.start} ms in total, verifications ${timings.verify} ms`);
  return report;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { testDialects } = await import('../helper.ts');
  const sqliteCycles = Number(process.env.CRASH_SQLITE_CYCLES ?? 100);
  const pgCycles = Number(process.env.CRASH_PG_CYCLES ?? 20);
  let failed = false;
  for (const dialect of testDialects()) {
    const cycles = dialect.name === 'sqlite' ? sqliteCycles : pgCycles;
    const report = await runCrashCycles(dialect, cycles, (line) => console.log(line));
    console.log(JSON.stringify({ ...report, killDelaysMs: undefined }, null, 2));
    if (
      report.lost.length + report.halfApplied.length + report.integrity.length + report.checkFailures.length >
      0
    ) {
      failed = true;
    }
  }
  console.log(failed ? 'crash durability FAILED' : 'crash durability OK');
  process.exit(failed ? 1 : 0);
}
