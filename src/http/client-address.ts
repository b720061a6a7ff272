import { BlockList, isIP } from 'node:net';

/**
 * The address of a request's client, for every per-address budget and record (docs/decisions.md
 * "Client address"): the socket's peer, or, when that peer is a trusted proxy (TRUSTED_PROXIES), the
 * right-most X-Forwarded-For entry that is not itself a trusted proxy. Entries to the left of it were
 * written by whoever sent the request to the first trusted hop, so they are never believed.
 */

/**
 * One text form per address, so one client is one budget key: IPv4 dotted (IPv4-mapped IPv6 included),
 * IPv6 compressed lower case (RFC 5952, as the WHATWG URL parser writes it). Accepts what proxies and
 * uWS write: brackets, a port after an IPv4 or bracketed IPv6 address, a zone, uWS's uncompressed IPv6.
 * Null when the text is not an address (`unknown`, an RFC 7239 obfuscated identifier, garbage).
 */
export function canonicalAddress(text: string): string | null {
  let s = text.trim();
  if (s.startsWith('[')) {
    const end = s.indexOf(']');
    if (end < 0 || (end + 1 < s.length && !/^:\d{1,5}$/.test(s.slice(end + 1)))) return null;
    s = s.slice(1, end);
  } else if (/^[\d.]+:\d{1,5}$/.test(s)) {
    s = s.slice(0, s.indexOf(':'));
  }
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  const family = isIP(s);
  if (family === 4) return s;
  if (family !== 6) return null;
  let v6: string;
  try { v6 = new URL(`http://[${s}]/`).hostname.slice(1, -1); } catch { return null; }
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(v6);
  if (!mapped) return v6;
  const hi = parseInt(mapped[1]!, 16), lo = parseInt(mapped[2]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/**
 * Parses TRUSTED_PROXIES (a comma list of addresses and CIDR ranges, IPv4 and IPv6) into canonical
 * `address/prefix` ranges, with one problem per entry that is not one.
 */
export function parseTrustedProxies(text: string): { ranges: string[]; problems: string[] } {
  const ranges: string[] = [];
  const problems: string[] = [];
  for (const raw of text.split(',')) {
    const entry = raw.trim();
    if (!entry) continue;
    const slash = entry.indexOf('/');
    const net = slash < 0 ? entry : entry.slice(0, slash);
    const bits = slash < 0 ? undefined : entry.slice(slash + 1);
    const family = isIP(net);
    const addr = family ? canonicalAddress(net) : null;
    if (!addr || (bits !== undefined && !/^\d{1,3}$/.test(bits))) { problems.push(`TRUSTED_PROXIES entries must be IP addresses or CIDR ranges, got "${entry}"`); continue; }
    const max = family === 4 ? 32 : 128;
    let prefix = bits === undefined ? max : Number(bits);
    if (prefix > max) { problems.push(`TRUSTED_PROXIES prefix must be at most ${max} for "${entry}"`); continue; }
    // An IPv4-mapped IPv6 range is the IPv4 range it maps (addresses are compared in their IPv4 form).
    if (family === 6 && isIP(addr) === 4) {
      if (prefix < 96) { problems.push(`TRUSTED_PROXIES range "${entry}" is wider than the IPv4-mapped block`); continue; }
      prefix -= 96;
    }
    ranges.push(`${addr}/${prefix}`);
  }
  return { ranges, problems };
}

/** The trusted proxies' ranges (canonical, from parseTrustedProxies), for membership tests. */
export class TrustedProxies {
  private readonly list = new BlockList();
  readonly empty: boolean;

  constructor(ranges: readonly string[]) {
    for (const r of ranges) {
      const [net, bits] = r.split('/');
      this.list.addSubnet(net!, Number(bits), isIP(net!) === 4 ? 'ipv4' : 'ipv6');
    }
    this.empty = ranges.length === 0;
  }

  /** Whether a canonical address is a trusted proxy. */
  has(address: string): boolean {
    const family = isIP(address);
    return family !== 0 && this.list.check(address, family === 4 ? 'ipv4' : 'ipv6');
  }
}

/**
 * The client address of a request whose socket peer is `socket` (canonical) and whose X-Forwarded-For
 * header (all its lines joined with commas, in order) is `forwarded`. Walks the header from the right
 * while each hop is trusted; an entry that is not an address ends the walk at the trusted hop that
 * wrote it (the client cannot be named, and the proxy's own address is the one that can be vouched for).
 */
export function clientAddress(socket: string, forwarded: string | undefined, trusted: TrustedProxies | undefined): string {
  if (trusted === undefined || trusted.empty || forwarded === undefined || !trusted.has(socket)) return socket;
  let address = socket;
  let end = forwarded.length;
  while (end > 0) {
    const start = forwarded.lastIndexOf(',', end - 1);
    const entry = forwarded.slice(start + 1, end);
    end = start < 0 ? 0 : start;
    if (entry.trim() === '') continue;
    const hop = canonicalAddress(entry);
    if (hop === null) return address;
    address = hop;
    if (!trusted.has(hop)) return hop;
  }
  // Every hop is a trusted proxy: the left-most one is where the request came from.
  return address;
}
