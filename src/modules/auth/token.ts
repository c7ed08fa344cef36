import { createHash, randomBytes } from 'node:crypto';

/** A new opaque token: 256 random bits, base64url. */
export function generateToken(): string {
  return randomBytes(32).toString('base64url');
}

/** The only form in which a token is stored. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}
