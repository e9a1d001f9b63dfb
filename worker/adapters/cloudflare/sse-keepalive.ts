/**
 * SSE keepalive for streams that cross Cloudflare's edge: an event stream that carries no byte
 * for a few minutes is closed by the edge's idle watchdog (seen by `cloudflare/agents`, whose MCP
 * streams dropped every ~5 minutes until they wrote keepalives). A legacy session's GET stream
 * is quiet for as long as its server is; so the `AgentSession` object writes an SSE comment
 * (`: keepalive`, which every SSE reader skips) after each `intervalMs` without a byte. Comments go
 * only between the chunks the app writes, and the SDK writes one whole event per chunk, so no
 * event is ever split. The timer lives in the object, which outlives the request, and stops with
 * the stream.
 *
 * @module
 */

/** Well under the edge's idle limit, and rare enough to cost nothing. */
export const SSE_KEEPALIVE_MS = 30_000;

const COMMENT = new TextEncoder().encode(': keepalive\n\n');

/** `response` with keepalive comments in its body when it is an event stream; any other answer as it is. */
export function withSseKeepalive(response: Response, intervalMs = SSE_KEEPALIVE_MS): Response {
  if (response.body === null || !(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) return response;
  const reader = response.body.getReader();
  let timer: ReturnType<typeof setInterval> | undefined;
  let lastWrite = Date.now();
  const stop = () => {
    if (timer !== undefined) clearInterval(timer);
    timer = undefined;
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      timer = setInterval(() => {
        if (Date.now() - lastWrite < intervalMs) return;
        lastWrite = Date.now();
        try {
          controller.enqueue(COMMENT);
        } catch {
          stop();
        }
      }, Math.max(1, Math.floor(intervalMs / 2)));
    },
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) {
        stop();
        controller.close();
        return;
      }
      lastWrite = Date.now();
      controller.enqueue(value);
    },
    async cancel(reason) {
      stop();
      await reader.cancel(reason);
    },
  });
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}
