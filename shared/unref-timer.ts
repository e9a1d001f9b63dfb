/**
 * Lets the process exit while only a housekeeping timer is pending (a keepalive, an idle sweep):
 * Node's timers are objects with `unref()`, Deno's are numbers given to `Deno.unrefTimer`, and
 * other runtimes (Workers) have neither and need nothing.
 *
 * @module
 */
export function unrefTimer(timer: unknown): void {
  if (typeof timer === 'object' && timer !== null && typeof (timer as { unref?: unknown }).unref === 'function') {
    (timer as { unref(): void }).unref();
    return;
  }
  const deno = (globalThis as { Deno?: { unrefTimer?: (id: number) => void } }).Deno;
  if (typeof timer === 'number' && deno?.unrefTimer !== undefined) deno.unrefTimer(timer);
}
