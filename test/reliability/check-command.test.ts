// `npm run cli -- check` reads what the API's privacy rests on besides karma and tags: the friends table every
// visibility check reads, and the search documents that say who may find each item. Clean after real use; each
// tampered row named, with exit code 1, until the repair it names is run.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { reindex } from '../../src/modules/search/search.service.ts';
import { runCheckCommand, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { befriend, call } from '../search/world.ts';

for (const dialect of testDialects()) {
  describe(`check: friendships and the search index [${dialect.name}]`, () => {
    let t: TestApp;
    let ana: TestUser;
    let ben: TestUser;
    let secret: string;
    let note: string;

    const runCheck = () => runCheckCommand(t.ctx);

    before(async () => {
      t = await startTestApp(dialect);
      [ana, ben] = [await t.createUser('ana'), await t.createUser('ben')];
      await befriend(t, ana, ben);
      const thread = (await call(t, 'POST', '/posts', ana.token, { body: 'a thread', visibility: 'friends' }))
        .uuid;
      await call(t, 'POST', `/posts/${thread}/comments`, ben.token, { body: 'a remark' });
      secret = (await call(t, 'POST', '/posts', ana.token, { body: 'a secret', visibility: 'private' })).uuid;
      note = (await call(t, 'POST', '/messages', ben.token, { recipient_uuid: ana.uuid, body: 'a note' }))
        .uuid;
      await call(t, 'POST', '/networks', ana.token, { name: 'Climbers' });
    });
    after(async () => t?.close());

    it('passes after real use', async () => {
      const clean = await runCheck();
      assert.equal(clean.code, 0, clean.out);
      assert.match(
        clean.out,
        /every friendship matches its connection; every search document matches its item/,
      );
    });

    it('names a friends row without its confirmed connection, and a connection missing its row', async () => {
      await t.ctx.db.deleteFrom('friends').where('user_uuid', '=', ben.uuid).execute();
      const carl = await t.createUser('carl');
      await t.ctx.db.insertInto('friends').values({ user_uuid: carl.uuid, friend_uuid: ana.uuid }).execute();
      const { code, out } = await runCheck();
      assert.equal(code, 1, out);
      assert.match(
        out,
        new RegExp(`friendship mismatch: ${ben.uuid} -> ${ana.uuid}: confirmed connection without`),
      );
      assert.match(out, new RegExp(`friendship mismatch: ${carl.uuid} -> ${ana.uuid}: friends row without`));
      assert.match(out, /check FAILED: 2 friendships differ/);
      await t.ctx.db.deleteFrom('friends').where('user_uuid', '=', carl.uuid).execute();
      await t.ctx.db.insertInto('friends').values({ user_uuid: ben.uuid, friend_uuid: ana.uuid }).execute();
      assert.equal((await runCheck()).code, 0);
    });

    it('names a document that would show a private post, and one missing; search reindex repairs both', async () => {
      await sql`update search_docs set visibility = 'public' where uuid = ${secret}`.execute(t.ctx.db);
      await sql`delete from search_docs where uuid = ${note}`.execute(t.ctx.db);
      const { code, out } = await runCheck();
      assert.equal(code, 1, out);
      assert.match(out, new RegExp(`search index mismatch: post ${secret}: indexed with another`));
      assert.match(out, new RegExp(`search index mismatch: messages ${note}: missing from the index`));
      assert.match(
        out,
        /check FAILED: 2 search documents differ from their items \(repair: npm run cli -- search reindex\)/,
      );
      await reindex(t.ctx);
      const repaired = await runCheck();
      assert.equal(repaired.code, 0, repaired.out);
    });
  });
}
