import type { Generated } from 'kysely';

/** Row of `tags`: `name_key` is the normalized spelling that is unique per `tag_type`. */
export interface TagTable {
  uuid: string;
  name: string;
  name_key: string;
  tag_type: string;
  associations_count: number;
  /** 1 when made through POST /tags/create (visible whatever its uses), 0 when extracted from content. */
  standalone: Generated<number>;
  created_at: string;
  updated_at: string;
}
