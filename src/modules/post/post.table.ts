/** Row of `posts`. */
export interface PostTable {
  uuid: string;
  user_uuid: string;
  body: string;
  visibility: string;
  language: string;
  network_uuid: string | null;
  created_at: string;
  updated_at: string;
}
