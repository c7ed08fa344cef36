import { compactSearchIndex, reindex } from '../../modules/search/search.service.ts';
import type { Command } from '../command.ts';

/**
 * `search reindex`: rebuilds the search index from the base tables (recovery after manual edits or damage).
 * `search compact`: merges the index's segments after many writes and deletes, while the API runs.
 */
export const searchCommand: Command = {
  name: 'search',
  usage: [
    'search reindex               rebuild the search index from users, networks, posts, comments, media, messages, tags',
    'search compact               merge the search index after many writes and deletes (the API may keep running)',
  ].join('\n  '),
  async run(ctx, args) {
    const started = Date.now();
    if (args[0] === 'reindex') {
      const { docs, names } = await reindex(ctx);
      console.log(`search index rebuilt: ${docs} documents, ${names} names in ${Date.now() - started} ms`);
      return 0;
    }
    if (args[0] === 'compact') {
      const { steps } = await compactSearchIndex(ctx);
      console.log(`search index compacted: ${steps} merge steps in ${Date.now() - started} ms`);
      return 0;
    }
    console.error('usage: npm run cli -- search reindex | search compact');
    return 2;
  },
};
