import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { body, countRows, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';

const FORM = 'application/x-www-form-urlencoded';

// Bytes that are not what they claim to be (a broken percent escape, Latin-1 where UTF-8 is read, a compressed body)
// were read as something else and stored: each is a 4xx now, on both engines, with nothing stored.
for (const dialect of testDialects()) {
  describe(`request encodings [${dialect.name}]`, () => {
    let t: TestApp;
    let alice: TestUser;
    before(async () => {
      t = await startTestApp(dialect);
      alice = await t.createUser();
    });
    after(async () => t?.close());

    const posts = () => countRows(t.ctx.db, 'posts');
    const post = (payload: string | Buffer, headers: Record<string, string>) =>
      t.inject({ method: 'POST', url: '/posts', token: alice.token, headers, payload });

    it('refuses malformed or non-UTF-8 percent-encoding in a query string with 400 naming the parameter', async () => {
      const cases = [
        { url: '/search?query=caf%E9', field: 'query' },
        { url: '/search?query=100%25+sure+%ZZ', field: 'query' },
        { url: '/tags?filterby[name][eq]=%E0%A4%A', field: 'filterby[name][eq]' },
        { url: '/tags?limit=5&sortby[name]=asc%', field: 'sortby[name]' },
        // In a name: refused whole, so a prototype-member name behind a broken escape is never dropped silently.
        { url: '/tags?filterby[constructor]%=x', field: 'filterby[constructor]%' },
        { url: '/tags?%ZZ=1', field: '%ZZ' },
      ];
      // Twice: the parses of query strings are remembered, and a refused one must be refused again.
      for (const c of [...cases, ...cases]) {
        const res = await t.inject({ method: 'GET', url: c.url, token: t.guest });
        assert.equal(res.statusCode, 400, `${c.url}: ${res.body}`);
        const error = body(res).error;
        assert.equal(error.code, 'invalid_request', c.url);
        assert.equal(error.details[0].field, c.field, c.url);
        assert.match(error.message, /percent-encod/, c.url);
      }
      const ok = await t.inject({ method: 'GET', url: '/search?query=caf%C3%A9+100%25', token: t.guest });
      assert.equal(ok.statusCode, 200, ok.body);
    });

    it('refuses malformed percent-encoding in a form body with 400 naming the field, storing nothing', async () => {
      const before = await posts();
      for (const payload of [
        'body=100%25+sure+%ZZ',
        'body=caf%E9',
        'body=hello&visibility=public%',
        'b%ZZody=x',
      ]) {
        const res = await post(payload, { 'content-type': FORM });
        assert.equal(res.statusCode, 400, `${payload}: ${res.body}`);
        assert.equal(body(res).error.code, 'invalid_request', payload);
        assert.match(body(res).error.message, /percent-encod/, payload);
      }
      const named = await post('body=hello&visibility=public%', { 'content-type': FORM });
      assert.equal(body(named).error.details[0].field, 'visibility');
      assert.equal(await posts(), before);
      const ok = await post('body=caf%C3%A9+100%25+sure', { 'content-type': `${FORM}; charset=utf-8` });
      assert.equal(ok.statusCode, 201, ok.body);
      assert.equal(body(ok).data.body, 'café 100% sure');
    });

    it('refuses a query string or form body with more than 300 parameters instead of dropping the rest', async () => {
      // The parser reads 300 pieces between "&"s, empty ones included: what came after was dropped, unsaid.
      const filler = '&'.repeat(300);
      for (const url of [
        `/tags?limit=5${filler}filterby[tag_type]=hashtag`,
        `/tags?${'limit=5&'.repeat(301)}`,
      ]) {
        // Twice: a refused query string must not be remembered as parsed.
        for (let i = 0; i < 2; i++) {
          const res = await t.inject({ method: 'GET', url, token: t.guest });
          assert.equal(res.statusCode, 400, res.body);
          assert.equal(body(res).error.code, 'invalid_request');
          assert.match(body(res).error.message, /more than 300 parameters/);
        }
      }
      // Nothing but more empty pieces past the 300th: nothing is lost, nothing refused.
      const trailing = await t.inject({ method: 'GET', url: `/tags?limit=5${filler}&`, token: t.guest });
      assert.equal(trailing.statusCode, 200, trailing.body);
      const before = await posts();
      const res = await post(`body=hello${filler}visibility=private`, { 'content-type': FORM });
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(body(res).error.details[0].field, 'form body');
      assert.equal(await posts(), before, 'nothing stored: the post would have been public');
    });

    it('refuses a form body labelled with a charset other than UTF-8 with 415, storing nothing', async () => {
      const before = await posts();
      for (const charset of ['iso-8859-1', 'windows-1252', '"utf-16"']) {
        const res = await post('body=caf%E9', { 'content-type': `${FORM}; charset=${charset}` });
        assert.equal(res.statusCode, 415, `${charset}: ${res.body}`);
        assert.equal(body(res).error.code, 'unsupported_media_type');
      }
      assert.equal(await posts(), before);
    });

    it('refuses bytes that are not UTF-8 in a JSON or form body with 400, storing nothing', async () => {
      const before = await posts();
      const latin1 = Buffer.from('{"body":"caf\xE9"}', 'latin1');
      const cases = [
        { payload: latin1, type: 'application/json' },
        { payload: Buffer.from('{"body":"a\xff\xfeb"}', 'latin1'), type: 'application/json; charset=utf-8' },
        { payload: Buffer.from('body=caf\xE9', 'latin1'), type: FORM },
        // An encoded surrogate (CESU-8) is not UTF-8 either.
        {
          payload: Buffer.from([...Buffer.from('{"body":"'), 0xed, 0xa0, 0x80, ...Buffer.from('"}')]),
          type: 'application/json',
        },
      ];
      for (const c of cases) {
        const res = await post(c.payload, { 'content-type': c.type });
        assert.equal(res.statusCode, 400, `${c.payload.toString('hex')}: ${res.body}`);
        assert.equal(body(res).error.code, 'invalid_request');
        assert.match(body(res).error.message, /UTF-8/);
      }
      assert.equal(await posts(), before);
      const ok = await post(Buffer.from('{"body":"café ☕"}'), { 'content-type': 'application/json' });
      assert.equal(ok.statusCode, 201, ok.body);
      assert.equal(body(ok).data.body, 'café ☕');
    });

    it('refuses a body with a Content-Encoding other than identity with 415, storing nothing', async () => {
      const before = await posts();
      const json = JSON.stringify({ body: 'compressed' });
      const cases = [
        { payload: gzipSync(json), encoding: 'gzip' },
        { payload: json, encoding: 'gzip' },
        { payload: json, encoding: 'br' },
        { payload: json, encoding: 'deflate, identity' },
        { payload: json, encoding: 'x-custom' },
      ];
      for (const c of cases) {
        const res = await post(c.payload, {
          'content-type': 'application/json',
          'content-encoding': c.encoding,
        });
        assert.equal(res.statusCode, 415, `${c.encoding}: ${res.body}`);
        const error = body(res).error;
        assert.equal(error.code, 'unsupported_media_type');
        assert.match(error.message, /Content-Encoding/);
        assert.equal(error.request_id, res.headers['x-request-id']);
      }
      // The token endpoint too, in the envelope like its other 415s.
      const token = await t.inject({
        method: 'POST',
        url: '/oauth/token',
        headers: { 'content-type': FORM, 'content-encoding': 'gzip' },
        payload: gzipSync('grant_type=client_credentials'),
      });
      assert.equal(token.statusCode, 415, token.body);
      assert.equal(body(token).error.code, 'unsupported_media_type');
      assert.equal(await posts(), before);
      for (const encoding of ['identity', 'Identity']) {
        const ok = await post(json, { 'content-type': 'application/json', 'content-encoding': encoding });
        assert.equal(ok.statusCode, 201, `${encoding}: ${ok.body}`);
      }
      // No body: nothing to decode, nothing refused.
      const read = await t.inject({
        method: 'GET',
        url: '/tags',
        token: t.guest,
        headers: { 'content-encoding': 'gzip' },
      });
      assert.equal(read.statusCode, 200, read.body);
    });
  });
}
