import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ERROR_STATUS } from '../../src/http/errors.ts';
import { setClientDisabled } from '../../src/modules/auth/auth.repository.ts';
import { issueTokens, saveClient } from '../../src/modules/auth/auth.service.ts';
import { body, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';

const MISSING = '01a20185-f912-715d-8d95-315c97618b78';

/** What a newcomer sends and what the answer must teach: the code, and words that say what to change. */
interface Case {
  name: string;
  code: string;
  request: (f: Fixture) => Parameters<TestApp['inject']>[0];
  /** Every pattern must appear in the message (the parameter, the allowed values or range, the way out). */
  teaches: RegExp[];
  /** The field named in details, when the error is about one. */
  field?: string;
}

interface Fixture {
  t: TestApp;
  user: TestUser;
  other: TestUser;
  associationUuid: string;
}

const get = (url: string, token?: (f: Fixture) => string) => (f: Fixture) => ({
  method: 'GET' as const,
  url,
  token: token ? token(f) : f.t.guest,
});

const CASES: Case[] = [
  // The four mistakes the issue names.
  {
    name: 'no token',
    code: 'unauthenticated',
    request: () => ({ method: 'GET', url: '/search?query=hello' }),
    teaches: [/Authorization: Bearer/, /POST \/oauth\/token/],
  },
  {
    name: '`sort` instead of `sortby`',
    code: 'invalid_request',
    request: get('/tags?sort=name'),
    teaches: [/\bsort\b/, /did you mean sortby\?/, /Accepted: .*filterby/],
    field: 'sort',
  },
  {
    name: '`sort` on a search, where the parameter is order',
    code: 'invalid_request',
    request: get('/search?query=hello&sort=created_at'),
    teaches: [/\bsort\b/, /did you mean order\?/, /Accepted: .*\bquery\b/],
    field: 'sort',
  },
  {
    name: '`q` instead of `query`',
    code: 'invalid_request',
    request: get('/search?q=hello'),
    teaches: [/query is required/, /did you mean query\?/],
    field: 'q',
  },
  {
    name: 'a body field named like a built-in property',
    code: 'invalid_request',
    request: (f) => ({
      method: 'POST',
      url: '/posts',
      token: f.user.token,
      payload: JSON.stringify({ body: 'hi', constructor: 1 }),
      headers: { 'content-type': 'application/json' },
    }),
    teaches: [/constructor is not an accepted field/, /Accepted: .*\bbody\b/],
    field: 'constructor',
  },
  {
    name: 'page 0',
    code: 'invalid_request',
    request: get('/tags?page=0'),
    teaches: [/page/, /at least 1/],
    field: 'page',
  },
  {
    name: 'page 0 on a search',
    code: 'invalid_request',
    request: get('/search?query=hello&page=0'),
    teaches: [/page/, /at least 1/],
    field: 'page',
  },
  // invalid_request on several parameters.
  {
    name: 'limit over the maximum',
    code: 'invalid_request',
    request: get('/tags?limit=1000'),
    teaches: [/limit/, /at most 100/],
    field: 'limit',
  },
  {
    name: 'limit that is not a number',
    code: 'invalid_request',
    request: get('/karma?limit=ten', (f) => f.user.token),
    teaches: [/limit/, /whole number/],
    field: 'limit',
  },
  {
    name: 'a parameter given twice',
    code: 'invalid_request',
    request: get('/tags?limit=1&limit=2'),
    teaches: [/limit/, /given twice/],
    field: 'limit',
  },
  {
    name: 'page and offset together',
    code: 'invalid_request',
    request: get('/tags?page=2&offset=5'),
    teaches: [/page/, /either page or offset/],
    field: 'page',
  },
  {
    name: 'search offset too deep',
    code: 'invalid_request',
    request: get('/search?query=hello&offset=20000'),
    teaches: [/offset/, /at most 10000/],
    field: 'offset',
  },
  {
    name: 'search without a query',
    code: 'invalid_request',
    request: get('/search'),
    teaches: [/query is required/, /1 to 200 characters/],
    field: 'query',
  },
  {
    name: 'search query too long',
    code: 'invalid_request',
    request: get(`/search?query=${'a'.repeat(201)}`),
    teaches: [/query/, /at most 200 characters/],
    field: 'query',
  },
  {
    name: 'unknown search order',
    code: 'invalid_request',
    request: get('/search?query=hello&order=newest'),
    teaches: [/order/, /relevance/, /created_at/, /asc\|desc/],
    field: 'order',
  },
  {
    name: 'unsupported language',
    code: 'invalid_request',
    request: get('/search?query=hello&language=xx'),
    teaches: [/language/, /one of: .*\ben\b.*\bde\b/],
    field: 'language',
  },
  {
    name: 'unknown filter property',
    code: 'invalid_request',
    request: get('/tags?filterby[title][eq]=x'),
    teaches: [/filterby\[title\]/, /filterable: .*\bname\b/],
    field: 'filterby[title]',
  },
  {
    name: 'unknown filter operator',
    code: 'invalid_request',
    request: get('/tags?filterby[name][contains]=x'),
    teaches: [/filterby\[name\]\[contains\]/, /eq, gt, ge, lt, le, ne or like/],
    field: 'filterby[name][contains]',
  },
  {
    name: 'filter value of the wrong type',
    code: 'invalid_request',
    request: get('/tags?filterby[created_at][gt]=yesterday'),
    teaches: [/filterby\[created_at\]\[gt\]/, /date-time.* such as 2026-01-31T12:00:00Z/],
    field: 'filterby[created_at][gt]',
  },
  {
    name: 'unknown sort property',
    code: 'invalid_request',
    request: get('/karma?sortby[score]=desc', (f) => f.user.token),
    teaches: [/sortby\[score\]/, /sortable: .*\bpoints\b/],
    field: 'sortby[score]',
  },
  {
    name: 'sort direction',
    code: 'invalid_request',
    request: get('/tags?sortby[name]=up'),
    teaches: [/sortby\[name\]/, /asc or desc/],
    field: 'sortby[name]',
  },
  {
    name: 'malformed uuids list',
    code: 'invalid_request',
    request: get('/tags?uuids=abc'),
    teaches: [/uuids/, /"abc" is not a uuid/],
    field: 'uuids',
  },
  {
    name: 'malformed uuid in the path',
    code: 'invalid_request',
    request: get('/tags/not-a-uuid'),
    teaches: [/uuid/, /such as [0-9a-f]{8}-/],
  },
  {
    name: 'register without email and password',
    code: 'invalid_request',
    request: (f) => ({ method: 'POST', url: '/users', token: f.t.guest, payload: { username: 'newcomer' } }),
    teaches: [/email is required/, /password is required/, /8 to 256 characters/],
    field: 'email',
  },
  {
    name: 'username with forbidden characters',
    code: 'invalid_request',
    request: (f) => ({
      method: 'POST',
      url: '/users',
      token: f.t.guest,
      payload: { username: 'new comer!', email: 'nc@example.com', password: 'long enough password' },
    }),
    teaches: [/username/, /letters .*digits or _/],
    field: 'username',
  },
  {
    name: 'a read-only field in a body',
    code: 'invalid_request',
    request: (f) => ({
      method: 'POST',
      url: '/posts',
      token: f.user.token,
      payload: { body: 'hi', uuid: MISSING },
    }),
    teaches: [/uuid is not an accepted field/, /Accepted: .*\bbody\b.*\bvisibility\b/],
    field: 'uuid',
  },
  {
    name: 'visibility outside its values',
    code: 'invalid_request',
    request: (f) => ({
      method: 'POST',
      url: '/posts',
      token: f.user.token,
      payload: { body: 'hi', visibility: 'everyone' },
    }),
    teaches: [/visibility/, /one of: public, friends, private/],
    field: 'visibility',
  },
  {
    name: 'a JSON array as the body',
    code: 'invalid_request',
    request: (f) => ({ method: 'POST', url: '/posts', token: f.user.token, payload: [] as never }),
    teaches: [/body must be a JSON object/],
    field: 'body',
  },
  {
    name: 'a query parameter on an operation that takes none',
    code: 'invalid_request',
    request: get('/me?verbose=1', (f) => f.user.token),
    teaches: [/verbose/, /takes no parameters/],
    field: 'verbose',
  },
  // Every other 4xx code.
  {
    name: 'POST /tag-associations/{uuid} that says neither delete nor update',
    code: 'ambiguous_operation',
    request: (f) => ({
      method: 'POST',
      url: `/tag-associations/${f.associationUuid}`,
      token: f.user.token,
      payload: { tag_uuid: MISSING },
    }),
    teaches: [/X-HTTP-Method-Override|_method/, /delete/, /update/],
  },
  {
    name: 'an unknown token',
    code: 'unauthenticated',
    request: get('/search?query=hello', () => 'not-a-real-token'),
    teaches: [/not known/, /POST \/oauth\/token/],
  },
  {
    name: 'a token whose client is disabled',
    code: 'invalid_client',
    request: get('/search?query=hello', () => disabledClientToken),
    teaches: [/disabled/, /enable it|another client/],
  },
  {
    name: 'a guest token on a logged-in operation',
    code: 'login_required',
    request: (f) => ({ method: 'POST', url: '/posts', token: f.t.guest, payload: { body: 'hello' } }),
    teaches: [/guest token is not enough/, /password grant/],
  },
  {
    name: 'a user on an admin operation',
    code: 'forbidden',
    request: (f) => ({ method: 'POST', url: `/tags/${MISSING}/delete`, token: f.user.token }),
    teaches: [/administrators/, /users role USERNAME admin/],
  },
  {
    name: 'an unknown path',
    code: 'not_found',
    request: get('/tag'),
    teaches: [/GET \/tag\b/, /\/docs/],
  },
  {
    name: 'a missing item',
    code: 'object_not_found',
    request: get(`/posts/${MISSING}`),
    teaches: [/No post with that uuid/, /check the uuid/],
  },
  {
    name: "someone else's karma record",
    code: 'object_not_found',
    request: get(`/karma/${MISSING}`, (f) => f.other.token),
    teaches: [/karma/, /check the uuid/],
  },
  {
    name: 'a switched-off operation',
    code: 'operation_disabled',
    request: (f) => ({ method: 'POST', url: '/tags/create', token: f.user.token, payload: { name: 'x' } }),
    teaches: [/tags\.create is disabled/, /ENABLED_OPERATIONS=tags\.create/],
  },
  {
    name: 'a known path with another method',
    code: 'method_not_allowed',
    request: (f) => ({ method: 'DELETE', url: `/posts/${MISSING}`, token: f.user.token }),
    teaches: [/DELETE is not allowed/, /allowed: GET/],
  },
  {
    name: 'a username that is taken',
    code: 'conflict',
    request: (f) => ({
      method: 'POST',
      url: '/users',
      token: f.t.guest,
      payload: {
        username: f.user.username.toUpperCase(),
        email: 'fresh@example.com',
        password: 'long password',
      },
    }),
    teaches: [/username/, /Choose another/],
    field: 'username',
  },
  {
    name: 'a body over 1 MiB',
    code: 'payload_too_large',
    request: (f) => ({
      method: 'POST',
      url: '/posts',
      token: f.user.token,
      payload: { body: 'x'.repeat(1_100_000) },
    }),
    teaches: [/at most 1048576 bytes/, /smaller/],
  },
  {
    name: 'a body as text/plain',
    code: 'unsupported_media_type',
    request: (f) => ({
      method: 'POST',
      url: '/posts',
      token: f.user.token,
      payload: 'body=hello',
      headers: { 'content-type': 'text/plain' },
    }),
    teaches: [/text\/plain/, /application\/json/, /application\/x-www-form-urlencoded/],
  },
];

let disabledClientToken = '';

for (const dialect of testDialects()) {
  describe(`errors that teach [${dialect.name}]`, () => {
    let f: Fixture;
    let limited: TestApp;
    before(async () => {
      const t = await startTestApp(dialect, {
        ENABLED_OPERATIONS: ['tags.delete', 'tag-associations.update', 'tag-associations.delete'],
        LOGIN_FAILURES_PER_MINUTE: 1000,
      });
      const user = await t.createUser();
      const other = await t.createUser();
      const post = await t.inject({
        method: 'POST',
        url: '/posts',
        token: user.token,
        payload: { body: 'learning the errors #mistakes' },
      });
      assert.equal(post.statusCode, 201, post.body);
      const list = await t.inject({
        method: 'GET',
        url: `/tag-associations?filterby[target_uuid][eq]=${body(post).data.uuid}`,
        token: user.token,
      });
      assert.equal(list.statusCode, 200, list.body);
      f = { t, user, other, associationUuid: body(list).data[0].uuid };
      await saveClient(t.ctx.db, {
        id: 'soon-disabled',
        secret: 'soon-disabled-secret',
        name: 'x',
        firstParty: false,
      });
      disabledClientToken = (await issueTokens(t.ctx, t.ctx.db, 'soon-disabled', null)).access_token;
      await setClientDisabled(t.ctx.db, 'soon-disabled', true);
      limited = await startTestApp(dialect, { RATE_LIMIT_PER_MINUTE: 2 });
    });
    after(async () => {
      await f?.t.close();
      await limited?.close();
    });

    for (const c of CASES) {
      it(`${c.code}: ${c.name}`, async () => {
        const res = await f.t.inject(c.request(f));
        const b = body(res);
        assert.equal(res.statusCode, ERROR_STATUS[c.code as keyof typeof ERROR_STATUS], res.body);
        assert.equal(b.status, 'ERROR');
        assert.equal(b.error.code, c.code, res.body);
        for (const re of c.teaches) assert.match(b.error.message, re, `message: ${b.error.message}`);
        if (c.field) {
          assert.ok(
            b.error.details?.some((d: { field: string }) => d.field === c.field),
            `details name ${c.field}: ${JSON.stringify(b.error.details)}`,
          );
        }
        // Every detail teaches too: no bare "is not valid".
        for (const d of b.error.details ?? []) assert.doesNotMatch(d.message, /^is not valid$/);
      });
    }

    it('rate_limited: over the limit says the limit and when to retry', async () => {
      let res = await limited.inject({ method: 'GET', url: '/tags', token: limited.guest });
      for (let i = 0; i < 3 && res.statusCode !== 429; i++) {
        res = await limited.inject({ method: 'GET', url: '/tags', token: limited.guest });
      }
      assert.equal(res.statusCode, 429);
      assert.equal(body(res).error.code, 'rate_limited');
      assert.match(body(res).error.message, /at most 2 per minute/);
      assert.match(body(res).error.message, /Retry in/);
      assert.ok(res.headers['retry-after']);
    });

    it('the token endpoint: a wrong grant type names it and lists the supported ones', async () => {
      const res = await f.t.inject({
        method: 'POST',
        url: '/oauth/token',
        payload: {
          grant_type: 'authorization_code',
          client_id: f.t.client.id,
          client_secret: f.t.client.secret,
        },
      });
      assert.equal(res.statusCode, 400);
      assert.equal(body(res).error, 'unsupported_grant_type');
      assert.match(body(res).error_description, /"authorization_code" is not supported/);
      assert.match(body(res).error_description, /client_credentials .*password .*refresh_token/);
    });

    it('the token endpoint: no grant type, and a wrong client, say what to send', async () => {
      const none = await f.t.inject({
        method: 'POST',
        url: '/oauth/token',
        payload: { client_id: f.t.client.id, client_secret: f.t.client.secret },
      });
      assert.equal(none.statusCode, 400);
      assert.match(body(none).error_description, /grant_type is required/);
      const wrong = await f.t.inject({
        method: 'POST',
        url: '/oauth/token',
        payload: { grant_type: 'client_credentials' },
      });
      assert.equal(wrong.statusCode, 401);
      assert.equal(body(wrong).error, 'invalid_client');
      assert.match(body(wrong).error_description, /HTTP Basic|client_id and client_secret/);
    });

    it('covers every 4xx code of the catalogue', () => {
      const covered = new Set([...CASES.map((c) => c.code), 'rate_limited']);
      const all = Object.entries(ERROR_STATUS)
        .filter(([, status]) => status < 500)
        .map(([code]) => code);
      assert.deepEqual(
        all.filter((code) => !covered.has(code)),
        [],
      );
    });
  });
}
