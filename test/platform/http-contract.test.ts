import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { body, countRows, startTestApp, type TestApp, testDialects } from '../helper.ts';

for (const dialect of testDialects()) {
  describe(`HTTP contract [${dialect.name}]`, () => {
    let t: TestApp;
    before(async () => {
      t = await startTestApp(dialect);
    });
    after(async () => t?.close());

    it('answers /health and /ready without a token', async () => {
      for (const url of ['/health', '/ready']) {
        const res = await t.inject({ method: 'GET', url });
        assert.equal(res.statusCode, 200);
        assert.equal(body(res).status, 'OK');
        const ts = body(res).timestamp;
        assert.ok(Number.isInteger(ts), `whole seconds: ${ts}`);
        assert.ok(Math.abs(ts - Date.now() / 1000) < 60, `Unix seconds, now: ${ts}`);
        assert.ok(res.headers['x-request-id']);
        assert.equal(res.headers['x-powered-by'], undefined);
        assert.match(String(res.headers['content-type']), /application\/json; charset=utf-8/);
      }
    });

    it('answers an unknown route with 404 not_found in the envelope', async () => {
      const res = await t.inject({ method: 'GET', url: '/no/such/thing' });
      assert.equal(res.statusCode, 404);
      const b = body(res);
      assert.equal(b.status, 'ERROR');
      assert.equal(b.error.code, 'not_found');
      assert.ok(Number.isInteger(b.timestamp), `whole seconds: ${b.timestamp}`);
      assert.ok(Math.abs(b.timestamp - Date.now() / 1000) < 60, `Unix seconds, now: ${b.timestamp}`);
      assert.equal(b.error.request_id, res.headers['x-request-id']);
    });

    it('answers a known path with another method with 405 and Allow', async () => {
      const res = await t.inject({ method: 'DELETE', url: '/health' });
      assert.equal(res.statusCode, 405);
      assert.equal(body(res).error.code, 'method_not_allowed');
      assert.match(String(res.headers.allow), /GET/);
    });

    it('answers another method on a fixed path that a parameter route would take with 405, not that route', async () => {
      // GET /tags/create would otherwise be GET /tags/{tag_uuid} with an invalid uuid: a 400 about a uuid.
      for (const method of ['GET', 'HEAD'] as const) {
        const res = await t.inject({ method, url: '/tags/create?x=1', token: t.guest });
        assert.equal(res.statusCode, 405, `${method}: ${res.body}`);
        assert.equal(res.headers.allow, 'POST');
      }
      assert.equal(
        body(await t.inject({ method: 'GET', url: '/tags/create' })).error.code,
        'method_not_allowed',
      );
      for (const method of ['GET', 'HEAD'] as const) {
        const trending = await t.inject({ method, url: '/tags/trending', token: t.guest });
        assert.equal(trending.statusCode, 200, `${method}: a fixed path of the same method is its own route`);
      }
    });

    it('answers a trailing-slash variant of a path as an unknown route, not a contradictory 405', async () => {
      const res = await t.inject({ method: 'POST', url: '/oauth/token/' });
      assert.equal(res.statusCode, 404);
      assert.equal(body(res).error.code, 'not_found');
    });

    it('answers a write whose referenced item vanished meanwhile with 409 conflict, storing nothing', async () => {
      // A concurrent delete between the checks and the insert surfaces as a foreign-key violation; simulate one.
      const user = await t.createUser();
      let armed = true;
      t.ctx.bus.on(['networkCreated'], async (trx) => {
        if (!armed) return;
        armed = false;
        await trx
          .insertInto('friends')
          .values({ user_uuid: user.uuid, friend_uuid: 'no-such-user' })
          .execute();
      });
      const res = await t.inject({
        method: 'POST',
        url: '/networks',
        token: user.token,
        payload: { name: 'n' },
      });
      assert.equal(res.statusCode, 409, res.body);
      assert.equal(body(res).error.code, 'conflict');
      const rows = await t.ctx.db.selectFrom('networks').select('uuid').execute();
      assert.equal(rows.length, 0);
    });

    it('an operation that takes no body refuses any property in one, changing nothing; bare or {} it works', async () => {
      const alice = await t.createUser();
      const bob = await t.createUser();
      const request = await t.inject({
        method: 'POST',
        url: '/connections',
        token: alice.token,
        payload: { user_uuid: bob.uuid },
      });
      assert.equal(request.statusCode, 201, request.body);
      const connection = body(request).data.uuid;
      const confirm = (payload?: object) =>
        t.inject({
          method: 'POST',
          url: `/connections/${connection}/confirm`,
          token: bob.token,
          ...(payload ? { payload } : {}),
        });
      const refused = await confirm({ user_uuid: alice.uuid });
      assert.equal(refused.statusCode, 400, refused.body);
      assert.equal(body(refused).error.code, 'invalid_request');
      assert.match(body(refused).error.message, /user_uuid/);
      const pending = await t.ctx.db
        .selectFrom('connections')
        .select('status')
        .where('uuid', '=', connection)
        .executeTakeFirstOrThrow();
      assert.equal(pending.status, 'pending');
      assert.equal((await confirm()).statusCode, 200);

      const deleteSelf = (payload: object) =>
        t.inject({ method: 'POST', url: `/users/${alice.uuid}/delete`, token: alice.token, payload });
      assert.equal((await deleteSelf({ confirm: true })).statusCode, 400);
      const kept = await t.ctx.db.selectFrom('users').select('uuid').where('uuid', '=', alice.uuid).execute();
      assert.equal(kept.length, 1, 'the account is still there');
      assert.equal((await deleteSelf({})).statusCode, 200);

      // The document says so: such a body is optional and empty; other writes still require theirs.
      const doc = body(await t.inject({ method: 'GET', url: '/openapi.json' }));
      const confirmBody = doc.paths['/connections/{uuid}/confirm'].post.requestBody;
      assert.equal(confirmBody.required, false);
      assert.deepEqual(confirmBody.content['application/json'].schema.properties ?? {}, {});
      assert.equal(doc.paths['/posts'].post.requestBody.required, true);
    });

    it('an operation that takes no body accepts an empty body labelled JSON; one that needs a body refuses it', async () => {
      const alice = await t.createUser();
      const bob = await t.createUser();
      const request = await t.inject({
        method: 'POST',
        url: '/connections',
        token: alice.token,
        payload: { user_uuid: bob.uuid },
      });
      assert.equal(request.statusCode, 201, request.body);
      const connection = body(request).data.uuid;
      const before = await countRows(t.ctx.db, 'posts');
      for (const type of ['application/json', 'application/json; charset=utf-8']) {
        const headers = { 'content-type': type, 'content-length': '0' };
        const confirm = await t.inject({
          method: 'POST',
          url: `/connections/${connection}/confirm`,
          token: bob.token,
          headers,
          payload: '',
        });
        assert.equal(confirm.statusCode, 200, `${type}: ${confirm.body}`);
        assert.equal(body(confirm).data.status, 'confirmed');
        const post = await t.inject({
          method: 'POST',
          url: '/posts',
          token: alice.token,
          headers,
          payload: '',
        });
        assert.equal(post.statusCode, 400, `${type}: ${post.body}`);
        assert.equal(body(post).error.code, 'invalid_request');
      }
      assert.equal(await countRows(t.ctx.db, 'posts'), before);
    });

    it('answers Cache-Control: no-store to every request with credentials, also those refused before the token check', async () => {
      const cases = [
        { method: 'GET' as const, url: '/me', authorization: 'Bearer no-such-token', status: 401 },
        { method: 'GET' as const, url: '/me', authorization: 'Basic dGVzdDp0ZXN0', status: 401 },
        { method: 'GET' as const, url: '/no/such/thing', authorization: `Bearer ${t.guest}`, status: 404 },
        { method: 'DELETE' as const, url: '/health', authorization: `Bearer ${t.guest}`, status: 405 },
        { method: 'POST' as const, url: '/tags/create', authorization: `Bearer ${t.guest}`, status: 404 },
        { method: 'GET' as const, url: '/health', authorization: `Bearer ${t.guest}`, status: 200 },
      ];
      for (const c of cases) {
        const res = await t.inject({
          method: c.method,
          url: c.url,
          headers: { authorization: c.authorization },
          ...(c.method === 'POST' ? { payload: { name: 'x' } } : {}),
        });
        assert.equal(res.statusCode, c.status, `${c.method} ${c.url}: ${res.body}`);
        assert.equal(res.headers['cache-control'], 'no-store', `${c.method} ${c.url}`);
      }
      // Without credentials a public answer stays cacheable as before.
      const open = await t.inject({ method: 'GET', url: '/health' });
      assert.equal(open.headers['cache-control'], undefined);
    });

    it('echoes at most 60 characters of each unknown field name and suggests no name for a long one', async () => {
      // 20 names of 50 KB (the most the validator names one by one) made a 2 MB answer, each name compared with
      // every accepted one by edit distance.
      const user = await t.createUser();
      const before = await countRows(t.ctx.db, 'posts');
      const long = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`${i}`.padEnd(50_000, 'x'), 0]));
      const res = await t.inject({
        method: 'POST',
        url: '/posts',
        token: user.token,
        payload: { body: 'hi', ...long },
      });
      assert.equal(res.statusCode, 400, res.body.slice(0, 300));
      const error = body(res).error;
      assert.equal(error.details.length, 20);
      assert.ok(
        error.details.every((d: { field: string }) => d.field.length <= 60),
        'names cut short',
      );
      assert.ok(res.body.length < 20_000, `${res.body.length} bytes`);
      const near = await t.inject({
        method: 'POST',
        url: '/posts',
        token: user.token,
        payload: { body: 'hi', [`visibility${'y'.repeat(100)}`]: 'public' },
      });
      assert.equal(near.statusCode, 400, near.body);
      assert.doesNotMatch(body(near).error.message, /did you mean/);
      assert.equal(body(near).error.details[0].field, `visibility${'y'.repeat(50)}`);
      const typo = await t.inject({
        method: 'POST',
        url: '/posts',
        token: user.token,
        payload: { body: 'hi', visibilty: 'public' },
      });
      assert.match(
        body(typo).error.message,
        /visibilty is not an accepted field here; did you mean visibility\?/,
      );
      assert.equal(await countRows(t.ctx.db, 'posts'), before);
    });

    it('refuses a body of thousands of unknown fields whole, naming the first 20, storing nothing', async () => {
      // Each unknown field was one validation error, then matched against every accepted name: 110,000 of them in a
      // 1 MB body held the event loop for a second. Now they are counted and refused before validation.
      const user = await t.createUser();
      const before = await countRows(t.ctx.db, 'posts');
      const fields = Array.from({ length: 50_000 }, (_, i) => `"f${i}":0`).join(',');
      // A form body holds at most 300 parameters (the parser's limit), so 299 unknown ones here; more are refused
      // before any field is read (test/platform/encodings.test.ts).
      const form = (n: number) => `body=hello&${Array.from({ length: n }, (_, i) => `f${i}=0`).join('&')}`;
      for (const [type, payload, unknown] of [
        ['application/json', `{"body":"hello",${fields}}`, 50_000],
        ['application/x-www-form-urlencoded', form(299), 299],
      ] as const) {
        const res = await t.inject({
          method: 'POST',
          url: '/posts',
          token: user.token,
          headers: { 'content-type': type },
          payload,
        });
        assert.equal(res.statusCode, 400, res.body);
        const error = body(res).error;
        assert.equal(error.code, 'invalid_request');
        assert.ok(
          error.message.includes(`has ${unknown} fields this operation does not accept (f0, f1, f2, ...)`),
          error.message,
        );
        assert.equal(error.details.length, 20);
        assert.deepEqual(error.details[19], { field: 'f19', message: 'is not an accepted field here' });
      }
      const many = await t.inject({
        method: 'POST',
        url: '/posts',
        token: user.token,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: form(50_000),
      });
      assert.equal(many.statusCode, 400, many.body);
      assert.match(body(many).error.message, /more than 300 parameters/);
      // Names are echoed cut to 60 characters, so long ones do not make a long answer.
      const long = Object.fromEntries(Array.from({ length: 25 }, (_, i) => [`${i}`.padEnd(5000, 'x'), 0]));
      const cut = await t.inject({
        method: 'POST',
        url: '/posts',
        token: user.token,
        payload: { body: 'hi', ...long },
      });
      assert.equal(cut.statusCode, 400, cut.body);
      assert.ok(body(cut).error.details.every((d: { field: string }) => d.field.length === 60));
      assert.ok(cut.body.length < 5000, `${cut.body.length} bytes`);
      // A few unknown fields still get the validator's own message, with the closest accepted name.
      const few = await t.inject({
        method: 'POST',
        url: '/posts',
        token: user.token,
        payload: { body: 'hello', visibilty: 'public' },
      });
      assert.equal(few.statusCode, 400, few.body);
      assert.match(body(few).error.message, /visibilty/);
      assert.doesNotMatch(body(few).error.message, /fields this operation does not accept/);
      assert.equal(await countRows(t.ctx.db, 'posts'), before);
    });

    it('echoes a safe incoming X-Request-Id and replaces an unsafe one', async () => {
      const good = await t.inject({ method: 'GET', url: '/health', headers: { 'x-request-id': 'abc-123' } });
      assert.equal(good.headers['x-request-id'], 'abc-123');
      const bad = await t.inject({ method: 'GET', url: '/health', headers: { 'x-request-id': 'a b\nc' } });
      assert.notEqual(bad.headers['x-request-id'], 'a b\nc');
    });

    it('serves /openapi.json as OpenAPI 3.1 and /metrics in Prometheus format', async () => {
      const doc = await t.inject({ method: 'GET', url: '/openapi.json' });
      assert.equal(doc.statusCode, 200);
      assert.equal(body(doc).openapi, '3.1.0');
      assert.ok(body(doc).paths['/health']);
      // Every switchable operation says it is off by default, the two-in-one POST included (with both its names).
      for (const [path, method] of [
        ['/tags/create', 'post'],
        ['/tag-association', 'post'],
        ['/tag-associations/{tag_association_uuid}', 'post'],
        ['/tag-associations/{tag_association_uuid}', 'delete'],
      ]) {
        const op = body(doc).paths[path as string][method as string];
        assert.match(op.description, /Switched off by default/, `${method} ${path}`);
        assert.match(op.responses['404'].description, /operation_disabled/, `${method} ${path}`);
      }
      assert.match(
        body(doc).paths['/tag-associations/{tag_association_uuid}'].post.description,
        /ENABLED_OPERATIONS=tag-associations\.delete,tag-associations\.update` \(each switches on its own part\)/,
      );
      const metrics = await t.inject({ method: 'GET', url: '/metrics' });
      assert.equal(metrics.statusCode, 200);
      assert.match(metrics.body, /http_requests_total/);
      assert.match(metrics.body, /http_request_duration_seconds_bucket/);
    });
  });
}
