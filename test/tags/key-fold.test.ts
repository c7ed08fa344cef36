import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { refoldTagKeys } from '../../src/db/migrations/0015-tag-key-fold.ts';
import { startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { associationsOf, createPost, findTag, get } from './support.ts';

// docs/decisions.md, "Tag keys fold like search".
for (const dialect of testDialects()) {
  describe(`tag keys fold the sharp s and the final sigma [${dialect.name}]`, () => {
    let t: TestApp;
    let alice: TestUser;
    let bob: TestUser;

    before(async () => {
      t = await startTestApp(dialect, { ENABLED_OPERATIONS: ['tags.create'] });
      alice = await t.createUser();
      bob = await t.createUser();
    });
    after(async () => t?.close());

    it('makes one tag of Straße, STRASSE and strasse, with the first spelling', async () => {
      await createPost(t, alice, 'walking down the #Straße');
      await createPost(t, bob, 'the #STRASSE again');
      await createPost(t, bob, 'and #strasse');
      const tag = await findTag(t, 'hashtag', 'STRAẞE');
      assert.equal(tag.name, 'Straße');
      assert.equal(tag.associations_count, 3);
      const list = await get(t, '/tags?filterby[tag_type]=hashtag&filterby[name][like]=stra%25');
      assert.equal(list.count.total, 1);
      const found = await get(t, '/search/hashtags?query=strasse');
      assert.deepEqual(
        found.data.map((x: { uuid: string }) => x.uuid),
        [tag.uuid],
      );
    });

    it('makes one tag of a final and a medial sigma', async () => {
      await createPost(t, alice, 'η #οδος');
      await createPost(t, bob, 'η #ΟΔΟΣ και #οδοσ');
      const tag = await findTag(t, 'hashtag', 'οδοσ');
      assert.equal(tag.name, 'οδος');
      assert.equal(tag.associations_count, 2, 'the second post names it twice and is tagged once');
    });

    it('migration 0015 re-keys a tag stored with the old key and merges it with its twin', async () => {
      // The state a database written before the fold holds: `Fuß` under the key `fuß` and `FUSS` under `fuss`, and
      // a post tagged with both.
      const first = await createPost(t, alice, 'by #Fuß');
      const older = await findTag(t, 'hashtag', 'fuss');
      await sql`update tags set name_key = ${'fuß'} where uuid = ${older.uuid}`.execute(t.ctx.db);
      await sleep(5);
      const second = await createPost(t, bob, 'on #FUSS');
      const newer = await findTag(t, 'hashtag', 'fuss');
      assert.notEqual(newer.uuid, older.uuid);
      const both = await createPost(t, bob, 'both');
      await sql`update posts set body = ${'both #Fuß #FUSS'} where uuid = ${both}`.execute(t.ctx.db);
      const now = new Date().toISOString();
      for (const tagUuid of [older.uuid, newer.uuid]) {
        await t.ctx.db
          .insertInto('tag_associations')
          .values({
            uuid: crypto.randomUUID(),
            tag_uuid: tagUuid,
            user_uuid: bob.uuid,
            target_uuid: both,
            target_type: 'post',
            language: 'en',
            created_at: now,
            updated_at: now,
          })
          .execute();
      }
      await sql`update tags set associations_count = 2 where uuid in (${older.uuid}, ${newer.uuid})`.execute(
        t.ctx.db,
      );

      const done = await t.ctx.db.transaction().execute((trx) => refoldTagKeys(trx));
      assert.deepEqual(done, { rekeyed: 0, merged: 1 });

      const kept = await get(t, `/tags/${older.uuid}`);
      assert.equal(kept.data.name, 'Fuß', 'the older tag and its spelling stay');
      assert.equal(kept.data.associations_count, 3);
      const gone = await t.inject({ method: 'GET', url: `/tags/${newer.uuid}`, token: t.guest });
      assert.equal(gone.statusCode, 404);
      for (const target of [first, second, both]) {
        const tags = (await associationsOf(t, target)).map((a) => a.tag_uuid);
        assert.deepEqual(tags, [older.uuid], `one association of ${target}, to the kept tag`);
      }
      const found = await get(t, '/search/hashtags?query=fuss');
      assert.deepEqual(
        found.data.map((x: { uuid: string }) => x.uuid),
        [older.uuid],
      );
      // Run again: nothing left to fold.
      assert.deepEqual(await refoldTagKeys(t.ctx.db), { rekeyed: 0, merged: 0 });
    });

    it('migration 0015 keeps a merged tag visible without uses when either of the two was made through tags.create', async () => {
      const post = await createPost(t, alice, 'one #Maß');
      const older = await findTag(t, 'hashtag', 'mass');
      await sql`update tags set name_key = ${'maß'} where uuid = ${older.uuid}`.execute(t.ctx.db);
      await sleep(5);
      const made = await t.inject({
        method: 'POST',
        url: '/tags/create',
        token: bob.token,
        payload: { name: 'MASS', tag_type: 'hashtag' },
      });
      assert.equal(made.statusCode, 201, made.body);
      assert.deepEqual(await refoldTagKeys(t.ctx.db), { rekeyed: 0, merged: 1 });
      const deleted = await t.inject({ method: 'POST', url: `/posts/${post}/delete`, token: alice.token });
      assert.equal(deleted.statusCode, 200, deleted.body);
      const kept = await get(t, `/tags/${older.uuid}`);
      assert.equal(kept.data.associations_count, 0);
      assert.equal(kept.data.name, 'Maß');
    });

    it('migration 0015 re-keys a tag with no twin in place', async () => {
      await createPost(t, alice, 'at the #Gruß');
      const tag = await findTag(t, 'hashtag', 'gruss');
      await sql`update tags set name_key = ${'gruß'} where uuid = ${tag.uuid}`.execute(t.ctx.db);
      assert.equal(
        await findTag(t, 'hashtag', 'gruss'),
        undefined,
        'the old key is not found by the new fold',
      );
      assert.deepEqual(await refoldTagKeys(t.ctx.db), { rekeyed: 1, merged: 0 });
      const again = await findTag(t, 'hashtag', 'GRUSS');
      assert.equal(again.uuid, tag.uuid);
      assert.equal(again.associations_count, 1);
    });
  });
}
