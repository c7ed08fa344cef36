import { type Static, Type } from 'typebox';

// RFC 6749 3.2: "The authorization server MUST ignore unrecognized request parameters", so these bodies accept
// extra fields (unlike the rest of the API); every field the server reads is bounded.
const Field = (maxLength: number, description: string) =>
  Type.Optional(Type.String({ maxLength, description }));

/** The longest token string read; the tokens issued are far shorter, anything longer is no token. */
const TOKEN_FIELD_MAX = 4096;

/** Body of POST /oauth/token (JSON or form-encoded). */
export const TokenBody = Type.Object(
  {
    grant_type: Type.String({
      maxLength: 100,
      description: 'client_credentials (guest token), password (first-party clients only) or refresh_token',
    }),
    username: Field(254, 'password grant: username or email'),
    password: Field(1024, 'password grant: the password'),
    // Bounded well above any token issued here: a longer string is an unknown token (invalid_grant), as RFC 6749
    // 5.2 names it, not a malformed request.
    refresh_token: Field(TOKEN_FIELD_MAX, 'refresh_token grant: the refresh token'),
    scope: Field(200, 'ignored: the scope is user for user tokens and guest for guest tokens'),
    client_id: Field(100, 'client id, when not sent with HTTP Basic'),
    client_secret: Field(200, 'client secret, when not sent with HTTP Basic'),
  },
  { additionalProperties: true },
);

/** Body of POST /oauth/revoke (RFC 7009). */
export const RevokeBody = Type.Object(
  {
    // Unknown tokens, too long ones included, answer 200 (RFC 7009 2.2).
    token: Type.String({ maxLength: TOKEN_FIELD_MAX, description: 'the access or refresh token to revoke' }),
    token_type_hint: Field(50, 'access_token or refresh_token (optional; every kind is searched anyway)'),
    client_id: Field(100, 'client id, when not sent with HTTP Basic'),
    client_secret: Field(200, 'client secret, when not sent with HTTP Basic'),
  },
  { additionalProperties: true },
);

/** RFC 6749 5.1 success response. */
export const TokenResponse = Type.Object(
  {
    access_token: Type.String(),
    token_type: Type.Literal('Bearer'),
    expires_in: Type.Integer({ description: 'seconds until the access token expires' }),
    refresh_token: Type.Optional(
      Type.String({ description: 'only for user tokens (password and refresh grants)' }),
    ),
    scope: Type.String({ description: 'user or guest' }),
  },
  { additionalProperties: false },
);

/** RFC 6749 5.2 error response (used for every error of /oauth/*, rate limits included). */
export const OAuthErrorResponse = Type.Object(
  {
    error: Type.String({
      description:
        'invalid_request, invalid_client, invalid_grant, unauthorized_client, unsupported_grant_type, rate_limited or temporarily_unavailable',
    }),
    error_description: Type.String(),
  },
  { additionalProperties: false },
);

/** Empty success body of POST /oauth/revoke. */
export const RevokeResponse = Type.Object({}, { additionalProperties: false });

/** Parsed token request. */
export type TokenRequest = Static<typeof TokenBody>;
/** Parsed revocation request. */
export type RevokeRequest = Static<typeof RevokeBody>;
