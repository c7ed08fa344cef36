// Fuzzing from the OpenAPI document (docs/reliability.md, Part B): every operation, schema-valid and mutated
// requests, real tokens and uuids mixed with random ones. Zero 5xx, every answer valid against the document,
// the database schema unchanged. FUZZ_RUNS sets the total across the dialects (default 10,000; `npm run
// test:fuzz:long` runs 100,000); FUZZ_SEED replays a run.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { sql } from 'kysely';
import { testDialects } from '../helper.ts';
import { type Operation, operationsOf, ResponseValidator } from './openapi-model.ts';
import { type GeneratedRequest, type Pool, requestArbitrary } from './requests.ts';
import { type LoggedApp, schemaSnapshot, startLoggedApp, UNLIMITED } from './support.ts';

const dialects = testDialects();
const TOTAL = Number(process.env.FUZZ_RUNS ?? 10_000);
const PER_DIALECT = Math.ceil(TOTAL / dialects.length);
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 2_147_483_647);
const BATCH = 500;
const PARALLEL = 8;

interface Failure {
  request: string;
  status: number;
  problem: string;
  body: string;
  log: unknown[];
}

async function ok(t: LoggedApp, method: string, url: string, token: string, payload?: object) {
  const res = await t.inject({ method: method as 'GET', url, token, ...(payload ? { payload } : {}) });
  assert.ok(res.statusCode < 300, `${method} ${url}: ${res.statusCode} ${res.body}`);
  return JSON.parse(res.body).data;
}

/** A small world through the API: users, a friendship, posts of every visibility with tags, comments, reactions. */
async function seedWorld(t: LoggedApp): Promise<Pool> {
  const owner = await t.createUser();
  const friend = await t.createUser();
  const stranger = await t.createUser();
  const admin = await t.createUser(undefined, 'admin');
  const conn = await ok(t, 'POST', '/connections', owner.token, { user_uuid: friend.uuid });
  await ok(t, 'POST', `/connections/${conn.uuid}/confirm`, friend.token);
  const net = await ok(t, 'POST', '/networks', owner.token, {
    name: 'Fuzz network',
    description: 'about #fuzz',
  });
  const words = ['#fuzz', '#Café', '#naïve', 'hello', 'world', `@${friend.username}`, 'running', 'über'];
  for (const [i, visibility] of ['public', 'friends', 'private', 'public'].entries()) {
    const post = await ok(t, 'POST', '/posts', i % 2 ? friend.token : owner.token, {
      body: `${words.slice(i, i + 4).join(' ')} post ${i} #tag${i}`,
      visibility,
    });
    const comment = await ok(t, 'POST', `/posts/${post.uuid}/comments`, owner.token, {
      body: `comment #reply${i} @${stranger.username}`,
    }).catch(() => undefined);
    if (visibility === 'public') {
      await ok(t, 'POST', `/posts/${post.uuid}/emotions`, stranger.token, { name: 'love' });
      if (comment) await ok(t, 'POST', `/comments/${comment.uuid}/emotions`, friend.token, { name: 'wow' });
    }
  }
  await ok(t, 'POST', '/messages', owner.token, {
    recipient_uuid: friend.uuid,
    body: 'private hello #secret',
  });
  await ok(t, 'POST', `/networks/${net.uuid}/join`, friend.token);
  const pool: Pool = {
    uuids: {},
    tokens: {
      guest: t.guest,
      owner: owner.token,
      friend: friend.token,
      stranger: stranger.token,
      admin: admin.token,
    },
    words: [...words, owner.username, 'tag0', 'reply1'],
    client: t.client,
    users: [owner, friend, stranger, admin].map((u) => ({ username: u.username, password: u.password })),
  };
  await refreshPool(t, pool);
  return pool;
}

const KIND_TABLES: Record<string, string> = {
  user: 'users',
  post: 'posts',
  comment: 'comments',
  network: 'networks',
  connection: 'connections',
  message: 'messages',
  media: 'media',
  karma: 'karma',
  tag: 'tags',
  'tag-association': 'tag_associations',
};

/** Reloads real uuids (including items the fuzzer created) and replaces tokens of users it deleted. */
async function refreshPool(t: LoggedApp, pool: Pool): Promise<void> {
  for (const [kind, table] of Object.entries(KIND_TABLES)) {
    const r = await sql<{
      uuid: string;
    }>`SELECT uuid FROM ${sql.table(table)} ORDER BY uuid DESC LIMIT 30`.execute(t.ctx.db);
    pool.uuids[kind] = r.rows.map((x) => x.uuid);
  }
  for (const label of ['owner', 'friend', 'stranger', 'admin']) {
    const res = await t.inject({ method: 'GET', url: '/me', token: pool.tokens[label] });
    if (res.statusCode !== 200) {
      const u = await t.createUser(undefined, label === 'admin' ? 'admin' : 'user');
      pool.tokens[label] = u.token;
      pool.users.push({ username: u.username, password: u.password });
    }
  }
  const guest = await t.inject({ method: 'GET', url: '/tags', token: pool.tokens.guest });
  if (guest.statusCode === 401) pool.tokens.guest = t.guest;
}

function describeRequest(r: GeneratedRequest): string {
  const payload =
    r.payload === undefined
      ? ''
      : ` body=${(Buffer.isBuffer(r.payload) ? `<${r.payload.length} bytes multipart>` : r.payload).slice(0, 400)}`;
  return `${r.method} ${r.url.slice(0, 600)} token=${r.tokenLabel} headers=${JSON.stringify({ ...r.headers, authorization: undefined })}${payload}`;
}

for (const dialect of dialects) {
  describe(`fuzzing from the OpenAPI document (${dialect.name})`, () => {
    let t: LoggedApp;
    let ops: Operation[];
    let validator: ResponseValidator;
    let pool: Pool;
    let schemaBefore: string;

    before(async () => {
      t = await startLoggedApp(dialect, { ...UNLIMITED, ENABLED_OPERATIONS: ['all'] });
      const doc = JSON.parse((await t.inject({ method: 'GET', url: '/openapi.json' })).body);
      ops = operationsOf(doc);
      validator = new ResponseValidator(doc);
      pool = await seedWorld(t);
      schemaBefore = await schemaSnapshot(t.ctx.db, t.dialect);
    });
    after(async () => t?.close());

    it(`answers ${PER_DIALECT} generated requests with no 5xx, each valid against the document (seed ${SEED})`, async () => {
      assert.ok(ops.length >= 40, `only ${ops.length} operations in /openapi.json`);
      const failures: Failure[] = [];
      const statuses = new Map<number, number>();
      const perOp = new Map<string, number>();
      let sent = 0;
      let batchNo = 0;
      while (sent < PER_DIALECT) {
        const n = Math.min(BATCH, PER_DIALECT - sent);
        const requests = fc.sample(requestArbitrary(ops, pool), {
          numRuns: n,
          seed: SEED + batchNo * 7919 + (dialect.name === 'postgres' ? 1 : 0),
        });
        batchNo++;
        for (let i = 0; i < requests.length; i += PARALLEL) {
          await Promise.all(
            requests.slice(i, i + PARALLEL).map(async (r) => {
              const logBefore = t.errors.length;
              const res = await t.app.inject({
                method: r.method as 'GET',
                url: r.url,
                headers: r.headers,
                ...(r.payload !== undefined ? { payload: r.payload } : {}),
              });
              statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
              const key = `${r.method} ${r.op.path}`;
              perOp.set(key, (perOp.get(key) ?? 0) + 1);
              let problem: string | undefined;
              if (res.statusCode >= 500) problem = `status ${res.statusCode}`;
              else
                problem = validator.check(
                  r.op,
                  res.statusCode,
                  res.headers['content-type'] as string,
                  res.body,
                );
              if (problem) {
                failures.push({
                  request: describeRequest(r),
                  status: res.statusCode,
                  problem,
                  body: res.body.slice(0, 500),
                  log: t.errors.slice(logBefore, logBefore + 3),
                });
              }
            }),
          );
        }
        sent += n;
        await refreshPool(t, pool);
      }
      const summary = [...statuses.entries()]
        .sort((a, b) => a[0] - b[0])
        .map(([s, c]) => `${s}:${c}`)
        .join(' ');
      console.log(
        `# fuzz ${dialect.name}: ${sent} requests over ${perOp.size}/${ops.length} operations, statuses ${summary}`,
      );
      const missed = ops
        .filter((o) => !perOp.has(`${o.method} ${o.path}`))
        .map((o) => `${o.method} ${o.path}`);
      assert.deepEqual(missed, [], 'every operation was exercised');
      if (failures.length > 0) {
        // One example per operation and kind of problem, so a report names each distinct bug once.
        const groups = new Map<string, { count: number; example: Failure }>();
        for (const f of failures) {
          const key = `${f.request.split(' ')[0]} ${f.status} ${f.problem.replace(/'[^']*'/g, "'…'").slice(0, 120)}`;
          const g = groups.get(key);
          if (g) g.count++;
          else groups.set(key, { count: 1, example: f });
        }
        for (const [key, g] of groups)
          console.log(`# ${g.count} x ${key}\n${JSON.stringify(g.example, null, 2)}`);
      }
      assert.equal(
        failures.length,
        0,
        `${failures.length} answers were 5xx or did not match the document (seed ${SEED})`,
      );
    });

    it('still serves requests, the database schema is unchanged and nothing was logged as an error', async () => {
      const health = await t.inject({ method: 'GET', url: '/health' });
      assert.equal(health.statusCode, 200);
      assert.equal(await schemaSnapshot(t.ctx.db, t.dialect), schemaBefore);
      const errors = t.errors.filter((e) => Number(e.level) >= 50);
      assert.deepEqual(errors.slice(0, 3), [], 'no request was logged as an unhandled error');
      if (t.dialect === 'sqlite') {
        const r = await sql<{ integrity_check: string }>`PRAGMA integrity_check`.execute(t.ctx.db);
        assert.equal(r.rows[0]?.integrity_check, 'ok');
      }
    });
  });
}
