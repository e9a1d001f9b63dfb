/**
 * The network peer of a request, as the runtime saw it. A `Host` header is the dialler's to
 * write, so it cannot tell a dial from this machine from one that only says so; the peer address
 * can. Web requests carry none, so each runtime's adapter notes it (`notePeer`) as the request
 * comes in, and the link route asks (`peerOf`). A request no adapter noted has none: tests'
 * `app.request`, and Workers, where no peer is on this machine.
 *
 * @module
 */

const peers = new WeakMap<Request, string>();

/** Notes the address `request` came from (an IP address, as the runtime spells it). */
export function notePeer(request: Request, address: string | undefined): void {
  if (address !== undefined && address !== '') peers.set(request, address);
}

/** The address `request` came from, if its runtime said. */
export function peerOf(request: Request): string | undefined {
  return peers.get(request);
}
