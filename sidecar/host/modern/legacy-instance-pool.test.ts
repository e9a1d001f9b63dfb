/**
 * The pool's starts that never finish: a real process that never answers the host's
 * `initialize` (test/fixtures/hang-server.mjs), under the real executor.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { WireError } from '../../../shared/errors.ts';
import { fixtureServer } from '../../../test/support/paths.ts';
import { isAlive, waitFor } from '../../../test/support/processes.ts';
import { silentLogger } from '../../log.ts';
import { ProcessExecutor, type SpawnAttempt } from '../../process/process-executor.ts';
import { ProcessExecutorBackedClientTransport } from '../../process/process-backed-transport.ts';
import { LegacyInstancePool } from './legacy-instance-pool.ts';
import { isModernServer } from './server-instance.ts';
import { HostedServers } from '../hosted-servers.ts';
import { ProcessBudget } from '../process-budget.ts';

const spawns: SpawnAttempt[] = [];
const executor = new ProcessExecutor({ termGraceMs: 300, onSpawn: (attempt) => spawns.push(attempt) });
const pools: LegacyInstancePool[] = [];
afterEach(async () => {
  for (const pool of pools.splice(0)) await pool.dispose();
  spawns.splice(0);
});

function pool(options: { initializeTimeoutMs?: number } = {}): LegacyInstancePool {
  const made = new LegacyInstancePool({ idleMs: 60_000, log: silentLogger, ...options });
  pools.push(made);
  return made;
}

const key = { agent: 'alice', server: 'hang', revision: 'uncontained' };
const hanging = async () => ({
  server: 'hang',
  transport: new ProcessExecutorBackedClientTransport('hang', { ...fixtureServer('hang-server.mjs'), env: {}, policy: null }, executor, { logger: silentLogger }),
  clientInfo: { name: 'test', version: '1' },
  log: silentLogger,
});
const failure = (promise: Promise<unknown>) => promise.then(() => null, (error: unknown) => error);

describe('LegacyInstancePool, a server that never answers initialize', () => {
  it('fails the request with request-timeout, ends the process, and starts afresh for the next request', async () => {
    const instances = pool({ initializeTimeoutMs: 300 });
    const [first, second] = await Promise.all([failure(instances.acquire(key, hanging)), failure(instances.acquire(key, hanging))]);
    expect(first).toBeInstanceOf(WireError);
    expect([(first as WireError).reason, (first as WireError).message]).toEqual(['request-timeout', 'Server "hang" did not answer the host\'s initialize within 0.3 s: it was ended']);
    expect(second).toBe(first); // the agent's concurrent requests share the one start
    await waitFor(() => (!isAlive(spawns[0]!.pid!) ? true : undefined), 'the server to end');
    expect((await failure(instances.acquire(key, hanging)) as WireError).reason).toBe('request-timeout');
    expect(spawns).toHaveLength(2);
  });

  it('ends a start still waiting for initialize when the host stops, at once: the request fails with host-offline', async () => {
    const instances = pool();
    const waiting = failure(instances.acquire(key, hanging));
    await waitFor(() => spawns[0]?.pid, 'the server to start');
    await instances.dispose();
    expect(((await waiting) as WireError).reason).toBe('host-offline');
    expect(isAlive(spawns[0]!.pid!)).toBe(false);
  });
});

describe('LegacyInstancePool, a server that never answers the era probe', () => {
  it('leaves no probe counted in flight: the idle instance is ended to make room at the agent\'s cap (review s20)', async () => {
    const budget = new ProcessBudget({ limits: { perAgent: 1, total: 8 }, log: silentLogger });
    const hosted = new HostedServers();
    const instances = new LegacyInstancePool({ idleMs: 60_000, log: silentLogger, probeTimeoutMs: 200 });
    pools.push(instances);
    const silent = fixtureServer('silent-before-init-server.mjs');
    const instance = await instances.acquire({ agent: 'alice', server: 'silent', revision: 'uncontained' }, async () => ({
      server: 'silent',
      transport: hosted.track(
        new ProcessExecutorBackedClientTransport('silent', { ...silent, env: {}, policy: null }, executor, { logger: silentLogger }),
        { name: 'silent', connection: { 'server-name': 'silent', agent: 'alice' }, config: { kind: 'stdio', ...silent, env: {} }, revision: null },
        budget.reserve('alice', 'silent'),
      ),
      clientInfo: { name: 'test', version: '1' },
      log: silentLogger,
      eraKey: 'silent#test',
    }));
    expect(instance.serverInfo?.name).toBe('silent-before-init');
    // Her next launch at her cap of one ends the idle instance, whose probe went unanswered.
    budget.reserve('alice', 'other').slot.release();
    await instance.closed;
    expect(instance.ended).toBe(true);
  });
});

describe('LegacyInstancePool, a server slower to start than the era probe waits (review s23)', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'sy-slow-server-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  /** A pool whose probe waits 200 ms, and the acquire of the server `source` runs as, under `name`. */
  function slowServer(name: string, source: string) {
    const script = join(scratch, `${name}.mjs`);
    writeFileSync(script, source);
    const instances = new LegacyInstancePool({ idleMs: 60_000, log: silentLogger, probeTimeoutMs: 200 });
    pools.push(instances);
    const acquire = () =>
      instances.acquire({ agent: 'alice', server: name, revision: 'uncontained' }, async () => ({
        server: name,
        transport: new ProcessExecutorBackedClientTransport(name, { command: process.execPath, args: [script], env: {}, policy: null }, executor, { logger: silentLogger }),
        clientInfo: { name: 'test', version: '1' },
        log: silentLogger,
        eraKey: `${name}#test`,
      }));
    return { instances, acquire };
  }

  it('is served as modern once it answers the probe late and refuses initialize, and the timeout is kept as no legacy verdict', async () => {
    // A cold npx or a heavy runtime: nothing read or answered for 600 ms, three times the probe's wait.
    const { instances, acquire } = slowServer('slow', `setTimeout(() => import(${JSON.stringify(pathToFileURL(fixtureServer('modern-echo-server.mjs').args[0]!).href)}), 600);\n`);
    const instance = await acquire();
    expect(isModernServer(instance)).toBe(true);
    expect(instances.eras.get('slow#test')).toMatchObject({ era: 'modern' });
    // The first process, which refused initialize, is gone; the second serves, and the pool holds it.
    await waitFor(() => (!isAlive(spawns[0]!.pid!) ? true : undefined), 'the refused process to end');
    expect(spawns).toHaveLength(2);
    expect(instances.size).toBe(1);
  });

  it('is taken for legacy once it exits on the late probe, as an SDK exiting on a request before initialize, and started again (review of s23)', async () => {
    // Reads nothing for 600 ms; then exits unless its first message is initialize, and answers as a legacy server.
    const { instances, acquire } = slowServer(
      'strict',
      `import { createInterface } from 'node:readline';
setTimeout(() => {
  let first = true;
  createInterface({ input: process.stdin }).on('line', (line) => {
    const message = JSON.parse(line);
    if (first && message.method !== 'initialize') process.exit(1);
    first = false;
    if (message.id === undefined) return;
    const answer = message.method === 'initialize'
      ? { result: { protocolVersion: '2025-11-25', capabilities: {}, serverInfo: { name: 'slow-strict', version: '1' } } }
      : { error: { code: -32601, message: 'Method not found' } };
    process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: message.id, ...answer }) + '\\n');
  });
}, 600);
`,
    );
    const instance = await acquire();
    expect(isModernServer(instance)).toBe(false);
    expect(instance.serverInfo?.name).toBe('slow-strict');
    expect(instances.eras.get('strict#test')).toEqual({ era: 'legacy' });
    expect(spawns).toHaveLength(2);
  });
});
