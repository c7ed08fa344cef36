import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';

/**
 * Tag association visibility made index-local (docs/tag-associations.md, "Who sees an association"): each association
 * carries a copy of its target's audience, so deciding and counting what a viewer may see reads the association's
 * own index entries instead of joining posts, comments, media, messages and connections per row.
 *
 * - `audience`: `public`, `friends`, `private` (a post's, a comment's post's or a media item's visibility; any other
 *   visibility value is `private`, which only the owner sees, as the visibility rule treats it), `parties` (messages
 *   and connections: their two sides only), `public` for users and networks; `none` when the target does not exist
 *   (visible to no one). A value rather than NULL, so the partial index of non-public rows holds those rows too and
 *   every count part is an index range.
 * - `audience_owner`: the post or media owner, a comment's POST owner, a message's sender, a connection's requester,
 *   a network's owner, a user themself.
 * - `audience_other`: a message's recipient, a connection's addressee; NULL otherwise.
 *
 * Database triggers keep the copy in the writer's transaction whatever the write path (API, bulk seeding, events):
 * on association insert and on change of its target; on a change of a post's visibility or owner (its comments'
 * associations too), a comment's post, a media item's visibility or owner, a message's or connection's sides, a
 * network's owner; and a deleted target leaves `none` on associations that outlive it (a deleted connection's).
 */
export function tagAudienceMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      const statements = dialect === 'postgres' ? postgresStatements() : sqliteStatements();
      for (const statement of statements) await sql.raw(statement).execute(db);
    },
  };
}

/** The audience of a post or media visibility value: the three known ones as they are, anything else private. */
export const audienceOf = (visibility: string) =>
  `CASE WHEN ${visibility} IN ('public', 'friends', 'private') THEN ${visibility} ELSE 'private' END`;

/**
 * Exactly one row (audience, owner, other) for the target `type`/`uuid` (SQL expressions, e.g. NEW.target_type):
 * the target's, or ('none', NULL, NULL) when it does not exist. Each branch is guarded by the type, so only one
 * table is read; the rank puts a found target before the fallback.
 */
function audienceSource(type: string, uuid: string): string {
  return `SELECT s.audience, s.owner, s.other FROM (
      SELECT ${audienceOf('p.visibility')} AS audience, p.user_uuid AS owner, NULL AS other, 0 AS r FROM posts p
        WHERE ${type} = 'post' AND p.uuid = ${uuid}
      UNION ALL SELECT ${audienceOf('p.visibility')}, p.user_uuid, NULL, 0 FROM comments c
        JOIN posts p ON p.uuid = c.post_uuid WHERE ${type} = 'comment' AND c.uuid = ${uuid}
      UNION ALL SELECT ${audienceOf('m.visibility')}, m.user_uuid, NULL, 0 FROM media m
        WHERE ${type} = 'media' AND m.uuid = ${uuid}
      UNION ALL SELECT 'parties', g.user_uuid, g.recipient_uuid, 0 FROM messages g
        WHERE ${type} = 'messages' AND g.uuid = ${uuid}
      UNION ALL SELECT 'parties', k.user_uuid, k.target_user_uuid, 0 FROM connections k
        WHERE ${type} = 'connection' AND k.uuid = ${uuid}
      UNION ALL SELECT 'public', u.uuid, NULL, 0 FROM users u WHERE ${type} = 'user' AND u.uuid = ${uuid}
      UNION ALL SELECT 'public', n.user_uuid, NULL, 0 FROM networks n WHERE ${type} = 'network' AND n.uuid = ${uuid}
      UNION ALL SELECT 'none', NULL, NULL, 1
    ) s ORDER BY s.r LIMIT 1`;
}

/**
 * Set-based fills of the three columns, one statement per target kind (the same SQL on both engines): each reads
 * the target table once through its primary key. Rows whose target is missing keep the column default, `none`.
 */
function backfillStatements(): string[] {
  const ta = 'tag_associations';
  return [
    `UPDATE ${ta} SET audience = ${audienceOf('p.visibility')}, audience_owner = p.user_uuid, audience_other = NULL
       FROM posts p WHERE ${ta}.target_type = 'post' AND p.uuid = ${ta}.target_uuid`,
    `UPDATE ${ta} SET audience = ${audienceOf('p.visibility')}, audience_owner = p.user_uuid, audience_other = NULL
       FROM comments c JOIN posts p ON p.uuid = c.post_uuid
       WHERE ${ta}.target_type = 'comment' AND c.uuid = ${ta}.target_uuid`,
    `UPDATE ${ta} SET audience = ${audienceOf('m.visibility')}, audience_owner = m.user_uuid, audience_other = NULL
       FROM media m WHERE ${ta}.target_type = 'media' AND m.uuid = ${ta}.target_uuid`,
    `UPDATE ${ta} SET audience = 'parties', audience_owner = g.user_uuid, audience_other = g.recipient_uuid
       FROM messages g WHERE ${ta}.target_type = 'messages' AND g.uuid = ${ta}.target_uuid`,
    `UPDATE ${ta} SET audience = 'parties', audience_owner = k.user_uuid, audience_other = k.target_user_uuid
       FROM connections k WHERE ${ta}.target_type = 'connection' AND k.uuid = ${ta}.target_uuid`,
    `UPDATE ${ta} SET audience = 'public', audience_owner = u.uuid, audience_other = NULL
       FROM users u WHERE ${ta}.target_type = 'user' AND u.uuid = ${ta}.target_uuid`,
    `UPDATE ${ta} SET audience = 'public', audience_owner = n.user_uuid, audience_other = NULL
       FROM networks n WHERE ${ta}.target_type = 'network' AND n.uuid = ${ta}.target_uuid`,
  ];
}

/**
 * Indexes of the visibility reads (both engines; the newest-per-tag one differs per engine):
 * - per tag: the public range count, the viewer's own rows, and each friend's friends-only rows are index ranges of
 *   (tag_uuid, audience, audience_owner);
 * - the whole list (no tag filter): the viewer's own and friends' rows are ranges of the non-public rows (a partial
 *   index: a tenth of the table), and the public count is the table's count less theirs;
 * - messages and connections the viewer received: a small partial index of the `parties` rows.
 * A partial index serves a query whose WHERE repeats its condition literally (SQLite matches the term itself).
 */
const AUDIENCE_INDEXES = [
  'CREATE INDEX tag_associations_tag_audience ON tag_associations (tag_uuid, audience, audience_owner)',
  `CREATE INDEX tag_associations_not_public ON tag_associations (audience, audience_owner) WHERE audience <> 'public'`,
  `CREATE INDEX tag_associations_parties ON tag_associations (audience_other, tag_uuid) WHERE audience = 'parties'`,
];

function sqliteStatements(): string[] {
  const set = (source: string, where: string) =>
    `UPDATE tag_associations SET (audience, audience_owner, audience_other) = (${source}) WHERE ${where}`;
  // Statements that refresh every association of a target kind whose target uuid is given (inside a trigger).
  const refresh = (kind: string, uuidExpr: string) =>
    set(
      audienceSource('tag_associations.target_type', 'tag_associations.target_uuid'),
      `target_type = '${kind}' AND target_uuid = ${uuidExpr}`,
    );
  const clear = (kind: string) =>
    `UPDATE tag_associations SET audience = 'none', audience_owner = NULL, audience_other = NULL
       WHERE target_type = '${kind}' AND target_uuid = old.uuid AND audience <> 'none';`;
  return [
    `ALTER TABLE tag_associations ADD COLUMN audience TEXT NOT NULL DEFAULT 'none'`,
    'ALTER TABLE tag_associations ADD COLUMN audience_owner TEXT',
    'ALTER TABLE tag_associations ADD COLUMN audience_other TEXT',
    // Filled before the indexes exist, so the fill does not maintain them row by row.
    ...backfillStatements(),
    ...AUDIENCE_INDEXES,
    // The newest associations of a tag, with what deciding their visibility needs, from the index alone (it
    // replaces the (tag_uuid, created_at, uuid) index of 0004, which it extends).
    `CREATE INDEX tag_associations_tag_created_audience
       ON tag_associations (tag_uuid, created_at, uuid, audience, audience_owner, audience_other)`,
    'DROP INDEX IF EXISTS tag_associations_tag_created_uuid',

    // An inserted association, or one pointed at another target, takes its target's audience. SQLite triggers
    // cannot change NEW, so the row is updated after the insert (the update sets none of the watched columns).
    `CREATE TRIGGER tag_audience_ai AFTER INSERT ON tag_associations BEGIN
       ${set(audienceSource('new.target_type', 'new.target_uuid'), 'rowid = new.rowid')};
     END`,
    `CREATE TRIGGER tag_audience_au AFTER UPDATE OF target_type, target_uuid ON tag_associations BEGIN
       ${set(audienceSource('new.target_type', 'new.target_uuid'), 'rowid = new.rowid')};
     END`,
    // A post's visibility or owner reaches its associations and those of its comments.
    `CREATE TRIGGER tag_audience_posts_au AFTER UPDATE OF visibility, user_uuid ON posts
       WHEN old.visibility IS NOT new.visibility OR old.user_uuid IS NOT new.user_uuid BEGIN
       UPDATE tag_associations SET audience = ${audienceOf('new.visibility')}, audience_owner = new.user_uuid,
         audience_other = NULL WHERE target_type = 'post' AND target_uuid = new.uuid;
       UPDATE tag_associations SET audience = ${audienceOf('new.visibility')}, audience_owner = new.user_uuid,
         audience_other = NULL
         WHERE target_type = 'comment' AND target_uuid IN (SELECT c.uuid FROM comments c WHERE c.post_uuid = new.uuid);
     END`,
    `CREATE TRIGGER tag_audience_comments_au AFTER UPDATE OF post_uuid ON comments
       WHEN old.post_uuid IS NOT new.post_uuid BEGIN
       ${refresh('comment', 'new.uuid')};
     END`,
    `CREATE TRIGGER tag_audience_media_au AFTER UPDATE OF visibility, user_uuid ON media
       WHEN old.visibility IS NOT new.visibility OR old.user_uuid IS NOT new.user_uuid BEGIN
       ${refresh('media', 'new.uuid')};
     END`,
    `CREATE TRIGGER tag_audience_messages_au AFTER UPDATE OF user_uuid, recipient_uuid ON messages
       WHEN old.user_uuid IS NOT new.user_uuid OR old.recipient_uuid IS NOT new.recipient_uuid BEGIN
       ${refresh('messages', 'new.uuid')};
     END`,
    `CREATE TRIGGER tag_audience_connections_au AFTER UPDATE OF user_uuid, target_user_uuid ON connections
       WHEN old.user_uuid IS NOT new.user_uuid OR old.target_user_uuid IS NOT new.target_user_uuid BEGIN
       ${refresh('connection', 'new.uuid')};
     END`,
    `CREATE TRIGGER tag_audience_networks_au AFTER UPDATE OF user_uuid ON networks
       WHEN old.user_uuid IS NOT new.user_uuid BEGIN
       ${refresh('network', 'new.uuid')};
     END`,
    // A deleted target's remaining associations (the subscribers delete most of them first) are visible to no one.
    `CREATE TRIGGER tag_audience_posts_ad AFTER DELETE ON posts BEGIN ${clear('post')} END`,
    `CREATE TRIGGER tag_audience_comments_ad AFTER DELETE ON comments BEGIN ${clear('comment')} END`,
    `CREATE TRIGGER tag_audience_media_ad AFTER DELETE ON media BEGIN ${clear('media')} END`,
    `CREATE TRIGGER tag_audience_messages_ad AFTER DELETE ON messages BEGIN ${clear('messages')} END`,
    `CREATE TRIGGER tag_audience_connections_ad AFTER DELETE ON connections BEGIN ${clear('connection')} END`,
    `CREATE TRIGGER tag_audience_users_ad AFTER DELETE ON users BEGIN ${clear('user')} END`,
    `CREATE TRIGGER tag_audience_networks_ad AFTER DELETE ON networks BEGIN ${clear('network')} END`,
    // Statistics of the whole table, not only of the new indexes: the planner compares indexes by their rows per
    // key, and fresh figures beside stale ones (a table grown since its last ANALYZE) made it walk (tag_uuid, uuid)
    // and sort instead of taking the covering index, 276 ms instead of 0.2 for a tag's newest 100.
    'ANALYZE tag_associations',
  ];
}

function postgresStatements(): string[] {
  const refresh = (kind: string) =>
    `UPDATE tag_associations ta SET (audience, audience_owner, audience_other) =
       (SELECT s.audience, s.owner, s.other FROM tag_audience(ta.target_type, ta.target_uuid) s)
       WHERE ta.target_type = '${kind}' AND ta.target_uuid = NEW.uuid;`;
  const clear = (kind: string) =>
    `UPDATE tag_associations SET audience = 'none', audience_owner = NULL, audience_other = NULL
       WHERE target_type = '${kind}' AND target_uuid = OLD.uuid AND audience <> 'none';`;
  // An AFTER trigger function and its trigger; `when` limits updates to real changes of the watched columns.
  const trigger = (table: string, fn: string, body: string, event: string, when = '') => [
    `CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $fn$
     BEGIN
       ${body}
       RETURN NULL;
     END $fn$`,
    `CREATE TRIGGER ${fn} AFTER ${event} ON ${table} FOR EACH ROW ${when ? `WHEN (${when})` : ''} EXECUTE FUNCTION ${fn}()`,
  ];
  return [
    `ALTER TABLE tag_associations ADD COLUMN audience text NOT NULL DEFAULT 'none', ADD COLUMN audience_owner text,
       ADD COLUMN audience_other text`,
    ...backfillStatements(),
    ...AUDIENCE_INDEXES,
    // Covering (INCLUDE) variant of 0004's (tag_uuid, created_at, uuid) index: the newest associations of a tag
    // and their visibility from an index-only scan. 0001's (tag_uuid, created_at) served `created_at desc` with
    // PostgreSQL's default nulls order, which no query asks for any more.
    `CREATE INDEX tag_associations_tag_created_audience
       ON tag_associations (tag_uuid, created_at NULLS FIRST, uuid)
       INCLUDE (audience, audience_owner, audience_other)`,
    'DROP INDEX IF EXISTS tag_associations_tag_created_uuid',
    'DROP INDEX IF EXISTS tag_associations_tag_created',

    `CREATE FUNCTION tag_audience(t_type text, t_uuid text,
       OUT audience text, OUT owner text, OUT other text) RETURNS record LANGUAGE sql STABLE AS $fn$
       ${audienceSource('$1', '$2')}
     $fn$`,
    // Insert or retarget: the row takes its target's audience before it is written.
    `CREATE FUNCTION tag_audience_row() RETURNS trigger LANGUAGE plpgsql AS $fn$
     BEGIN
       SELECT s.audience, s.owner, s.other INTO NEW.audience, NEW.audience_owner, NEW.audience_other
         FROM tag_audience(NEW.target_type, NEW.target_uuid) s;
       RETURN NEW;
     END $fn$`,
    `CREATE TRIGGER tag_audience_row BEFORE INSERT OR UPDATE OF target_type, target_uuid ON tag_associations
       FOR EACH ROW EXECUTE FUNCTION tag_audience_row()`,
    ...trigger(
      'posts',
      'tag_audience_posts_au',
      `UPDATE tag_associations SET audience = ${audienceOf('NEW.visibility')}, audience_owner = NEW.user_uuid,
         audience_other = NULL WHERE target_type = 'post' AND target_uuid = NEW.uuid;
       UPDATE tag_associations SET audience = ${audienceOf('NEW.visibility')}, audience_owner = NEW.user_uuid,
         audience_other = NULL
         WHERE target_type = 'comment' AND target_uuid IN (SELECT c.uuid FROM comments c WHERE c.post_uuid = NEW.uuid);`,
      'UPDATE OF visibility, user_uuid',
      '(OLD.visibility, OLD.user_uuid) IS DISTINCT FROM (NEW.visibility, NEW.user_uuid)',
    ),
    ...trigger(
      'comments',
      'tag_audience_comments_au',
      refresh('comment'),
      'UPDATE OF post_uuid',
      'OLD.post_uuid IS DISTINCT FROM NEW.post_uuid',
    ),
    ...trigger(
      'media',
      'tag_audience_media_au',
      refresh('media'),
      'UPDATE OF visibility, user_uuid',
      '(OLD.visibility, OLD.user_uuid) IS DISTINCT FROM (NEW.visibility, NEW.user_uuid)',
    ),
    ...trigger(
      'messages',
      'tag_audience_messages_au',
      refresh('messages'),
      'UPDATE OF user_uuid, recipient_uuid',
      '(OLD.user_uuid, OLD.recipient_uuid) IS DISTINCT FROM (NEW.user_uuid, NEW.recipient_uuid)',
    ),
    ...trigger(
      'connections',
      'tag_audience_connections_au',
      refresh('connection'),
      'UPDATE OF user_uuid, target_user_uuid',
      '(OLD.user_uuid, OLD.target_user_uuid) IS DISTINCT FROM (NEW.user_uuid, NEW.target_user_uuid)',
    ),
    ...trigger(
      'networks',
      'tag_audience_networks_au',
      refresh('network'),
      'UPDATE OF user_uuid',
      'OLD.user_uuid IS DISTINCT FROM NEW.user_uuid',
    ),
    ...trigger('posts', 'tag_audience_posts_ad', clear('post'), 'DELETE'),
    ...trigger('comments', 'tag_audience_comments_ad', clear('comment'), 'DELETE'),
    ...trigger('media', 'tag_audience_media_ad', clear('media'), 'DELETE'),
    ...trigger('messages', 'tag_audience_messages_ad', clear('messages'), 'DELETE'),
    ...trigger('connections', 'tag_audience_connections_ad', clear('connection'), 'DELETE'),
    ...trigger('users', 'tag_audience_users_ad', clear('user'), 'DELETE'),
    ...trigger('networks', 'tag_audience_networks_ad', clear('network'), 'DELETE'),
    'ANALYZE tag_associations',
  ];
}
