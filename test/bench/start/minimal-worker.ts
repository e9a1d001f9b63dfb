/**
 * The floor of a worker's cold start (`start.ts`): a Hono app that answers the probe's POST with a
 * JSON-RPC result after reading its body, built with the worker's own esbuild settings. What it
 * costs is the runtime's and Hono's part of a first answer; what the worker costs beyond it is
 * Switchyard's own.
 *
 * @module
 */
import { Hono } from 'hono';

const app = new Hono();
app.post('/mcp', async (c) => {
  const request = (await c.req.json()) as { id?: unknown };
  return c.json({ jsonrpc: '2.0', id: request.id ?? null, result: {} });
});

export default { fetch: app.fetch };
