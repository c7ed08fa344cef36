import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { searchTuning } from '../../src/modules/search/search-ranking.service.ts';
import { startTestApp, type TestApp, type TestUser, testDialects } from '../helper.ts';
import { createPost } from '../tags/support.ts';
import { getFresh } from './world.ts';

// Whether a query is common (docs/search.md, "Ranking design") decides which of the caller's matches are ranked: the
// newest `rankedCandidates / 5` of a common query, up to `rankedCandidates` of a rarer one. That decision counted the
// newest documents whoever could see them, so a private post holding a word could push a stranger's best match off
// the first page: one yes-or-no answer per try about words in posts the stranger may not read (found by a probe).
// Sizes shrunk: 10 ranked candidates, 2 for a common query, "common" meaning 2 matches among the newest 20 documents.
const TUNING = { rankedCandidates: 10, recentDocs: 1000, spreadRanges: 0 };

for (const dialect of testDialects()) {
  describe(`search: hidden documents do not change what a caller sees ranked [${dialect.name}]`, () => {
    let t: TestApp;
    let author: TestUser;
    let writer: TestUser;
    let stranger: TestUser;
    const standard = { ...searchTuning };

    before(async () => {
      t = await startTestApp(dialect);
      author = await t.createUser();
      writer = await t.createUser();
      stranger = await t.createUser();
      Object.assign(searchTuning, TUNING);
    });
    after(async () => {
      Object.assign(searchTuning, standard);
      await t?.close();
    });

    /** The uuids of the first page of a search, uncached. */
    const firstPage = async (query: string, token: string) =>
      (await getFresh(t, `/search?query=${query}&limit=3`, token)).map(
        (i: { uuid: string }) => i.uuid,
      ) as string[];

    for (const [visibility, who] of [
      ['private', 'a guest'],
      ['friends', 'a stranger'],
    ] as const) {
      it(`a ${visibility} post with the word leaves ${who}'s page as it was`, async () => {
        const word = `zebra${visibility}q`;
        // The best match, oldest; a weaker one; 25 posts without the word; the newest weak match.
        const best = await createPost(t, author, `${word} ${word} ${word}`);
        await createPost(t, author, `${word} lorem ipsum dolor`);
        for (let i = 0; i < 25; i++) await createPost(t, author, `filler number ${i} without it`);
        await createPost(t, author, `${word} lorem ipsum sit`);
        const token = visibility === 'private' ? t.guest : stranger.token;
        const before = await firstPage(word, token);
        assert.equal(before[0], best, 'the best match leads');
        // Someone else's post the caller may not read, among the newest documents.
        const diary = await createPost(t, writer, `my diary: ${word}`, { visibility });
        assert.deepEqual(await firstPage(word, token), before);
        // Its author sees it among the four matches.
        const own = await getFresh(t, `/search?query=${word}&limit=10`, writer.token);
        assert.equal(own.length, 4);
        assert.ok(
          own.some((i: { uuid: string }) => i.uuid === diary),
          'the author finds the diary',
        );
      });
    }
  });
}
