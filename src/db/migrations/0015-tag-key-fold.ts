import { type Kysely, sql } from 'kysely';

interface KeyRow {
  uuid: string;
  tag_type: string;
  name_key: string;
  created_at: string;
  standalone: number;
}

/** A key stored before this migration as the key normalizeTagName gives now (`ß` as `ss`, final `ς` as `σ`). */
export function refoldedKey(key: string): string {
  return key.replace(/ß/gu, 'ss').replace(/ς/gu, 'σ');
}

/**
 * Re-keys the tags whose key holds `ß` or a final `ς` (docs/decisions.md, "Tag keys fold like search"). A tag whose
 * new key another tag of its type already has is merged into the older of the two: it keeps its spelling and gains
 * the other's associations (a target tagged with both keeps one), and the other tag is deleted. The hashtag search
 * names follow through the tags' triggers. Returns how many tags were re-keyed and how many merged away.
 */
export async function refoldTagKeys<DB>(db: Kysely<DB>): Promise<{ rekeyed: number; merged: number }> {
  const rows = await sql<KeyRow>`select uuid, tag_type, name_key, created_at, standalone from tags
    where name_key like ${'%ß%'} or name_key like ${'%ς%'} order by created_at, uuid`.execute(db);
  let rekeyed = 0;
  let merged = 0;
  for (const row of rows.rows) {
    const key = refoldedKey(row.name_key);
    if (key === row.name_key) continue;
    const other = (
      await sql<KeyRow>`select uuid, tag_type, name_key, created_at, standalone from tags
        where tag_type = ${row.tag_type} and name_key = ${key}`.execute(db)
    ).rows[0];
    if (!other) {
      await sql`update tags set name_key = ${key} where uuid = ${row.uuid}`.execute(db);
      rekeyed++;
      continue;
    }
    const rowFirst =
      row.created_at < other.created_at || (row.created_at === other.created_at && row.uuid < other.uuid);
    const [keep, drop] = rowFirst ? [row.uuid, other.uuid] : [other.uuid, row.uuid];
    await sql`update tag_associations set tag_uuid = ${keep} where tag_uuid = ${drop} and not exists (
      select 1 from tag_associations x where x.tag_uuid = ${keep}
        and x.target_uuid = tag_associations.target_uuid and x.user_uuid = tag_associations.user_uuid)`.execute(
      db,
    );
    // What is left of the dropped tag's associations tags a target the kept tag already tags.
    await sql`delete from tag_associations where tag_uuid = ${drop}`.execute(db);
    await sql`delete from tags where uuid = ${drop}`.execute(db);
    // A tag made through tags.create stays visible without uses, whichever of the two it was.
    const standalone = Math.max(Number(row.standalone), Number(other.standalone));
    await sql`update tags set name_key = ${key}, standalone = ${standalone},
      associations_count = (select count(*) from tag_associations where tag_uuid = ${keep})
      where uuid = ${keep}`.execute(db);
    merged++;
  }
  return { rekeyed, merged };
}

/** Tag keys fold `ß` and final `ς` as search does: existing keys are re-folded and tags that now share one merge. */
export function tagKeyFoldMigration() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      // A merge stopped halfway would leave a count that no later run repairs. The migrator runs in a transaction on
      // both engines (migrate.ts); a caller outside one gets its own.
      if (db.isTransaction) await refoldTagKeys(db);
      else await db.transaction().execute((trx) => refoldTagKeys(trx));
    },
  };
}
