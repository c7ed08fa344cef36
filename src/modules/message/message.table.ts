/** Row of `messages`. */
export interface MessageTable {
  uuid: string;
  user_uuid: string;
  recipient_uuid: string;
  body: string;
  language: string;
  created_at: string;
}
