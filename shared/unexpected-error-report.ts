/**
 * How a process that keeps serving after an exception nothing caught reports it: logged with its
 * stack at its 1st, 10th, 100th, … occurrence of each kind, so a loop cannot flood the log, and
 * the hole gets fixed. Web-standard: the sidecar and the Node worker (`process` events) and the
 * Deno worker (`globalThis` events) each install it their own way.
 *
 * @module
 */

export interface ErrorLog {
  error(msg: string, fields: Record<string, unknown>): void;
}

/** A reporter for `what` ("Uncaught exception", "Unhandled promise rejection") and its error. */
export function unexpectedErrorReporter(log: ErrorLog): (what: string, error: unknown) => void {
  const counts = new Map<string, number>();
  return (what, error) => {
    const count = (counts.get(what) ?? 0) + 1;
    counts.set(what, count);
    if (!/^10*$/.test(String(count))) return;
    const fields = error instanceof Error ? { error: error.name, message: error.message, stack: error.stack ?? null } : { error: String(error) };
    log.error(`${what}: logged, and this process keeps serving every other session`, { ...fields, count });
  };
}
