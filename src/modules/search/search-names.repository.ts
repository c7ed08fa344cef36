// Lookups of names by prefix and by shared trigrams: usernames, hashtags and the typo-tolerant candidates of names.
import { type RawBuilder, sql } from 'kysely';
import type { Db, Dialect } from '../../db/database.ts';
import { PREPARED } from '../../db/prepared-statements.ts';
import { tagVisibleTo } from '../tag-association/tag-association.repository.ts';
import { prefixCondition } from './search.repository.ts';

/**
 * Names (users, networks, hashtags) sharing a trigram with the query: the candidates of typo tolerance. Hashtags only
 * if `viewer` (null for a guest) may see them, tested before the limit: a hashtag used only in private posts must not
 * take a place among the `limit` candidates, or the visible names it pushed out would tell that it exists.
 */
export async function findNameCandidates(
  db: Db,
  dialect: Dialect,
  kinds: readonly string[],
  grams: string[],
  limit: number,
  viewer: string | null,
): Promise<{ kind: string; uuid: string; name: string }[]> {
  if (grams.length === 0 || kinds.length === 0) return [];
  const visible = kinds.includes('hashtag')
    ? sql`and (n.kind <> 'hashtag' or exists (select 1 from tags t where t.uuid = n.uuid and ${tagVisibleTo(viewer, 't')}))`
    : sql``;
  // The names sharing the most trigrams with the query come first (then the newest), alike on both engines.
  if (dialect === 'postgres') {
    const likes = grams.map((g) => sql`n.name_fold like ${`%${g}%`}`);
    const shared = sql.join(
      likes.map((l) => sql`(case when ${l} then 1 else 0 end)`),
      sql` + `,
    );
    const r = await sql<{ kind: string; uuid: string; name: string }>`
      select n.kind, n.uuid, n.name from search_names n
      where n.kind in (${sql.join([...kinds])}) and (${sql.join(likes, sql` or `)}) ${visible}
      order by ${shared} desc, n.id desc limit ${limit}`.execute(db);
    return r.rows;
  }
  const perGram = grams.map(
    (g) =>
      sql`select rowid as id from search_names_tri where search_names_tri match ${`"${g.replaceAll('"', '""')}"`}`,
  );
  const r = await sql<{ kind: string; uuid: string; name: string }>`
    select n.kind, n.uuid, n.name
    from (select id, count(*) as shared from (${sql.join(perGram, sql` union all `)}) g group by id) m
    join search_names n on n.id = m.id
    where n.kind in (${sql.join([...kinds])}) ${visible}
    order by m.shared desc, n.id desc limit ${limit}`.execute(db);
  return r.rows;
}

/** Users whose username key starts with `prefix`, friends of `friendsOf` only or not friends, by username. */
export async function findUsersByUsernamePrefix(
  db: Db,
  prefix: string,
  options: { friendsOf?: string; notFriendsOf?: string; exclude?: string[]; offset: number; limit: number },
): Promise<string[]> {
  const parts: RawBuilder<unknown>[] = [prefixCondition('u.username_key', prefix)];
  if (options.friendsOf) {
    parts.push(
      sql`exists (select 1 from friends fr where fr.user_uuid = ${options.friendsOf} and fr.friend_uuid = u.uuid)`,
    );
  }
  if (options.notFriendsOf) {
    parts.push(
      sql`not exists (select 1 from friends fr where fr.user_uuid = ${options.notFriendsOf} and fr.friend_uuid = u.uuid)`,
    );
  }
  if (options.exclude && options.exclude.length > 0)
    parts.push(sql`u.uuid not in (${sql.join(options.exclude)})`);
  // Prepared on PostgreSQL: an index range in username order, whatever the prefix (prefixCondition).
  const r = await sql<{
    uuid: string;
  }>`select ${PREPARED} u.uuid from users u where ${sql.join(parts, sql` and `)}
    order by u.username_key asc limit ${options.limit} offset ${options.offset}`.execute(db);
  return r.rows.map((row) => row.uuid);
}

/**
 * Hashtags visible to `viewer` (tagVisibleTo) whose key starts with `prefix`: the exact key first, then the most
 * used, then by key.
 */
export async function findHashtagsByPrefix(
  db: Db,
  viewer: string | null,
  prefix: string,
  order: { column: 'relevance' | 'created_at' | 'updated_at'; direction: 'asc' | 'desc' },
  offset: number,
  limit: number,
): Promise<string[]> {
  const asc = order.direction === 'asc';
  const dir = sql.raw(asc ? 'asc' : 'desc');
  // Most relevant first is the exact key, then the most used, then by name; `relevance:asc` reverses every key.
  const rev = sql.raw(asc ? 'desc' : 'asc');
  const orderBy =
    order.column === 'relevance'
      ? sql`case when t.name_key = ${prefix} then 0 else 1 end ${rev}, t.associations_count ${dir}, t.name_key ${rev}, t.uuid ${rev}`
      : sql`${sql.ref(`t.${order.column}`)} ${dir}, t.uuid ${dir}`;
  // Prepared on PostgreSQL: one index range and a sort whatever the prefix and the viewer, where planning the
  // visibility's five probes cost 60 times their run.
  const r = await sql<{ uuid: string }>`select ${PREPARED} t.uuid from tags t
    where t.tag_type = 'hashtag' and ${prefixCondition('t.name_key', prefix)}
      and ${tagVisibleTo(viewer, 't')}
    order by ${orderBy} limit ${limit} offset ${offset}`.execute(db);
  return r.rows.map((row) => row.uuid);
}
