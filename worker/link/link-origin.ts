/**
 * The worker's own origin, as a host's link proof must name it. A proof binds the origin the
 * sidecar dialled; if the worker took that origin from whatever the request claimed, a rogue
 * worker could relay this worker's challenge to a sidecar that dialled *it* and send this worker
 * a `Host` naming itself. So the origin is one this worker knows to be its own:
 *
 * - `public-url` from the worker config when set: the URL sidecars dial (for a worker behind a
 *   proxy or tunnel that rewrites `Host`). Beside it, only with `link-on-loopback` (which
 *   `switchyard start --public-url` writes for its own sidecar, on the worker's machine), a
 *   loopback `Host` on the port this worker listens on, from a loopback peer (`peer-address.ts`).
 *   Off by default: a proxy on the worker's machine connects from loopback and may send every
 *   request with a loopback `Host`, which would let a proof signed for a loopback worker (one a
 *   host's sidecar or doctor dialled on its own machine) through to the public one;
 * - otherwise the request's `Host`, only when it names this worker: one of `allowed-hosts`, and,
 *   where the runtime tells its listening port, that port.
 *
 * A link whose `Host` fails this is refused before the upgrade, with the fix in the message.
 *
 * @module
 */
import { isHostAllowed } from '../auth/host-origin.ts';
import { canonicalOrigin, originOfUrl } from '../../shared/link/link-identity.ts';
import { isLoopbackAddress, isLoopbackHostname } from '../../shared/loopback.ts';

export interface LinkOriginOptions {
  /** The worker config's `public-url`. */
  publicUrl?: string | undefined;
  /** The worker config's `allowed-hosts`. */
  allowedHosts: readonly string[];
  /** The port this worker listens on, when the runtime knows it (undefined before it listens). */
  listenPort?: (() => number | undefined) | undefined;
  /** The worker config's `link-on-loopback`: beside `public-url`, the loopback origin from a loopback peer. */
  linkOnLoopback?: boolean | undefined;
}

/** `origin`: the one a proof is expected to name; `also`: one more it may name instead. */
export type OriginCheck = { ok: true; origin: string; also?: string } | { ok: false; message: string };

/** Builds the check once per app: the request's `Host` header (or none) and its peer address, if the runtime said → this worker's origin. */
export function createLinkOriginCheck(options: LinkOriginOptions): (host: string | undefined, peer?: string) => OriginCheck {
  if (options.publicUrl !== undefined) {
    const origin = originOfUrl(options.publicUrl);
    return (host, peer) => {
      const fromHere = options.linkOnLoopback === true && peer !== undefined && isLoopbackAddress(peer);
      const local = fromHere && host !== undefined && isLoopbackHostname(hostnameOf(host)) && portMatches(host, options.listenPort?.()) === true ? canonicalOrigin(host) : undefined;
      return local === undefined || local === origin ? { ok: true, origin } : { ok: true, origin, also: local };
    };
  }
  const fix = 'behind a proxy or tunnel, set "public-url" in the worker config to the URL sidecars dial';
  return (host) => {
    if (host === undefined || host === '') return { ok: false, message: `The link request has no Host header: ${fix}` };
    if (!isHostAllowed(host, options.allowedHosts)) {
      return { ok: false, message: `Host ${quote(host)} does not name this worker: add it to "allowed-hosts", or ${fix}` };
    }
    const listening = options.listenPort?.();
    if (portMatches(host, listening) === false) {
      return { ok: false, message: `Host ${quote(host)} is not this worker's address (it listens on port ${listening}): ${fix}` };
    }
    return { ok: true, origin: canonicalOrigin(host) };
  };
}

/**
 * Why a proof the host signed for `signedFor` does not link to this worker, whose origin is
 * `own`. A proof for a loopback worker that reaches one with another origin is, in practice, a
 * sidecar on the worker's own machine dialling it there while `public-url` names its public
 * address (a `wrangler dev` run with the deployed config): said as such, with its fixes, where
 * the general case speaks of a relay or a proxy rewriting `Host`.
 */
export function wrongOriginMessage(entityId: string, what: 'link request' | 'challenge', signedFor: string, own: string, options: Omit<LinkOriginOptions, 'allowedHosts'> = {}): string {
  const head = `Host "${entityId}" signed this ${what} for worker "${signedFor}", but this worker is "${own}"`;
  if (isLoopbackOrigin(signedFor) && !isLoopbackOrigin(own)) {
    if (options.linkOnLoopback === true) {
      // It is on: the sidecar dialled another loopback address than the worker's own (a local proxy's port, say).
      const port = options.listenPort?.();
      const there = port === undefined ? 'the loopback address this worker listens on' : `http://127.0.0.1:${port}, where this worker listens`;
      return `${head} (its "public-url"): its sidecar dialled another address on this machine than the worker's own, and "link-on-loopback" takes only that one: point the sidecar's "worker" at ${there}, or at the public URL`;
    }
    return `${head} (its "public-url"): its sidecar dialled it on this machine. To link on loopback beside the public URL, set "link-on-loopback": true in the worker config (Deno and Node); under wrangler dev, set "public-url" to http://${signedFor} in the config it runs with, or leave it out`;
  }
  if (options.publicUrl !== undefined) {
    return `${head} (its "public-url"): point the sidecar's "worker" at that URL; a link relayed through another worker is refused`;
  }
  return `${head}: a link relayed through another worker is refused; if a proxy rewrites Host, set "public-url" in the worker config to this worker's public URL`;
}

/** Whether an origin as proofs name it (`canonicalOrigin`: host and port, no scheme) is a loopback one. */
function isLoopbackOrigin(origin: string): boolean {
  return isLoopbackHostname(hostnameOf(origin));
}

/** Whether `host`'s port (80 or 443 when it names none) is `listening`; undefined when the port this worker listens on is not known. */
function portMatches(host: string, listening: number | undefined): boolean | undefined {
  if (listening === undefined) return undefined;
  const port = /:(\d+)$/.exec(host.trim())?.[1];
  return port === undefined ? listening === 80 || listening === 443 : Number(port) === listening;
}

/** `host` without its port (`[::1]:8787` → `[::1]`), as `URL.hostname` spells it. */
function hostnameOf(host: string): string {
  return host.trim().replace(/:\d+$/, '');
}

/** A header value quoted for a message or log: printable ASCII, at most 64 characters. */
export function quote(value: string): string {
  const clean = value.replace(/[^\x20-\x7e]/g, '?');
  return JSON.stringify(clean.length > 64 ? `${clean.slice(0, 64)}…` : clean);
}
