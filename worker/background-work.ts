/**
 * Work a request starts that must outlive its response: closing a modern request's channel (an
 * edge-direct server's DELETE, a cancel), and the grace of a call its agent abandoned, which
 * gives the agent's place back. Deno and Node run it as they run anything. Workers end a request's
 * I/O and timers with its response unless `ctx.waitUntil` holds them (review s22: the DELETE never
 * went out and the places never came back), so the Cloudflare edge names, per request, what holds
 * such work (`holdBackgroundWork`), and the code that starts it hands it over
 * (`backgroundWorkHolder`). Keyed by the request object, which the edge's Hono apps pass on as it
 * came: no runtime API here.
 *
 * @module
 */

/** Keeps the request's invocation alive until `work` settles. */
export type BackgroundWorkHolder = (work: Promise<unknown>) => void;

const holders = new WeakMap<Request, BackgroundWorkHolder>();

/** Says what holds work `request` starts past its response (the Workers adapter: `ctx.waitUntil`). */
export function holdBackgroundWork(request: Request, hold: BackgroundWorkHolder): void {
  holders.set(request, hold);
}

/** What holds `request`'s background work; none where the runtime runs it anyway. */
export function backgroundWorkHolder(request: Request): BackgroundWorkHolder | undefined {
  return holders.get(request);
}
