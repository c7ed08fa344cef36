// Differential test (docs/reliability.md, Part B): the same rows on SQLite and PostgreSQL (built through the API on
// SQLite, then copied row by row with the same uuids and timestamps), then random list and search requests derived
// from the OpenAPI document, answered by both back ends. Data arrays, counts and error codes must be identical.
// DIFF_RUNS sets the number of requests (default 1,000); DIFF_SEED replays a run.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { sql } from 'kysely';
import { connectDatabase } from '../../src/db/connect.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { reindex } from '../../src/modules/search/search.service.ts';
import { type TestUser, testDialects } from '../helper.ts';
import { type Operation, operationsOf } from './openapi-model.ts';
import { type LoggedApp, startLoggedApp, UNLIMITED } from './support.ts';

const dialects = testDialects();
const sqliteDialect = dialects.find((d) => d.name === 'sqlite');
const pgDialect = dialects.find((d) => d.name === 'postgres');
const RUNS = Number(process.env.DIFF_RUNS ?? 1000);
const SEED = Number(process.env.DIFF_SEED ?? Date.now() % 2_147_483_647);

/** Tables in an order that satisfies their foreign keys. */
const TABLES = [
  'users',
  'clients',
  'tokens',
  'networks',
  'connections',
  'friends',
  'posts',
  'comments',
  'media',
  'messages',
  'karma',
  'tags',
  'tag_associations',
];

const VOCABULARY = [
  'running',
  'runner',
  'café',
  'Cafe',
  'über',
  'naïve',
  'garden',
  'gardening',
  'music',
  'Musik',
  'bonjour',
  'straße',
  'strasse',
  'coffee',
  'mountain',
  'river',
  'O’Brien',
  'emoji🎉',
  'x_y',
];
const LANGS = ['en', 'de', 'fr'];

async function ok(t: LoggedApp, method: string, url: string, token: string, payload?: object) {
  const res = await t.inject({ method: method as 'GET', url, token, ...(payload ? { payload } : {}) });
  assert.ok(res.statusCode < 300, `${method} ${url}: ${res.statusCode} ${res.body}`);
  return JSON.parse(res.body).data;
}

/** A deterministic world built through the API on SQLite. */
async function buildWorld(t: LoggedApp): Promise<{ users: TestUser[] }> {
  const rnd = fc.sample(fc.integer({ min: 0, max: 1_000_000 }), { numRuns: 4000, seed: 42 });
  let k = 0;
  const r = (n: number) => (rnd[k++ % rnd.length] as number) % n;
  const users: TestUser[] = [];
  const names = [
    'anna',
    'Anne',
    'bob_b',
    'café_lover',
    'Zoë',
    'zed',
    'émile',
    'runner_1',
    'MUSIC_fan',
    'garden_gnome',
  ];
  for (const n of names) users.push(await t.createUser(n));
  for (let i = 0; i < users.length; i++) {
    const a = users[i] as TestUser;
    await ok(t, 'POST', `/users/${a.uuid}/update`, a.token, {
      display_name: `${VOCABULARY[r(VOCABULARY.length)]} ${names[i]}`,
      bio: `${VOCABULARY[r(VOCABULARY.length)]} ${VOCABULARY[r(VOCABULARY.length)]}`,
    });
    const b = users[(i + 1) % users.length] as TestUser;
    const conn = await ok(t, 'POST', '/connections', a.token, { user_uuid: b.uuid });
    if (i % 3 !== 0) await ok(t, 'POST', `/connections/${conn.uuid}/confirm`, b.token);
  }
  for (let i = 0; i < 3; i++) {
    const u = users[i] as TestUser;
    await ok(t, 'POST', '/networks', u.token, {
      name: `${VOCABULARY[i]} club`,
      description: `all about ${VOCABULARY[i + 3]}`,
    });
  }
  const posts: string[] = [];
  for (let i = 0; i < 120; i++) {
    const u = users[r(users.length)] as TestUser;
    const words = Array.from({ length: 2 + r(5) }, () => VOCABULARY[r(VOCABULARY.length)]);
    const tags = Array.from({ length: r(3) }, () => `#${VOCABULARY[r(VOCABULARY.length)]}`);
    const mention = r(4) === 0 ? ` @${(users[r(users.length)] as TestUser).username}` : '';
    const post = await ok(t, 'POST', '/posts', u.token, {
      body: `${words.join(' ')} ${tags.join(' ')}${mention}`,
      visibility: ['public', 'public', 'friends', 'private'][r(4)],
      language: LANGS[r(3)],
    });
    posts.push(post.uuid);
    if (r(2) === 0) {
      const c = users[r(users.length)] as TestUser;
      await t.inject({
        method: 'POST',
        url: `/posts/${post.uuid}/comments`,
        token: c.token,
        payload: {
          body: `${VOCABULARY[r(VOCABULARY.length)]} #${VOCABULARY[r(VOCABULARY.length)]}`,
          language: LANGS[r(3)],
        },
      });
    }
    if (r(2) === 0) {
      const c = users[r(users.length)] as TestUser;
      await t.inject({
        method: 'POST',
        url: `/posts/${post.uuid}/emotions`,
        token: c.token,
        payload: { name: ['like', 'love', 'wow'][r(3)] },
      });
    }
  }
  for (let i = 0; i < 20; i++) {
    const from = r(users.length);
    const a = users[from] as TestUser;
    const b = users[(from + 1 + r(users.length - 1)) % users.length] as TestUser;
    await ok(t, 'POST', '/messages', a.token, {
      recipient_uuid: b.uuid,
      body: `${VOCABULARY[r(VOCABULARY.length)]} secret`,
    });
  }
  // An edit and a delete, so updated_at and compensating karma records differ from created_at.
  const first = users[0] as TestUser;
  const mine = await ok(t, 'POST', '/posts', first.token, { body: 'to be edited #edit' });
  await ok(t, 'POST', `/posts/${mine.uuid}/update`, first.token, { body: 'edited running #edited' });
  const gone = await ok(t, 'POST', '/posts', first.token, { body: 'to be deleted #gone' });
  await ok(t, 'POST', `/posts/${gone.uuid}/delete`, first.token);
  return { users };
}

/** Values of the world the generated requests draw on. */
interface Values {
  any: string[];
  uuids: string[];
  names: string[];
  userUuids: string[];
}

function requestArbitrary(
  ops: Operation[],
  values: Values,
  tokens: string[],
): fc.Arbitrary<{ url: string; token: string }> {
  const token = fc.constantFrom(...tokens);
  const lists = ops.filter((o) => o.method === 'GET' && o.sortable.length > 0);
  const searches = ops.filter((o) => o.method === 'GET' && o.path.startsWith('/search'));
  const word = fc.constantFrom(...VOCABULARY, ...values.names, 'run', 'ca', 'mu', 'gard', 'zz');
  const paging = fc.oneof(
    fc.constant(''),
    fc
      .tuple(fc.integer({ min: 1, max: 100 }), fc.integer({ min: 0, max: 60 }))
      .map(([l, o]) => `&limit=${l}&offset=${o}`),
    fc
      .tuple(fc.integer({ min: 1, max: 10 }), fc.integer({ min: 1, max: 5 }))
      .map(([l, p]) => `&limit=${l}&page=${p}`),
  );
  const listReq = fc.constantFrom(...lists).chain((op) => {
    const value = fc.oneof(
      fc.constantFrom(...values.any),
      fc.constantFrom(
        '%',
        '%a%',
        'c%',
        '%ing',
        '_a%',
        'hashtag',
        'emotion',
        'mention',
        'post',
        'comment',
        '1',
        '2',
        '0',
      ),
      word,
    );
    const filter = fc
      .tuple(
        fc.constantFrom(...op.filterable),
        fc.constantFrom('eq', 'ne', 'gt', 'ge', 'lt', 'le', 'like'),
        value,
      )
      .map(([p, o, v]) => `&filterby[${p}][${o}]=${encodeURIComponent(v)}`);
    const sort = fc
      .tuple(fc.constantFrom(...op.sortable), fc.constantFrom('asc', 'desc'))
      .map(([p, d]) => `&sortby[${p}]=${d}`);
    const uuids = fc
      .array(fc.constantFrom(...values.uuids), { minLength: 1, maxLength: 30 })
      .map((u) => `&uuids=${u.join(',')}`);
    const language = op.params.some((p) => p.name === 'language')
      ? fc.oneof(
          fc.constant(''),
          fc.constantFrom(...LANGS).map((l) => `&language=${l}`),
        )
      : fc.constant('');
    return fc
      .tuple(
        fc.array(filter, { maxLength: 3 }),
        fc.array(sort, { maxLength: 3 }),
        fc.oneof({ weight: 4, arbitrary: fc.constant('') }, { weight: 1, arbitrary: uuids }),
        language,
        paging,
        token,
      )
      .map(([f, s, u, l, p, tk]) => ({
        url: `${op.path}?x=1${f.join('')}${s.join('')}${u}${l}${p}`.replace('?x=1&', '?').replace('?x=1', ''),
        token: tk,
      }));
  });
  const searchReq = fc.constantFrom(...searches).chain((op) => {
    const names = new Set(op.params.map((p) => p.name));
    const query = fc.oneof(
      word,
      fc.tuple(word, word).map(([a, b]) => `${a} ${b}`),
      word.map((w) => `#${w}`),
      word.map((w) => `@${w}`),
      fc.constantFrom('"quoted', "o'brien", 'a*', 'run OR cafe', 'NEAR(a b)', '%', '_'),
    );
    const order = names.has('order')
      ? fc
          .constantFrom(
            '',
            'relevance',
            'created_at:desc',
            'created_at:asc',
            'updated_at desc',
            'username',
            'karma:desc',
          )
          .map((o) => (o ? `&order=${encodeURIComponent(o)}` : ''))
      : fc.constant('');
    // `language` on a search switches on stemming, which is engine-specific by design (SQLite has only the English
    // porter stemmer, PostgreSQL Snowball for 15 languages; docs/search.md): those answers are not compared here.
    const language = fc.constant('');
    const exclude = names.has('exclude_user_uuids')
      ? fc.oneof(
          fc.constant(''),
          fc.constantFrom(...values.userUuids).map((u) => `&exclude_user_uuids=${u}`),
        )
      : fc.constant('');
    const page = names.has('offset') ? paging : fc.constantFrom('', '&limit=5');
    return fc.tuple(query, order, language, exclude, page, token).map(([q, o, l, e, p, tk]) => ({
      url: `${op.path}?query=${encodeURIComponent(q)}${o}${l}${e}${p}`,
      token: tk,
    }));
  });
  return fc.oneof(listReq, searchReq);
}

/** The uuids (and first text) of an answer's items, to show where two answers part. */
function summarize(res: { statusCode: number; body: string }): string {
  const b = JSON.parse(res.body);
  if (res.statusCode >= 400) return `${res.statusCode} ${b.error?.code}`;
  // biome-ignore lint/suspicious/noExplicitAny: items of any kind.
  const items = (list: any[]) =>
    list.map(
      (x) => `${x.uuid.slice(-6)}:${String(x.body ?? x.name ?? x.username ?? x.event ?? '').slice(0, 40)}`,
    );
  const data = Array.isArray(b.data)
    ? items(b.data)
    : // biome-ignore lint/suspicious/noExplicitAny: items of any kind.
      Object.entries(b.data as Record<string, any[]>).map(([k, v]) => `${k}=[${items(v).join(' | ')}]`);
  return `${res.statusCode} count=${JSON.stringify(b.count)} [${data.join(' | ')}]`;
}

function comparable(res: { statusCode: number; body: string }) {
  const b = JSON.parse(res.body);
  if (res.statusCode >= 400) return { status: res.statusCode, code: b.error?.code ?? b.error };
  return { status: res.statusCode, data: b.data, count: b.count };
}

describe('differential: SQLite and PostgreSQL answer alike', {
  skip: !(sqliteDialect && pgDialect) && 'needs TEST_PG_URL',
}, () => {
  let lite: LoggedApp;
  let pgApp: LoggedApp;
  let tokens: string[];
  let ops: Operation[];
  const values: Values = { any: [], uuids: [], names: [], userUuids: [] };

  before(async () => {
    lite = await startLoggedApp(sqliteDialect as never, UNLIMITED);
    const { users } = await buildWorld(lite);
    tokens = [lite.guest, ...users.slice(0, 5).map((u) => u.token)];
    // Copy every row to a fresh PostgreSQL database; its triggers build the search index from the base rows.
    const { url, drop } = await (pgDialect as NonNullable<typeof pgDialect>).create();
    const target = connectDatabase(url, { poolSize: 2 });
    await migrateToLatest(target.db, target.dialect);
    for (const table of TABLES) {
      const rows = (
        await sql<Record<string, unknown>>`SELECT * FROM ${sql.table(table)}`.execute(lite.ctx.db)
      ).rows;
      for (let i = 0; i < rows.length; i += 200) {
        await target.db
          .insertInto(table as 'posts')
          .values(rows.slice(i, i + 200).map((r) => ({ ...r })) as never)
          .execute();
      }
    }
    await target.db.destroy();
    pgApp = await startLoggedApp(pgDialect as never, UNLIMITED, { url, drop });
    // The copy filled PostgreSQL's index table by table; the index walks documents in indexing order (creation
    // order through the API), so both sides rebuild it the same way: in creation order.
    await reindex(lite.ctx);
    await reindex(pgApp.ctx);
    ops = operationsOf(JSON.parse((await lite.inject({ method: 'GET', url: '/openapi.json' })).body));
    const any = new Set<string>();
    const uuids = new Set<string>();
    for (const table of ['tags', 'tag_associations', 'karma']) {
      const rows = (
        await sql<Record<string, unknown>>`SELECT * FROM ${sql.table(table)} LIMIT 40`.execute(lite.ctx.db)
      ).rows;
      for (const row of rows) {
        uuids.add(String(row.uuid));
        for (const v of Object.values(row)) if (v !== null && String(v).length < 60) any.add(String(v));
      }
    }
    values.any = [...any];
    values.uuids = [...uuids];
    values.names = users.map((u) => u.username);
    values.userUuids = users.map((u) => u.uuid);
  });
  after(async () => {
    await lite?.close();
    await pgApp?.close();
  });

  it(`answers ${RUNS} random list and search requests identically (seed ${SEED})`, {
    timeout: 120_000,
  }, async () => {
    const requests = fc.sample(requestArbitrary(ops, values, tokens), { numRuns: RUNS, seed: SEED });
    const differences: string[] = [];
    const statuses = new Map<number, number>();
    for (const r of requests) {
      const [a, b] = await Promise.all([
        lite.inject({ method: 'GET', url: r.url, token: r.token }),
        pgApp.inject({ method: 'GET', url: r.url, token: r.token }),
      ]);
      statuses.set(a.statusCode, (statuses.get(a.statusCode) ?? 0) + 1);
      try {
        assert.deepEqual(comparable(b), comparable(a));
      } catch {
        differences.push(
          `${r.url} (token ${tokens.indexOf(r.token)}):\n  sqlite   ${summarize(a)}\n  postgres ${summarize(b)}`,
        );
      }
    }
    console.log(
      `# differential: ${requests.length} requests, statuses ${JSON.stringify(Object.fromEntries(statuses))}, ${differences.length} differences`,
    );
    for (const d of differences.slice(0, 15)) console.log(`# ${d}`);
    assert.equal(
      differences.length,
      0,
      `${differences.length} of ${requests.length} answers differ (seed ${SEED})`,
    );
    // The generator mixes valid and invalid parameters; about half of its requests are valid (499 and 500 of 1,000
    // for seed 80729348, which failed a "more than half" bound). Two in five keep the comparison of real answers.
    assert.ok(
      (statuses.get(200) ?? 0) >= requests.length * 0.4,
      'at least two in five requests were valid and answered 200',
    );
  });
});
