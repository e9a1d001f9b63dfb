import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SidecarConfig } from '../sidecar/config/sidecar-config.ts';
import { TrustProfileStore } from '../sidecar/trust/profile-store.ts';
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
  const host = { configDir: dir, keyFile: join(dir, 'host.key'), entityId: 'laptop', user: 'alice', allowUncontained: false } as SidecarConfig;
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

describe('doctor: a trust profile whose grants contain or lie in the config dir', () => {
  // The README's layout: the config dir at ~/.config/switchyard, and a profile granting the home around it.
  const home = mkdtempSync(join(tmpdir(), 'sy-doctor-exposure-'));
  afterAll(() => rmSync(home, { recursive: true, force: true }));
  const dir = join(home, '.config', 'switchyard');
  mkdirSync(join(dir, 'mcp-servers'), { recursive: true });
  mkdirSync(join(dir, 'trust-profiles'), { recursive: true });
  const server = { command: process.execPath, args: [join(home, 'project', 'server.mjs')] };
  writeFileSync(join(dir, 'mcp-servers', 'mcp.json'), JSON.stringify({ mcpServers: { files: server, web: { url: 'https://example.com/mcp' } } }));
  writeFileSync(join(dir, 'trust-profiles', 'home.json'), JSON.stringify({ 'filesystem-paths': [{ 'source-path': home, 'access-mode': 'read-only' }], 'network-capabilities': [] }));
  writeFileSync(join(dir, 'trust-profiles', 'workspace.json'), JSON.stringify({ 'filesystem-paths': [{ 'source-path': join(home, 'project'), 'access-mode': 'read-write' }], 'network-capabilities': [] }));
  const host = { configDir: dir, keyFile: join(dir, 'host.key'), entityId: 'laptop', user: 'alice', allowUncontained: false, trustFloor: 'home' } as SidecarConfig;
  const revisionOf = async (ref: string) => (await new TrustProfileStore(join(dir, 'trust-profiles')).load(ref)).revision;
  const byName = async (config: SidecarConfig, profiles: Array<{ ref: string; revision: string; agents: string[] }>) =>
    Object.fromEntries((await expectationChecks(config, { servers: ['files', 'web'], 'trust-profiles': profiles })).map((c) => [c.name, c]));

  it('fails a pin whose launches of this host\'s servers are refused, naming the grant and the fix', async () => {
    const checks = await byName(host, [{ ref: 'home', revision: await revisionOf('home'), agents: ['alice'] }]);
    expect(checks['worker\'s pin of trust profile "home"']).toMatchObject({
      ok: false,
      detail: expect.stringContaining(`agent "alice" pins it, but a launch of "files" under it is refused (launch-failed): the trust profile it runs under ("home", pinned by the agent, under the host's floor "home") grants "${home}", which contains the sidecar config dir (${dir}, which holds the host key)`),
      fix: expect.stringContaining('move the config dir out of the granted tree'),
    });
    // home ∧ workspace grants the project only.
    expect((await byName(host, [{ ref: 'workspace', revision: await revisionOf('workspace'), agents: ['bob'] }]))['worker\'s pin of trust profile "workspace"']).toMatchObject({ ok: true });
  });

  it('fails a server that runs under the floor alone, when no agent of this host names a profile; notes it when some do', async () => {
    const alone = (await byName(host, []))['worker\'s server "files"'];
    expect(alone).toMatchObject({ ok: false, detail: expect.stringContaining('no agent that uses this host\'s servers names a trust profile, so every launch of "files" is refused (launch-failed): the trust profile it runs under (the host\'s floor "home"; the agent names none) grants') });
    const some = (await byName(host, [{ ref: 'workspace', revision: await revisionOf('workspace'), agents: ['bob'] }]))['worker\'s server "files"'];
    expect(some).toMatchObject({ ok: true, detail: expect.stringContaining('; an agent that names no trust profile is refused it (launch-failed): the trust profile it runs under (the host\'s floor "home"; the agent names none) grants') });
    // An HTTP entry runs no process: nothing to contain.
    expect((await byName(host, []))['worker\'s server "web"']).toMatchObject({ ok: true });
  });
});
