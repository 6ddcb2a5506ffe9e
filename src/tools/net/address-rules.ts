/**
 * Which IP addresses a tool may connect to by default. Anything not on the public internet (loopback,
 * RFC 1918, CGNAT, ULA, link-local including the 169.254.169.254 metadata service, unspecified,
 * multicast and reserved blocks) is refused unless the operator allowlists the prefix with
 * `allowPrivate: true`: a model tricked by a web page must not reach internal services that way.
 *
 * Addresses are classified by their bytes, never by their text, so every spelling of one address
 * (`::ffff:127.0.0.1`, `0:0:0:0:0:ffff:7f00:1`, `[::FFFF:7F00:1]`) gets the same answer, and IPv6 forms
 * that embed an IPv4 address (mapped, compatible, NAT64, 6to4) are judged by the IPv4 address inside.
 */
import { isIP } from 'node:net';

interface Range {
  bytes: number[];
  bits: number;
  kind: string;
}

const IPV4: Array<[string, number, string]> = [
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'carrier-grade NAT'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'reserved'],
  ['224.0.0.0', 4, 'multicast'],
  // Includes the broadcast address 255.255.255.255.
  ['240.0.0.0', 4, 'reserved'],
];

/** IPv6 blocks refused whatever follows; the forms embedding IPv4 are handled in `ipv6Kind`. */
const IPV6: Array<[string, number, string]> = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['fc00::', 7, 'unique local'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'site-local'],
  ['ff00::', 8, 'multicast'],
  ['100::', 64, 'discard-only'],
  ['2001:db8::', 32, 'documentation'],
  // Teredo hides its client's IPv4 address (inverted) in the last bytes: refused rather than decoded.
  ['2001::', 32, 'Teredo'],
  // Local-use NAT64 may place its IPv4 address at any of several offsets, so it is refused whole.
  ['64:ff9b:1::', 48, 'NAT64'],
];

function ipv4Bytes(text: string): number[] {
  return text.split('.').map(Number);
}

/** The 16 bytes of an IPv6 address already validated by `isIP` (zone index ignored). */
function ipv6Bytes(text: string): number[] {
  let s = (text.split('%')[0] ?? '').toLowerCase();
  if (s.includes('.')) {
    const at = s.lastIndexOf(':') + 1;
    const [a = 0, b = 0, c = 0, d = 0] = ipv4Bytes(s.slice(at));
    s = `${s.slice(0, at)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = s.split('::');
  const groups = (part: string) => (part === '' ? [] : part.split(':').map((g) => Number.parseInt(g, 16)));
  const before = groups(head);
  const after = tail === undefined ? [] : groups(tail);
  const all = [...before, ...Array<number>(8 - before.length - after.length).fill(0), ...after];
  return all.flatMap((g) => [g >> 8, g & 255]);
}

function compile(ranges: Array<[string, number, string]>, parse: (t: string) => number[]): Range[] {
  return ranges.map(([network, bits, kind]) => ({ bytes: parse(network), bits, kind }));
}

const V4 = compile(IPV4, ipv4Bytes);
const V6 = compile(IPV6, ipv6Bytes);

function inRange(bytes: readonly number[], range: Range): boolean {
  for (let bit = 0; bit < range.bits; bit += 8) {
    const take = Math.min(8, range.bits - bit);
    const mask = (0xff << (8 - take)) & 0xff;
    const i = bit / 8;
    if (((bytes[i] ?? 0) & mask) !== ((range.bytes[i] ?? 0) & mask)) return false;
  }
  return true;
}

const kindIn = (bytes: readonly number[], ranges: readonly Range[]) =>
  ranges.find((r) => inRange(bytes, r))?.kind ?? null;

const zeros = (bytes: readonly number[], from: number, to: number) =>
  bytes.slice(from, to).every((b) => b === 0);

function ipv6Kind(b: readonly number[]): string | null {
  const listed = kindIn(b, V6);
  if (listed !== null) return listed;
  const last4 = b.slice(12);
  // ::ffff:a.b.c.d is the IPv4 address itself, public or not.
  if (zeros(b, 0, 10) && b[10] === 0xff && b[11] === 0xff) return kindIn(last4, V4);
  // The other embedding forms are refused even for a public IPv4 address: nothing here needs them.
  if (zeros(b, 0, 12)) return kindIn(last4, V4) ?? 'IPv4-compatible';
  if (zeros(b, 0, 8) && b[8] === 0xff && b[9] === 0xff && zeros(b, 10, 12)) {
    return kindIn(last4, V4) ?? 'IPv4-translated';
  }
  if (inRange(b, { bytes: ipv6Bytes('64:ff9b::'), bits: 96, kind: '' })) return kindIn(last4, V4) ?? 'NAT64';
  if (b[0] === 0x20 && b[1] === 0x02) return kindIn(b.slice(2, 6), V4) ?? '6to4';
  return null;
}

/**
 * The kind of non-public address `address` is ('loopback', 'private', …), or `null` when it is a public
 * address. Something that is not an IP address at all counts as non-public ('invalid').
 */
export function nonPublicKind(address: string): string | null {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const family = isIP(bare);
  if (family === 4) return kindIn(ipv4Bytes(bare), V4);
  if (family === 6) return ipv6Kind(ipv6Bytes(bare));
  return 'invalid';
}
