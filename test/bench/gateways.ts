/**
 * The two reference proxies, both in front of the same stdio server-everything, both serving
 * Streamable HTTP on 127.0.0.1 at `/mcp`:
 *
 * - supergateway 4 (`--stdio CMD --outputTransport streamableHttp --stateful`): one child
 *   process per session, messages relayed as JSON — the closest design to Switchyard's
 *   passthrough (minus the link and the second process hop).
 * - mcp-proxy 6 (`--server stream -- CMD`): one upstream SDK `Client` started at launch and shared
 *   by every session, each session an SDK `Server` re-issuing requests to it. Its resumability
 *   event store is left at its default (on), as users get it.
 *
 * Neither prints a reliable "listening" line at `--logLevel none`, so readiness is a TCP probe.
 *
 * @module
 */
import { connect } from 'node:net';
import { EVERYTHING, REPO, sleep, type BenchProcess, type ProcessRegistry } from './processes.ts';
import { freePort } from '../support/processes.ts';
import { burnIn } from './burn-in.ts';

export interface Gateway {
  url: string;
  process: BenchProcess;
}

/**
 * supergateway in front of `command` (a shell-style command line; server-everything unless given),
 * burnt in with `burnInCalls` echo calls before it is returned (`burn-in.ts`).
 */
export async function startSupergateway(registry: ProcessRegistry, burnInCalls: number, command = `${process.execPath} ${EVERYTHING} stdio`): Promise<Gateway> {
  const port = await freePort();
  const proc = registry.spawn('supergateway', process.execPath, [
    `${REPO}node_modules/supergateway/dist/index.js`,
    '--stdio',
    command,
    '--outputTransport',
    'streamableHttp',
    '--stateful',
    '--port',
    String(port),
    '--logLevel',
    'none',
  ]);
  return ready(port, proc, burnInCalls);
}

/** mcp-proxy in front of server-everything, burnt in like `startSupergateway`. */
export async function startMcpProxy(registry: ProcessRegistry, burnInCalls: number): Promise<Gateway> {
  const port = await freePort();
  const proc = registry.spawn('mcp-proxy', process.execPath, [
    `${REPO}node_modules/mcp-proxy/dist/bin/mcp-proxy.mjs`,
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    '--server',
    'stream',
    '--',
    process.execPath,
    EVERYTHING,
    'stdio',
  ]);
  return ready(port, proc, burnInCalls);
}

async function ready(port: number, proc: BenchProcess, burnInCalls: number): Promise<Gateway> {
  await waitForPort(port, proc);
  const url = `http://127.0.0.1:${port}/mcp`;
  await burnIn(url, burnInCalls);
  return { url, process: proc };
}

export { freePort };

/** Resolves once something accepts TCP connections on 127.0.0.1:`port`. */
async function waitForPort(port: number, proc: BenchProcess, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (proc.child.exitCode !== null || Date.now() > deadline) {
      throw new Error(`${proc.name} did not listen on ${port}\nstderr:\n${proc.stderr().slice(-2000)}`);
    }
    await sleep(50);
  }
}
