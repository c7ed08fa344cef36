/** Row of `clients`: OAuth2 clients, created with the CLI or BOOTSTRAP_CLIENT. */
export interface ClientTable {
  id: string;
  name: string;
  secret_hash: string;
  first_party: number;
  disabled: number;
  created_at: string;
}

/** Row of `tokens`: only the SHA-256 of a token is stored. */
export interface TokenTable {
  token_hash: string;
  kind: string;
  client_id: string;
  user_uuid: string | null;
  family_id: string;
  expires_at: string;
  used_at: string | null;
  revoked_at: string | null;
  created_at: string;
}
