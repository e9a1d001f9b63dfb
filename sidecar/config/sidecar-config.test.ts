import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../shared/validation.ts';
import { loadSidecarConfig, parseSidecarConfig } from './sidecar-config.ts';
import { UserNameSchema } from './user-name.ts';

const base = { worker: 'http://127.0.0.1:8787', 'entity-id': 'alice-laptop' };

describe('sidecar.json', () => {
  it('takes https: for a remote worker and http: only on this machine, naming the key and the fix', () => {
    for (const worker of ['https://yard.example.com', 'wss://yard.example.com/base', 'http://127.0.0.1:8787', 'http://localhost:1', 'ws://[::1]:2', 'http://127.1.2.3']) {
      expect(parseSidecarConfig({ ...base, worker }).worker).toBe(worker);
    }
    for (const worker of ['http://yard.example.com', 'ws://10.0.0.5:8787', 'http://localhost.evil.example', 'http://[::2]:1']) {
      expect(() => parseSidecarConfig({ ...base, worker })).toThrow(/worker: must be https: \(or wss:\) for a worker on another machine.*put TLS in front of the worker/);
    }
  });

  it('refuses a worker URL with a user name, password, query or fragment, which its logs and doctor would print (review s19)', () => {
    expect(() => parseSidecarConfig({ ...base, worker: 'https://u:secretpw@yard.example.com' })).toThrow('worker: must not carry a user name or password: the link proves this host by its key');
    for (const worker of ['https://yard.example.com/?token=abc', 'https://yard.example.com/#x']) {
      expect(() => parseSidecarConfig({ ...base, worker })).toThrow('worker: must have no query or fragment');
    }
  });

  it('has no shared secret any more: a secret-file key is an unknown key', () => {
    expect(() => parseSidecarConfig({ ...base, 'secret-file': 'host.secret' })).toThrow(/secret-file/);
    expect(parseSidecarConfig({ ...base, 'key-file': 'keys/this-host.key' })['key-file']).toBe('keys/this-host.key');
  });

  it('takes modern-instance-idle-seconds as a positive whole number of seconds', () => {
    expect(parseSidecarConfig({ ...base, 'modern-instance-idle-seconds': 60 })['modern-instance-idle-seconds']).toBe(60);
    for (const bad of [0, -5, 1.5, '900']) expect(() => parseSidecarConfig({ ...base, 'modern-instance-idle-seconds': bad })).toThrow(/modern-instance-idle-seconds/);
  });

  it('takes warm-pool sizes as whole numbers (size 0 disables it) and names a bad key', () => {
    expect(parseSidecarConfig({ ...base, 'warm-pool': { size: 0 } })['warm-pool']).toEqual({ size: 0 });
    expect(parseSidecarConfig({ ...base, 'warm-pool': { size: 2, 'max-instances': 8, 'idle-seconds': 60 } })['warm-pool']).toEqual({ size: 2, 'max-instances': 8, 'idle-seconds': 60 });
    expect(() => parseSidecarConfig({ ...base, 'warm-pool': { size: -1 } })).toThrow(/warm-pool\.size: must be 0 \(no pool\) or more/);
    expect(() => parseSidecarConfig({ ...base, 'warm-pool': { size: 1.5 } })).toThrow(/warm-pool\.size/);
    expect(() => parseSidecarConfig({ ...base, 'warm-pool': { sized: 1 } })).toThrow(/warm-pool\.sized: unknown key/);
  });

  it('takes limits as whole numbers, 0 meaning no memory limit, no launch rate or no task limit, and fills in the defaults', () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-limits-'));
    try {
      writeFileSync(join(dir, 'sidecar.json'), JSON.stringify(base));
      expect(loadSidecarConfig(dir).limits).toEqual({ processesPerAgent: 32, processes: 64, launchBurstPerAgent: 32, launchesPerAgentPerMinute: 60, memoryLimitMib: 4096, tasksPerServer: 1024, memoryPerServerMib: 8192, cpusPerServer: 0, tasksPerAgent: 4096, memoryPerAgentMib: 16384 });
      // Unless set, the launch burst is 32, or the agent's process limit when larger: an agent may always fill its allowance at once.
      writeFileSync(join(dir, 'sidecar.json'), JSON.stringify({ ...base, limits: { 'server-processes-per-agent': 2, 'memory-limit-mib': 0, 'tasks-per-server': 0, 'memory-per-server-mib': 0, 'cpus-per-server': 1.5, 'tasks-per-agent': 0, 'memory-per-agent-mib': 2048 } }));
      expect(loadSidecarConfig(dir).limits).toEqual({ processesPerAgent: 2, processes: 64, launchBurstPerAgent: 32, launchesPerAgentPerMinute: 60, memoryLimitMib: 0, tasksPerServer: 0, memoryPerServerMib: 0, cpusPerServer: 1.5, tasksPerAgent: 0, memoryPerAgentMib: 2048 });
      writeFileSync(join(dir, 'sidecar.json'), JSON.stringify({ ...base, limits: { 'server-processes-per-agent': 100 } }));
      expect(loadSidecarConfig(dir).limits).toMatchObject({ processesPerAgent: 100, launchBurstPerAgent: 100 });
      writeFileSync(join(dir, 'sidecar.json'), JSON.stringify({ ...base, limits: { 'server-launch-burst-per-agent': 8, 'server-launches-per-agent-per-minute': 0 } }));
      expect(loadSidecarConfig(dir).limits).toMatchObject({ processesPerAgent: 32, launchBurstPerAgent: 8, launchesPerAgentPerMinute: 0 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(() => parseSidecarConfig({ ...base, limits: { 'server-processes': 0 } })).toThrow(/limits\.server-processes: must be at least 1/);
    expect(() => parseSidecarConfig({ ...base, limits: { 'memory-limit-mib': 1.5 } })).toThrow(/limits\.memory-limit-mib/);
    expect(() => parseSidecarConfig({ ...base, limits: { sessions: 3 } })).toThrow(/limits/);
    expect(() => parseSidecarConfig({ ...base, limits: { 'tasks-per-server': -1 } })).toThrow(/limits\.tasks-per-server: must be 0 \(no limit\) or more/);
    // A CPU cap is a share of CPUs, not a whole number; below the kernel's least quota (0.01) it is refused.
    expect(() => parseSidecarConfig({ ...base, limits: { 'cpus-per-server': -0.5 } })).toThrow(/limits\.cpus-per-server: must be 0 \(no cap\) or more/);
    expect(() => parseSidecarConfig({ ...base, limits: { 'cpus-per-server': 0.001 } })).toThrow(/limits\.cpus-per-server: must be 0 \(no cap\) or at least 0\.01/);
    expect(() => parseSidecarConfig({ ...base, limits: { 'cpus-per-server': '2' } })).toThrow(/limits\.cpus-per-server/);
    expect(parseSidecarConfig({ ...base, limits: { 'cpus-per-server': 0.25 } }).limits?.['cpus-per-server']).toBe(0.25);
    expect(() => parseSidecarConfig({ ...base, limits: { 'server-launch-burst-per-agent': 0 } })).toThrow(/limits\.server-launch-burst-per-agent: must be at least 1/);
    expect(() => parseSidecarConfig({ ...base, limits: { 'server-launches-per-agent-per-minute': -1 } })).toThrow(/limits\.server-launches-per-agent-per-minute: must be 0 \(no launch rate\) or more/);
  });

  it('refuses an agent URL as the worker URL, naming the base URL to use, and keeps a base URL with a path of its own', () => {
    expect(() => parseSidecarConfig({ ...base, worker: 'http://127.0.0.1:8787/mcp' })).toThrow('worker: must be the worker\'s base URL, not its endpoint "/mcp": use http://127.0.0.1:8787');
    expect(() => parseSidecarConfig({ ...base, worker: 'https://yard.example.com/team/servers/files/mcp/' })).toThrow('worker: must be the worker\'s base URL, not its endpoint "/servers/files/mcp": use https://yard.example.com/team');
    expect(() => parseSidecarConfig({ ...base, worker: 'https://yard.example.com/link' })).toThrow('not its endpoint "/link": use https://yard.example.com');
    // A proxy may serve the worker under a prefix: the link is then dialled at /team/link.
    expect(parseSidecarConfig({ ...base, worker: 'https://yard.example.com/team' }).worker).toBe('https://yard.example.com/team');
    expect(parseSidecarConfig({ ...base, worker: 'https://yard.example.com/mcpx' }).worker).toBe('https://yard.example.com/mcpx');
  });

  it('blames a flag\'s bad value on the flag, not on a sidecar.json that may be fine', () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-flags-'));
    try {
      writeFileSync(join(dir, 'sidecar.json'), JSON.stringify(base));
      expect(() => loadSidecarConfig(dir, { worker: 'notaurl' })).toThrow(/^--worker: must be an absolute URL$/);
      expect(() => loadSidecarConfig(dir, { entityId: 'bad id' })).toThrow(/^--entity-id: /);
      // A problem of the file itself is still the file's.
      writeFileSync(join(dir, 'sidecar.json'), JSON.stringify({ ...base, worker: 'notaurl' }));
      expect(() => loadSidecarConfig(dir)).toThrow(`${join(dir, 'sidecar.json')}: 1 problem (sidecar config)\n  worker: must be an absolute URL`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names a sidecar.json it cannot read in the words check uses, not an errno', () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-unreadable-'));
    try {
      mkdirSync(join(dir, 'sidecar.json'));
      expect(() => loadSidecarConfig(dir)).toThrow(`cannot read "${join(dir, 'sidecar.json')}": not a file`);
      rmSync(join(dir, 'sidecar.json'), { recursive: true });
      // Missing is no problem of its own while the flags give what it would hold.
      expect(loadSidecarConfig(dir, { worker: base.worker, entityId: base['entity-id'] }).worker).toBe(base.worker);
      expect(() => loadSidecarConfig(dir)).toThrow(`cannot read "${join(dir, 'sidecar.json')}": not found`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a sidecar.json that gives a key twice, naming it, as JSON.parse would keep the second without a word', () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-twice-'));
    try {
      writeFileSync(join(dir, 'sidecar.json'), '{\n  "worker": "https://a.example.com",\n  "entity-id": "h",\n  "worker": "https://b.example.com"\n}');
      expect(() => loadSidecarConfig(dir)).toThrow('worker: defined twice (line 2 and line 4): JSON keeps only the last, so remove one');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('accepts a user name that is one path segment', () => {
    expect(parseSidecarConfig({ ...base, user: 'alice.b_c-1' }).user).toBe('alice.b_c-1');
  });

  it.each(['..', 'a..b', 'a/b', '.hidden', ''])('rejects the user name %j, naming the key', (user) => {
    let error: unknown;
    try {
      parseSidecarConfig({ ...base, user });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toContain('user');
  });

  it('says why a user name with ".." is refused', () => {
    const result = UserNameSchema.safeParse('a..b');
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toBe('must not contain ".."');
  });
});
