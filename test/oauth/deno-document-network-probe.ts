/**
 * Run by `deno-document-network.test.ts` under the real Deno binary, with DENO_CERT naming the
 * test's CA: Deno's connector for Client ID Metadata Documents (`denoDocumentNetwork`) against
 * the test's local servers. Each case prints one JSON line with what happened.
 *
 *   deno run --allow-net --allow-env test/oauth/deno-document-network-probe.ts HTTPS_PORT REFUSED_PORT SILENT_PORT NAME [through-proxy]
 *
 * With `through-proxy` (and HTTPS_PROXY set), only the document case runs.
 *
 * @module
 */
import { ConnectError, fetchOverConnection } from '../../worker/auth/oauth/clients/connection-fetch.ts';
import { denoDocumentNetwork, type DenoNetApi } from '../../worker/adapters/deno/deno-document-network.ts';

const deno = (globalThis as unknown as { Deno: DenoNetApi & { args: string[]; exit(code: number): never } }).Deno;
const [https, refused, silent] = deno.args.slice(0, 3).map(Number) as [number, number, number];
const name = deno.args[3]!;
const { connectTls } = denoDocumentNetwork(deno);

/** What an attempt came to: a ConnectError's stage and words, or another error's name. */
async function outcome(attempt: () => Promise<unknown>): Promise<Record<string, unknown>> {
  const started = performance.now();
  try {
    return { ok: await attempt(), ms: Math.round(performance.now() - started) };
  } catch (error) {
    const ms = Math.round(performance.now() - started);
    return error instanceof ConnectError ? { stage: error.stage, detail: error.message, ms } : { error: (error as Error).name, ms };
  }
}

const report = (label: string, value: Record<string, unknown>) => console.log(JSON.stringify({ label, ...value }));

report('document', await outcome(async () => {
  const signal = AbortSignal.timeout(5_000);
  const url = new URL(`https://${name}:${https}/client.json`);
  const response = await fetchOverConnection(await connectTls({ address: '127.0.0.1', port: https, serverName: name, signal }), url, { signal });
  return `${response.status} ${await response.text()}`;
}));
if (deno.args[4] === 'through-proxy') deno.exit(0);
report('other name', await outcome(() => connectTls({ address: '127.0.0.1', port: https, serverName: 'other.example.com', signal: AbortSignal.timeout(5_000) })));
report('refused', await outcome(() => connectTls({ address: '127.0.0.1', port: refused, serverName: name, signal: AbortSignal.timeout(5_000) })));
report('silent', await outcome(() => connectTls({ address: '127.0.0.1', port: silent, serverName: name, signal: AbortSignal.timeout(300) })));
// Header bytes 0x80-0x9f as ISO-8859-1: Deno's TextDecoder('latin1') is windows-1252 (0x80 is €).
report('header bytes', await outcome(async () => {
  const bytes = new Uint8Array([...new TextEncoder().encode('HTTP/1.1 204 X\r\nX-Byte: '), 0x80, 0x9f, 0xe9, 13, 10, 13, 10]);
  const connection = { readable: new ReadableStream<Uint8Array>({ start: (c) => c.enqueue(bytes) }), writable: new WritableStream<Uint8Array>(), close: () => {} };
  const response = await fetchOverConnection(connection, new URL(`https://${name}/`), { signal: AbortSignal.timeout(5_000) });
  return [...response.headers.get('x-byte')!].map((c) => c.charCodeAt(0));
}));
// An attempt's own deadline firing after the connection was made must leave it usable.
report('deadline after connect', await outcome(async () => {
  const attempt = AbortSignal.timeout(200);
  const connection = await connectTls({ address: '127.0.0.1', port: https, serverName: name, signal: attempt });
  await new Promise((resolve) => attempt.addEventListener('abort', resolve, { once: true }));
  const signal = AbortSignal.timeout(5_000);
  const response = await fetchOverConnection(connection, new URL(`https://${name}:${https}/client.json`), { signal });
  return `${response.status} ${await response.text()}`;
}));
