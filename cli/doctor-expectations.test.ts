import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SidecarConfig } from '../sidecar/config/sidecar-config.ts';
import { expectationChecks } from './doctor-expectations.ts';

describe('doctor: what the worker expects, when it does not say', () => {
  it('says only that nothing was compared, without guessing why', async () => {
    // The config is not read when there is nothing to compare it with.
    const [check, ...rest] = await expectationChecks({} as SidecarConfig, undefined);
    expect(rest).toEqual([]);
    expect(check).toEqual({
      name: 'what the worker expects',
      ok: true,
      detail: 'the worker accepted the probe without saying what it expects of this host: server names and pinned revisions not compared',
    });
    expect(check!.detail).not.toMatch(/version|old/);
  });
});

describe('doctor: a server the worker routes here that this host runs for no agent without a profile', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sy-doctor-uncontained-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'mcp-servers'), { recursive: true });
  writeFileSync(join(dir, 'mcp-servers', 'mcp.json'), JSON.stringify({ mcpServers: { mem: { command: 'npx' }, own: { command: 'npx', 'trust-profile': 'floor' } } }));
  // As sidecar init writes it: no floor, no allow-uncontained.
  const host = { configDir: dir, entityId: 'laptop', user: 'alice', allowUncontained: false } as SidecarConfig;
  const pinned = { ref: 'workspace', revision: `sha256:${'0'.repeat(64)}`, agents: ['alice'] };
  const byName = async (config: SidecarConfig, profiles: (typeof pinned)[]) =>
    Object.fromEntries((await expectationChecks(config, { servers: ['mem', 'own'], 'trust-profiles': profiles })).map((c) => [c.name, c]));

  it('fails it when no agent of this host names a trust profile: every call to it is refused', async () => {
    const checks = await byName(host, []);
    expect(checks['worker\'s server "mem"']).toEqual({
      name: 'worker\'s server "mem"',
      ok: false,
      detail: 'the worker routes "mem" to this host, but no agent that uses this host\'s servers names a trust profile, and this host has no trust floor and no "allow-uncontained": every call to it is refused (denied-by-policy)',
      fix: `Give those agents a "trust-context" in the worker config (switchyard agent add --trust-profile REF writes one), or set "trust-profile" in ${join(dir, 'sidecar.json')} (or in "mem"'s entry in ${join(dir, 'mcp-servers', 'mcp.json')}), or "allow-uncontained": true`,
    });
    // A server with a floor of its own runs for them under it.
    expect(checks['worker\'s server "own"']).toMatchObject({ ok: true });
  });

  it('passes it, saying who it runs for, when some agents name one; and says nothing when the host has a floor or allows uncontained', async () => {
    expect((await byName(host, [pinned]))['worker\'s server "mem"']).toMatchObject({
      ok: true,
      detail: expect.stringMatching(/^routed to this host and defined in .*mcp\.json; it runs only for agents that name a trust profile: this host has no trust floor and no "allow-uncontained"$/),
    });
    for (const config of [{ ...host, trustFloor: 'floor' }, { ...host, allowUncontained: true }]) {
      expect((await byName(config, []))['worker\'s server "mem"']).toMatchObject({ ok: true, detail: expect.stringMatching(/mcp\.json$/) });
    }
  });
});
