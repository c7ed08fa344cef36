import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import type { DbHandle } from '../../src/db/connect.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { nowIso, uuidv7 } from '../../src/db/time.ts';
import { partyToken } from '../../src/modules/search/search.query.ts';
import { sqliteMigratedTo } from '../helper.ts';

// Migration 0020 (docs/search.md, "Messages in the full-text index") re-indexes the messages a database already holds:
// each must end up under its two parties' tokens (and no one else's), be found once by its words, and be found no more
// once it is deleted.
describe('search: migration 0020 re-indexes existing messages under their parties [sqlite]', () => {
  let db: Awaited<ReturnType<typeof sqliteMigratedTo>>;
  let handle: DbHandle;
  const sender = uuidv7();
  const recipient = uuidv7();
  const stranger = uuidv7();

  before(async () => {
    db = await sqliteMigratedTo('0019-connection-cover');
    handle = db.handle;
    const now = nowIso();
    for (const [uuid, name] of [
      [sender, 'sender'],
      [recipient, 'recipient'],
      [stranger, 'stranger'],
    ] as const) {
      await sql`insert into users (uuid, username, username_key, email, email_key, password_hash, language, role,
        karma, created_at, updated_at) values (${uuid}, ${name}, ${name}, ${`${name}@example.test`},
        ${`${name}@example.test`}, 'x', 'en', 'user', 0, ${now}, ${now})`.execute(handle.db);
    }
    await sql`insert into messages (uuid, user_uuid, recipient_uuid, body, language, created_at)
      values (${uuidv7()}, ${sender}, ${recipient}, 'hello zebra', 'en', ${now})`.execute(handle.db);
    // 0020 runs first; later migrations follow it.
    assert.equal((await migrateToLatest(handle.db, 'sqlite'))[0], '0020-search-message-party-tokens');
  });
  after(async () => {
    await db?.close();
  });

  it('finds the message once by its words and under each party, never under another user', async () => {
    const ids = async (table: string, match: string) =>
      (
        await sql<{
          id: number;
        }>`select rowid as id from ${sql.table(table)} where ${sql.table(table)} match ${match}`.execute(
          handle.db,
        )
      ).rows.map((r) => Number(r.id));
    const [message] = (
      await sql<{ id: number }>`select id from search_docs where kind = 'messages'`.execute(handle.db)
    ).rows;
    assert.ok(message);
    for (const table of ['search_fts', 'search_fts_en']) {
      await sql.raw(`insert into ${table}(${table}, rank) values ('integrity-check', 0)`).execute(handle.db);
      assert.deepEqual(await ids(table, '{title body} : "zebra"'), [Number(message.id)]);
      assert.deepEqual(await ids(table, `kind : "${partyToken(sender)}"`), [Number(message.id)]);
      assert.deepEqual(await ids(table, `kind : "${partyToken(recipient)}" AND kind : "messages"`), [
        Number(message.id),
      ]);
      assert.deepEqual(await ids(table, `kind : "${partyToken(stranger)}"`), []);
    }
  });

  it('forgets the message once it is deleted', async () => {
    await sql`delete from messages`.execute(handle.db);
    for (const table of ['search_fts', 'search_fts_en']) {
      const r = await sql<{ n: number }>`select count(*) as n from ${sql.table(table)}
        where ${sql.table(table)} match ${'{title body} : "zebra"'}`.execute(handle.db);
      assert.equal(Number(r.rows[0]?.n), 0, table);
    }
  });
});
