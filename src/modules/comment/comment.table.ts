/** Row of `comments`; a comment's visibility is its post's. */
export interface CommentTable {
  uuid: string;
  post_uuid: string;
  user_uuid: string;
  body: string;
  language: string;
  created_at: string;
  updated_at: string;
}
