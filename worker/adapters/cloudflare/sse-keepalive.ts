/**
 * SSE keepalive for streams that cross Cloudflare's edge: an event stream that carries no byte
 * for a few minutes is closed by the edge's idle watchdog (seen by `cloudflare/agents`, whose MCP
 * streams dropped every ~5 minutes until they wrote keepalives). A legacy session's GET stream
 * is quiet for as long as its server is; so the `AgentSession` object writes an SSE comment
 * (`: keepalive`, which every SSE reader skips) after each `intervalMs` without a byte. Comments go
 * only between events: after a chunk that ends one (`\n\n`). A large event reaches this stream in
 * pieces (`answer-stream.ts` hands the runtime 64 KiB at a time), and a comment after a piece that
 * ends inside it would land in the event's `data:` line, where the agent's parser would read cut
 * JSON and lose the answer. The timer lives in the object, which outlives the request, and stops
 * with the stream.
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
  /** Whether what was written so far ends an event: only then may a comment go. */
  let betweenEvents = true;
  const stop = () => {
    if (timer !== undefined) clearInterval(timer);
    timer = undefined;
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      timer = setInterval(() => {
        if (!betweenEvents || Date.now() - lastWrite < intervalMs) return;
        lastWrite = Date.now();
        try {
          controller.enqueue(COMMENT);
        } catch {
          stop();
        }
      }, Math.max(1, Math.floor(intervalMs / 2)));
    },
    async pull(controller) {
      let read: ReadableStreamReadResult<Uint8Array>;
      try {
        read = await reader.read();
      } catch (error) {
        // The stream under it failed (an answer stream cut on backpressure): no timer outlives it.
        stop();
        throw error;
      }
      const { done, value } = read;
      if (done) {
        stop();
        controller.close();
        return;
      }
      lastWrite = Date.now();
      if (value.byteLength > 0) betweenEvents = value.byteLength >= 2 && value[value.byteLength - 1] === 10 && value[value.byteLength - 2] === 10;
      controller.enqueue(value);
    },
    async cancel(reason) {
      stop();
      await reader.cancel(reason);
    },
  });
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}
