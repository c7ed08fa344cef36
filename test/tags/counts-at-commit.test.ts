import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { nowIso, uuidv7 } from '../../src/db/time.ts';
import { adjustTagCounts, insertAssociationsCounted } from '../../src/modules/tag/tag.repository.ts';
import {
  deleteAssociationsByUuids,
  insertAssociationsIgnoringConflicts,
} from '../../src/modules/tag-association/tag-association.repository.ts';
import { startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { createPost, findTag } from './support.ts';

// PostgreSQL adds a transaction's tag counts during its COMMIT (migration 0016-tag-counts-at-commit), so a popular
// tag's row is not locked while the rest of the transaction runs. SQLite writes one transaction at a time.
for (const dialect of testDialects().filter((d) => d.name === 'postgres')) {
  describe(`tag counts added at commit [${dialect.name}]`, () => {
    let t: TestApp;
    let alice: TestUser;
    let bob: TestUser;
    before(async () => {
      t = await startTestApp(dialect);
      alice = await t.createUser('alice_c');
      bob = await t.createUser('bob_c');
    });
    after(async () => t?.close());

    /** Bob's association of the tag with alice's post. */
    const row = (tagUuid: string, postUuid: string) => {
      const now = nowIso();
      return {
        uuid: uuidv7(),
        tag_uuid: tagUuid,
        user_uuid: bob.uuid,
        target_uuid: postUuid,
        target_type: 'post',
        language: 'en',
        created_at: now,
        updated_at: now,
      };
    };
    /** Inside `trx`: bob tags alice's post with the tag, counted as the services count. */
    async function tagInside(trx: typeof t.ctx.db, tagUuid: string, postUuid: string): Promise<void> {
      const added = await insertAssociationsIgnoringConflicts(trx, [row(tagUuid, postUuid)]);
      await adjustTagCounts(trx, 'postgres', new Map(added.map((u) => [u, 1])));
    }
    /** The uuids of the tag's associations. */
    const associationUuids = async (db: typeof t.ctx.db, tagUuid: string) =>
      (await db.selectFrom('tag_associations').select('uuid').where('tag_uuid', '=', tagUuid).execute()).map(
        (r) => r.uuid,
      );
    /** The tag's stored count and its associations (read from the tables: a tag left unused is hidden from the API). */
    const counts = async (name: string) => {
      const tag = await t.ctx.db
        .selectFrom('tags')
        .select(['uuid', 'associations_count'])
        .where('tag_type', '=', 'hashtag')
        .where('name_key', '=', name)
        .executeTakeFirstOrThrow();
      const actual = await t.ctx.db
        .selectFrom('tag_associations')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('tag_uuid', '=', tag.uuid)
        .executeTakeFirstOrThrow();
      return [tag.associations_count, Number(actual.n)];
    };

    it('lets other writers count a tag while a transaction that counted it is still open', async () => {
      const post = await createPost(t, alice, 'first #busy');
      const tag = await findTag(t, 'hashtag', 'busy');
      await t.ctx.db.transaction().execute(async (trx) => {
        await tagInside(trx, tag.uuid, post);
        // Before, this transaction held the tag's row until its commit and this post waited for it forever.
        await createPost(t, alice, 'second #busy');
        assert.equal(
          (await findTag(t, 'hashtag', 'busy')).associations_count,
          2,
          'not added before the commit',
        );
      });
      assert.equal((await findTag(t, 'hashtag', 'busy')).associations_count, 3);
    });

    it('adds nothing when the transaction rolls back, and every staged delta when it commits', async () => {
      const post = await createPost(t, alice, 'one #undone #twice');
      const undone = await findTag(t, 'hashtag', 'undone');
      const twice = await findTag(t, 'hashtag', 'twice');
      await assert.rejects(
        t.ctx.db.transaction().execute(async (trx) => {
          await tagInside(trx, undone.uuid, post);
          throw new Error('rolled back');
        }),
        /rolled back/,
      );
      assert.equal((await findTag(t, 'hashtag', 'undone')).associations_count, 1);
      // Two stagings in one transaction add up.
      await t.ctx.db.transaction().execute(async (trx) => {
        await tagInside(trx, undone.uuid, post);
        await tagInside(trx, twice.uuid, post);
      });
      for (const name of ['undone', 'twice']) assert.deepEqual(await counts(name), [2, 2], name);
    });

    it('an insert that counts its own rows adds them at commit, with those staged before, and nothing twice', async () => {
      const post = await createPost(t, alice, 'own #inserted #staged');
      const inserted = await findTag(t, 'hashtag', 'inserted');
      const staged = await findTag(t, 'hashtag', 'staged');
      const other = await createPost(t, alice, 'another');
      await assert.rejects(
        t.ctx.db.transaction().execute(async (trx) => {
          await insertAssociationsCounted(trx, 'postgres', [row(inserted.uuid, post)]);
          throw new Error('rolled back');
        }),
        /rolled back/,
      );
      assert.deepEqual(await counts('inserted'), [1, 1]);
      await t.ctx.db.transaction().execute(async (trx) => {
        await tagInside(trx, staged.uuid, post);
        const added = await insertAssociationsCounted(trx, 'postgres', [
          row(inserted.uuid, post),
          row(inserted.uuid, other),
          row(staged.uuid, post),
        ]);
        // bob's association of `staged` with the post exists: skipped, not counted.
        assert.deepEqual(added.toSorted(), [inserted.uuid, inserted.uuid].toSorted());
        // Nothing inserted, nothing counted.
        assert.deepEqual(await insertAssociationsCounted(trx, 'postgres', [row(staged.uuid, post)]), []);
      });
      assert.deepEqual(await counts('inserted'), [3, 3]);
      assert.deepEqual(await counts('staged'), [2, 2]);
    });

    it('an insert stages the removals it is given, also when it inserts nothing', async () => {
      const post = await createPost(t, alice, 'gone #kept #dropped');
      const kept = await findTag(t, 'hashtag', 'kept');
      const dropped = await findTag(t, 'hashtag', 'dropped');
      const other = await createPost(t, alice, 'elsewhere');
      await t.ctx.db.transaction().execute(async (trx) => {
        const removed = await deleteAssociationsByUuids(trx, await associationUuids(trx, dropped.uuid));
        // alice's association of `kept` with the post exists: skipped, and the removal still counted.
        const added = await insertAssociationsCounted(
          trx,
          'postgres',
          [{ ...row(kept.uuid, post), user_uuid: alice.uuid }],
          removed,
        );
        assert.deepEqual(added, []);
      });
      assert.deepEqual(await counts('dropped'), [0, 0]);
      assert.deepEqual(await counts('kept'), [1, 1]);
      await t.ctx.db.transaction().execute(async (trx) => {
        const removed = await deleteAssociationsByUuids(trx, await associationUuids(trx, kept.uuid));
        const added = await insertAssociationsCounted(trx, 'postgres', [row(dropped.uuid, other)], removed);
        assert.deepEqual(added, [dropped.uuid]);
      });
      assert.deepEqual(await counts('dropped'), [1, 1]);
      assert.deepEqual(await counts('kept'), [0, 0]);
    });
  });
}
