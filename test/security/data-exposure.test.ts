import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { body, startTestApp, type TestApp, testDialects } from '../helper.ts';
import { ACCESS_TABLE, type AccessRow, routeKey } from './access-table.ts';
import { type Answer, runMatrix, send } from './matrix.ts';
import { ResponseValidator } from './response-schemas.ts';
import { buildWorld, type Caller, casesFor, emailOf, tokenOf, type World } from './world.ts';

/** Extra reads of the walk: full pages of every list and searches that reach every kind of item. */
function walkUrls(w: World): Record<string, string[]> {
  const { users, word } = w;
  const q = (s: string) => encodeURIComponent(s);
  return {
    'GET /users/{}': Object.values(users).map((u) => `/users/${u.uuid}`),
    'GET /connections': ['/connections?limit=100'],
    'GET /messages': ['/messages?limit=100'],
    'GET /karma': ['/karma?limit=100', '/karma?sortby[points]=desc&limit=100'],
    'GET /tags': ['/tags?limit=100', '/tags?filterby[name][like]=%25&limit=100'],
    'GET /tag-associations': ['/tag-associations?limit=100', '/tag-associations?language=en&limit=100'],
    'GET /search': [
      `/search?query=${word}&limit=100`,
      `/search?query=${q('#t')}&limit=100`,
      '/search?query=mail',
    ],
    'GET /search/types': [
      `/search/types?query=${word}&limit=100`,
      `/search/types?query=${q(users.owner.username)}`,
    ],
    'GET /search/users': [
      '/search/users?query=u&limit=100',
      `/search/users?query=${q(users.other.email)}`,
      '/search/users?query=mail.example',
    ],
    'GET /search/friends': ['/search/friends?query=u&limit=100'],
    'GET /search/mentions': ['/search/mentions?query=u&limit=100'],
    'GET /search/hashtags': ['/search/hashtags?query=t&limit=100'],
    'GET /search/networks': ['/search/networks?query=net&limit=100'],
    'GET /search/complete': [
      '/search/complete?query=u',
      `/search/complete?query=${q('@u')}`,
      `/search/complete?query=${q('#t')}`,
    ],
  };
}

const WALKERS: readonly Caller[] = ['guest', 'stranger', 'friend', 'owner', 'admin'];

for (const dialect of testDialects()) {
  describe(`data exposure [${dialect.name}]`, () => {
    let t: TestApp;
    let w: World;
    let validator: ResponseValidator;
    const answers: Answer[] = [];

    before(async () => {
      t = await startTestApp(dialect, { ENABLED_OPERATIONS: ['all'], RATE_LIMIT_PER_MINUTE: 1_000_000 });
      w = await buildWorld(t);
      validator = new ResponseValidator(body(await t.inject({ method: 'GET', url: '/openapi.json' })));
      // The matrix answers: every route, every caller, refusals included.
      const { failures } = await runMatrix(w, ACCESS_TABLE, (a) => answers.push(a), { head: false });
      assert.deepEqual(failures, [], 'the matrix itself must pass (see authorization-matrix.test.ts)');
      // The walk: every GET operation as several users, with full pages and searches over everything.
      const cases = casesFor(w);
      const extra = walkUrls(w);
      for (const row of ACCESS_TABLE.filter((r) => r.method === 'GET')) {
        const key = routeKey(row.method, row.path);
        const urls = new Set(extra[key] ?? []);
        for (const kase of cases[key] ?? []) urls.add((await kase.build('owner')).url);
        for (const url of urls) {
          for (const caller of WALKERS) {
            const res = await send(w, row, { url }, tokenOf(w, caller));
            answers.push({ row, caller, url, res });
          }
        }
      }
    });
    after(async () => t?.close());

    it('collected answers from every route', (ctx) => {
      ctx.diagnostic(`${answers.length} answers collected`);
      const seen = new Set(answers.map((a) => routeKey(a.row.method, a.row.path)));
      assert.equal(seen.size, ACCESS_TABLE.length);
      assert.ok(answers.length > 1000, `${answers.length} answers`);
    });

    it('no answer holds a password hash, a password, a token or a client secret', () => {
      const forbidden = ['$argon2', w.users.owner.password, ...w.secrets];
      const leaks: string[] = [];
      const seen = new Set<string>();
      for (const a of answers) {
        // Identical bodies (the reference page, refusals) are searched once.
        if (seen.has(a.res.body)) continue;
        seen.add(a.res.body);
        for (const s of forbidden) {
          if (a.res.body.includes(s))
            leaks.push(`${a.row.method} ${a.url} as ${a.caller}: holds ${s.slice(0, 12)}...`);
        }
        if (/"(password_hash|token_hash|secret_hash|email_key|username_key)"/.test(a.res.body)) {
          leaks.push(`${a.row.method} ${a.url} as ${a.caller}: a stored-only column name`);
        }
      }
      assert.deepEqual(leaks, []);
    });

    it("no answer holds another user's email", async () => {
      const emails = (await t.ctx.db.selectFrom('users').select('email').execute()).map((r) =>
        r.email.toLowerCase(),
      );
      assert.ok(emails.length > 5);
      const leaks: string[] = [];
      const seen = new Set<string>();
      for (const a of answers) {
        const own = emailOf(w, a.caller)?.toLowerCase();
        if (seen.has(`${own} ${a.res.body}`)) continue;
        seen.add(`${own} ${a.res.body}`);
        const text = a.res.body.toLowerCase();
        for (const e of emails)
          if (e !== own && text.includes(e)) leaks.push(`${a.row.method} ${a.url} as ${a.caller}: ${e}`);
      }
      assert.deepEqual(leaks, []);
    });

    it('every answer fits its response schema in the OpenAPI document, with no unlisted field', () => {
      const wrong: string[] = [];
      let checked = 0;
      for (const a of answers) {
        const row: AccessRow = a.row;
        if (row.undocumented) continue;
        const problems = validator.check(row.method, row.path, a.res);
        checked++;
        if (problems.length > 0) {
          wrong.push(
            `${row.method} ${a.url} as ${a.caller} -> ${a.res.statusCode}: ${problems.slice(0, 3).join('; ')}`,
          );
        }
      }
      assert.ok(checked > 1000, `${checked} answers checked`);
      assert.deepEqual(wrong.slice(0, 30), []);
    });
  });
}
