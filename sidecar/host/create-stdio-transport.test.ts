/**
 * Upstream note 000's McpTransportFactory tests: every stdio server the host launches goes through
 * the one process executor, and the trust profile decides only which policy it is given: `null`
 * for an unconstrained profile, the compiled policy for a constrained one. Driven through the
 * production composition (listener → RemoteMcpHostHandler → ProcessExecutorBackedClientTransport
 * → ProcessExecutor) with real processes and real bubblewrap; the executor's hooks observe what it
 * was asked and what it spawned.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterEach, describe, expect, it } from 'vitest';
import { createInMemoryChannelPair } from '../../shared/channel-transport.ts';
import type { ProcessLaunchRequest, SpawnAttempt } from '../process/process-executor.ts';
import { createSidecarComposition, type SidecarComposition } from './composition.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const NODE = process.execPath;
const ECHO = join(ROOT, 'test/fixtures/echo-server.mjs');

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-stdio-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function writeJson(dir: string, path: string, value: unknown): void {
  mkdirSync(dirname(join(dir, path)), { recursive: true });
  writeFileSync(join(dir, path), JSON.stringify(value));
}

interface Observed {
  sidecar: SidecarComposition;
  launches: ProcessLaunchRequest[];
  spawns: SpawnAttempt[];
}

/** A sidecar whose one executor records every launch request and spawn; the echo server configured. */
function sidecarWithEcho(profile: unknown): Observed {
  const dir = tempDir();
  writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { echo: { command: NODE, args: [ECHO] } } });
  writeJson(dir, 'trust-profiles/workspace.json', profile);
  const launches: ProcessLaunchRequest[] = [];
  const spawns: SpawnAttempt[] = [];
  const sidecar = createSidecarComposition({
    configDir: dir,
    entityId: 'alice-laptop',
    user: 'alice',
    executor: { onLaunch: (r) => launches.push(r), onSpawn: (s) => spawns.push(s), termGraceMs: 500 },
  });
  cleanups.push(() => sidecar.stop());
  return { sidecar, launches, spawns };
}

/** Opens the echo server under the workspace profile through the production listener; calls echo once. */
async function callEcho(sidecar: SidecarComposition, session: string): Promise<string> {
  const { revision } = await sidecar.profiles.load('workspace');
  const [agentEnd, hostEnd] = createInMemoryChannelPair();
  await sidecar.onOpen({ type: 'mcp', connection: { 'server-name': 'echo', 'trust-profile-ref': 'workspace', 'trust-profile-revision': revision, session } }, hostEnd);
  const client = new Client({ name: 'agent', version: '1.0.0' });
  cleanups.push(() => client.close());
  await client.connect(agentEnd);
  const result = await client.callTool({ name: 'echo', arguments: { message: 'hi' } });
  return JSON.stringify(result.content);
}

describe('McpTransportFactory', () => {
  it('CreateStdioTransport_UnconstrainedProfile_UsesExecutorWithNullPolicy', async () => {
    // Environment and tool-call rules alone do not require containment.
    const { sidecar, launches, spawns } = sidecarWithEcho({ environment: { inherit: ['PATH'] }, 'restricted-mcp-tool-call-schemas': [] });
    expect(await callEcho(sidecar, 'session-1')).toContain('Echo: hi');
    expect(launches).toHaveLength(1);
    expect(launches[0]).toMatchObject({ command: NODE, args: [ECHO] });
    expect(launches[0]?.policy).toBeNull();
    expect(spawns).toEqual([{ backend: 'none', file: NODE, pid: expect.any(Number) }]);
    expect(sidecar.executor.spawnCount).toBe(1);
  });

  it('CreateStdioTransport_ConstrainedProfile_UsesExecutorWithMxcPolicy', async () => {
    const project = tempDir();
    const { sidecar, launches, spawns } = sidecarWithEcho({
      'filesystem-paths': [{ 'source-path': project, 'access-mode': 'read-write' }],
      'network-capabilities': [],
      environment: { inherit: ['PATH'] },
    });
    const { revision } = await sidecar.profiles.load('workspace');
    expect(await callEcho(sidecar, 'session-1')).toContain('Echo: hi');
    expect(launches).toHaveLength(1);
    const policy = launches[0]?.policy;
    expect(launches[0]).toMatchObject({ command: NODE, args: [ECHO] });
    expect(policy).toMatchObject({ backend: 'bubblewrap', revision });
    // The very policy compiled on this host for this session, and the one the sandbox runs under.
    const cached = await sidecar.policies.getOrCompile({ sessionId: 'session-1', revision, server: 'echo' }, () => Promise.reject(new Error('not cached')));
    expect(policy).toBe(cached);
    if (cached?.backend !== 'bubblewrap') throw new Error('expected a bubblewrap policy');
    expect(cached.args.join(' ')).toContain(`--bind-fd 4 ${project}`);
    expect(cached.grantSources).toEqual([project]);
    expect(spawns).toEqual([{ backend: 'bubblewrap', file: cached.executable, pid: expect.any(Number) }]);
    const cmdline = readFileSync(`/proc/${spawns[0]?.pid}/cmdline`, 'utf8').split('\0').slice(0, -1);
    const wrapped = cached.wrap(NODE, [ECHO]);
    wrapped.release?.();
    expect(cmdline.slice(1)).toEqual(wrapped.args);
    expect(sidecar.executor.spawnCount).toBe(1);
  });
});
