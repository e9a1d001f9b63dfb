/**
 * A raw `/servers/<name>/mcp` agent for tests of what ends a call in flight: a session opened
 * with `initialize`, and the fault fixture's `slow` call that reports progress until something
 * ends it, read as its SSE stream comes (no SDK retries or timeouts in between).
 *
 * @module
 */
import { eventsOf } from './sse-events.ts';

const VERSION = '2025-06-18';

export interface RawAgent {
  post(body: unknown, session?: string): Promise<Response>;
  /** Opens a session (`initialize`, then `notifications/initialized`); resolves with its id. */
  open(): Promise<string>;
  /**
   * Sends a `slow` call with id 7 (`tool`: its name there, `faults__slow` on `/mcp`); resolves once its first progress came back (the call is in
   * flight on the worker), with `rest`, which reads the stream to its end and returns every message on it.
   */
  longCall(session: string, tool?: string): Promise<{ rest(): Promise<Array<Record<string, any>>> }>;
}

export function rawAgent(url: string, token: string): RawAgent {
  const post = (body: unknown, session?: string) =>
    fetch(url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        accept: 'application/json, text/event-stream',
        'content-type': 'application/json',
        ...(session !== undefined ? { 'mcp-session-id': session, 'mcp-protocol-version': VERSION } : {}),
      },
      body: JSON.stringify(body),
    });
  return {
    post,
    async open() {
      const init = await post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
      if (init.status !== 200) throw new Error(`initialize answered ${init.status}: ${await init.text()}`);
      await init.text();
      const session = init.headers.get('mcp-session-id')!;
      await (await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, session)).text();
      return session;
    },
    async longCall(session, tool = 'slow') {
      const response = await post({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: tool, arguments: { ms: 3_600_000, steps: 36_000 }, _meta: { progressToken: 'p' } } }, session);
      if (response.status !== 200) throw new Error(`tools/call answered ${response.status}: ${await response.text()}`);
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
      let text = '';
      while (!eventsOf(text).some((e) => e.data.includes('notifications/progress'))) {
        const { done, value } = await reader.read();
        if (done) throw new Error(`The call's stream ended before any progress: ${text}`);
        text += value;
      }
      return {
        rest: async () => {
          for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += chunk.value;
          return eventsOf(text).filter((e) => e.data !== '').map((e) => JSON.parse(e.data) as Record<string, any>);
        },
      };
    },
  };
}
