/**
 * The agent side of every measurement: the real MCP SDK `Client`, over Streamable HTTP for every
 * proxy (Switchyard, supergateway, mcp-proxy) and over stdio for the direct baseline, so the
 * numbers compare transports and proxies, never different client code.
 *
 * @module
 */
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { EVERYTHING } from './processes.ts';

export interface Agent {
  client: Client;
  /** Pid of the server process when the client spawned it (stdio), else undefined. */
  serverPid?: number;
  close(): Promise<void>;
}

/** An SDK client over Streamable HTTP, with a bearer token when given. */
export async function connectHttp(url: string, token?: string): Promise<Agent> {
  const transport = new StreamableHTTPClientTransport(new URL(url), token === undefined ? {} : { requestInit: { headers: { authorization: `Bearer ${token}` } } });
  const client = new Client({ name: 'switchyard-bench', version: '1.0.0' });
  await client.connect(transport);
  return {
    client,
    async close() {
      // DELETE ends the session (and with it the server process) before the client goes.
      await transport.terminateSession().catch(() => {});
      await client.close().catch(() => {});
    },
  };
}

/** An SDK client that spawns server-everything over stdio: the baseline with no proxy at all. */
export async function connectStdio(): Promise<Agent> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [EVERYTHING, 'stdio'], stderr: 'ignore' });
  const client = new Client({ name: 'switchyard-bench', version: '1.0.0' });
  await client.connect(transport);
  return { client, serverPid: transport.pid ?? undefined, close: () => client.close().catch(() => {}) };
}

/** One echo call; throws unless the answer is the expected text. */
export async function echo(client: Client, tool: string, message: string): Promise<void> {
  const result = await client.callTool({ name: tool, arguments: { message } });
  const first = (result.content as Array<{ type: string; text?: string }> | undefined)?.[0];
  if (result.isError === true || first?.text !== `Echo: ${message}`) throw new Error(`Unexpected echo answer: ${JSON.stringify(result).slice(0, 300)}`);
}

export interface Timed {
  /** Per-call latency in ms, in call order. */
  latencies: number[];
  /** Wall time of the whole loop in ms. */
  wallMs: number;
  errors: number;
  firstError?: string;
}

/**
 * `count` sequential echo calls after `warmup` untimed ones. Errors are counted, not thrown, so a
 * flaky variant shows up in the table instead of ending the run.
 */
export async function echoLoop(client: Client, tool: string, count: number, warmup = 0, tag = 'bench'): Promise<Timed> {
  for (let i = 0; i < warmup; i++) await echo(client, tool, `${tag} warmup ${i}`);
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  const start = performance.now();
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    try {
      await echo(client, tool, `${tag} ${i}`);
      latencies.push(performance.now() - t0);
    } catch (error) {
      errors++;
      firstError ??= error instanceof Error ? error.message : String(error);
    }
  }
  return { latencies, wallMs: performance.now() - start, errors, ...(firstError !== undefined ? { firstError } : {}) };
}
