// Hashtag queries by relevance: the exact key, then the most used, then by name; `relevance:asc` the same reversed.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { body, startTestApp, type TestApp, testDialects } from '../helper.ts';
import { createPost } from '../tags/support.ts';

for (const dialect of testDialects()) {
  describe(`hashtag queries in either direction [${dialect.name}]`, () => {
    let t: TestApp;
    before(async () => {
      t = await startTestApp(dialect);
      const u = await t.createUser();
      for (const text of ['#cafe #cafes', '#cafe #cafes', '#cafe #cafeteria', '#caf'])
        await createPost(t, u, text);
    });
    after(async () => t?.close());

    const names = async (url: string) => {
      const res = await t.inject({ method: 'GET', url, token: t.guest });
      assert.equal(res.statusCode, 200, res.body);
      return body(res).data.map((tag: { name: string }) => tag.name);
    };

    it('orders by relevance, most relevant first unless asc is asked', async () => {
      const desc = ['caf', 'cafe', 'cafes', 'cafeteria'];
      assert.deepEqual(await names('/search/hashtags?query=caf'), desc);
      assert.deepEqual(await names('/search/hashtags?query=%23caf&order=relevance:desc'), desc);
      assert.deepEqual(await names('/search/hashtags?query=caf&order=relevance:asc'), [...desc].reverse());
      assert.deepEqual(await names('/search?query=%23caf&order=relevance%20asc'), [...desc].reverse());
      assert.deepEqual(await names('/search/hashtags?query=caf&order=relevance:asc&limit=2&page=2'), [
        'cafe',
        'caf',
      ]);
    });
  });
}
