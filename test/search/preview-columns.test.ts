// docs/search.md, "Previews without a count": a column of /search/types ranks only the newest matches of its kind (the
// common-query depth), then lists the older ones newest first. On PostgreSQL the caller's messages, networks and media
// (few in any world) are read for that at once, without counting the newest range first: the count could only choose
// a plan, and these kinds have one.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createQueryId, sql } from 'kysely';
import { searchTypes } from '../../src/modules/search/search.service.ts';
import { searchTuning } from '../../src/modules/search/search-ranking.service.ts';
import { wordStatsTiming } from '../../src/modules/search/search-word-stats.service.ts';
import {
  explainRecorded,
  recordingQueries,
  startTestApp,
  type TestApp,
  type TestUser,
  testDialects,
} from '../helper.ts';
import { call, getFresh, insertMedia, insertPosts, insertsCounted } from './world.ts';

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

// docs/search.md, "Media through an index of their own (PostgreSQL)": the media column reads a word the statistics find
// sparse through the media's own GIN index (migration 0035), any other in id order, and answers the same either way.
for (const dialect of testDialects().filter((d) => d.name === 'postgres')) {
  describe(`search/types: the media column through its own index [${dialect.name}]`, () => {
    let t: TestApp;
    let reader: TestUser;
    const standard = { ...searchTuning };
    const standardTiming = { ...wordStatsTiming };

    before(async () => {
      t = await startTestApp(dialect, { SEARCH_CACHE_ITEMS: 0 });
      reader = await t.createUser('viewer');
      // `quasar` in 7 of about 430 documents; `ordinary` in nearly all of them, media included. Both have 6 letters or
      // more: a last word that long stands for the indexed words it starts, which the statistics bound.
      const titles = ['quasar quasar quasar', ...Array.from({ length: 5 }, (_, i) => `quasar ordinary ${i}`)];
      for (const title of [...titles, ...Array.from({ length: 20 }, (_, i) => `ordinary shot ${i}`)]) {
        await insertMedia(t, reader, { title, description: 'ordinary frame', visibility: 'public' });
      }
      await insertMedia(t, reader, {
        title: 'quasar hidden',
        description: 'ordinary',
        visibility: 'private',
      });
      await insertPosts(
        t,
        reader.uuid,
        Array.from({ length: 400 }, (_, i) => `ordinary words ${i}`),
      );
      await insertsCounted(t);
      await sql`analyze search_docs`.execute(t.ctx.db);
      // The analysis has committed: its statistics may be used at once.
      wordStatsTiming.settleMs = 0;
    });
    after(async () => {
      Object.assign(searchTuning, standard);
      Object.assign(wordStatsTiming, standardTiming);
      await t?.close();
    });

    /** The media reads of one /search/types computation (SQL text and plan) and its media column, `limit` of it. */
    const mediaReads = async (query: string, viewer: string | null = null, limit = 5) => {
      const { db, nodes } = recordingQueries(t.ctx.db);
      const page = await searchTypes({ ...t.ctx, readDb: db }, viewer, { query, limit });
      const isMediaRead = (node: (typeof nodes)[number]) => {
        const q = db.getExecutor().compileQuery(node, createQueryId());
        return q.parameters.includes('media') && /d\.title, d\.body/.test(q.sql);
      };
      const reads = nodes.filter(isMediaRead);
      const plans = await explainRecorded(t.ctx.db, reads, () => true);
      const texts = reads.map((node) => db.getExecutor().compileQuery(node, createQueryId()).sql);
      const column = ((page.data as Record<string, { uuid: string }[]>).media ?? []).map((m) => m.uuid);
      return { texts, plans, column };
    };
    const viaIndex = (sqlText: string) =>
      /with m as materialized/.test(sqlText) && !/ts_match_vq/.test(sqlText);

    it('reads a sparse word through the index and a common one in id order, answering as the other plan would', async () => {
      const sparse = await mediaReads('quasar');
      assert.equal(sparse.texts.length, 1, sparse.texts.join('\n'));
      assert.ok(viaIndex(sparse.texts[0] as string), sparse.texts[0]);
      assert.match(sparse.plans[0] as string, /search_docs_tsv_media/, sparse.plans[0]);
      assert.equal(sparse.column.length, 5);
      const common = await mediaReads('ordinary');
      assert.equal(common.texts.length, 1, common.texts.join('\n'));
      assert.ok(!viaIndex(common.texts[0] as string), common.texts[0]);

      // Each query under both plans (never the index; the index whenever the statistics can tell), for a guest and
      // for the owner of the private item, ranking 200 candidates and 2 (fewer than the matches: the newest two).
      for (const rankedCandidates of [standard.rankedCandidates, 10]) {
        for (const viewer of [null, reader.uuid]) {
          for (const query of ['quasar', 'ordinary']) {
            const columns = [];
            for (const share of [0, 2]) {
              Object.assign(searchTuning, { rankedCandidates, statsPreviewGinShare: share });
              const read = await mediaReads(query, viewer, 10);
              assert.equal(viaIndex(read.texts[0] as string), share > 0, read.texts[0]);
              columns.push(read.column);
            }
            const label = `${query}, ${viewer ?? 'guest'}, ${rankedCandidates}`;
            assert.deepEqual(columns[1], columns[0], label);
            // `quasar`: the 6 public items, and the private one for its owner; `ordinary`: a full page.
            assert.equal(columns[0]?.length, query === 'ordinary' ? 10 : viewer ? 7 : 6, label);
          }
        }
      }
      Object.assign(searchTuning, standard);
      // Through the index, over HTTP as a guest: every public item, the best match (the word three times) first, and
      // never the private one.
      const ranked = await getFresh(t, '/search/types?query=quasar&limit=10', t.guest);
      const titles = (ranked.media as { title: string }[]).map((m) => m.title);
      assert.equal(titles.length, 6);
      assert.equal(titles[0], 'quasar quasar quasar');
      assert.ok(!titles.includes('quasar hidden'));
    });
  });
}
