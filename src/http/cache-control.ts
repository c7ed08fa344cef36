/**
 * Whether a request's Cache-Control header asks for an answer computed afresh (`no-cache`, RFC 9111 5.2.1.4)
 * rather than one from the exact read caches.
 */
export function asksNoCache(header: string | undefined): boolean {
  return header !== undefined && /(?:^|,)\s*no-cache\s*(?:,|$)/i.test(header);
}
