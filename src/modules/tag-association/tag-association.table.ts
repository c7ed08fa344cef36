/** Row of `tag_associations`; `language` copies the target's language for the list filter. */
export interface TagAssociationTable {
  uuid: string;
  tag_uuid: string;
  user_uuid: string;
  target_uuid: string;
  target_type: string;
  language: string | null;
  created_at: string;
  updated_at: string;
}
