import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { body, countRows, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';

// PostgreSQL refuses NUL characters in text, so every one of these answered 500 there (and stored the text on
// SQLite): a 400 invalid_request on both engines now, with nothing stored.
for (const dialect of testDialects()) {
  describe(`text the engines cannot store alike [${dialect.name}]`, () => {
    let t: TestApp;
    let alice: TestUser;
    let bob: TestUser;
    before(async () => {
      t = await startTestApp(dialect);
      alice = await t.createUser();
      bob = await t.createUser();
    });
    after(async () => t?.close());

    const count = (table: 'posts' | 'networks' | 'messages' | 'media') => countRows(t.ctx.db, table);

    it('refuses a NUL character in bodies and query strings with 400, storing nothing', async () => {
      const cases = [
        { method: 'POST' as const, url: '/posts', token: alice.token, payload: { body: 'a\u0000b' } },
        { method: 'POST' as const, url: '/networks', token: alice.token, payload: { name: 'a\u0000b' } },
        {
          method: 'POST' as const,
          url: '/messages',
          token: alice.token,
          payload: { recipient_uuid: bob.uuid, body: 'hi\u0000' },
        },
        {
          method: 'POST' as const,
          url: `/users/${alice.uuid}/update`,
          token: alice.token,
          payload: { bio: 'x\u0000' },
        },
        { method: 'GET' as const, url: '/tags?filterby[name][eq]=a%00b', token: t.guest },
        { method: 'GET' as const, url: '/karma?filterby[event][like]=a%00', token: alice.token },
      ];
      for (const c of cases) {
        const res = await t.inject(c);
        assert.equal(res.statusCode, 400, `${c.method} ${c.url}: ${res.body}`);
        assert.equal(body(res).error.code, 'invalid_request', c.url);
        assert.match(body(res).error.message, /NUL/, c.url);
      }
      assert.equal(await count('posts'), 0);
      assert.equal(await count('networks'), 0);
      assert.equal(await count('messages'), 0);
      const me = await t.inject({ method: 'GET', url: '/me', token: alice.token });
      assert.equal(body(me).data.bio, null);
    });

    it('refuses non-finite numbers (1e999, Infinity) in query strings and bodies with 400, storing nothing', async () => {
      const cases = [
        { method: 'GET' as const, url: '/tags?limit=1e999', token: t.guest, field: 'limit' },
        { method: 'GET' as const, url: '/messages?limit=Infinity', token: alice.token, field: 'limit' },
        { method: 'GET' as const, url: '/tags?offset=-1e999', token: t.guest, field: 'offset' },
        { method: 'GET' as const, url: '/tags/trending?limit=1e999', token: t.guest, field: 'limit' },
        {
          method: 'POST' as const,
          url: '/networks',
          token: alice.token,
          payload: { name: 'n', payment_id: 'Infinity' },
          field: 'payment_id',
        },
      ];
      for (const { field, ...c } of cases) {
        const res = await t.inject(c);
        assert.equal(res.statusCode, 400, `${c.method} ${c.url}: ${res.body}`);
        assert.equal(body(res).error.code, 'invalid_request', c.url);
        assert.equal(body(res).error.details[0].field, field, c.url);
      }
      assert.equal(await count('networks'), 0);
    });

    it('refuses parameter names that are Object.prototype members instead of dropping them', async () => {
      const cases = [
        { url: '/tags?filterby[constructor][eq]=a', field: 'filterby[constructor][eq]' },
        { url: '/tags?sortby[toString]=asc', field: 'sortby[toString]' },
        { url: '/tags?filterby[name][__proto__]=x', field: 'filterby[name][__proto__]' },
        { url: '/tags?%5F%5Fproto%5F%5F[x]=1', field: '__proto__[x]' },
        // qs reads `filterby=x[constructor]` as one name (it ends names at `]=`) and dropped it: an unfiltered page.
        { url: '/tags?filterby=x[constructor]=y&limit=2', field: 'filterby=x[constructor]' },
      ];
      // Twice: the parses of query strings are remembered, and a refused one must be refused again.
      for (const c of [...cases, ...cases]) {
        const res = await t.inject({ method: 'GET', url: c.url, token: t.guest });
        assert.equal(res.statusCode, 400, `${c.url}: ${res.body}`);
        assert.equal(body(res).error.code, 'invalid_request', c.url);
        assert.equal(body(res).error.details[0].field, c.field, c.url);
      }
      const form = await t.inject({
        method: 'POST',
        url: '/posts',
        token: alice.token,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'body=hello&constructor[x]=1',
      });
      assert.equal(form.statusCode, 400, form.body);
      const ok = await t.inject({ method: 'GET', url: '/tags?filterby[name][like]=con%25', token: t.guest });
      assert.equal(ok.statusCode, 200, 'names that merely contain such words are fine');
      assert.equal(await count('posts'), 0);
    });

    it('refuses text with nothing visible in it (spaces, zero-width characters) with 400, storing nothing', async () => {
      const before = await count('posts');
      const blank = ' '.repeat(500);
      const invisible = '\u200b\u200c\u200d\u2060 \n\t\u00ad\u200e\u202e\u2066\u3164\u2800\ufeff\uffa0';
      for (const c of [
        { url: '/posts', payload: { body: blank } },
        { url: '/posts', payload: { body: invisible } },
        { url: '/networks', payload: { name: '   ' } },
        { url: '/messages', payload: { recipient_uuid: bob.uuid, body: '\n\n' } },
      ]) {
        const res = await t.inject({ method: 'POST', url: c.url, token: alice.token, payload: c.payload });
        assert.equal(res.statusCode, 400, `${c.url}: ${res.body}`);
        assert.match(body(res).error.details[0].message, /visible character/);
      }
      const ok = await t.inject({
        method: 'POST',
        url: '/posts',
        token: alice.token,
        payload: { body: '  a  ' },
      });
      assert.equal(ok.statusCode, 201, 'one visible character is enough');
      assert.equal(await count('posts'), before + 1);
      // The later cases of this file count posts from zero.
      const del = await t.inject({
        method: 'POST',
        url: `/posts/${body(ok).data.uuid}/delete`,
        token: alice.token,
      });
      assert.equal(del.statusCode, 200, del.body);
    });

    it('refuses a display name with nothing visible in it, on registration and on update, storing nothing', async () => {
      const users = () => countRows(t.ctx.db, 'users');
      const before = await users();
      const register = await t.inject({
        method: 'POST',
        url: '/users',
        token: t.guest,
        payload: {
          username: 'blank_name',
          email: 'blank@example.com',
          password: 'correct horse battery',
          display_name: '   ',
        },
      });
      assert.equal(register.statusCode, 400, register.body);
      assert.match(body(register).error.details[0].message, /visible character/);
      assert.equal(await users(), before);
      const update = await t.inject({
        method: 'POST',
        url: `/users/${alice.uuid}/update`,
        token: alice.token,
        payload: { display_name: '\u200b\u2060' },
      });
      assert.equal(update.statusCode, 400, update.body);
      const stored = await t.inject({ method: 'GET', url: `/users/${alice.uuid}`, token: alice.token });
      assert.notEqual(body(stored).data.display_name, '\u200b\u2060');
      const named = await t.inject({
        method: 'POST',
        url: `/users/${alice.uuid}/update`,
        token: alice.token,
        payload: { display_name: ' Alice ' },
      });
      assert.equal(named.statusCode, 200, named.body);
      assert.equal(body(named).data.display_name, ' Alice ');
    });

    it('refuses names that show other than they read (direction overrides, zero-width spaces, line breaks)', async () => {
      const networks = await count('networks');
      const spoofs = [
        '\u202Eecila',
        'ali\u2066ce\u2069',
        'ad\u200Bmin',
        'a\u2060lice',
        'alice\nadmin',
        '\uFEFFalice',
        'ad\u00ADmin',
        'ali\u180Ece',
        'alice\u2028admin',
        'alice\u2029',
      ];
      for (const name of spoofs) {
        const res = await t.inject({
          method: 'POST',
          url: `/users/${bob.uuid}/update`,
          token: bob.token,
          payload: { display_name: name },
        });
        assert.equal(res.statusCode, 400, `${JSON.stringify(name)}: ${res.body}`);
        assert.equal(body(res).error.details[0].field, 'display_name');
        assert.match(body(res).error.details[0].message, /direction override/);
        const net = await t.inject({ method: 'POST', url: '/networks', token: bob.token, payload: { name } });
        assert.equal(net.statusCode, 400, `${JSON.stringify(name)}: ${net.body}`);
      }
      const shown = await t.inject({ method: 'GET', url: `/users/${bob.uuid}`, token: bob.token });
      assert.ok(!spoofs.includes(body(shown).data.display_name));
      assert.equal(await count('networks'), networks);
      // Joiners and direction marks are parts of scripts and emoji: a Persian name, an emoji family, Hebrew.
      for (const name of [
        '\u0645\u06CC\u200C\u062E\u0648\u0627\u0647\u0645',
        '\u{1F468}\u200D\u{1F469}\u200D\u{1F467}',
        '\u05E9\u05E8\u05D4\u200F',
      ]) {
        const res = await t.inject({
          method: 'POST',
          url: `/users/${bob.uuid}/update`,
          token: bob.token,
          payload: { display_name: name },
        });
        assert.equal(res.statusCode, 200, `${JSON.stringify(name)}: ${res.body}`);
        assert.equal(body(res).data.display_name, name);
      }
    });

    it('refuses a lone surrogate with 400', async () => {
      const res = await t.inject({
        method: 'POST',
        url: '/posts',
        token: alice.token,
        headers: { 'content-type': 'application/json' },
        payload: '{"body":"broken \\ud800 text"}',
      });
      assert.equal(res.statusCode, 400, res.body);
      assert.match(body(res).error.message, /Unicode/);
      assert.equal(await count('posts'), 0);
    });

    it('refuses a NUL in a multipart field and in the OAuth token request (RFC 6749 error shape)', async () => {
      const boundary = '----nul';
      const payload = Buffer.concat([
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="title"\r\n\r\nbad\u0000title\r\n` +
            `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="p.png"\r\nContent-Type: image/png\r\n\r\n`,
        ),
        Buffer.from(
          'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
          'base64',
        ),
        Buffer.from(`\r\n--${boundary}--\r\n`),
      ]);
      const media = await t.inject({
        method: 'POST',
        url: '/media',
        token: alice.token,
        headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
        payload,
      });
      assert.equal(media.statusCode, 400, media.body);
      assert.equal(await count('media'), 0);
      const token = await t.inject({
        method: 'POST',
        url: '/oauth/token',
        payload: {
          grant_type: 'password',
          client_id: t.client.id,
          client_secret: t.client.secret,
          username: 'someone\u0000',
          password: 'whatever-password',
        },
      });
      assert.equal(token.statusCode, 400, token.body);
      assert.equal(body(token).error, 'invalid_request');
    });
  });
}
