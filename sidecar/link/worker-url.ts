/**
 * Which worker URLs a sidecar may dial. The host key proves who opens a link, but only TLS keeps
 * what follows (every agent's requests and the servers' answers) private and unaltered, so a
 * worker on another machine must be `https:` (or `wss:`). Plain `http:` stays allowed for this
 * machine's loopback, where nothing travels over a network: `npm start`, tests.
 *
 * @module
 */
import { isLoopbackHostname } from '../../shared/loopback.ts';

/** True when the link to `url` would leave this machine unencrypted. */
export function isCleartextRemote(url: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false; // not a URL at all: the URL check reports it
  }
  return (parsed.protocol === 'http:' || parsed.protocol === 'ws:') && !isLoopbackHostname(parsed.hostname);
}

export const CLEARTEXT_REMOTE_MESSAGE =
  'must be https: (or wss:) for a worker on another machine, since the link would cross the network in clear text: put TLS in front of the worker, or use http: only for 127.0.0.1, localhost or [::1]';
