import { isIP } from 'node:net';

/**
 * CONTRACT 2: 127.0.0.0/8, ::1 and localhost (any case, IPv6 with or without brackets). Anything
 * else would expose the bridge, or the UI proxy and its token, off the machine. IPv4 addresses
 * must be in plain dotted-quad form: `127.0.0.300`, `127.1` and `0127.0.0.1` are refused.
 */
/** An IPv6 literal as a URL or Host header writes it (`[::1]`), without its brackets. */
export function unbracketed(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

export function isLoopbackHost(host: string): boolean {
  const h = unbracketed(host);
  if (h.toLowerCase() === 'localhost') return true;
  const version = isIP(h);
  if (version === 4) return h.split('.')[0] === '127';
  return version === 6 && (h === '::1' || h === '0:0:0:0:0:0:0:1');
}
