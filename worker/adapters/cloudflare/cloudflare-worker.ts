/**
 * The Workers entry (`dist/cloudflare/worker.js`, built by `npm run build`): the stateless edge
 * worker as the default export's `fetch`, and the Durable Object classes its bindings name in
 * `wrangler.jsonc`:
 *
 * - `HostLink` (binding `HOST_LINK`): one per host, `idFromName(entity id)`, holds its link;
 * - `AgentSession` (binding `AGENT_SESSION`): one per legacy agent session;
 * - `AgentSlots` (binding `AGENT_SLOTS`): one per agent, `idFromName(agent name)`, holds its
 *   `max-sessions` across every isolate;
 * - `OAuthState` (binding `OAUTH_STATE`): one, the built-in OAuth server's state.
 *
 * The config is `SWITCHYARD_WORKER_CONFIG` (a secret), validated as on every runtime; the edge app
 * is built once per isolate and config text. Nothing runs at module load but two switches of how
 * timers and streams behave here: Workers forbid timers and I/O in the global scope.
 *
 * @module
 */
import { loadFromEnv } from './cloudflare-env.ts';
import { createEdgeApp } from './edge-front.ts';
import { drainUnreadBody } from './unread-body.ts';
import type { SwitchyardEnv } from './workers-runtime.ts';
import { holdBackgroundWork } from '../../background-work.ts';
import { useTimerPerEntry } from '../../../shared/delay-queue.ts';
import { takeOverOpenStreams } from '../../sessions/legacy-http-endpoint.ts';

// A workerd timer ends with the request that set it: no queue may share one across requests.
useTimerPerEntry();
// A session's object sees an agent's gone connection only at a failed write: its reconnect takes the stream over.
takeOverOpenStreams();

export { AgentSession } from './agent-session-object.ts';
export { AgentSlots } from './agent-slots-object.ts';
export { HostLink } from './host-link-object.ts';
export { OAuthState } from './oauth-state-object.ts';

let edge: { config: unknown; app: { fetch(request: Request): Response | Promise<Response> }; flush: (() => Promise<void>) | null } | undefined;

/** The slice of the invocation's context the edge uses. */
interface ExecutionContext {
  waitUntil(promise: Promise<unknown>): void;
}

export default {
  async fetch(request: Request, env: SwitchyardEnv, ctx: ExecutionContext): Promise<Response> {
    const loaded = loadFromEnv(env, 'edge');
    if (!loaded.ok) return loaded.response();
    if (edge === undefined || edge.config !== loaded.config) {
      const audit = loaded.audit();
      edge = { config: loaded.config, app: createEdgeApp(env, loaded.config, loaded.log, audit.audit), flush: audit.flush };
    }
    holdBackgroundWork(request, (work) => ctx.waitUntil(work));
    const response = await edge.app.fetch(request);
    // A refusal the edge answered itself keeps the agent's connection (`unread-body.ts`).
    await drainUnreadBody(request);
    return edge.flush === null ? response : flushedAfter(response, edge.flush, ctx);
  },
};

/**
 * The response, with the audit's spans flushed under `waitUntil` once it is done (a streamed body
 * at its end): the spans of a call are recorded by then, and the invocation, ending with its
 * response, would otherwise take the exporter's pending batch with it.
 */
function flushedAfter(response: Response, flush: () => Promise<void>, ctx: ExecutionContext): Response {
  if (response.body === null || response.status === 101) {
    ctx.waitUntil(flush());
    return response;
  }
  const done = new TransformStream<Uint8Array, Uint8Array>({ flush: () => ctx.waitUntil(flush()) });
  return new Response(response.body.pipeThrough(done), response);
}
