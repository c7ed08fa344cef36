import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { firstDuplicateKey } from '../../src/http/json-body.ts';
import { body, countRows, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';

// src/http/json-types.ts: in a JSON body the client chose each value's type, so a wrong one is a 400; query strings
// and form bodies, all text, keep the validator's coercion.
for (const dialect of testDialects()) {
  describe(`JSON fields of the wrong type [${dialect.name}]`, () => {
    let t: TestApp;
    let alice: TestUser;
    let bob: TestUser;
    before(async () => {
      t = await startTestApp(dialect);
      alice = await t.createUser();
      bob = await t.createUser();
    });
    after(async () => t?.close());

    const count = (table: 'posts' | 'networks' | 'connections') => countRows(t.ctx.db, table);
    /** POSTs a raw body of the given content type as alice. */
    const postRaw = (url: string, contentType: string, payload: string) =>
      t.inject({
        method: 'POST',
        url,
        token: alice.token,
        headers: { 'content-type': contentType },
        payload,
      });
    const FORM = 'application/x-www-form-urlencoded';

    it('answers 400 naming the field, and stores nothing', async () => {
      const cases = [
        { url: '/posts', payload: { body: 123 }, field: 'body' },
        { url: '/posts', payload: { body: true }, field: 'body' },
        { url: '/posts', payload: { body: 'ok', visibility: ['public'] }, field: 'visibility' },
        { url: '/networks', payload: { name: 'n1', payment_id: '12' }, field: 'payment_id' },
        { url: '/connections', payload: { user_uuid: [bob.uuid] }, field: 'user_uuid' },
      ];
      for (const c of cases) {
        const res = await t.inject({ method: 'POST', url: c.url, token: alice.token, payload: c.payload });
        assert.equal(res.statusCode, 400, `${c.url} ${JSON.stringify(c.payload)}: ${res.body}`);
        assert.equal(body(res).error.code, 'invalid_request');
        assert.equal(body(res).error.details[0].field, c.field);
      }
      assert.equal(await count('posts'), 0);
      assert.equal(await count('networks'), 0);
      assert.equal(await count('connections'), 0);
    });

    it('takes the right types, refuses null where the schema has none, and reads form bodies as text', async () => {
      const json = await t.inject({
        method: 'POST',
        url: '/networks',
        token: alice.token,
        payload: { name: 'n2', payment_id: 12 },
      });
      assert.equal(json.statusCode, 201, json.body);
      assert.equal(body(json).data.payment_id, 12);
      // null is a type too: payment_id is a whole number or absent on creation (the validator made null 0).
      const nulled = await t.inject({
        method: 'POST',
        url: '/networks',
        token: alice.token,
        payload: { name: 'n3', payment_id: null },
      });
      assert.equal(nulled.statusCode, 400, nulled.body);
      const form = await t.inject({
        method: 'POST',
        url: '/networks',
        token: alice.token,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'name=n4&payment_id=34',
      });
      assert.equal(form.statusCode, 201, form.body);
      assert.equal(body(form).data.payment_id, 34, 'a form value is text, converted as before');
      assert.equal(await count('networks'), 2);
    });

    it('reads numbers in query strings and forms in decimal digits only, storing nothing otherwise', async () => {
      for (const query of ['limit=0x10', 'limit=1e1', 'limit=%2016', 'offset=0b1', 'page=1.0']) {
        const res = await t.inject({ method: 'GET', url: `/tags?${query}`, token: alice.token });
        assert.equal(res.statusCode, 400, `${query}: ${res.body}`);
        assert.equal(body(res).error.code, 'invalid_request');
        assert.match(body(res).error.details[0].field, /^(limit|offset|page)$/, query);
        assert.match(body(res).error.message, /decimal digits/);
      }
      // A list where one value is taken: the validator would take a list of one as its element.
      for (const url of [
        '/tags?limit[]=5',
        '/tags?limit[0]=5',
        '/search?query[]=kiwi',
        '/search?query=a&query=b',
      ]) {
        const res = await t.inject({ method: 'GET', url, token: alice.token });
        assert.equal(res.statusCode, 400, `${url}: ${res.body}`);
        assert.match(body(res).error.details[0].field, /^(limit|query)$/, url);
        assert.match(body(res).error.message, /one value/, url);
      }
      const listed = await postRaw('/networks', FORM, 'name[]=listed');
      assert.equal(listed.statusCode, 400, listed.body);
      assert.equal(body(listed).error.details[0].field, 'name');
      const empty = await t.inject({ method: 'GET', url: '/tags?limit=', token: alice.token });
      assert.equal(empty.statusCode, 400, empty.body);
      assert.equal(body(empty).error.details[0].field, 'limit');
      const decimal = await t.inject({ method: 'GET', url: '/tags?limit=010&offset=3', token: alice.token });
      assert.equal(decimal.statusCode, 200, decimal.body);
      assert.equal(body(decimal).count.offset, 3);
      assert.equal(body(decimal).count.limit, 10);
      const before = await count('networks');
      const form = await postRaw('/networks', FORM, 'name=n5&payment_id=0x22');
      assert.equal(form.statusCode, 400, form.body);
      assert.equal(body(form).error.details[0].field, 'payment_id');
      assert.equal(await count('networks'), before);
    });

    it('refuses a JSON field named twice in one object, at any depth, storing nothing', async () => {
      const before = await count('posts');
      const cases = [
        { raw: '{"body":"first","body":"second"}', field: 'body' },
        { raw: '{"body":"one","\\u0062ody":"two"}', field: 'body' },
        // Sibling objects may share names: the repeat is the inner "e", not "c".
        { raw: '{"body":"deep","extra":[{"c":1},{"c":1,"d":{"e":1,"e":2}}]}', field: 'e' },
      ];
      for (const c of cases) {
        const res = await postRaw('/posts', 'application/json', c.raw);
        assert.equal(res.statusCode, 400, `${c.raw}: ${res.body}`);
        assert.equal(body(res).error.code, 'invalid_request');
        assert.equal(body(res).error.details[0].field, c.field, c.raw);
        assert.match(body(res).error.message, /twice/);
      }
      assert.equal(await count('posts'), before);
      // A JSON body is UTF-8: another charset is refused rather than misread.
      for (const charset of ['utf-16', 'ISO-8859-1', '"latin1"']) {
        const res = await postRaw('/posts', `application/json; charset=${charset}`, '{"body":"caf\u00e9"}');
        assert.equal(res.statusCode, 415, `${charset}: ${res.body}`);
        assert.equal(body(res).error.code, 'unsupported_media_type');
      }
      assert.equal(await count('posts'), before);
      // Names inside string values are not fields.
      const text = 'quoted {"body":1,"body":2} and \\"body\\"';
      const fine = await postRaw(
        '/posts',
        'application/json',
        JSON.stringify({ body: text, visibility: 'public' }),
      );
      assert.equal(fine.statusCode, 201, fine.body);
      assert.equal(body(fine).data.body, text);
      assert.equal(await count('posts'), before + 1);
    });
  });
}

describe('firstDuplicateKey', () => {
  it('finds a repeated name where JSON.parse would keep the last, and nothing else', () => {
    const cases: [string, string | undefined][] = [
      ['{"a":1,"a":2}', 'a'],
      ['{"a\\\\":1,"a\\\\":2}', 'a\\'],
      ['{"x":"\\"","x":1}', 'x'],
      ['{"\\u0061":1,"a":2}', 'a'],
      ['[{"a":1},{"a":1}]', undefined],
      ['{"a":{},"b":[],"c":{"a":[{"a":1}]}}', undefined],
      ['{"a":"{\\"a\\":1,\\"a\\":2}","b":"[,]"}', undefined],
      ['{"a":[1,{"b":2},3],"a":4}', 'a'],
      ['"just a string"', undefined],
      ['{"a":"unterminated', undefined],
    ];
    for (const [text, expected] of cases) assert.equal(firstDuplicateKey(text), expected, text);
  });
});
