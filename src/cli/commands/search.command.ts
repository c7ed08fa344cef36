import { reindex } from '../../modules/search/search.service.ts';
import type { Command } from '../command.ts';

/** `search reindex`: rebuilds the search index from the base tables (recovery after manual edits or damage). */
export const searchCommand: Command = {
  name: 'search',
  usage:
    'search reindex               rebuild the search index from users, networks, posts, comments, media, messages, tags',
  async run(ctx, args) {
    if (args[0] !== 'reindex') {
      console.error('usage: npm run cli -- search reindex');
      return 2;
    }
    const started = Date.now();
    const { docs, names } = await reindex(ctx);
    console.log(`search index rebuilt: ${docs} documents, ${names} names in ${Date.now() - started} ms`);
    return 0;
  },
};
