/**
 * Row of `tag_associations`; `language` copies the target's language for the list filter. The audience columns
 * copy who may see the target (migration 0006; database triggers fill and keep them; a writer that knows them may
 * give them, migration 0010, and the triggers put a wrong or missing copy right):
 * `audience` public | friends | private | parties | none (the target is gone), `audience_owner` the target's owner (a
 * comment's post owner, a message's sender, a connection's requester), `audience_other` a message's recipient or a
 * connection's addressee.
 */
export interface TagAssociationTable {
  uuid: string;
  tag_uuid: string;
  user_uuid: string;
  target_uuid: string;
  target_type: string;
  language: string | null;
  audience?: string;
  audience_owner?: string | null;
  audience_other?: string | null;
  created_at: string;
  updated_at: string;
}
