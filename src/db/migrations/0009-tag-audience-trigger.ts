import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.ts';
import { audienceOf } from './0006-tag-audience.ts';

/**
 * PostgreSQL: the row trigger of 0006 took its audience from the SQL function `tag_audience`, a UNION of every
 * target kind that PostgreSQL plans afresh on each call from PL/pgSQL: about 0.7 to 2 ms per association, so a post
 * with three tags spent several milliseconds in it with its author's and tags' rows locked. This version branches on
 * the target type and runs one primary-key lookup whose plan PL/pgSQL keeps. Same result: the target's audience,
 * owner and other party, or `none` when the target is missing. SQLite's trigger is a plain statement already.
 */
export function tagAudienceTriggerMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (dialect !== 'postgres') return;
      await sql
        .raw(`CREATE OR REPLACE FUNCTION tag_audience_row() RETURNS trigger LANGUAGE plpgsql AS $fn$
     BEGIN
       IF NEW.target_type = 'post' THEN
         SELECT ${audienceOf('p.visibility')}, p.user_uuid, NULL INTO NEW.audience, NEW.audience_owner, NEW.audience_other
           FROM posts p WHERE p.uuid = NEW.target_uuid;
       ELSIF NEW.target_type = 'comment' THEN
         SELECT ${audienceOf('p.visibility')}, p.user_uuid, NULL INTO NEW.audience, NEW.audience_owner, NEW.audience_other
           FROM comments c JOIN posts p ON p.uuid = c.post_uuid WHERE c.uuid = NEW.target_uuid;
       ELSIF NEW.target_type = 'media' THEN
         SELECT ${audienceOf('m.visibility')}, m.user_uuid, NULL INTO NEW.audience, NEW.audience_owner, NEW.audience_other
           FROM media m WHERE m.uuid = NEW.target_uuid;
       ELSIF NEW.target_type = 'messages' THEN
         SELECT 'parties', g.user_uuid, g.recipient_uuid INTO NEW.audience, NEW.audience_owner, NEW.audience_other
           FROM messages g WHERE g.uuid = NEW.target_uuid;
       ELSIF NEW.target_type = 'connection' THEN
         SELECT 'parties', k.user_uuid, k.target_user_uuid INTO NEW.audience, NEW.audience_owner, NEW.audience_other
           FROM connections k WHERE k.uuid = NEW.target_uuid;
       ELSIF NEW.target_type = 'user' THEN
         SELECT 'public', u.uuid, NULL INTO NEW.audience, NEW.audience_owner, NEW.audience_other
           FROM users u WHERE u.uuid = NEW.target_uuid;
       ELSIF NEW.target_type = 'network' THEN
         SELECT 'public', n.user_uuid, NULL INTO NEW.audience, NEW.audience_owner, NEW.audience_other
           FROM networks n WHERE n.uuid = NEW.target_uuid;
       ELSE
         NEW.audience := NULL;
       END IF;
       -- SELECT INTO without a row (a missing target) leaves NULLs: that target is visible to no one.
       IF NOT FOUND OR NEW.audience IS NULL THEN
         NEW.audience := 'none';
         NEW.audience_owner := NULL;
         NEW.audience_other := NULL;
       END IF;
       RETURN NEW;
     END $fn$`)
        .execute(db);
    },
  };
}
