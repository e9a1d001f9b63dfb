import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigSnapshot } from '../sidecar/config/config-snapshot.ts';
import { loadSidecarConfig } from '../sidecar/config/sidecar-config.ts';
import type { SidecarComposition, SidecarReload } from '../sidecar/host/composition.ts';
import type { Logger } from '../sidecar/log.ts';
import { createSidecarReloader } from './sidecar-reload.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const SIDECAR = { worker: 'http://127.0.0.1:8787', 'entity-id': 'laptop' };

function setup(sidecarJson: object = SIDECAR, overrides: { worker?: string } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-reload-'));
  dirs.push(dir);
  mkdirSync(join(dir, 'mcp-servers'));
  mkdirSync(join(dir, 'trust-profiles'));
  writeFileSync(join(dir, 'sidecar.json'), JSON.stringify(sidecarJson));
  writeFileSync(join(dir, 'mcp-servers', 'mcp.json'), JSON.stringify({ mcpServers: { a: { command: 'node' } } }));
  const reloads: SidecarReload[] = [];
  let refusals = 0;
  const sidecar = {
    reload: async (next: SidecarReload) => (reloads.push(next), 0),
    refuseConfig: () => void (refusals += 1),
  } as unknown as SidecarComposition;
  const lines: Array<{ level: string; msg: string; fields: Record<string, unknown> }> = [];
  const at = (level: string) => (msg: string, fields: Record<string, unknown> = {}) => void lines.push({ level, msg, fields });
  const log = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => log } as unknown as Logger;
  const reload = createSidecarReloader({ dir, sidecar, config: loadSidecarConfig(dir, overrides), snapshot: ConfigSnapshot.take(dir), overrides, log });
  return { dir, reload, reloads, refusals: () => refusals, lines };
}

describe('sidecar config reload', () => {
  it('does nothing while the files are as accepted, and puts a valid change in force', async () => {
    const { dir, reload, reloads, lines } = setup();
    await reload('file');
    expect(reloads).toEqual([]);
    expect(lines).toEqual([]);
    // Asked to reload, it says there was nothing to, as the worker does (review s24).
    await reload('SIGHUP');
    expect(lines.splice(0)).toEqual([{ level: 'info', msg: 'Sidecar config unchanged: nothing to reload', fields: { trigger: 'SIGHUP' } }]);
    writeFileSync(join(dir, 'sidecar.json'), JSON.stringify({ ...SIDECAR, limits: { 'server-processes': 5 }, 'trust-profile': 'floor' }));
    writeFileSync(join(dir, 'trust-profiles', 'floor.json'), '{}');
    await reload('SIGHUP');
    expect(reloads).toHaveLength(1);
    expect(reloads[0]).toMatchObject({ trust: { floor: 'floor', allowUncontained: false }, limits: { processes: 5, processesPerAgent: 32, memoryLimitMib: 4096 } });
    expect(lines).toEqual([{ level: 'info', msg: 'Sidecar config reloaded', fields: { trigger: 'SIGHUP', endedServers: 0 } }]);
  });

  it('refuses an invalid dir once, in check\'s words, and keeps the one in force', async () => {
    const { dir, reload, reloads, refusals, lines } = setup();
    const file = join(dir, 'mcp-servers', 'mcp.json');
    writeFileSync(file, JSON.stringify({ mcpServers: { a: { command: '' } } }));
    await reload('file');
    await reload('file');
    expect(reloads).toEqual([]);
    expect(refusals()).toBe(1);
    const problems = [`${file}: 1 problem (mcp.json)\n  mcpServers.a.command: must not be empty`];
    expect(lines).toEqual([{ level: 'error', msg: 'Sidecar config refused: the config in force stays', fields: { trigger: 'file', problems } }]);
    // An operator who asks (SIGHUP) is told again, as the worker tells it; nothing is checked or refused anew.
    await reload('SIGHUP');
    expect(lines.slice(1)).toEqual([{ level: 'error', msg: 'Sidecar config refused: the config in force stays', fields: { trigger: 'SIGHUP', problems } }]);
    expect(refusals()).toBe(1);
    lines.splice(1);
    // Put back as accepted: said once, and nothing is reloaded.
    writeFileSync(file, JSON.stringify({ mcpServers: { a: { command: 'node' } } }));
    await reload('file');
    await reload('file');
    expect(reloads).toEqual([]);
    expect(lines.slice(1)).toEqual([{ level: 'info', msg: 'Sidecar config files match the config in force again', fields: { trigger: 'file' } }]);
  });

  it('puts the rest of a change in force beside a broken profile, which only its own launches are refused for; a broken floor refuses it all', async () => {
    const { dir, reload, reloads, lines } = setup();
    writeFileSync(join(dir, 'trust-profiles', 'wide.json'), JSON.stringify({ 'filesystem-paths': [{ 'source-path': '/srv', 'access-mode': 'read-write' }] }));
    await reload('file');
    expect(reloads).toHaveLength(1);
    // A narrowing of one profile beside a broken new one: applied, the broken one named.
    writeFileSync(join(dir, 'trust-profiles', 'wide.json'), JSON.stringify({ 'filesystem-paths': [{ 'source-path': '/srv', 'access-mode': 'read-only' }] }));
    writeFileSync(join(dir, 'trust-profiles', 'child.json'), JSON.stringify({ base: 'missing' }));
    await reload('file');
    expect(reloads).toHaveLength(2);
    expect(lines.at(-2)).toMatchObject({ level: 'error', msg: 'Trust profiles refused: launches under them are refused until they are fixed', fields: { problems: [expect.stringContaining(join(dir, 'trust-profiles', 'child.json'))] } });
    // One that is no JSON at all (a half-saved edit) refuses only its own launches too.
    writeFileSync(join(dir, 'trust-profiles', 'child.json'), '{"base": ');
    writeFileSync(join(dir, 'trust-profiles', 'wide.json'), JSON.stringify({ 'filesystem-paths': [] }));
    await reload('file');
    expect(reloads).toHaveLength(3);
    writeFileSync(join(dir, 'trust-profiles', 'child.json'), JSON.stringify({ base: 'missing' }));
    await reload('file');
    expect(reloads).toHaveLength(4);
    // The same broken profile made the host's floor: nothing of it is put in force.
    writeFileSync(join(dir, 'sidecar.json'), JSON.stringify({ ...SIDECAR, 'trust-profile': 'child' }));
    await reload('file');
    expect(reloads).toHaveLength(4);
    expect(lines.at(-1)).toMatchObject({ level: 'error', msg: 'Sidecar config refused: the config in force stays' });
  });

  it('refuses a floor that names no profile, and says which keys wait for a restart', async () => {
    const { dir, reload, reloads, lines } = setup();
    writeFileSync(join(dir, 'sidecar.json'), JSON.stringify({ ...SIDECAR, 'trust-profile': 'missing' }));
    await reload('file');
    expect(reloads).toEqual([]);
    expect(lines[0]!.fields.problems).toEqual([expect.stringContaining('trust-profile: no trust profile "missing" in trust-profiles/')]);
    writeFileSync(join(dir, 'sidecar.json'), JSON.stringify({ ...SIDECAR, 'entity-id': 'desk' }));
    await reload('file');
    expect(reloads).toHaveLength(1);
    expect(lines.find((l) => l.msg === 'Sidecar config changes that apply at the next start')?.fields).toEqual({ keys: ['entity-id'] });
  });

  it('passes audit include-arguments on to apply at once, and says the rest of audit waits for a restart (review s22)', async () => {
    const { dir, reload, reloads, lines } = setup({ ...SIDECAR, audit: { 'include-arguments': true } });
    writeFileSync(join(dir, 'sidecar.json'), JSON.stringify({ ...SIDECAR, audit: { 'include-arguments': false } }));
    await reload('file');
    expect(reloads.map((r) => r.includeArguments)).toEqual([false]);
    expect(lines.some((l) => l.level === 'warn')).toBe(false);
    writeFileSync(join(dir, 'sidecar.json'), JSON.stringify({ ...SIDECAR, audit: { 'include-arguments': false, file: 'audit.jsonl' } }));
    await reload('file');
    expect(reloads.map((r) => r.includeArguments)).toEqual([false, false]);
    expect(lines.find((l) => l.msg === 'Sidecar config changes that apply at the next start')?.fields).toEqual({ keys: ['audit'] });
  });

  it('is not refused for another host\'s layer of a shared dir, only for its own (review s22)', async () => {
    const { dir, reload, reloads, lines } = setup();
    const broken = JSON.stringify({ mcpServers: { echo: { comand: 'node' } } });
    mkdirSync(join(dir, 'machines', 'other-host', 'mcp-servers'), { recursive: true });
    writeFileSync(join(dir, 'machines', 'other-host', 'mcp-servers', 'mcp.json'), broken);
    writeFileSync(join(dir, 'trust-profiles', 'ro.json'), JSON.stringify({}));
    await reload('file');
    expect(reloads).toHaveLength(1);
    expect(lines.find((l) => l.level === 'warn')).toMatchObject({ msg: 'Other hosts\' or users\' config layers have problems: not read on this host', fields: { problems: [expect.stringContaining('machines/other-host/mcp-servers/mcp.json: 1 problem')] } });
    mkdirSync(join(dir, 'machines', 'laptop', 'mcp-servers'), { recursive: true });
    writeFileSync(join(dir, 'machines', 'laptop', 'mcp-servers', 'mcp.json'), broken);
    await reload('file');
    expect(reloads).toHaveLength(1);
    expect(lines.at(-1)).toMatchObject({ level: 'error', msg: 'Sidecar config refused: the config in force stays' });
  });

  it('says a changed warm-pool waits for a restart (review s22: silently kept)', async () => {
    const { dir, reload, lines } = setup();
    writeFileSync(join(dir, 'sidecar.json'), JSON.stringify({ ...SIDECAR, 'warm-pool': { size: 0 } }));
    await reload('file');
    expect(lines.find((l) => l.msg === 'Sidecar config changes that apply at the next start')?.fields).toEqual({ keys: ['warm-pool'] });
  });

  it('reads sidecar.json with the command line\'s flags on top, as at start', async () => {
    const { dir, reload, reloads } = setup({ 'entity-id': 'laptop' }, { worker: 'http://127.0.0.1:9' });
    writeFileSync(join(dir, 'sidecar.json'), JSON.stringify({ 'entity-id': 'laptop', 'allow-uncontained': true }));
    await reload('file');
    expect(reloads).toHaveLength(1);
    expect(reloads[0]!.trust).toEqual({ allowUncontained: true });
  });

  it('refuses a sidecar.json that cannot be read, flags given or not, as any other refusal: the config in force stays', async () => {
    const { dir, reload, reloads, refusals, lines } = setup({ 'entity-id': 'laptop' }, { worker: 'http://127.0.0.1:9' });
    rmSync(join(dir, 'sidecar.json'));
    mkdirSync(join(dir, 'sidecar.json'));
    await reload('file');
    expect(reloads).toHaveLength(0);
    expect(refusals()).toBe(1);
    expect(lines.map((l) => l.msg)).toEqual(['Sidecar config refused: the config in force stays']);
  });
});
