/**
 * The stdio era probe on real processes: server-everything from npm (legacy, answers -32601 and
 * stays usable), the modern echo fixture, a silent process and one that exits at once; and the
 * verdicts every kind of answer gives, never keyed to one error code.
 */
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { afterEach, describe, expect, it } from 'vitest';
import { everythingServer, fixtureServer } from '../../../test/support/paths.ts';
import { silentLogger } from '../../log.ts';
import { LegacyInstance } from './legacy-instance.ts';
import { probeServerEra, serverEraKey } from './server-era.ts';
import { verdictOf } from '../../../shared/era-bridge/discover-verdict.ts';

const CLIENT_INFO = { name: 'era-test', version: '1.0.0' };
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A real process; its `pid` (null until started in the SDK's typing) read as the host's transports give it. */
function launch(server: { command: string; args: string[] }): Transport & { readonly pid?: number } {
  const transport = new StdioClientTransport({ ...server, stderr: 'ignore' });
  cleanups.push(() => transport.close());
  return transport as Transport & { readonly pid?: number };
}

describe('the stdio era probe', () => {
  it('takes server-everything for legacy, and the same process then initializes', async () => {
    const transport = launch(everythingServer());
    const outcome = await probeServerEra(transport, { timeoutMs: 10_000, clientInfo: CLIENT_INFO });
    expect(outcome.verdict).toEqual({ era: 'legacy' });
    expect(outcome.transport).not.toBeNull();
    const pid = transport.pid;
    const instance = await LegacyInstance.start({ server: 'everything', transport: outcome.transport!, clientInfo: CLIENT_INFO, log: silentLogger });
    cleanups.push(() => instance.close());
    expect(instance.pid).toBe(pid);
    expect(instance.serverInfo.name).toMatch(/everything/i);
    const call = instance.call({ method: 'tools/call', params: { name: 'echo', arguments: { message: 'after the probe' } } }, { logLevel: null, notify: () => {} });
    expect(await call.outcome).toMatchObject({ result: { content: [{ type: 'text', text: 'Echo: after the probe' }] } });
  });

  it('takes the modern fixture for modern, with its discover result', async () => {
    const outcome = await probeServerEra(launch(fixtureServer('modern-echo-server.mjs')), { timeoutMs: 10_000, clientInfo: CLIENT_INFO });
    expect(outcome.verdict).toMatchObject({
      era: 'modern',
      supported: ['2026-07-28'],
      discover: { supportedVersions: ['2026-07-28'], capabilities: { tools: { listChanged: true } }, ttlMs: 60000, cacheScope: 'public' },
    });
  });

  it('takes a server that never answers for legacy once the timeout passes', async () => {
    const silent = { command: process.execPath, args: ['-e', 'process.stdin.resume()'] };
    const outcome = await probeServerEra(launch(silent), { timeoutMs: 50, clientInfo: CLIENT_INFO });
    expect(outcome.verdict).toEqual({ era: 'legacy' });
    expect(outcome.transport).not.toBeNull();
  });

  it('reports a process that ends during the probe as legacy, with no process to hand on', async () => {
    const exits = { command: process.execPath, args: ['-e', 'process.exit(0)'] };
    const outcome = await probeServerEra(launch(exits), { timeoutMs: 10_000, clientInfo: CLIENT_INFO });
    expect(outcome).toMatchObject({ verdict: { era: 'legacy' }, transport: null });
  });

  it('gives no verdict for a launch that fails: the start error is the caller\'s', async () => {
    const missing = { command: '/nonexistent/switchyard-era-test-server', args: [] };
    await expect(probeServerEra(launch(missing), { timeoutMs: 10_000, clientInfo: CLIENT_INFO })).rejects.toThrow();
  });
});

describe('verdictOf', () => {
  const discover = { resultType: 'complete', supportedVersions: ['2026-07-28'], capabilities: {}, ttlMs: 0, cacheScope: 'public' };

  it('is modern for a DiscoverResult and for -32022 naming the supported versions', () => {
    expect(verdictOf({ jsonrpc: '2.0', id: 'p', result: discover })).toMatchObject({ era: 'modern', supported: ['2026-07-28'] });
    expect(verdictOf({ jsonrpc: '2.0', id: 'p', error: { code: -32022, message: 'Unsupported protocol version', data: { supported: ['2027-01-01'], requested: '2026-07-28' } } })).toEqual({
      era: 'modern',
      discover: null,
      supported: ['2027-01-01'],
    });
  });

  it('is legacy for any other error, whatever its code, a -32022 without data.supported, a result that is no DiscoverResult, and no answer', () => {
    for (const code of [-32601, -32602, -32600, -32603, -32000, 1]) {
      expect(verdictOf({ jsonrpc: '2.0', id: 'p', error: { code, message: 'No' } })).toEqual({ era: 'legacy' });
    }
    expect(verdictOf({ jsonrpc: '2.0', id: 'p', error: { code: -32022, message: 'No' } })).toEqual({ era: 'legacy' });
    expect(verdictOf({ jsonrpc: '2.0', id: 'p', result: {} })).toEqual({ era: 'legacy' });
    expect(verdictOf('timeout')).toEqual({ era: 'legacy' });
  });
});

describe('serverEraKey', () => {
  const config = { command: 'node', args: ['server.mjs'], env: { A: '1', B: '2' } };

  it('is the same for the same config, whatever the order of its env', () => {
    expect(serverEraKey('s', config)).toBe(serverEraKey('s', { ...config, env: { B: '2', A: '1' } }));
  });

  it('changes with the name, command, args, env and cwd', () => {
    const base = serverEraKey('s', config);
    expect(new Set([
      base,
      serverEraKey('t', config),
      serverEraKey('s', { ...config, command: 'deno' }),
      serverEraKey('s', { ...config, args: ['other.mjs'] }),
      serverEraKey('s', { ...config, env: { A: '1', B: '3' } }),
      serverEraKey('s', { ...config, cwd: '/tmp' }),
    ]).size).toBe(6);
  });
});
