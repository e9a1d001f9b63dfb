/**
 * The mask of the frames the sidecar sends. RFC 6455 masks every client frame with a random key
 * so that bytes chosen by a script cannot be read as HTTP by a transparent proxy between the two
 * ends (§10.3). Over TLS (`wss:`) no intermediary reads the frames, and on loopback there is no
 * intermediary: there the key is all zeros, which `ws` recognises and skips (masking a 1 MB
 * frame in JS cost the sidecar about 6.6 ms, issue 17; `bufferutil` is not a dependency). A
 * plain `ws:` link to any other host keeps `ws`'s random key.
 *
 * @module
 */

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** `ws`'s `generateMask` option for a link to `url`, or undefined for its default random key. */
export function linkMask(url: string): ((mask: Uint8Array) => void) | undefined {
  const { protocol, hostname } = new URL(url);
  const unread = protocol === 'wss:' || (protocol === 'ws:' && (LOOPBACK.has(hostname) || /^127\.\d+\.\d+\.\d+$/.test(hostname)));
  return unread ? zeroMask : undefined;
}

function zeroMask(mask: Uint8Array): void {
  mask.fill(0);
}
