import { isIPv4, isIPv6 } from 'node:net';

function expandIPv6(ip: string): string[] | undefined {
  let text = ip.split('%')[0] as string;
  // An embedded IPv4 tail (::ffff:1.2.3.4, 64:ff9b::1.2.3.4) becomes two hex groups.
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (tail) {
    const [a, b, c, d] = (tail[1] as string).split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, tail.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, rest] = text.split('::') as [string, string | undefined];
  const left = head === '' ? [] : head.split(':');
  const right = rest === undefined || rest === '' ? [] : rest.split(':');
  const missing = 8 - left.length - right.length;
  if (rest === undefined ? missing !== 0 : missing < 0) return undefined;
  return [...left, ...Array(missing).fill('0'), ...right].map((g) => g.toLowerCase().padStart(4, '0'));
}

/**
 * The key a client address is counted under: an IPv4 address as is, an IPv6 address by its /64 prefix (one
 * subscriber usually holds a whole /64, so counting single addresses would let them rotate freely).
 */
export function addressKey(ip: string): string {
  if (isIPv4(ip)) return ip;
  if (!isIPv6(ip)) return ip;
  const groups = expandIPv6(ip);
  if (!groups) return ip;
  // IPv4-mapped addresses (::ffff:a.b.c.d) are IPv4 clients of a dual-stack socket.
  if (groups.slice(0, 5).every((g) => g === '0000') && groups[5] === 'ffff') {
    const n = (i: number) => Number.parseInt(groups[i] as string, 16);
    return `${n(6) >> 8}.${n(6) & 255}.${n(7) >> 8}.${n(7) & 255}`;
  }
  return `${groups.slice(0, 4).join(':')}::/64`;
}
