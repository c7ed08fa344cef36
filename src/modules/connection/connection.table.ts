/** Row of `connections`: one per pair of users, `pair_key` keeps it unique in both directions. */
export interface ConnectionTable {
  uuid: string;
  user_uuid: string;
  target_user_uuid: string;
  pair_key: string;
  status: string;
  created_at: string;
  updated_at: string;
}

/** Row of `friends`: both directions of every confirmed connection, for index-only visibility checks. */
export interface FriendTable {
  user_uuid: string;
  friend_uuid: string;
}
