/** Row of `users`. */
export interface UserTable {
  uuid: string;
  username: string;
  username_key: string;
  email: string;
  email_key: string;
  password_hash: string;
  display_name: string | null;
  bio: string | null;
  language: string;
  network_uuid: string | null;
  role: string;
  karma: number;
  created_at: string;
  updated_at: string;
}
