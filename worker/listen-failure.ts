/**
 * What a worker that cannot listen says, the same under Deno and Node: the address it tried and
 * why, in words a user can act on, instead of the runtime's own error (Deno printed an uncaught
 * stack trace; Node, `listen EADDRINUSE: address already in use`).
 *
 * @module
 */

/** Why a listen failed, from the runtime's error name (Deno) or code (Node). */
export type ListenFailure = 'in-use' | 'not-local' | 'not-permitted' | 'other';

/** Deno's error class names and Node's errno codes, by failure. */
const FAILURES: Record<string, ListenFailure> = {
  AddrInUse: 'in-use',
  EADDRINUSE: 'in-use',
  AddrNotAvailable: 'not-local',
  EADDRNOTAVAIL: 'not-local',
  PermissionDenied: 'not-permitted',
  EACCES: 'not-permitted',
};

/** Classifies a listen error by its name (Deno) or `code` (Node); never by its message. */
export function listenFailureOf(error: unknown): ListenFailure {
  if (typeof error !== 'object' || error === null) return 'other';
  const code = (error as { code?: unknown }).code;
  const name = (error as { name?: unknown }).name;
  return (typeof code === 'string' ? FAILURES[code] : undefined) ?? (typeof name === 'string' ? FAILURES[name] : undefined) ?? 'other';
}

/** The one line a worker that could not listen on `host`:`port` prints. */
export function listenFailureMessage(host: string, port: number, error: unknown): string {
  const address = `${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}`;
  switch (listenFailureOf(error)) {
    case 'in-use':
      return `Cannot listen on ${address}: the port is already in use: stop what holds it, or choose another port (0 picks a free one)`;
    case 'not-local':
      return `Cannot listen on ${address}: no network interface of this machine has that address`;
    case 'not-permitted':
      return `Cannot listen on ${address}: not permitted (a port below 1024 needs privileges)`;
    default:
      return `Cannot listen on ${address}: ${error instanceof Error ? error.message : String(error)}`;
  }
}
