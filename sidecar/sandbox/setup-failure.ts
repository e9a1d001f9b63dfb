/**
 * Tells a sandbox tool's own setup failure from the server's exit, from the stderr it wrote.
 * bubblewrap and sandbox-exec prefix their errors with their name; messages about namespaces or
 * permissions mean the backend cannot work on this machine. The tool's text stays in the local
 * log: it names paths from the policy, which must not cross the link.
 *
 * @module
 */
import { WireError } from '../../shared/errors.ts';
import type { ProcessExit } from '../process/process-handle.ts';

const UNAVAILABLE = /namespace|permission|not permitted|uid map|capabilit|sandbox_apply/i;

/**
 * @param backend The backend's name, for the message and detail.
 * @param prefix What the tool starts its own error lines with (`bwrap: `).
 * @param stderr What the launch wrote to stderr.
 * @param exit How it ended.
 * @returns `containment-unavailable` or `launch-failed`, or `undefined` when the tool did not explain the exit.
 */
export function sandboxToolFailure(backend: string, prefix: string, stderr: string, exit: ProcessExit): WireError | undefined {
  const firstLine = stderr.split('\n', 1)[0] ?? '';
  if (!firstLine.startsWith(prefix)) return undefined;
  const detail = { backend, exitCode: exit.code, signal: exit.signal };
  if (UNAVAILABLE.test(firstLine)) {
    return new WireError('containment-unavailable', `Cannot start contained process: ${backend} cannot create a sandbox on this host, see the sidecar log`, { detail });
  }
  return new WireError('launch-failed', `Cannot start contained process: ${backend} failed during sandbox setup, see the sidecar log`, { detail });
}
