/**
 * The experiment behind `PassthroughSession#post`: how long the worker takes to get a POST body
 * under `Deno.serve`, the SDK's way (`readRequestBody`: `getReader`, `read` loop, `releaseLock`,
 * streaming `TextDecoder`) against one `Request.text()`. Only the body read is timed, inside the
 * handler; the two ways alternate in rounds so background load hits both alike, and the best
 * round of each is reported.
 *
 *   node_modules/deno/deno run -A test/bench/body-read.ts
 *
 * Deno only (it serves with `Deno.serve`); prints one JSON line.
 *
 * @module
 */
import { readRequestBody } from '@modelcontextprotocol/sdk/server/requestBody.js';

interface DenoServe {
  serve(options: { port: number; hostname: string; onListen?: () => void }, handler: (request: Request) => Promise<Response>): { addr: { port: number }; shutdown(): Promise<void> };
}

const deno = (globalThis as unknown as { Deno: DenoServe }).Deno;
const BODY = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { message: 'bench 123' } } });
const CALLS = 2_000;
const ROUNDS = 6;

let mode: 'sdk' | 'text' = 'sdk';
let spent = 0;
const server = deno.serve({ port: 0, hostname: '127.0.0.1', onListen() {} }, async (request) => {
  const start = performance.now();
  const text = mode === 'sdk' ? ((await readRequestBody(request)) as { text?: string }).text ?? '' : await request.text();
  JSON.parse(text);
  spent += performance.now() - start;
  return new Response('ok');
});
const url = `http://127.0.0.1:${server.addr.port}/`;

async function round(which: 'sdk' | 'text'): Promise<number> {
  mode = which;
  spent = 0;
  for (let i = 0; i < CALLS; i++) {
    const response = await fetch(url, { method: 'POST', body: BODY, headers: { 'content-type': 'application/json' } });
    await response.text();
  }
  return (spent * 1000) / CALLS;
}

const best = { sdk: Infinity, text: Infinity };
await round('sdk');
await round('text');
for (let r = 0; r < ROUNDS; r++) {
  for (const which of ['sdk', 'text'] as const) best[which] = Math.min(best[which], await round(which));
}
await server.shutdown();
console.log(JSON.stringify({ bench: 'body-read', calls: CALLS, rounds: ROUNDS, sdkReaderUs: Math.round(best.sdk * 10) / 10, requestTextUs: Math.round(best.text * 10) / 10 }));
