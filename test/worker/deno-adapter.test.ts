/**
 * The Deno entries as users run them: config from the environment with every problem reported
 * as `path: message` (exit 2), an address it cannot listen on named in one line (exit 1), `deno
 * serve` with the default-exported fetch, and a clean SIGTERM that closes open agent sessions and
 * exits 0.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../worker/auth/agent-auth.ts';
import { closeClient, connectClient } from '../support/clients.ts';
import { DENO } from '../support/paths.ts';
import { ProcessSet, startEverythingHttp, waitForOutput } from '../support/processes.ts';
import { startWorkerProcess } from '../support/worker-process.ts';

const procs = new ProcessSet();
afterAll(() => procs.stopAll());

const RUN = ['run', '--allow-net', '--allow-read', '--allow-env', 'worker/adapters/deno/deno-worker.ts'];

describe('Deno entries', () => {
  it('reports every config problem as path: message and exits 2', async () => {
    const proc = procs.spawn(DENO, RUN, {
      SWITCHYARD_WORKER_CONFIG: JSON.stringify({ agents: [{ name: 'a' }], servers: { x: { executor: { type: 'local' } } }, bogus: 1 }),
    });
    expect(await proc.exited).toBe(2);
    // In the format check prints, heading first.
    expect(proc.stderr()).toMatch(/^SWITCHYARD_WORKER_CONFIG: 4 problems \(worker config\)\n {2}\S/);
    const lines = proc.stderr().split('\n').map((l) => l.trim());
    expect(lines).toContain('agents[0].token-sha256: is required');
    expect(lines).toContain('bogus: unknown key');
    expect(lines.some((l) => l.startsWith('servers.x.executor: a top-level {"type":"local"} server runs in the worker\'s own process, which only the single-machine mode can do'))).toBe(true);
  });

  it('names a config file\'s problems, and a file it cannot read, in the words check and switchyard worker use (not the runtime\'s errno)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-deno-entry-'));
    try {
      const file = join(dir, 'worker.json');
      writeFileSync(file, JSON.stringify({ agents: [], servers: {}, bogus: 1 }));
      const invalid = procs.spawn(DENO, RUN, { SWITCHYARD_WORKER_CONFIG_FILE: file });
      expect(await invalid.exited).toBe(2);
      expect(invalid.stderr()).toBe(`${file}: 1 problem (worker config)\n  bogus: unknown key\n`);
      for (const [path, problem] of [[join(dir, 'missing.json'), 'not found'], [dir, 'not a file']]) {
        const unreadable = procs.spawn(DENO, RUN, { SWITCHYARD_WORKER_CONFIG_FILE: path! });
        expect(await unreadable.exited).toBe(2);
        expect(unreadable.stderr()).toBe(`Cannot read the worker config "${path}": ${problem}\n`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names the variables Deno may not read: the config ends the start (exit 2), any other is taken as unset and logged', async () => {
    const config = JSON.stringify({ agents: [], servers: {} });
    const none = procs.spawn(DENO, ['run', '--allow-net', '--allow-read', 'worker/adapters/deno/deno-worker.ts'], { SWITCHYARD_WORKER_CONFIG: config });
    expect(await none.exited).toBe(2);
    expect(none.stderr().trim()).toBe('No worker config: Deno may not read SWITCHYARD_WORKER_CONFIG or SWITCHYARD_WORKER_CONFIG_FILE: run it with --allow-env, or add SWITCHYARD_WORKER_CONFIG,SWITCHYARD_WORKER_CONFIG_FILE to its --allow-env list');
    const some = procs.spawn(DENO, ['serve', '--unstable-no-legacy-abort', '--host', '127.0.0.1', '--port', '0', '--allow-net', '--allow-read', '--allow-env=SWITCHYARD_WORKER_CONFIG', 'worker/adapters/deno/deno-serve.ts'], { SWITCHYARD_WORKER_CONFIG: config });
    await waitForOutput(some, some.stderr, /Listening on http:\/\/127\.0\.0\.1:\d+/, 'deno serve');
    const warning = some.stderr().split('\n').find((l) => l.includes('Environment variables Deno may not read'));
    expect(JSON.parse(warning!)).toMatchObject({ level: 'warn', names: ['SWITCHYARD_WORKER_CONFIG_FILE', 'SWITCHYARD_LOG_LEVEL'] });
    some.child.kill('SIGTERM');
    expect(await some.exited).toBe(0);
  });

  it('says which variable takes a path when the inline one was given one', async () => {
    const proc = procs.spawn(DENO, RUN, { SWITCHYARD_WORKER_CONFIG: 'worker.json' });
    expect(await proc.exited).toBe(2);
    expect(proc.stderr()).toContain('SWITCHYARD_WORKER_CONFIG holds the config\'s JSON itself: for a file, set SWITCHYARD_WORKER_CONFIG_FILE to its path');
  });

  it('says how to pass a config when there is none', async () => {
    const proc = procs.spawn(DENO, RUN, { SWITCHYARD_WORKER_CONFIG: '', SWITCHYARD_WORKER_CONFIG_FILE: '' });
    expect(await proc.exited).toBe(2);
    expect(proc.stderr()).toContain('No worker config: set SWITCHYARD_WORKER_CONFIG (JSON) or SWITCHYARD_WORKER_CONFIG_FILE (path)');
  });

  it('refuses two configs at once, naming both, rather than running one and logging the other (review s21)', async () => {
    const proc = procs.spawn(DENO, RUN, { SWITCHYARD_WORKER_CONFIG: JSON.stringify({ agents: [], servers: {} }), SWITCHYARD_WORKER_CONFIG_FILE: '/etc/switchyard/worker.json' });
    expect(await proc.exited).toBe(2);
    expect(proc.stderr().trim()).toBe('Two worker configs: SWITCHYARD_WORKER_CONFIG and SWITCHYARD_WORKER_CONFIG_FILE ("/etc/switchyard/worker.json") are both set; unset one');
  });

  it('reads PORT as digits only, as switchyard worker does: 0x50 is no port (review s21)', async () => {
    const proc = procs.spawn(DENO, RUN, { SWITCHYARD_WORKER_CONFIG: JSON.stringify({ agents: [], servers: {} }), PORT: '0x50' });
    expect(await proc.exited).toBe(2);
    expect(proc.stderr().trim()).toBe('Invalid PORT "0x50": expected 0-65535');
  });

  it('says which address it cannot listen on, and why, instead of a stack trace: exits 1', async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as AddressInfo).port;
    try {
      const proc = procs.spawn(DENO, RUN, { SWITCHYARD_WORKER_CONFIG: JSON.stringify({ agents: [], servers: {} }), HOST: '127.0.0.1', PORT: String(port) });
      expect(await proc.exited).toBe(1);
      expect(proc.stderr().trim()).toBe(`Cannot listen on 127.0.0.1:${port}: the port is already in use: stop what holds it, or choose another port (0 picks a free one)`);
    } finally {
      holder.close();
    }
  });

  it('serves the same app under `deno serve`', async () => {
    const proc = procs.spawn(DENO, ['serve', '--allow-net', '--allow-read', '--allow-env', '--host', '127.0.0.1', '--port', '0', 'worker/adapters/deno/deno-serve.ts'], {
      SWITCHYARD_WORKER_CONFIG: JSON.stringify({ agents: [], servers: {} }),
    });
    const [, url] = await waitForOutput(proc, () => proc.stdout() + proc.stderr(), /Listening on (http:\/\/[^\s/]+)/, 'deno serve');
    expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ ok: true });
    await proc.stop();
  });

  it('under `deno serve` with a watched config file, exits 0 on SIGTERM and on SIGINT, with a session open', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sy-deno-serve-'));
    try {
      const file = join(dir, 'worker.json');
      const everything = await startEverythingHttp(procs);
      writeFileSync(file, JSON.stringify({
        agents: [{ name: 'alice', 'token-sha256': await sha256Hex('alice-token'), servers: ['everything'] }],
        servers: { everything: { executor: { type: 'http', url: everything.url } } },
      }));
      for (const signal of ['SIGTERM', 'SIGINT'] as const) {
        const proc = procs.spawn(DENO, ['serve', '--allow-net', '--allow-read', '--allow-env', '--host', '127.0.0.1', '--port', '0', 'worker/adapters/deno/deno-serve.ts'], { SWITCHYARD_WORKER_CONFIG_FILE: file });
        const [, url] = await waitForOutput(proc, () => proc.stdout() + proc.stderr(), /Listening on (http:\/\/[^\s/]+)/, 'deno serve');
        const client = await connectClient(`${url}/servers/everything/mcp`, 'alice-token');
        expect((await client.listTools()).tools.length).toBeGreaterThan(0);
        proc.child.kill(signal);
        // Before, the config file's watch kept the process alive once deno serve stopped listening.
        expect([signal, await proc.exited]).toEqual([signal, 0]);
        await closeClient(client);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('answers a body cut short 400 invalid-request, and logs no worker error for it', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'switchyard-cut-'));
    procs.afterStop(() => rmSync(stateDir, { recursive: true, force: true }));
    const worker = await startWorkerProcess(procs, {
      agents: [{ name: 'alice', 'token-sha256': await sha256Hex('alice-token'), servers: [] }],
      servers: {},
      oauth: { 'built-in': {} },
    }, { stateDir });
    // What a client that dies mid-POST sends: a declared length, part of it, and the end of its side.
    const cutShort = (path: string, headers: string) => new Promise<string>((resolve, reject) => {
      const socket = connect(worker.port, '127.0.0.1', () => {
        socket.end(`POST ${path} HTTP/1.1\r\nhost: 127.0.0.1:${worker.port}\r\n${headers}content-length: 1000\r\nconnection: close\r\n\r\n{"a"`);
      });
      let answer = '';
      socket.setEncoding('utf8').on('data', (chunk: string) => (answer += chunk)).on('end', () => resolve(answer)).on('error', reject);
    });
    const json = 'content-type: application/json\r\naccept: application/json, text/event-stream\r\n';
    for (const [path, headers] of [['/oauth/register', json], ['/mcp', `authorization: Bearer alice-token\r\n${json}`], ['/mcp', `authorization: Bearer alice-token\r\n${json}mcp-protocol-version: 2025-06-18\r\n`]] as const) {
      const answer = await cutShort(path, headers);
      expect(answer.split('\r\n')[0], `${path} ${headers}`).toBe('HTTP/1.1 400 Bad Request');
      expect(answer).toContain('"reason":"invalid-request"');
      expect(answer).toContain('The request body could not be read');
    }
    expect(worker.process.stderr()).not.toContain('"level":"error"');
  });

  it('closes open agent sessions and exits 0 on SIGTERM', async () => {
    const everything = await startEverythingHttp(procs);
    const worker = await startWorkerProcess(procs, {
      agents: [{ name: 'alice', 'token-sha256': await sha256Hex('alice-token'), servers: ['everything'] }],
      servers: { everything: { executor: { type: 'http', url: everything.url } } },
    }, { logLevel: 'debug' });
    const client = await connectClient(`${worker.url}/servers/everything/mcp`, 'alice-token');
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    worker.process.child.kill('SIGTERM');
    expect(await worker.process.exited).toBe(0);
    const log = worker.process.stderr().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    // Its first line says what it runs: the config, how many agents and servers, which hosts, OAuth.
    expect(log).toContainEqual(expect.objectContaining({ msg: 'Worker listening', url: worker.url, config: worker.configFile, agents: 1, hosts: [], servers: 1, oauth: null, stateDir: null }));
    expect(log).toContainEqual(expect.objectContaining({ msg: 'Worker stopping', cause: 'SIGTERM' }));
    expect(log).toContainEqual(expect.objectContaining({ msg: 'Passthrough session closing', why: 'shutdown', server: 'everything' }));
    await closeClient(client);
  });
});
