/**
 * Which worker URLs a sidecar may dial. The host key proves who opens a link, but only TLS keeps
 * what follows (every agent's requests and the servers' answers) private and unaltered, so a
 * worker on another machine must be `https:` (or `wss:`). Plain `http:` stays allowed for this
 * machine's loopback, where nothing travels over a network: `npm start`, tests.
 *
 * @module
 */

/** True when the link to `url` would leave this machine unencrypted (`shared/loopback.ts`). */
export { isCleartextRemote } from '../../shared/loopback.ts';

/**
 * The path of one of the worker's own endpoints, when `url`'s is one: an agent URL pasted where the
 * worker's base URL goes (`…/mcp`), which would dial `…/mcp/link` and be refused 404 forever. A
 * base URL may still have a path of its own (a proxy that serves the worker under a prefix).
 */
export function endpointPathOf(url: string): { endpoint: string; base: string } | undefined {
  if (!URL.canParse(url)) return undefined;
  const { origin, pathname } = new URL(url);
  const path = pathname.replace(/\/+$/, '');
  const match = /\/(mcp|servers\/[^/]+\/mcp|link|healthz|oauth\/[^/]+|\.well-known\/[^/]+(\/.*)?)$/.exec(path);
  return match === null ? undefined : { endpoint: match[0], base: origin + path.slice(0, match.index) };
}

export const CLEARTEXT_REMOTE_MESSAGE =
  'must be https: (or wss:) for a worker on another machine, since the link would cross the network in clear text: put TLS in front of the worker, or use http: only for 127.0.0.1, localhost or [::1]';
