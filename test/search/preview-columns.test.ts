// docs/search.md, "Previews without a count": a column of /search/types ranks only the newest matches of its kind (the
// common-query depth), then lists the older ones newest first. On PostgreSQL the caller's messages, networks and media
// (few in any world) are read for that at once, without counting the newest range first: the count could only choose
// a plan, and these kinds have one.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createQueryId } from 'kysely';
import { searchTypes } from '../../src/modules/search/search.service.ts';
import { searchTuning } from '../../src/modules/search/search-ranking.service.ts';
import { recordingQueries, startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { call, getFresh, insertMedia } from './world.ts';

const PREVIEW_KINDS = ['messages', 'network', 'media'] as const;

for (const dialect of testDialects()) {
  describe(`search/types: previews rank their newest matches [${dialect.name}]`, () => {
    let t: TestApp;
    let reader: TestUser;
    /** Per kind: the matches oldest first; the oldest is the most relevant (the word three times). */
    const made: Record<(typeof PREVIEW_KINDS)[number], string[]> = { messages: [], network: [], media: [] };
    const standard = { ...searchTuning };

    before(async () => {
      t = await startTestApp(dialect, { SEARCH_CACHE_ITEMS: 0 });
      reader = await t.createUser('reader');
      const pen = await t.createUser('penpal');
      const texts = ['nebula nebula nebula', ...Array.from({ length: 4 }, (_, i) => `nebula note ${i}`)];
      for (const text of texts) {
        const message = await call(t, 'POST', '/messages', reader.token, {
          recipient_uuid: pen.uuid,
          body: text,
        });
        made.messages.push(message.uuid);
        const network = await call(t, 'POST', '/networks', reader.token, {
          name: text,
          description: 'a club',
        });
        made.network.push(network.uuid);
        made.media.push(
          await insertMedia(t, reader, { title: text, description: 'a shot', visibility: 'public' }),
        );
      }
    });
    after(async () => {
      Object.assign(searchTuning, standard);
      await t?.close();
    });

    const columns = async (): Promise<Record<string, string[]>> => {
      const data = await getFresh(t, '/search/types?query=nebula&limit=5', reader.token);
      // biome-ignore lint/suspicious/noExplicitAny: test bodies are inspected freely.
      return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, (v as any[]).map((i) => i.uuid)]));
    };

    it('ranks the newest matches of each column, then lists the older ones newest first', async () => {
      // Two candidates per column (a fifth of 10): the newest two tie, so every column is newest first and the most
      // relevant, oldest match comes last.
      Object.assign(searchTuning, { rankedCandidates: 10 });
      const shallow = await columns();
      for (const kind of PREVIEW_KINDS) assert.deepEqual(shallow[kind], [...made[kind]].reverse(), kind);
      // 200 candidates: every match is ranked, the most relevant first.
      Object.assign(searchTuning, standard);
      const deep = await columns();
      for (const kind of PREVIEW_KINDS) {
        const [best, ...rest] = made[kind];
        assert.deepEqual(deep[kind], [best, ...rest.reverse()], kind);
      }
    });

    it('PostgreSQL counts none of these columns before reading them', {
      skip: dialect.name !== 'postgres',
    }, async () => {
      // The rare words' statistics off: after an autovacuum's ANALYZE they could read the other columns uncounted.
      Object.assign(searchTuning, { rankedCandidates: 10, statsRareMatches: 0 });
      const { db, nodes } = recordingQueries(t.ctx.db);
      const page = await searchTypes({ ...t.ctx, readDb: db }, reader.uuid, { query: 'nebula', limit: 5 });
      assert.equal((page.data as Record<string, unknown[]>).messages?.length, 5);
      const counts = nodes
        .map((node) => db.getExecutor().compileQuery(node, createQueryId()))
        .filter((q) => /\bas newest\b/.test(q.sql));
      assert.ok(counts.length > 0, 'the other columns are counted');
      for (const q of counts) {
        for (const kind of PREVIEW_KINDS)
          assert.ok(!q.parameters.includes(kind), `${kind} counted: ${q.sql}`);
      }
    });
  });
}
