import dns from 'node:dns';
import net from 'node:net';

// Destinations a webhook may not reach unless WEBHOOK_ALLOW_PRIVATE=true: private, loopback,
// link-local, CGNAT, multicast, reserved and unspecified ranges (RFC 6890 special-purpose registries).
const blocked = new net.BlockList();
for (const [addr, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) blocked.addSubnet(addr, prefix, 'ipv4');
for (const [addr, prefix] of [
  ['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['64:ff9b::', 96], ['100::', 64], ['2001:db8::', 32],
] as const) blocked.addSubnet(addr, prefix, 'ipv6');

/** True when an IP literal is a destination webhooks must not reach. */
export function isBlockedAddress(ip: string): boolean {
  const family = net.isIP(ip);
  if (family === 4) return blocked.check(ip, 'ipv4');
  if (family === 6) {
    // IPv4-mapped and -compatible forms are checked as the IPv4 address they carry.
    const mapped = /^(?:0*:)*(?:ffff:)?(\d+\.\d+\.\d+\.\d+)$/i.exec(ip) ?? /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(ip);
    if (mapped) {
      const v4 = mapped.length === 3
        ? [parseInt(mapped[1]!, 16) >> 8, parseInt(mapped[1]!, 16) & 255, parseInt(mapped[2]!, 16) >> 8, parseInt(mapped[2]!, 16) & 255].join('.')
        : mapped[1]!;
      return blocked.check(v4, 'ipv4');
    }
    return blocked.check(ip, 'ipv6');
  }
  return true;
}

export class UnsafeDestination extends Error {
  constructor(host: string) {
    super(`destination ${host} resolves to a private, loopback or link-local address`);
    this.name = 'UnsafeDestination';
  }
}

/** Hostname of a URL without IPv6 brackets. */
export function urlHost(u: URL): string {
  return u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
}

/** A quick check at write time for literal IPs and localhost names; the real check happens per connection. */
export function obviouslyPrivate(url: string): boolean {
  const host = urlHost(new URL(url)).toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  return net.isIP(host) !== 0 && isBlockedAddress(host);
}

/**
 * A `lookup` for http.request that resolves the name and refuses if any address is blocked. The socket
 * connects to exactly the address checked here, so DNS rebinding between check and connect cannot bypass it.
 */
export const guardedLookup: net.LookupFunction = (hostname, options, callback) => {
  dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) { (callback as (e: Error | null, a: string, f: number) => void)(err, '', 0); return; }
    const list = addresses as dns.LookupAddress[];
    const bad = list.find((a) => isBlockedAddress(a.address));
    if (bad || list.length === 0) { (callback as (e: Error | null, a: string, f: number) => void)(new UnsafeDestination(hostname), '', 0); return; }
    if ((options as dns.LookupOptions).all) (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list);
    else (callback as (e: null, a: string, f: number) => void)(null, list[0]!.address, list[0]!.family);
  });
};
