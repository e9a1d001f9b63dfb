/**
 * One cold start, run by `start.ts` in a fresh Deno process:
 *
 *   deno run --allow-read --allow-env --allow-net test/bench/start/start-probe.ts BUNDLE_URL REQUEST_JSON
 *
 * Imports the bundle (Deno compiles it, evaluates its modules and, for the worker, builds the
 * worker from the config its environment names), then answers one request with the bundle's
 * `fetch`, as the runtime would hand it the first request of a cold isolate. Prints one JSON line:
 * `{"importMs":…,"firstAnswerMs":…,"status":…}`, and exits: a worker's watched config file
 * would keep the process alive.
 *
 * @module
 */

interface DenoApi {
  args: string[];
  exit(code: number): never;
}
const deno = (globalThis as unknown as { Deno: DenoApi }).Deno;
const [bundleUrl, requestJson] = deno.args;
if (bundleUrl === undefined || requestJson === undefined) throw new Error(`Usage: start-probe.ts BUNDLE_URL REQUEST_JSON (got ${deno.args.join(' ')})`);
const described = JSON.parse(requestJson) as { url: string; headers: Record<string, string>; body: string };

const t0 = performance.now();
const bundle = (await import(bundleUrl)) as { default: { fetch(request: Request): Response | Promise<Response> } };
const t1 = performance.now();
const response = await bundle.default.fetch(new Request(described.url, { method: 'POST', headers: described.headers, body: described.body }));
await response.text();
const t2 = performance.now();
console.log(JSON.stringify({ importMs: t1 - t0, firstAnswerMs: t2 - t1, status: response.status }));
deno.exit(0);
