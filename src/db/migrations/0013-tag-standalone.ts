import type { Kysely } from 'kysely';

/**
 * `tags.standalone`: 1 for a tag made through `POST /tags/create`, 0 for one extracted from content (docs/tags.md,
 * "Which tags you can see"). A tag with no association was visible to everybody, so an extracted tag whose last use
 * went away (its private post deleted or edited) became public, name and all. Only a standalone tag is visible for
 * having no association now. Existing tags start at 0: which of them were made through `/tags/create` is not
 * recorded, and hiding an unused one is the side that reveals nothing.
 */
export function tagStandaloneMigration() {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .alterTable('tags')
        .addColumn('standalone', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
    },
  };
}
