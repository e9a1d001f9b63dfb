/**
 * The worker's own origin, as a host's link proof must name it. A proof binds the origin the
 * sidecar dialled; if the worker took that origin from whatever the request claimed, a rogue
 * worker could relay this worker's challenge to a sidecar that dialled *it* and send this worker
 * a `Host` naming itself. So the origin is one this worker knows to be its own:
 *
 * - `public-url` from the worker config when set: the URL sidecars dial (for a worker behind a
 *   proxy or tunnel that rewrites `Host`); the request's `Host` is then ignored;
 * - otherwise the request's `Host`, only when it names this worker: one of `allowed-hosts`, and,
 *   where the runtime tells its listening port, that port.
 *
 * A link whose `Host` fails this is refused before the upgrade, with the fix in the message.
 *
 * @module
 */
import { isHostAllowed } from '../auth/host-origin.ts';
import { canonicalOrigin, originOfUrl } from '../../shared/link/link-identity.ts';

export interface LinkOriginOptions {
  /** The worker config's `public-url`. */
  publicUrl?: string | undefined;
  /** The worker config's `allowed-hosts`. */
  allowedHosts: readonly string[];
  /** The port this worker listens on, when the runtime knows it (undefined before it listens). */
  listenPort?: (() => number | undefined) | undefined;
}

export type OriginCheck = { ok: true; origin: string } | { ok: false; message: string };

/** Builds the check once per app: the request's `Host` header (or none) → this worker's origin. */
export function createLinkOriginCheck(options: LinkOriginOptions): (host: string | undefined) => OriginCheck {
  if (options.publicUrl !== undefined) {
    const origin = originOfUrl(options.publicUrl);
    return () => ({ ok: true, origin });
  }
  const fix = 'behind a proxy or tunnel, set "public-url" in the worker config to the URL sidecars dial';
  return (host) => {
    if (host === undefined || host === '') return { ok: false, message: `The link request has no Host header: ${fix}` };
    if (!isHostAllowed(host, options.allowedHosts)) {
      return { ok: false, message: `Host ${quote(host)} does not name this worker: add it to "allowed-hosts", or ${fix}` };
    }
    const listening = options.listenPort?.();
    const port = /:(\d+)$/.exec(host.trim())?.[1];
    const portMatches = port === undefined ? listening === 80 || listening === 443 : Number(port) === listening;
    if (listening !== undefined && !portMatches) {
      return { ok: false, message: `Host ${quote(host)} is not this worker's address (it listens on port ${listening}): ${fix}` };
    }
    return { ok: true, origin: canonicalOrigin(host) };
  };
}

/** A header value quoted for a message or log: printable ASCII, at most 64 characters. */
export function quote(value: string): string {
  const clean = value.replace(/[^\x20-\x7e]/g, '?');
  return JSON.stringify(clean.length > 64 ? `${clean.slice(0, 64)}…` : clean);
}
