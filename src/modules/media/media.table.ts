/** Row of `media`; the bytes live in MEDIA_DIR under `storage_key`. */
export interface MediaTable {
  uuid: string;
  user_uuid: string;
  title: string | null;
  description: string | null;
  content_type: string;
  size: number;
  visibility: string;
  language: string;
  storage_key: string;
  created_at: string;
  updated_at: string;
}
