/**
 * Which IP addresses a tool may connect to by default. Anything not on the public internet (loopback,
 * RFC 1918, CGNAT, ULA, link-local including the 169.254.169.254 metadata service, unspecified,
 * multicast and reserved blocks) is refused unless the operator allowlists the prefix with
 * `allowPrivate: true`: a model tricked by a web page must not reach internal services that way.
 */
import { BlockList, isIP } from 'node:net';

interface Range {
  network: string;
  prefix: number;
  kind: string;
}

const IPV4: Range[] = [
  { network: '0.0.0.0', prefix: 8, kind: 'unspecified' },
  { network: '10.0.0.0', prefix: 8, kind: 'private' },
  { network: '100.64.0.0', prefix: 10, kind: 'carrier-grade NAT' },
  { network: '127.0.0.0', prefix: 8, kind: 'loopback' },
  { network: '169.254.0.0', prefix: 16, kind: 'link-local' },
  { network: '172.16.0.0', prefix: 12, kind: 'private' },
  { network: '192.0.0.0', prefix: 24, kind: 'reserved' },
  { network: '192.168.0.0', prefix: 16, kind: 'private' },
  { network: '198.18.0.0', prefix: 15, kind: 'reserved' },
  { network: '224.0.0.0', prefix: 4, kind: 'multicast' },
  { network: '240.0.0.0', prefix: 4, kind: 'reserved' },
];

const IPV6: Range[] = [
  { network: '::', prefix: 128, kind: 'unspecified' },
  { network: '::1', prefix: 128, kind: 'loopback' },
  { network: 'fc00::', prefix: 7, kind: 'unique local' },
  { network: 'fe80::', prefix: 10, kind: 'link-local' },
  { network: 'fec0::', prefix: 10, kind: 'site-local' },
  { network: 'ff00::', prefix: 8, kind: 'multicast' },
  // NAT64 and 6to4 embed IPv4 addresses, which could be private ones.
  { network: '64:ff9b::', prefix: 96, kind: 'NAT64' },
  { network: '2002::', prefix: 16, kind: '6to4' },
];

function compile(ranges: Range[], family: 'ipv4' | 'ipv6'): Array<{ list: BlockList; kind: string }> {
  return ranges.map(({ network, prefix, kind }) => {
    const list = new BlockList();
    list.addSubnet(network, prefix, family);
    return { list, kind };
  });
}

const V4 = compile(IPV4, 'ipv4');
const V6 = compile(IPV6, 'ipv6');

/** `::ffff:a.b.c.d` in either notation, as Node and the URL parser may write it. */
const MAPPED = /^::ffff:(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/i;

function mappedIpv4(address: string): string | undefined {
  const m = MAPPED.exec(address);
  if (!m) return undefined;
  if (m[1]) return m[1];
  const hi = Number.parseInt(m[2] ?? '0', 16);
  const lo = Number.parseInt(m[3] ?? '0', 16);
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.');
}

/**
 * The kind of non-public address `address` is ('loopback', 'private', …), or `null` when it is a public
 * address. Something that is not an IP address at all counts as non-public ('invalid').
 */
export function nonPublicKind(address: string): string | null {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const family = isIP(bare);
  if (family === 4) return V4.find((r) => r.list.check(bare, 'ipv4'))?.kind ?? null;
  if (family === 6) {
    const v4 = mappedIpv4(bare);
    if (v4 !== undefined) return nonPublicKind(v4);
    return V6.find((r) => r.list.check(bare, 'ipv6'))?.kind ?? null;
  }
  return 'invalid';
}
