import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';

/**
 * The search index (docs/search.md): one `search_docs` row per searchable item with the columns the privacy and
 * language conditions need, full-text structures over its `title` and `body`, and `search_names` (user, network and
 * hashtag names) for typo-tolerant lookups. Triggers on the base tables keep all of it in the writer's transaction,
 * so every write path (API, CLI, bulk seeding) indexes without knowing about search.
 */
export function searchMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      const statements = dialect === 'postgres' ? postgresStatements() : sqliteStatements();
      for (const statement of statements) await sql.raw(statement).execute(db);
    },
  };
}

/** The text a user's document holds, per engine (shared by the triggers and the reindex command). */
export const SQLITE_DOC_SOURCES = {
  user: (r: string) =>
    `'user', ${r}.uuid, ${r}.uuid, 'public', NULL, ${r}.language, trim(${r}.username || ' ' || coalesce(${r}.display_name, '')), ${r}.bio, ${r}.created_at, ${r}.updated_at`,
  network: (r: string) =>
    `'network', ${r}.uuid, ${r}.user_uuid, 'public', NULL, NULL, ${r}.name, ${r}.description, ${r}.created_at, ${r}.updated_at`,
  post: (r: string) =>
    `'post', ${r}.uuid, ${r}.user_uuid, ${r}.visibility, NULL, ${r}.language, NULL, ${r}.body, ${r}.created_at, ${r}.updated_at`,
  comment: (r: string) =>
    `'comment', ${r}.uuid, (SELECT p.user_uuid FROM posts p WHERE p.uuid = ${r}.post_uuid), (SELECT p.visibility FROM posts p WHERE p.uuid = ${r}.post_uuid), NULL, ${r}.language, NULL, ${r}.body, ${r}.created_at, ${r}.updated_at`,
  media: (r: string) =>
    `'media', ${r}.uuid, ${r}.user_uuid, ${r}.visibility, NULL, ${r}.language, ${r}.title, ${r}.description, ${r}.created_at, ${r}.updated_at`,
  messages: (r: string) =>
    `'messages', ${r}.uuid, ${r}.user_uuid, 'message', ${r}.recipient_uuid, ${r}.language, NULL, ${r}.body, ${r}.created_at, ${r}.created_at`,
} as const;

/** Base table of each document kind. */
export const DOC_TABLES = {
  user: 'users',
  network: 'networks',
  post: 'posts',
  comment: 'comments',
  media: 'media',
  messages: 'messages',
} as const;

const DOC_COLUMNS =
  'kind, uuid, owner_uuid, visibility, recipient_uuid, language, title, body, created_at, updated_at';

/** Languages with a stemmer on PostgreSQL (snowball), by ISO code. */
export const PG_STEMMERS: Record<string, string> = {
  en: 'english',
  de: 'german',
  fr: 'french',
  es: 'spanish',
  it: 'italian',
  pt: 'portuguese',
  nl: 'dutch',
  sv: 'swedish',
  da: 'danish',
  no: 'norwegian',
  fi: 'finnish',
  ru: 'russian',
  tr: 'turkish',
  hu: 'hungarian',
  ro: 'romanian',
};

function sqliteStatements(): string[] {
  const s = SQLITE_DOC_SOURCES;
  const nameRows = (kind: string, uuid: string, name: string) =>
    `INSERT INTO search_names(kind, uuid, name, name_fold) SELECT '${kind}', ${uuid}, ${name}, ' ' || replace(${name}, '_', ' ') || ' ' WHERE ${name} IS NOT NULL AND ${name} <> ''`;
  return [
    `CREATE TABLE search_docs (
       id INTEGER PRIMARY KEY,
       kind TEXT NOT NULL,
       uuid TEXT NOT NULL UNIQUE,
       owner_uuid TEXT,
       visibility TEXT NOT NULL,
       recipient_uuid TEXT,
       language TEXT,
       title TEXT,
       body TEXT,
       created_at TEXT NOT NULL,
       updated_at TEXT NOT NULL
     )`,
    'CREATE INDEX search_docs_owner ON search_docs(owner_uuid)',
    'CREATE INDEX search_docs_recipient ON search_docs(recipient_uuid)',
    'CREATE INDEX search_docs_kind ON search_docs(kind, id)',
    // Unstemmed (every language) and English-stemmed indexes over the same external content. The plain one serves
    // the prefix of the last word, so it keeps prefix indexes of 2 to 5 characters: without one, FTS5 merges the
    // whole doclists of every word with that prefix first (70 ms for "love" over 1,000,000 posts; 1.5 ms with).
    // The stemmed one matches whole words only.
    `CREATE VIRTUAL TABLE search_fts USING fts5(kind, title, body, content='search_docs', content_rowid='id', tokenize='unicode61 remove_diacritics 2', prefix='2 3 4 5')`,
    `CREATE VIRTUAL TABLE search_fts_en USING fts5(kind, title, body, content='search_docs', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2')`,
    `CREATE TRIGGER search_docs_ai AFTER INSERT ON search_docs BEGIN
       INSERT INTO search_fts(rowid, kind, title, body) VALUES (new.id, new.kind, new.title, new.body);
       INSERT INTO search_fts_en(rowid, kind, title, body) VALUES (new.id, new.kind, new.title, new.body);
     END`,
    `CREATE TRIGGER search_docs_ad AFTER DELETE ON search_docs BEGIN
       INSERT INTO search_fts(search_fts, rowid, kind, title, body) VALUES ('delete', old.id, old.kind, old.title, old.body);
       INSERT INTO search_fts_en(search_fts_en, rowid, kind, title, body) VALUES ('delete', old.id, old.kind, old.title, old.body);
     END`,
    `CREATE TRIGGER search_docs_au AFTER UPDATE OF kind, title, body ON search_docs BEGIN
       INSERT INTO search_fts(search_fts, rowid, kind, title, body) VALUES ('delete', old.id, old.kind, old.title, old.body);
       INSERT INTO search_fts_en(search_fts_en, rowid, kind, title, body) VALUES ('delete', old.id, old.kind, old.title, old.body);
       INSERT INTO search_fts(rowid, kind, title, body) VALUES (new.id, new.kind, new.title, new.body);
       INSERT INTO search_fts_en(rowid, kind, title, body) VALUES (new.id, new.kind, new.title, new.body);
     END`,

    `CREATE TABLE search_names (
       id INTEGER PRIMARY KEY,
       kind TEXT NOT NULL,
       uuid TEXT NOT NULL,
       name TEXT NOT NULL,
       name_fold TEXT NOT NULL
     )`,
    'CREATE INDEX search_names_uuid ON search_names(uuid)',
    `CREATE VIRTUAL TABLE search_names_tri USING fts5(name_fold, content='search_names', content_rowid='id', tokenize='trigram remove_diacritics 1')`,
    `CREATE TRIGGER search_names_ai AFTER INSERT ON search_names BEGIN
       INSERT INTO search_names_tri(rowid, name_fold) VALUES (new.id, new.name_fold);
     END`,
    `CREATE TRIGGER search_names_ad AFTER DELETE ON search_names BEGIN
       INSERT INTO search_names_tri(search_names_tri, rowid, name_fold) VALUES ('delete', old.id, old.name_fold);
     END`,

    // users
    `CREATE TRIGGER search_users_ai AFTER INSERT ON users BEGIN
       INSERT INTO search_docs(${DOC_COLUMNS}) VALUES (${s.user('new')});
       ${nameRows('user', 'new.uuid', 'new.username')};
       ${nameRows('user', 'new.uuid', 'new.display_name')};
     END`,
    `CREATE TRIGGER search_users_au AFTER UPDATE OF username, display_name, bio, language ON users BEGIN
       UPDATE search_docs SET title = trim(new.username || ' ' || coalesce(new.display_name, '')), body = new.bio,
         language = new.language, updated_at = new.updated_at WHERE uuid = new.uuid;
       DELETE FROM search_names WHERE uuid = new.uuid;
       ${nameRows('user', 'new.uuid', 'new.username')};
       ${nameRows('user', 'new.uuid', 'new.display_name')};
     END`,
    // Only the time changes (e.g. karma): no re-tokenizing.
    `CREATE TRIGGER search_users_au_time AFTER UPDATE OF updated_at ON users BEGIN
       UPDATE search_docs SET updated_at = new.updated_at WHERE uuid = new.uuid;
     END`,
    `CREATE TRIGGER search_users_ad AFTER DELETE ON users BEGIN
       DELETE FROM search_docs WHERE uuid = old.uuid;
       DELETE FROM search_names WHERE uuid = old.uuid;
     END`,

    // networks
    `CREATE TRIGGER search_networks_ai AFTER INSERT ON networks BEGIN
       INSERT INTO search_docs(${DOC_COLUMNS}) VALUES (${s.network('new')});
       ${nameRows('network', 'new.uuid', 'new.name')};
     END`,
    `CREATE TRIGGER search_networks_au AFTER UPDATE OF name, description, updated_at ON networks BEGIN
       UPDATE search_docs SET title = new.name, body = new.description, updated_at = new.updated_at WHERE uuid = new.uuid;
       DELETE FROM search_names WHERE uuid = new.uuid;
       ${nameRows('network', 'new.uuid', 'new.name')};
     END`,
    `CREATE TRIGGER search_networks_ad AFTER DELETE ON networks BEGIN
       DELETE FROM search_docs WHERE uuid = old.uuid;
       DELETE FROM search_names WHERE uuid = old.uuid;
     END`,

    // posts: a visibility change reaches the post's comments too
    `CREATE TRIGGER search_posts_ai AFTER INSERT ON posts BEGIN
       INSERT INTO search_docs(${DOC_COLUMNS}) VALUES (${s.post('new')});
     END`,
    `CREATE TRIGGER search_posts_au AFTER UPDATE OF body, visibility, language, updated_at, user_uuid ON posts BEGIN
       UPDATE search_docs SET body = new.body, visibility = new.visibility, language = new.language,
         owner_uuid = new.user_uuid, updated_at = new.updated_at WHERE uuid = new.uuid;
       UPDATE search_docs SET visibility = new.visibility, owner_uuid = new.user_uuid
         WHERE uuid IN (SELECT c.uuid FROM comments c WHERE c.post_uuid = new.uuid)
           AND (old.visibility IS NOT new.visibility OR old.user_uuid IS NOT new.user_uuid);
     END`,
    `CREATE TRIGGER search_posts_ad AFTER DELETE ON posts BEGIN
       DELETE FROM search_docs WHERE uuid = old.uuid;
     END`,

    // comments: owner and visibility are the post's
    `CREATE TRIGGER search_comments_ai AFTER INSERT ON comments BEGIN
       INSERT INTO search_docs(${DOC_COLUMNS}) VALUES (${s.comment('new')});
     END`,
    `CREATE TRIGGER search_comments_au AFTER UPDATE OF body, language, updated_at ON comments BEGIN
       UPDATE search_docs SET body = new.body, language = new.language, updated_at = new.updated_at WHERE uuid = new.uuid;
     END`,
    `CREATE TRIGGER search_comments_ad AFTER DELETE ON comments BEGIN
       DELETE FROM search_docs WHERE uuid = old.uuid;
     END`,

    // media
    `CREATE TRIGGER search_media_ai AFTER INSERT ON media BEGIN
       INSERT INTO search_docs(${DOC_COLUMNS}) VALUES (${s.media('new')});
     END`,
    `CREATE TRIGGER search_media_au AFTER UPDATE OF title, description, visibility, language, updated_at ON media BEGIN
       UPDATE search_docs SET title = new.title, body = new.description, visibility = new.visibility,
         language = new.language, updated_at = new.updated_at WHERE uuid = new.uuid;
     END`,
    `CREATE TRIGGER search_media_ad AFTER DELETE ON media BEGIN
       DELETE FROM search_docs WHERE uuid = old.uuid;
     END`,

    // messages: visible to sender and recipient only
    `CREATE TRIGGER search_messages_ai AFTER INSERT ON messages BEGIN
       INSERT INTO search_docs(${DOC_COLUMNS}) VALUES (${s.messages('new')});
     END`,
    `CREATE TRIGGER search_messages_au AFTER UPDATE OF body, language ON messages BEGIN
       UPDATE search_docs SET body = new.body, language = new.language WHERE uuid = new.uuid;
     END`,
    `CREATE TRIGGER search_messages_ad AFTER DELETE ON messages BEGIN
       DELETE FROM search_docs WHERE uuid = old.uuid;
     END`,

    // hashtags of the tag store, for typo-tolerant hashtag search
    `CREATE TRIGGER search_tags_ai AFTER INSERT ON tags WHEN new.tag_type = 'hashtag' BEGIN
       ${nameRows('hashtag', 'new.uuid', 'new.name_key')};
     END`,
    `CREATE TRIGGER search_tags_au AFTER UPDATE OF name_key, tag_type ON tags BEGIN
       DELETE FROM search_names WHERE uuid = new.uuid;
       INSERT INTO search_names(kind, uuid, name, name_fold)
         SELECT 'hashtag', new.uuid, new.name_key, ' ' || replace(new.name_key, '_', ' ') || ' ' WHERE new.tag_type = 'hashtag';
     END`,
    `CREATE TRIGGER search_tags_ad AFTER DELETE ON tags BEGIN
       DELETE FROM search_names WHERE uuid = old.uuid;
     END`,
  ];
}

/** PostgreSQL source expressions of each kind's document (same columns as SQLITE_DOC_SOURCES). */
export const PG_DOC_SOURCES = SQLITE_DOC_SOURCES;

function postgresStatements(): string[] {
  const s = PG_DOC_SOURCES;
  const langs = Object.values(PG_STEMMERS);
  const configCase = Object.entries(PG_STEMMERS)
    .map(([code, name]) => `WHEN '${code}' THEN 'search_${name}'::regconfig`)
    .join(' ');
  const nameRows = (kind: string, uuid: string, name: string) =>
    `INSERT INTO search_names(kind, uuid, name, name_fold) SELECT '${kind}', ${uuid}, ${name}, ' ' || search_fold(${name}) || ' ' WHERE ${name} IS NOT NULL AND ${name} <> '';`;
  const docTrigger = (table: string, fn: string, body: string, columns: string) => [
    `CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $fn$
     BEGIN
       ${body}
     END $fn$`,
    `CREATE TRIGGER ${fn} AFTER INSERT OR DELETE OR UPDATE OF ${columns} ON ${table} FOR EACH ROW EXECUTE FUNCTION ${fn}()`,
  ];
  return [
    'CREATE EXTENSION IF NOT EXISTS pg_trgm',
    // Case and diacritics folded, everything but letters and digits made a blank (as SQLite's unicode61 splits).
    `CREATE FUNCTION search_fold(t text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
       SELECT regexp_replace(
         regexp_replace(normalize(lower(normalize(coalesce(t, ''), NFKC)), NFD), '[\\u0300-\\u036f\\u1ab0-\\u1aff\\u1dc0-\\u1dff\\u20d0-\\u20ff\\ufe20-\\ufe2f]', '', 'g'),
         '[^[:alnum:]]+', ' ', 'g')
     $fn$`,
    // Snowball stemmers without stop words: every typed word must match, as on SQLite.
    `DO $do$ DECLARE l text; BEGIN
       FOREACH l IN ARRAY ARRAY[${langs.map((l) => `'${l}'`).join(', ')}] LOOP
         EXECUTE format('CREATE TEXT SEARCH DICTIONARY search_%s_stem (TEMPLATE = snowball, Language = %s)', l, l);
         EXECUTE format('CREATE TEXT SEARCH CONFIGURATION search_%s (COPY = simple)', l);
         EXECUTE format('ALTER TEXT SEARCH CONFIGURATION search_%s ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part WITH search_%s_stem', l, l);
       END LOOP;
     END $do$`,
    // Content is stemmed in its own language; users and networks (no content language) in English.
    `CREATE FUNCTION search_config(kind text, language text) RETURNS regconfig LANGUAGE sql IMMUTABLE AS $fn$
       SELECT CASE WHEN kind IN ('user', 'network') THEN 'search_english'::regconfig
         ELSE CASE language ${configCase} ELSE 'simple'::regconfig END END
     $fn$`,
    `CREATE TABLE search_docs (
       id bigserial PRIMARY KEY,
       kind text NOT NULL,
       uuid text NOT NULL UNIQUE,
       owner_uuid text,
       visibility text NOT NULL,
       recipient_uuid text,
       language text,
       title text,
       body text,
       created_at timestamptz NOT NULL,
       updated_at timestamptz NOT NULL,
       tsv tsvector NOT NULL DEFAULT ''::tsvector
     )`,
    'CREATE INDEX search_docs_tsv ON search_docs USING gin (tsv)',
    'CREATE INDEX search_docs_owner ON search_docs (owner_uuid)',
    'CREATE INDEX search_docs_recipient ON search_docs (recipient_uuid)',
    'CREATE INDEX search_docs_kind ON search_docs (kind, id)',
    // Both the stemmed and the plain lexemes: a word matches stemmed or as typed (prefixes of the last word too).
    `CREATE FUNCTION search_docs_tsv() RETURNS trigger LANGUAGE plpgsql AS $fn$
     DECLARE cfg regconfig := search_config(NEW.kind, NEW.language);
     BEGIN
       NEW.tsv := setweight(to_tsvector(cfg, search_fold(NEW.title)), 'A')
         || setweight(to_tsvector('simple', search_fold(NEW.title)), 'A')
         || setweight(to_tsvector(cfg, search_fold(NEW.body)), 'D')
         || setweight(to_tsvector('simple', search_fold(NEW.body)), 'D');
       RETURN NEW;
     END $fn$`,
    `CREATE TRIGGER search_docs_tsv BEFORE INSERT OR UPDATE OF kind, title, body, language ON search_docs
       FOR EACH ROW EXECUTE FUNCTION search_docs_tsv()`,

    `CREATE TABLE search_names (
       id bigserial PRIMARY KEY,
       kind text NOT NULL,
       uuid text NOT NULL,
       name text NOT NULL,
       name_fold text NOT NULL
     )`,
    'CREATE INDEX search_names_uuid ON search_names (uuid)',
    'CREATE INDEX search_names_trgm ON search_names USING gin (name_fold gin_trgm_ops)',
    // Prefix lookups (completion, mentions, hashtags) on the keys other modules store.
    'CREATE INDEX search_users_username_prefix ON users (username_key text_pattern_ops)',
    'CREATE INDEX search_tags_name_prefix ON tags (tag_type, name_key text_pattern_ops)',

    ...docTrigger(
      'users',
      'search_users_sync',
      `IF TG_OP = 'DELETE' THEN
         DELETE FROM search_docs WHERE uuid = OLD.uuid; DELETE FROM search_names WHERE uuid = OLD.uuid; RETURN OLD;
       END IF;
       IF TG_OP = 'INSERT' THEN
         INSERT INTO search_docs(${DOC_COLUMNS}) VALUES (${s.user('NEW')});
       ELSIF (NEW.username, NEW.display_name, NEW.bio, NEW.language) IS NOT DISTINCT FROM (OLD.username, OLD.display_name, OLD.bio, OLD.language) THEN
         UPDATE search_docs SET updated_at = NEW.updated_at WHERE uuid = NEW.uuid;
         RETURN NEW;
       ELSE
         UPDATE search_docs SET title = trim(NEW.username || ' ' || coalesce(NEW.display_name, '')), body = NEW.bio,
           language = NEW.language, updated_at = NEW.updated_at WHERE uuid = NEW.uuid;
         DELETE FROM search_names WHERE uuid = NEW.uuid;
       END IF;
       ${nameRows('user', 'NEW.uuid', 'NEW.username')}
       ${nameRows('user', 'NEW.uuid', 'NEW.display_name')}
       RETURN NEW;`,
      'username, display_name, bio, language, updated_at',
    ),
    ...docTrigger(
      'networks',
      'search_networks_sync',
      `IF TG_OP = 'DELETE' THEN
         DELETE FROM search_docs WHERE uuid = OLD.uuid; DELETE FROM search_names WHERE uuid = OLD.uuid; RETURN OLD;
       END IF;
       IF TG_OP = 'INSERT' THEN
         INSERT INTO search_docs(${DOC_COLUMNS}) VALUES (${s.network('NEW')});
       ELSE
         UPDATE search_docs SET title = NEW.name, body = NEW.description, updated_at = NEW.updated_at WHERE uuid = NEW.uuid;
         DELETE FROM search_names WHERE uuid = NEW.uuid;
       END IF;
       ${nameRows('network', 'NEW.uuid', 'NEW.name')}
       RETURN NEW;`,
      'name, description, updated_at',
    ),
    ...docTrigger(
      'posts',
      'search_posts_sync',
      `IF TG_OP = 'DELETE' THEN DELETE FROM search_docs WHERE uuid = OLD.uuid; RETURN OLD; END IF;
       IF TG_OP = 'INSERT' THEN
         INSERT INTO search_docs(${DOC_COLUMNS}) VALUES (${s.post('NEW')});
       ELSE
         UPDATE search_docs SET body = NEW.body, visibility = NEW.visibility, language = NEW.language,
           owner_uuid = NEW.user_uuid, updated_at = NEW.updated_at WHERE uuid = NEW.uuid;
         IF (NEW.visibility, NEW.user_uuid) IS DISTINCT FROM (OLD.visibility, OLD.user_uuid) THEN
           UPDATE search_docs SET visibility = NEW.visibility, owner_uuid = NEW.user_uuid
             WHERE uuid IN (SELECT c.uuid FROM comments c WHERE c.post_uuid = NEW.uuid);
         END IF;
       END IF;
       RETURN NEW;`,
      'body, visibility, language, updated_at, user_uuid',
    ),
    ...docTrigger(
      'comments',
      'search_comments_sync',
      `IF TG_OP = 'DELETE' THEN DELETE FROM search_docs WHERE uuid = OLD.uuid; RETURN OLD; END IF;
       IF TG_OP = 'INSERT' THEN
         INSERT INTO search_docs(${DOC_COLUMNS}) VALUES (${s.comment('NEW')});
       ELSE
         UPDATE search_docs SET body = NEW.body, language = NEW.language, updated_at = NEW.updated_at WHERE uuid = NEW.uuid;
       END IF;
       RETURN NEW;`,
      'body, language, updated_at',
    ),
    ...docTrigger(
      'media',
      'search_media_sync',
      `IF TG_OP = 'DELETE' THEN DELETE FROM search_docs WHERE uuid = OLD.uuid; RETURN OLD; END IF;
       IF TG_OP = 'INSERT' THEN
         INSERT INTO search_docs(${DOC_COLUMNS}) VALUES (${s.media('NEW')});
       ELSE
         UPDATE search_docs SET title = NEW.title, body = NEW.description, visibility = NEW.visibility,
           language = NEW.language, updated_at = NEW.updated_at WHERE uuid = NEW.uuid;
       END IF;
       RETURN NEW;`,
      'title, description, visibility, language, updated_at',
    ),
    ...docTrigger(
      'messages',
      'search_messages_sync',
      `IF TG_OP = 'DELETE' THEN DELETE FROM search_docs WHERE uuid = OLD.uuid; RETURN OLD; END IF;
       IF TG_OP = 'INSERT' THEN
         INSERT INTO search_docs(${DOC_COLUMNS}) VALUES (${s.messages('NEW')});
       ELSE
         UPDATE search_docs SET body = NEW.body, language = NEW.language WHERE uuid = NEW.uuid;
       END IF;
       RETURN NEW;`,
      'body, language',
    ),
    ...docTrigger(
      'tags',
      'search_tags_sync',
      `IF TG_OP = 'DELETE' THEN DELETE FROM search_names WHERE uuid = OLD.uuid; RETURN OLD; END IF;
       IF TG_OP = 'UPDATE' THEN DELETE FROM search_names WHERE uuid = NEW.uuid; END IF;
       IF NEW.tag_type = 'hashtag' THEN
         ${nameRows('hashtag', 'NEW.uuid', 'NEW.name_key')}
       END IF;
       RETURN NEW;`,
      'name_key, tag_type',
    ),
  ];
}
