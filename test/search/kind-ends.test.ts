// Every search first reads the ends of its kinds' ids (docIdRanges) and, on PostgreSQL, the newest id of its kinds
// below each chunk it walks (newestIdBelow). Both are prepared statements, so PostgreSQL may run them on a generic plan
// that knows nothing of the kind bound. Written as `max(id) where kind = $1`, that plan walked the primary key from its
// end testing each row's kind: in a world whose kinds sit in blocks of ids (users first, messages last, as any real
// world grows and as the seeder writes them) it read over a million rows per search, 1.2-1.8 s, and under load every
// uncached search ran into the statement timeout. The answers must be the kinds' true ends on both engines, and the
// generic plan must read them from the kind index.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createQueryId, sql } from 'kysely';
import { nowIso, uuidv7 } from '../../src/db/time.ts';
import type { DocKind } from '../../src/modules/search/search.repository.ts';
import { docIdRanges, newestIdBelow } from '../../src/modules/search/search-ends.repository.ts';
import { rankingDocIdRanges } from '../../src/modules/search/search-ends.service.ts';
import { genericPlans, recordingQueries, startTestApp, type TestApp, testDialects } from '../helper.ts';

// Blocks of documents of one kind each, in this order of ids.
const BLOCKS: [DocKind, number][] = [
  ['user', 6000],
  ['network', 20],
  ['post', 6000],
  ['comment', 2000],
  ['media', 50],
  ['messages', 2000],
];
const SOME: DocKind[] = ['post', 'comment', 'media'];
const WITH_MESSAGES: DocKind[] = [...SOME, 'messages'];

for (const dialect of testDialects()) {
  describe(`ends of a kind's ids [${dialect.name}]`, () => {
    let t: TestApp;
    const ends = new Map<DocKind, { first: number; last: number }>();
    // The author of every document, and both sides of every message.
    const owner = uuidv7();

    before(async () => {
      t = await startTestApp(dialect);
      const now = nowIso();
      // Index documents only (search_docs is the search module's own table, written by triggers in the app).
      for (const [kind, n] of BLOCKS) {
        for (let i = 0; i < n; i += 500) {
          const rows = Array.from({ length: Math.min(500, n - i) }, (_, j) => {
            const message = kind === 'messages';
            return sql`(${kind}, ${uuidv7()}, ${owner}, ${message ? 'message' : 'public'}, ${message ? owner : null},
              ${`${kind} ${i + j}`}, ${now}, ${now})`;
          });
          await sql`insert into search_docs
            (kind, uuid, owner_uuid, visibility, recipient_uuid, body, created_at, updated_at)
            values ${sql.join(rows)}`.execute(t.ctx.db);
        }
      }
      const found = await sql<{ kind: DocKind; first: number | string; last: number | string }>`
        select kind, min(id) as first, max(id) as last from search_docs group by kind`.execute(t.ctx.db);
      for (const r of found.rows) ends.set(r.kind, { first: Number(r.first), last: Number(r.last) });
      if (dialect.name === 'postgres') await sql`analyze search_docs`.execute(t.ctx.db);
    });
    after(async () => t?.close());

    const end = (kinds: DocKind[], which: 'first' | 'last') =>
      kinds
        .map((k) => ends.get(k)?.[which] ?? 0)
        .reduce((a, b) => (which === 'first' ? Math.min(a, b) : Math.max(a, b)));

    it('docIdRanges answers the first and last id of each set of kinds', async () => {
      const [some, withMessages] = (await docIdRanges(t.ctx.db, t.ctx.dialect, [SOME, WITH_MESSAGES])).ranges;
      assert.deepEqual(some, { first: end(SOME, 'first'), last: end(SOME, 'last') });
      assert.deepEqual(withMessages, {
        first: end(WITH_MESSAGES, 'first'),
        last: end(WITH_MESSAGES, 'last'),
      });
      const [media] = (await docIdRanges(t.ctx.db, t.ctx.dialect, [['media']])).ranges;
      assert.deepEqual(media, ends.get('media'));
    });

    it('newestIdBelow answers the newest id of the kinds below a bound, across blocks of other kinds', async () => {
      const below = (kinds: readonly DocKind[], viewer: string | null, bound: number) =>
        newestIdBelow(t.ctx.db, t.ctx.dialect, kinds, viewer, bound);
      const alone = (id: number | undefined) => ({ ofKinds: id, withMine: id });
      const messagesStart = ends.get('messages')?.first as number;
      // Below the messages: the last media document; below the media: the last comment.
      assert.deepEqual(await below(SOME, null, messagesStart), alone(ends.get('media')?.last));
      const mediaStart = ends.get('media')?.first as number;
      assert.deepEqual(await below(['network'], null, mediaStart), alone(ends.get('network')?.last));
      assert.deepEqual(await below(['user'], null, ends.get('user')?.first as number), alone(0));
      // A viewer's own messages count too, up to the bound, apart from the kinds': the message just below the last
      // one, while the kinds' newest document is still the last media document, below every message.
      const lastMessage = ends.get('messages')?.last as number;
      assert.deepEqual(await below(SOME, owner, lastMessage), {
        ofKinds: ends.get('media')?.last,
        withMine: lastMessage - 1,
      });
    });

    it('PostgreSQL binds the kinds as one array: one statement text for every set of kinds', {
      skip: dialect.name !== 'postgres',
    }, async () => {
      const { db, nodes } = recordingQueries(t.ctx.db);
      await docIdRanges(db, t.ctx.dialect, [SOME]);
      await docIdRanges(db, t.ctx.dialect, [['post', 'network']]);
      const [a, b] = nodes.map((node) => db.getExecutor().compileQuery(node, createQueryId()));
      assert.equal(a?.sql, b?.sql);
      assert.deepEqual(a?.parameters, [SOME, SOME]);
    });

    it('PostgreSQL: the rankings of one event-loop turn read their ranges in one statement, each as alone', {
      skip: dialect.name !== 'postgres',
    }, async () => {
      const { db, nodes } = recordingQueries(t.ctx.db);
      // As /search/types asks (one kind per column) beside a signed-in /search (two sets) and a set named twice.
      const asked: DocKind[][][] = [
        [['media']],
        [['user']],
        [SOME, WITH_MESSAGES],
        [['media', 'comment', 'post']],
      ];
      const together = await Promise.all(asked.map((sets) => rankingDocIdRanges(db, sets)));
      assert.equal(nodes.length, 1, 'one statement for the turn');
      for (const [i, sets] of asked.entries()) {
        const alone = await docIdRanges(t.ctx.db, t.ctx.dialect, sets, true);
        assert.deepEqual(together[i]?.ranges, alone.ranges, String(sets));
        assert.equal(together[i]?.recentIndex, alone.recentIndex);
        // The statistics' freshness is the statement's own, the same for every ranking it answers (an autovacuum's
        // ANALYZE may move it before a later read).
        assert.deepEqual(together[i]?.stats, together[0]?.stats);
        assert.equal(typeof together[i]?.stats?.changedSince, 'number');
      }
      assert.deepEqual(together[0]?.ranges, [ends.get('media')]);
      // A later turn reads again.
      await rankingDocIdRanges(db, [['network']]);
      assert.equal(nodes.length, 2);
    });

    it('their generic plans read the kind index, never the primary key filtered by kind', {
      skip: dialect.name !== 'postgres',
    }, async () => {
      const { db, nodes } = recordingQueries(t.ctx.db);
      await docIdRanges(db, t.ctx.dialect, [SOME, WITH_MESSAGES]);
      // With a viewer, the probes of their own messages' two sides too.
      await newestIdBelow(db, t.ctx.dialect, SOME, owner, ends.get('messages')?.last as number);
      assert.equal(nodes.length, 2);
      for (const { plan } of await genericPlans(t.ctx.db, nodes)) {
        assert.doesNotMatch(plan, /Filter: \(kind/, plan);
        assert.match(plan, /using search_docs_kind on search_docs/, plan);
      }
    });
  });
}
