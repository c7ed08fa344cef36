import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createQueryId, type Kysely } from 'kysely';
import type { Database } from '../../src/db/database.ts';
import {
  findHashtagsByPrefix,
  findUsersByUsernamePrefix,
} from '../../src/modules/search/search-names.repository.ts';
import { genericPlans, recordingQueries, startTestApp, type TestApp, testDialects } from '../helper.ts';

for (const dialect of testDialects()) {
  describe(`prefix lookups as prepared key ranges [${dialect.name}]`, () => {
    let t: TestApp;
    let viewer: string;

    before(async () => {
      t = await startTestApp(dialect);
      viewer = (await t.createUser('prefix_viewer')).uuid;
    });
    after(async () => t?.close());

    /** Runs the username and hashtag lookups on `db`. */
    async function lookups(db: Kysely<Database>) {
      await findUsersByUsernamePrefix(db, 'pre', { offset: 0, limit: 10 });
      await findUsersByUsernamePrefix(db, 'pre', { friendsOf: viewer, offset: 0, limit: 10 });
      await findHashtagsByPrefix(db, viewer, 'pre', { column: 'relevance', direction: 'desc' }, 0, 10);
      await findHashtagsByPrefix(db, null, 'pre', { column: 'created_at', direction: 'asc' }, 0, 10);
    }

    it('are marked to be prepared, the prefix bound as the range of its keys', async () => {
      const { db, nodes } = recordingQueries(t.ctx.db);
      await lookups(db);
      for (const q of nodes.map((node) => db.getExecutor().compileQuery(node, createQueryId()))) {
        assert.match(q.sql, /^select \/\* prepared \*\//, q.sql);
        assert.doesNotMatch(q.sql, / like /i, q.sql);
        assert.ok(q.parameters.includes('pre') && q.parameters.includes('pre\u{10FFFF}'), q.sql);
      }
    });

    it('PostgreSQL: their generic plans read the key index as a range, whatever prefix is bound', {
      skip: dialect.name !== 'postgres',
    }, async () => {
      const { db, nodes } = recordingQueries(t.ctx.db);
      await lookups(db);
      for (const { sql: text, plan } of await genericPlans(t.ctx.db, nodes, { seqscan: false })) {
        // A bound LIKE pattern could only be a filter of a generic plan (`~~`); a range is an index condition.
        assert.doesNotMatch(plan, /~~/, plan);
        if (text.includes('from users')) {
          // The username order is the key index's: the range bounds its scan.
          assert.match(plan, /Index Cond: \(\(username_key >= \$1\) AND \(username_key < \$2\)\)/, plan);
          assert.doesNotMatch(plan, /Seq Scan on users/, plan);
        }
      }
    });
  });
}
