/**
 * The Deno worker's last resort, as the sidecar's and the Node worker's (`cli/unexpected-errors.ts`):
 * an exception nothing caught (thrown in a WebSocket handler or a timer) or a rejection nobody
 * handled is logged, and the worker keeps serving. Deno's default ends the process, and with it
 * every agent's sessions and every host's link; the worker's state is per request, session and
 * link, so what one such error leaves behind is that one.
 *
 * @module
 */
import { unexpectedErrorReporter, type ErrorLog } from '../../../shared/unexpected-error-report.ts';

export function keepServingOnUnexpectedErrors(log: ErrorLog): void {
  const report = unexpectedErrorReporter(log);
  globalThis.addEventListener('error', (event) => {
    event.preventDefault();
    report('Uncaught exception', (event as ErrorEvent).error);
  });
  globalThis.addEventListener('unhandledrejection', (event) => {
    event.preventDefault();
    report('Unhandled promise rejection', (event as PromiseRejectionEvent).reason);
  });
}
