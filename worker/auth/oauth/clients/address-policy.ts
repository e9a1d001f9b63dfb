/**
 * Which hosts the authorization server may fetch a Client ID Metadata Document from: the SSRF
 * half of the policy, as pure functions. A client_id URL must not make the worker reach this
 * machine, its LAN or cloud metadata services, so loopback, private, link-local, shared,
 * multicast and reserved addresses are refused, as are names that only mean something locally
 * (`localhost`, `*.local`, single-label names). A public name can still resolve to a private
 * address: runtimes that can resolve names pass their network, every address is checked too, and
 * the document is read from one of those addresses (`metadata-document.ts`).
 *
 * @module
 */

const BLOCKED_V4: Array<[number, number]> = [
  [0x00000000, 8], // "this" network
  [0x0a000000, 8], // private
  [0x64400000, 10], // carrier-grade NAT
  [0x7f000000, 8], // loopback
  [0xa9fe0000, 16], // link-local (cloud metadata at 169.254.169.254)
  [0xac100000, 12], // private
  [0xc0000000, 24], // IETF protocol assignments
  [0xc0000200, 24], // TEST-NET-1
  [0xc0a80000, 16], // private
  [0xc6120000, 15], // benchmarking
  [0xc6336400, 24], // TEST-NET-2
  [0xcb007100, 24], // TEST-NET-3
  [0xe0000000, 4], // multicast
  [0xf0000000, 4], // reserved, broadcast
];

function parseV4(text: string): number | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (m === null) return null;
  const parts = m.slice(1).map(Number);
  if (parts.some((p) => p > 255)) return null;
  return ((parts[0]! << 24) | (parts[1]! << 16) | (parts[2]! << 8) | parts[3]!) >>> 0;
}

function v4Public(value: number): boolean {
  return !BLOCKED_V4.some(([net, bits]) => (value >>> (32 - bits)) === (net >>> (32 - bits)));
}

/** The 8 groups of an IPv6 literal (no brackets, no zone), or null. */
function parseV6(text: string): number[] | null {
  let s = text.toLowerCase();
  const v4Tail = /(\d{1,3}(?:\.\d{1,3}){3})$/.exec(s);
  if (v4Tail !== null) {
    const v4 = parseV4(v4Tail[1]!);
    if (v4 === null) return null;
    s = `${s.slice(0, -v4Tail[1]!.length)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return null;
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  const head = groups(halves[0]!);
  const rest = halves.length === 2 ? groups(halves[1]!) : [];
  if ([...head, ...rest].some((g) => !/^[0-9a-f]{1,4}$/.test(g))) return null;
  const fill = halves.length === 2 ? 8 - head.length - rest.length : 0;
  if (fill < 0 || (halves.length === 2 && fill === 0) || (halves.length === 1 && head.length !== 8)) return null;
  return [...head, ...Array<string>(fill).fill('0'), ...rest].map((g) => parseInt(g, 16));
}

function v6Public(g: number[]): boolean {
  if (g.every((x) => x === 0)) return false; // unspecified
  if (g.slice(0, 7).every((x) => x === 0) && g[7] === 1) return false; // loopback
  if (g.slice(0, 5).every((x) => x === 0) && (g[5] === 0xffff || g[5] === 0)) return v4Public(((g[6]! << 16) | g[7]!) >>> 0); // v4-mapped / compatible
  if (g[0] === 0x64 && g[1] === 0xff9b) return v4Public(((g[6]! << 16) | g[7]!) >>> 0); // NAT64
  if (g[0] === 0x2002) return v4Public(((g[1]! << 16) | g[2]!) >>> 0); // 6to4: the IPv4 address it carries
  if (g[0] === 0x2001 && g[1] === 0) return false; // Teredo: a tunnel to an address it does not show
  if (g[0] === 0x0100 && g.slice(1, 4).every((x) => x === 0)) return false; // discard-only
  if ((g[0]! & 0xfe00) === 0xfc00) return false; // unique local
  if ((g[0]! & 0xffc0) === 0xfe80) return false; // link-local
  if ((g[0]! & 0xffc0) === 0xfec0) return false; // site-local (deprecated, still routed inside sites)
  if ((g[0]! & 0xff00) === 0xff00) return false; // multicast
  if (g[0] === 0x2001 && g[1] === 0x0db8) return false; // documentation
  return true;
}

/** True when an IP address (v4 dotted, or v6 with or without brackets) is a public unicast one. */
export function isPublicAddress(address: string): boolean {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const v4 = parseV4(bare);
  if (v4 !== null) return v4Public(v4);
  const v6 = parseV6(bare);
  return v6 !== null && v6Public(v6);
}

/** True when `hostname` (as `URL.hostname` gives it) is an IP literal. */
export function isIpLiteral(hostname: string): boolean {
  return parseV4(hostname) !== null || (hostname.startsWith('[') && parseV6(hostname.slice(1, -1)) !== null);
}

/** Why a host may not be fetched from, or null when it may (name checks only; addresses need a resolver). */
export function hostRefusal(hostname: string): string | null {
  const host = hostname.toLowerCase().replace(/\.$/, '');
  if (isIpLiteral(host)) return isPublicAddress(host) ? null : `"${hostname}" is a loopback, private or reserved address`;
  if (host === 'localhost' || host.endsWith('.localhost')) return `"${hostname}" is this machine (loopback)`;
  if (!host.includes('.')) return `"${hostname}" is not a public domain name`;
  if (/\.(local|internal|lan|home\.arpa|intranet|corp)$/.test(host)) return `"${hostname}" is a local network name`;
  return null;
}
