import { hash, randomBytes } from 'node:crypto';

/** A new opaque token: 256 random bits, base64url. */
export function generateToken(): string {
  return randomBytes(32).toString('base64url');
}

/** The only form in which a token is stored (SHA-256, hex). */
export function hashToken(token: string): string {
  // The one-shot hash: computed on every authenticated request, it skips creating a Hash object.
  return hash('sha256', token, 'hex');
}
