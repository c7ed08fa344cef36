import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { partyToken } from '../../src/modules/search/search.query.ts';
import { search as searchService } from '../../src/modules/search/search.service.ts';
import { searchTuning } from '../../src/modules/search/search-ranking.service.ts';
import { messageWalkTuning } from '../../src/modules/search/search-walk.repository.ts';
import { wordStatsTiming } from '../../src/modules/search/search-word-stats.service.ts';
import {
  explainRecorded,
  recordingQueries,
  startTestApp,
  type TestApp,
  type TestUser,
  testDialects,
} from '../helper.ts';
import { call, insertsCounted } from './world.ts';

// docs/search.md, "Signed-in searches on PostgreSQL": a signed-in search of every kind walks the caller's messages
// apart from the other kinds and merges them by id. The merged walk must be the walk of one total order: the caller's
// messages (sent and received) in their place among the posts, nobody else's messages, whatever the page size, with
// the newest ids all messages as in a seeded world. Shrunk tuning puts the pages on every path of the ranking.
const TUNINGS = [
  { rankedCandidates: 10, recentDocs: 6 },
  { rankedCandidates: 1000, recentDocs: 30_000 },
];
// On PostgreSQL the caller's messages are read through their sides when few (fewMessagesOf), else through the index
// of their words and parties: 0 takes that index for every read, density samples included.
const MESSAGE_WALKS = [{ fewMessages: 200 }, { fewMessages: 0 }];

for (const dialect of testDialects()) {
  describe(`search: a signed-in caller's messages among other kinds [${dialect.name}]`, () => {
    let t: TestApp;
    let reader: TestUser;
    /** Every match the reader may see, oldest first (creation order is index order). */
    const visible: string[] = [];
    const standard = { ...searchTuning };
    const standardMessages = { ...messageWalkTuning };
    // Only PostgreSQL has two ways to read them. Each way in turn, the standard one restored even on a failure.
    const messageWalks = dialect.name === 'postgres' ? MESSAGE_WALKS : [standardMessages];
    const eachMessageWalk = async (run: () => Promise<void>) => {
      try {
        for (const messages of messageWalks) {
          Object.assign(messageWalkTuning, messages);
          await run();
        }
      } finally {
        Object.assign(messageWalkTuning, standardMessages);
      }
    };
    // biome-ignore lint/suspicious/noExplicitAny: test bodies are inspected freely.
    const uuids = (items: any[]) => items.map((i) => i.uuid as string);
    const search = async (query: string, limit: number) => {
      const all: string[] = [];
      for (let offset = 0; ; offset += limit) {
        const page = uuids(await call(t, 'GET', `${query}&limit=${limit}&offset=${offset}`, reader.token));
        all.push(...page);
        if (page.length < limit) return all;
      }
    };

    /** 210 messages between a busy caller and a pal, every other one sent by each, `body(i)` the i-th's; their uuids. */
    const converse = async (busy: TestUser, pal: TestUser, body: (i: number) => string) => {
      const sent: string[] = [];
      for (let i = 0; i < 210; i++) {
        const m = await call(t, 'POST', '/messages', i % 2 ? busy.token : pal.token, {
          recipient_uuid: i % 2 ? pal.uuid : busy.uuid,
          body: body(i),
        });
        sent.push(m.uuid);
      }
      return sent;
    };

    before(async () => {
      t = await startTestApp(dialect, { SEARCH_CACHE_ITEMS: 0, RATE_LIMIT_PER_MINUTE: 100_000 });
      const writer = await t.createUser('writer');
      reader = await t.createUser('reader');
      const [pen, a, c] = [
        await t.createUser('penpal'),
        await t.createUser('anna'),
        await t.createUser('carl'),
      ];
      const send = async (from: TestUser, to: TestUser, body: string) =>
        (await call(t, 'POST', '/messages', from.token, { recipient_uuid: to.uuid, body })).uuid as string;
      for (let i = 0; i < 24; i++) {
        const post = await call(t, 'POST', '/posts', writer.token, { body: `nebula post ${i}` });
        visible.push(post.uuid);
        if (i % 4 === 0) visible.push(await send(reader, pen, `nebula sent ${i}`));
        if (i % 4 === 1) visible.push(await send(pen, reader, `nebula received ${i}`));
        if (i % 4 === 2) await send(a, c, `nebula unseen ${i}`);
        await call(t, 'POST', '/posts', writer.token, { body: `filler ${i}` });
      }
      // The newest ids: messages, a few of them the reader's.
      for (let i = 0; i < 12; i++) {
        if (i % 5 === 0) visible.push(await send(reader, pen, `nebula late ${i}`));
        else await send(a, c, `nebula late unseen ${i}`);
      }
    });

    after(async () => {
      Object.assign(searchTuning, standard);
      Object.assign(messageWalkTuning, standardMessages);
      await t?.close();
    });

    it('order=created_at pages are every visible match newest first (oldest first ascending)', async () => {
      await eachMessageWalk(async () => {
        for (const tuning of TUNINGS) {
          Object.assign(searchTuning, tuning);
          const newest = [...visible].reverse();
          for (const limit of [1, 3, 7, 100]) {
            assert.deepEqual(await search('/search?query=nebula&order=created_at', limit), newest);
            assert.deepEqual(await search('/search?query=nebu&order=created_at:asc', limit), visible);
          }
        }
      });
    });

    it('relevance pages are one total order of exactly the visible matches', async () => {
      await eachMessageWalk(async () => {
        for (const tuning of TUNINGS) {
          Object.assign(searchTuning, tuning);
          const whole = await search('/search?query=nebula', 100);
          assert.deepEqual([...whole].sort(), [...visible].sort());
          for (const limit of [1, 4, 9]) assert.deepEqual(await search('/search?query=nebula', limit), whole);
        }
      });
    });

    // docs/search.md, "Messages by words and party (PostgreSQL)": a caller with few messages in the walk's range has
    // them read through the indexes of their two sides, each tested against the words.
    it("PostgreSQL reads a caller's few messages through the indexes of their sides", {
      skip: dialect.name !== 'postgres',
    }, async () => {
      Object.assign(searchTuning, standard);
      await sql`analyze search_docs`.execute(t.ctx.db);
      const { db, nodes } = recordingQueries(t.ctx.db);
      const page = await searchService({ ...t.ctx, readDb: db }, reader.uuid, {
        query: 'nebula',
        limit: 100,
      });
      assert.deepEqual(uuids(page.data).toSorted(), [...visible].sort());
      const plans = await explainRecorded(t.ctx.db, nodes, (text) =>
        text.includes("d.kind = 'messages' and ("),
      );
      assert.ok(plans.length > 0, "the caller's messages are read by their sides");
      for (const plan of plans)
        assert.match(plan, /Index Scan on search_docs_message_(owner|recipient)/, plan);
    });

    // The same, for a caller with more messages than that: one GIN index of their words and parties (migration
    // 0028), not a walk of each side testing every message's words.
    it("PostgreSQL finds a busy caller's messages through the index of words and parties", {
      skip: dialect.name !== 'postgres',
    }, async () => {
      Object.assign(searchTuning, standard);
      const busy = await t.createUser('busy');
      const pal = await t.createUser('pal');
      const sent = (await converse(busy, pal, (i) => (i % 30 === 0 ? `quasar ${i}` : `chatter ${i}`))).filter(
        (_, i) => i % 30 === 0,
      );
      await sql`analyze search_docs`.execute(t.ctx.db);
      const { db, nodes } = recordingQueries(t.ctx.db);
      const page = await searchService({ ...t.ctx, readDb: db }, busy.uuid, { query: 'quasar', limit: 100 });
      assert.deepEqual(uuids(page.data).toSorted(), sent.toSorted());
      const plans = await explainRecorded(t.ctx.db, nodes, (text) => text.includes('search_message_parties'));
      assert.ok(plans.length > 0, 'the messages are read by words and party');
      for (const plan of plans) assert.match(plan, /Bitmap Index Scan on search_docs_message_words/, plan);
    });

    // A prefix that a fifth of the documents or more hold has an entry in that index for most of the caller's
    // messages: a busy caller's messages are then walked through their sides all the same (IdWalk.prefixShare), with
    // the same answer. A rarer word keeps the index.
    it("PostgreSQL walks a busy caller's messages through their sides for a prefix many documents hold", {
      skip: dialect.name !== 'postgres',
    }, async () => {
      Object.assign(searchTuning, standard);
      const chatty = await t.createUser('chatty');
      const chum = await t.createUser('chum');
      const theirs = await converse(chatty, chum, (i) =>
        i % 30 === 0 ? `babble pulsar ${i}` : `babble ${i}`,
      );
      const rare = theirs.filter((_, i) => i % 30 === 0);
      // Someone else's message holding the words, which the caller must not see.
      await call(t, 'POST', '/messages', chum.token, {
        recipient_uuid: reader.uuid,
        body: 'babble pulsar aside',
      });
      // The inserts counted first: counted after the analysis, they would count as changed since.
      await insertsCounted(t);
      await sql`analyze search_docs`.execute(t.ctx.db);
      const timing = { ...wordStatsTiming };
      wordStatsTiming.settleMs = 0;
      const sides = (text: string) => text.includes("d.kind = 'messages' and (d.owner_uuid = ");
      const words = (text: string) => text.includes('search_message_parties');
      try {
        const read = async (query: string, order?: string) => {
          const { db, nodes } = recordingQueries(t.ctx.db);
          const page = await searchService({ ...t.ctx, readDb: db }, chatty.uuid, {
            query,
            limit: 100,
            ...(order ? { order } : {}),
          });
          return {
            page: uuids(page.data),
            sides: await explainRecorded(t.ctx.db, nodes, sides),
            words: await explainRecorded(t.ctx.db, nodes, words),
          };
        };
        // `bab`, as typed: a prefix PostgreSQL reads as one (longer ones are read as the words they start).
        const newest = await read('bab', 'created_at');
        // The caller's newest 100 messages, newest first.
        assert.deepEqual(newest.page, theirs.slice(-100).reverse());
        // Ranked: 100 of the caller's messages (which ones, the index's read below tells).
        const ranked = await read('bab');
        assert.equal(ranked.page.length, 100);
        assert.ok(ranked.page.every((uuid) => theirs.includes(uuid)));
        for (const walked of [newest, ranked]) {
          assert.ok(walked.sides.length > 0, "the caller's messages are read by their sides");
          for (const plan of walked.sides)
            assert.match(plan, /Index Scan on search_docs_message_(owner|recipient)/, plan);
          assert.deepEqual(walked.words, []);
        }
        // A word few documents hold keeps the index of words and parties where the caller has 200 messages or more
        // (a narrower range with fewer, such as the recent window, is walked through the sides as before).
        const sparse = await read('babble pul');
        assert.deepEqual(sparse.page.toSorted(), rare.toSorted());
        assert.ok(sparse.words.length > 0, 'the messages are read by words and party');
        // The index of words and parties, as without the statistics' shares, gives the same pages.
        Object.assign(messageWalkTuning, { denseShare: Number.POSITIVE_INFINITY });
        for (const [walked, order] of [
          [newest, 'created_at'],
          [ranked, undefined],
        ] as const) {
          const indexed = await read('bab', order);
          assert.ok(indexed.words.length > 0);
          assert.deepEqual(indexed.page, walked.page);
        }
      } finally {
        Object.assign(wordStatsTiming, timing);
        Object.assign(messageWalkTuning, standardMessages);
      }
    });

    it("a word that starts the caller's party token matches none of their messages", async () => {
      // Party tokens index who a message is between, never its words (docs/search.md, "Messages by words and party").
      const start = partyToken(reader.uuid).slice(0, 4);
      await eachMessageWalk(async () => {
        const page = await searchService(t.ctx, reader.uuid, { query: `nebula ${start}`, limit: 100 });
        assert.deepEqual(uuids(page.data), []);
        assert.deepEqual(
          uuids((await searchService(t.ctx, reader.uuid, { query: start, limit: 100 })).data),
          [],
        );
      });
    });

    it('PostgreSQL writes a party as partyToken does, whatever the case of the uuid', {
      skip: dialect.name !== 'postgres',
    }, async () => {
      const upper = reader.uuid.toUpperCase();
      const r = await sql<{ v: string }>`
        select search_message_parties(${upper}, ${reader.uuid})::text as v`.execute(t.ctx.db);
      assert.equal(r.rows[0]?.v, `'${partyToken(reader.uuid)}'`);
    });
  });
}
