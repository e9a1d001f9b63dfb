/**
 * A request the host sends a server on its own behalf, not an agent's: a listen's
 * `resources/subscribe`, its `resources/unsubscribe`, the tool list behind the `Mcp-Param` check.
 * No agent waits on it to give it up, so it is given up here: after `HOST_CALL_TIMEOUT_MS` it is
 * cancelled upstream (taken out of flight, so it pins no instance) and counts as no answer.
 *
 * @module
 */
import type { CallOutcome, InstanceRequest } from './in-flight-calls.ts';
import type { ServerInstance } from './server-instance.ts';

/** How long the host waits for a server to answer its own request. */
export const HOST_CALL_TIMEOUT_MS = 10_000;

const quiet = { notify: () => {}, logLevel: null };

/** The outcome, or null when the server failed, ended or did not answer in time. */
export async function hostCall(instance: ServerInstance, request: InstanceRequest, timeoutMs = HOST_CALL_TIMEOUT_MS): Promise<CallOutcome | null> {
  const call = instance.call(request, quiet);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), timeoutMs)));
  try {
    const outcome = await Promise.race([call.outcome.catch(() => null), late]);
    if (outcome !== 'late') return outcome;
    call.cancel(`The host gave up waiting for ${request.method} after ${timeoutMs / 1000} s`);
    return null;
  } finally {
    clearTimeout(timer);
  }
}
