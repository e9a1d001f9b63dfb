/**
 * This machine's loopback names, as `URL.hostname` spells them. A request or a link that names one
 * came from this machine (or through a proxy on it): the sidecar dials plain http only to these,
 * and a worker with a `public-url` still takes a link from a sidecar beside it on one.
 *
 * @module
 */

/** `localhost`, `127.0.0.0/8` and `[::1]`, as `URL.hostname` spells them. */
export function isLoopbackHostname(hostname: string): boolean {
  const name = hostname.toLowerCase();
  return name === 'localhost' || name === '[::1]' || /^127(\.\d{1,3}){3}$/.test(name);
}

/**
 * A peer IP address on this machine: `127.0.0.0/8`, `::1`, or an IPv4-mapped loopback
 * (`::ffff:127.0.0.1`, as Node reports an IPv4 peer on a dual-stack socket).
 */
export function isLoopbackAddress(address: string): boolean {
  const bare = address.toLowerCase().replace(/^\[|\]$/g, '');
  return bare === '::1' || /^(::ffff:)?127(\.\d{1,3}){3}$/.test(bare);
}

/**
 * True when `url` is plain `http:` (or `ws:`) to a host other than loopback: what travels to it
 * crosses a network unencrypted. False for anything that is not a URL (its own check says so).
 */
export function isCleartextRemote(url: string): boolean {
  if (!URL.canParse(url)) return false;
  const parsed = new URL(url);
  return (parsed.protocol === 'http:' || parsed.protocol === 'ws:') && !isLoopbackHostname(parsed.hostname);
}
