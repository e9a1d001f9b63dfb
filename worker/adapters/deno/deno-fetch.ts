/**
 * The worker's `fetch` as Deno's HTTP server calls it: with the connection's info, whose
 * `remoteAddr` is noted as the request's peer (`link/peer-address.ts`) before the worker answers.
 *
 * @module
 */
import { notePeer } from '../../link/peer-address.ts';

/** What Deno passes beside each request (`Deno.ServeHandlerInfo`), as far as the worker reads it. */
interface DenoServeInfo {
  remoteAddr?: { hostname?: string };
}

export function denoFetch(worker: { fetch(request: Request, ...rest: unknown[]): Response | Promise<Response> }): (request: Request, info?: DenoServeInfo) => Response | Promise<Response> {
  return (request, info) => {
    notePeer(request, info?.remoteAddr?.hostname);
    return worker.fetch(request, info);
  };
}
