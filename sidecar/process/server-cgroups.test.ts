import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WireError } from '../../shared/errors.ts';
import { silentLogger } from '../log.ts';
import { testBubblewrapPolicy } from '../../test/support/bubblewrap-policy.ts';
import { isAlive, runsFile, waitFor } from '../../test/support/processes.ts';
import { cgroupPlacement } from './cgroup-placement.ts';
import { ProcessExecutor, type ProcessHandle } from './process-executor.ts';
import { cgroupReadiness, ServerCgroups } from './server-cgroups.ts';
import { createSidecarComposition, type CpuCapState, warnOfCpuCap } from '../host/composition.ts';
import { ConfigSnapshot } from '../config/config-snapshot.ts';

const REPO = resolve(import.meta.dirname, '../..');
const IS_ROOT = process.getuid?.() === 0;
const placement = process.platform === 'linux' ? cgroupPlacement(readFileSync('/proc/self/mountinfo', 'utf8'), readFileSync('/proc/self/cgroup', 'utf8')) : {};
const HAS_PIDS = placement.pidsV1 !== undefined || (placement.unified !== undefined && readFileSync(join(placement.unified, 'cgroup.controllers'), 'utf8').includes('pids'));
const HAS_CPU = placement.cpuV1 !== undefined || (placement.unified !== undefined && readFileSync(join(placement.unified, 'cgroup.controllers'), 'utf8').split(/\s+/).includes('cpu'));
/** Where a test needs the cpu controller too: a host may give pids and not cpu. */
const cpuIt = it.skipIf(!HAS_CPU);

/** Forks 40 sleepers, noting each one's pid, and exits 0; dash exits 2 ("Cannot fork") at the first fork its limit refuses. */
const FORKER = (file: string) => `i=0; while [ $i -lt 40 ]; do sleep 60 & echo $! >> ${file}; i=$((i + 1)); done; exit 0`;

// CI runs as root, where the sidecar makes its cgroups; elsewhere there is nothing of this to see.
describe.skipIf(!IS_ROOT || !HAS_PIDS)('each server in a cgroup of its own (skipped unless root with a pids controller: only there may a process make cgroups without a delegation)', () => {
  let dir: string;
  let executor: ProcessExecutor | undefined;
  let cgroups: ServerCgroups | undefined;
  const handles: ProcessHandle[] = [];
  const warnings: Array<{ msg: string; fields: Record<string, unknown> | undefined }> = [];
  const infos: Array<{ msg: string; fields: Record<string, unknown> | undefined }> = [];
  const log = { ...silentLogger, warn: (msg: string, fields?: Record<string, unknown>) => void warnings.push({ msg, fields }), info: (msg: string, fields?: Record<string, unknown>) => void infos.push({ msg, fields }) };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cgroups-test-'));
    warnings.length = 0;
    infos.length = 0;
  });

  afterEach(async () => {
    await Promise.all(handles.splice(0).map((handle) => handle.dispose(0)));
    await executor?.disposeAll();
    cgroups?.close();
    executor = undefined;
    cgroups = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  const open = (tasks: number, memoryMib = 0, cpus = 0) => {
    const opened = ServerCgroups.open({ log });
    expect(opened.problem).toBeUndefined();
    cgroups = opened.cgroups!;
    executor = new ProcessExecutor({ termGraceMs: 300, stdinGraceMs: 100, logger: log, cgroups, treeLimits: { tasks, memoryMib, cpus } });
    return executor;
  };

  /** The cgroup directories `pid` is in, as the sidecar's placement reader finds them. */
  const placementOf = (pid: number) => cgroupPlacement(readFileSync('/proc/self/mountinfo', 'utf8'), readFileSync(`/proc/${pid}/cgroup`, 'utf8'));

  const sleepersIn = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').map(Number) : []);

  it('stops a server that forks without end at its task limit, and ends every process it started', async () => {
    const pids = join(dir, 'pids');
    const handle = await open(16).launch({ command: '/bin/sh', args: ['-c', FORKER(pids)], env: { PATH: '/usr/bin:/bin' }, policy: null });
    handles.push(handle);
    const exit = await handle.exited;
    // dash gives up at the first fork refused ("Cannot fork"); its sleepers stay, the cgroup full.
    expect(exit.code).toBe(2);
    // A reload's new limit is for launches after it: this server's log names its own (review s31).
    executor!.setTreeLimits({ tasks: 1024, memoryMib: 0, cpus: 0 });
    const started = sleepersIn(pids);
    expect(started.length).toBeGreaterThan(0);
    expect(started.length).toBeLessThan(16);
    const cgroupDir = readFileSync(`/proc/${started[0]}/cgroup`, 'utf8');
    expect(cgroupDir).toMatch(new RegExp(`switchyard-${process.pid}/\\d+$`, 'm'));
    await handle.dispose();
    await executor!.disposeAll();
    expect(started.filter(isAlive)).toEqual([]);
    // The host's owner learns of it, with the fix.
    expect(warnings).toEqual([{ msg: 'A server reached its task limit: forks were refused', fields: expect.objectContaining({ command: '/bin/sh', refused: expect.any(Number), 'tasks-per-server': 16 }) }]);
    expect((warnings[0]!.fields as { refused: number }).refused).toBeGreaterThan(0);
  });

  it('has no task limit at 0', async () => {
    const pids = join(dir, 'pids');
    const handle = await open(0).launch({ command: '/bin/sh', args: ['-c', FORKER(pids)], env: { PATH: '/usr/bin:/bin' }, policy: null });
    handles.push(handle);
    expect(await handle.exited).toEqual({ code: 0, signal: null });
    const started = sleepersIn(pids);
    expect(started).toHaveLength(40);
    await handle.dispose();
    await executor!.disposeAll();
    expect(started.filter(isAlive)).toEqual([]);
    expect(warnings).toEqual([]);
  });

  /** A Node server growing 300 MiB touched, in a child as a forking server would: memory-limit-mib (per process) lets each child have its own. */
  const GROW = `require('node:child_process').execFileSync(process.execPath, ['-e', "const a = []; for (let i = 0; i < 30; i++) a.push(Buffer.alloc(10 * 1024 * 1024, 1)); console.log('grew')"], { stdio: 'inherit' })`;

  /** How a launched process ended, and all it printed. */
  const outcomeOf = async (handle: ProcessHandle) => {
    let out = '';
    handle.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const ended = new Promise((resolve) => handle.stdout.once('end', resolve));
    const exit = await handle.exited;
    await ended;
    return { exit, out };
  };

  it('ends a server whose whole tree passes its memory limit, and says so', async () => {
    const handle = await open(0, 100).launch({ command: process.execPath, args: ['-e', GROW], env: {}, policy: null });
    handles.push(handle);
    // The kernel killed the child past 100 MiB; its parent's execFileSync threw, and it exited 1.
    expect(await outcomeOf(handle)).toEqual({ exit: { code: 1, signal: null }, out: '' });
    await handle.dispose();
    await executor!.disposeAll();
    expect(warnings).toEqual([{ msg: 'A server passed its memory limit: the kernel ended processes of it', fields: expect.objectContaining({ command: process.execPath, ended: 1, 'memory-per-server-mib': 100 }) }]);
  });

  it('counts swap within the memory limit, so a tree past it is ended, not swapped out (review s31)', async () => {
    const handle = await open(0, 100).launch({ command: '/bin/cat', args: [], env: {}, policy: null });
    handles.push(handle);
    // Past the joining shell: cat itself runs, in its cgroup.
    await waitFor(() => (runsFile(handle.pid, '/bin/cat') ? true : undefined), 'cat to run');
    const own = placementOf(handle.pid);
    const limits = [own.unified, own.memoryV1].flatMap((dir) => {
      if (dir === undefined) return [];
      if (existsSync(join(dir, 'memory.memsw.limit_in_bytes'))) return [readFileSync(join(dir, 'memory.limit_in_bytes'), 'utf8').trim(), readFileSync(join(dir, 'memory.memsw.limit_in_bytes'), 'utf8').trim()];
      if (existsSync(join(dir, 'memory.swap.max'))) return [readFileSync(join(dir, 'memory.max'), 'utf8').trim(), readFileSync(join(dir, 'memory.swap.max'), 'utf8').trim()];
      return [];
    });
    // v1: memory, then memory and swap together; v2: memory, then swap alone.
    expect([[String(100 * 1024 * 1024), String(100 * 1024 * 1024)], [String(100 * 1024 * 1024), '0']]).toContainEqual(limits);
  });

  /** The CPU cap of the cgroup `pid` is in, as the kernel reads it back: v1's quota and period, or v2's `cpu.max`. */
  const cpuCapOf = (pid: number): string => {
    const own = placementOf(pid);
    if (own.cpuV1 !== undefined) return `${readFileSync(join(own.cpuV1, 'cpu.cfs_quota_us'), 'utf8').trim()} ${readFileSync(join(own.cpuV1, 'cpu.cfs_period_us'), 'utf8').trim()}`;
    return readFileSync(join(own.unified!, 'cpu.max'), 'utf8').trim();
  };
  /** How often the kernel has held `pid`'s cgroup back for its CPU cap so far (`cpu.stat`'s `nr_throttled`). */
  const throttlesOf = (pid: number): number => {
    const own = placementOf(pid);
    return Number(/^nr_throttled (\d+)$/m.exec(readFileSync(join(own.cpuV1 ?? own.unified!, 'cpu.stat'), 'utf8'))?.[1] ?? 0);
  };

  cpuIt('holds a server\'s whole tree to its CPU cap, however many processes spin, and names it when it ends (skipped without a cpu controller)', async () => {
    // Two spinning children: a cap per process would let each have 0.05.
    const spin = 'sh -c "while :; do :; done" & sh -c "while :; do :; done" & wait';
    const handle = await open(0, 0, 0.05).launch({ command: '/bin/sh', args: ['-c', spin], env: { PATH: '/usr/bin:/bin' }, policy: null });
    handles.push(handle);
    await waitFor(() => (readFileSync(`/proc/${handle.pid}/cgroup`, 'utf8').includes(`switchyard-${process.pid}/`) ? true : undefined), 'the server to join its cgroup');
    // The kernel's 1 ms least quota is 0.01 CPU; 0.05 is 5 ms of every 100.
    expect(['5000 100000']).toContain(cpuCapOf(handle.pid));
    // The scheduler holding it back, seen as it happens: nothing timed.
    await waitFor(() => (throttlesOf(handle.pid) > 2 ? true : undefined), 'the cap to hold the tree back');
    await handle.dispose();
    await executor!.disposeAll();
    expect(infos.filter((line) => line.msg === 'A server was held to its CPU limit')).toEqual([{ msg: 'A server was held to its CPU limit', fields: expect.objectContaining({ command: '/bin/sh', throttledMs: expect.any(Number), 'cpus-per-server': 0.05 }) }]);
    expect((infos.find((line) => line.msg === 'A server was held to its CPU limit')!.fields as { throttledMs: number }).throttledMs).toBeGreaterThan(0);
  });

  cpuIt('gives a server\'s tree a CPU share of its own and no cap at 0, and says nothing of one (skipped without a cpu controller)', async () => {
    const handle = await open(0, 0, 0).launch({ command: '/bin/cat', args: [], env: {}, policy: null });
    handles.push(handle);
    await waitFor(() => (runsFile(handle.pid, '/bin/cat') ? true : undefined), 'cat to run');
    const own = placementOf(handle.pid);
    expect(own.cpuV1 ?? own.unified).toMatch(new RegExp(`switchyard-${process.pid}/\\d+$`));
    expect(['-1 100000', 'max 100000']).toContain(cpuCapOf(handle.pid));
    await handle.dispose();
    await executor!.disposeAll();
    expect(infos.filter((line) => line.msg === 'A server was held to its CPU limit')).toEqual([]);
  });

  cpuIt('gives a running server a reload\'s task limit and CPU cap at once, and keeps the memory limit it started with (skipped without a cpu controller)', async () => {
    const handle = await open(300, 100, 0).launch({ command: '/bin/cat', args: [], env: {}, policy: null });
    handles.push(handle);
    await waitFor(() => (runsFile(handle.pid, '/bin/cat') ? true : undefined), 'cat to run');
    const own = placementOf(handle.pid);
    const pidsMax = () => readFileSync(join(own.pidsV1 ?? own.unified!, 'pids.max'), 'utf8').trim();
    const memoryMax = () => readFileSync(own.memoryV1 !== undefined ? join(own.memoryV1, 'memory.limit_in_bytes') : join(own.unified!, 'memory.max'), 'utf8').trim();
    expect([pidsMax(), cpuCapOf(handle.pid), memoryMax()]).toEqual(['300', expect.stringMatching(/^(-1|max) 100000$/), String(100 * 1024 * 1024)]);
    executor!.setTreeLimits({ tasks: 50, memoryMib: 0, cpus: 0.5 });
    expect([pidsMax(), cpuCapOf(handle.pid), memoryMax()]).toEqual(['50', '50000 100000', String(100 * 1024 * 1024)]);
    executor!.setTreeLimits({ tasks: 0, memoryMib: 0, cpus: 0 });
    expect([pidsMax(), cpuCapOf(handle.pid)]).toEqual(['max', expect.stringMatching(/^(-1|max) 100000$/)]);
    expect(infos.filter((line) => line.msg === 'Running servers take the new task limit and CPU cap').map((line) => line.fields)).toEqual([
      { servers: 1, 'tasks-per-server': 50, 'cpus-per-server': 0.5 },
      { servers: 1, 'tasks-per-server': 0, 'cpus-per-server': 0 },
    ]);
  });

  it('puts each agent\'s servers under a cgroup of the agent\'s, so agents share the CPU before their servers do, and removes it with the agent\'s last server', async () => {
    const exec = open(0);
    const cat = async (agent: string) => {
      const handle = await exec.launch({ command: '/bin/cat', args: [], env: {}, policy: null, agent });
      handles.push(handle);
      await waitFor(() => (runsFile(handle.pid, '/bin/cat') ? true : undefined), 'cat to run');
      return handle;
    };
    const [first, second, bobs] = [await cat('alice'), await cat('alice'), await cat('bob')];
    const agentOf = (handle: ProcessHandle) => {
      const own = placementOf(handle.pid);
      // In every hierarchy the sidecar uses: the CPU's, the task limit's, the unified one.
      const dirs = [own.cpuV1, own.pidsV1, own.unified].filter((dir): dir is string => dir !== undefined);
      const parents = new Set(dirs.map((dir) => /\/switchyard-\d+\/(agent-[^/]+)\/\d+$/.exec(dir)?.[1] ?? dir));
      expect(parents.size).toBe(1);
      return { name: [...parents][0], dir: dirname(own.cpuV1 ?? own.pidsV1 ?? own.unified!) };
    };
    expect([agentOf(first).name, agentOf(second).name, agentOf(bobs).name]).toEqual(['agent-alice', 'agent-alice', 'agent-bob']);
    const alice = agentOf(first).dir;
    const firstDir = placementOf(first.pid).cpuV1 ?? placementOf(first.pid).pidsV1 ?? placementOf(first.pid).unified!;
    await first.dispose();
    await waitFor(() => (existsSync(firstDir) ? undefined : true), 'the first server\'s cgroup removed');
    expect(existsSync(alice)).toBe(true);
    await second.dispose();
    await executor!.disposeAll();
    await waitFor(() => (existsSync(alice) ? undefined : true), 'alice\'s cgroup removed with her last server');
    // A name a cgroup could not hold as it is goes into no agent's.
    const odd = await exec.launch({ command: '/bin/cat', args: [], env: {}, policy: null, agent: '../up' });
    handles.push(odd);
    await waitFor(() => (runsFile(odd.pid, '/bin/cat') ? true : undefined), 'cat to run');
    expect(readFileSync(`/proc/${odd.pid}/cgroup`, 'utf8')).toMatch(new RegExp(`switchyard-${process.pid}/\\d+$`, 'm'));
  });

  /** A shell that starts `n` sleepers, says so, and waits on its stdin: `n + 1` tasks held. */
  const HOLDER = (n: number) => `i=0; while [ $i -lt ${n} ]; do sleep 60 & i=$((i + 1)); done; echo held; read line`;

  it('holds all of one agent\'s servers to the agent\'s task limit together, never another agent\'s, and names both limits', async () => {
    const exec = open(100);
    cgroups!.setAgentLimits({ tasks: 24, memoryMib: 0 });
    // Alice's first server holds 16 tasks, well under its own limit of 100 and under hers.
    const holder = await exec.launch({ command: '/bin/sh', args: ['-c', HOLDER(15)], env: { PATH: '/usr/bin:/bin' }, policy: null, agent: 'alice' });
    handles.push(holder);
    await new Promise((resolve) => holder.stdout.once('data', resolve));
    // Her second one gets only what is left of her 24: each alone would have 100.
    const hers = join(dir, 'hers');
    const second = await exec.launch({ command: '/bin/sh', args: ['-c', FORKER(hers)], env: { PATH: '/usr/bin:/bin' }, policy: null, agent: 'alice' });
    handles.push(second);
    expect(await second.exited).toEqual({ code: 2, signal: null });
    expect(sleepersIn(hers).length).toBeLessThan(8);
    // Bob's agent has a limit of its own, and Alice's full one takes nothing from him.
    const his = join(dir, 'his');
    const bobs = await exec.launch({ command: '/bin/sh', args: ['-c', FORKER(his).replace('-lt 40', '-lt 20')], env: { PATH: '/usr/bin:/bin' }, policy: null, agent: 'bob' });
    handles.push(bobs);
    expect(await bobs.exited).toEqual({ code: 0, signal: null });
    expect(sleepersIn(his)).toHaveLength(20);
    await Promise.all(handles.splice(0).map((handle) => handle.dispose(0)));
    await executor!.disposeAll();
    expect([...sleepersIn(hers), ...sleepersIn(his)].filter(isAlive)).toEqual([]);
    expect(warnings).toEqual([{ msg: 'A server reached its task limit, or its agent\'s: forks were refused', fields: expect.objectContaining({ refused: expect.any(Number), 'tasks-per-server': 100, 'tasks-per-agent': 24, fix: expect.stringContaining('limits.tasks-per-agent') }) }]);
  });

  it('ends an agent\'s server past the agent\'s memory limit, and names the limit the kernel met: the agent\'s, or the server\'s own', async () => {
    const exec = open(0, 0);
    /** The growing server, ended by the kernel (its parent exits 1), for `agent`. */
    const grownFor = async (agent: string) => {
      const handle = await exec.launch({ command: process.execPath, args: ['-e', GROW], env: {}, policy: null, agent });
      handles.push(handle);
      expect(await outcomeOf(handle)).toEqual({ exit: { code: 1, signal: null }, out: '' });
      await handle.dispose();
      await executor!.disposeAll();
    };
    cgroups!.setAgentLimits({ tasks: 0, memoryMib: 100 });
    await grownFor('alice');
    expect(warnings).toEqual([{ msg: 'A server\'s agent passed its memory limit: the kernel ended processes of this server', fields: expect.objectContaining({ ended: 1, 'memory-per-agent-mib': 100, fix: expect.stringContaining('limits.memory-per-agent-mib') }) }]);
    // Its own limit below the agent's: that is the one named.
    warnings.length = 0;
    executor!.setTreeLimits({ tasks: 0, memoryMib: 100, cpus: 0 });
    cgroups!.setAgentLimits({ tasks: 0, memoryMib: 1000 });
    await grownFor('bob');
    expect(warnings).toEqual([{ msg: 'A server passed its memory limit: the kernel ended processes of it', fields: expect.objectContaining({ ended: 1, 'memory-per-server-mib': 100 }) }]);
  });

  it('gives running agents a reload\'s task limit and a raised memory limit at once, and a lowered memory limit only from the agent\'s next cgroup', async () => {
    const exec = open(0);
    cgroups!.setAgentLimits({ tasks: 300, memoryMib: 100 });
    const cat = async (agent: string) => {
      const handle = await exec.launch({ command: '/bin/cat', args: [], env: {}, policy: null, agent });
      handles.push(handle);
      await waitFor(() => (runsFile(handle.pid, '/bin/cat') ? true : undefined), 'cat to run');
      const own = placementOf(handle.pid);
      const pids = dirname(own.pidsV1 ?? own.unified!);
      const memory = own.memoryV1 !== undefined ? join(dirname(own.memoryV1), 'memory.limit_in_bytes') : join(dirname(own.unified!), 'memory.max');
      return () => [readFileSync(join(pids, 'pids.max'), 'utf8').trim(), existsSync(memory) ? Number(readFileSync(memory, 'utf8').trim()) / 2 ** 20 : 'no memory controller'];
    };
    const alice = await cat('alice');
    const mib = (n: number) => (alice()[1] === 'no memory controller' ? 'no memory controller' : n);
    expect(alice()).toEqual(['300', mib(100)]);
    expect(cgroups!.setAgentLimits({ tasks: 50, memoryMib: 200 })).toEqual({ agents: 1, failed: 0 });
    expect(alice()).toEqual(['50', mib(200)]);
    // Lowered: a running agent keeps what it has, since a lower one could end a busy server; a new agent's cgroup gets it.
    expect(cgroups!.setAgentLimits({ tasks: 0, memoryMib: 150 })).toEqual({ agents: 1, failed: 0 });
    expect(alice()).toEqual(['max', mib(200)]);
    const bob = await cat('bob');
    expect(bob()).toEqual(['max', mib(150)]);
    expect(cgroups!.setAgentLimits({ tasks: 0, memoryMib: 150 })).toEqual({ agents: 0, failed: 0 });
    // Raised from the setting, but below what Alice's cgroup still holds: hers is not lowered (review s33), Bob's is raised.
    expect(cgroups!.setAgentLimits({ tasks: 0, memoryMib: 175 })).toEqual({ agents: mib(1) === 'no memory controller' ? 0 : 1, failed: 0 });
    expect([alice(), bob()]).toEqual([['max', mib(200)], ['max', mib(175)]]);
    // None at all: raised for both.
    expect(cgroups!.setAgentLimits({ tasks: 0, memoryMib: 0 })).toEqual({ agents: 2, failed: 0 });
    for (const limits of [alice(), bob()]) expect(limits[1] === 'no memory controller' || (limits[1] as number) > 1_000_000).toBe(true);
  });

  it.skipIf(placement.cpuV1 === undefined)('writes a cap above the CPU quota the sidecar runs under as that quota, which cgroup v1 would refuse (EINVAL) and fail every launch (review s32; skipped without a v1 cpu hierarchy)', async () => {
    // A cgroup with a quota of half a CPU, standing for the sidecar's own unit (CPUQuota=50%).
    const own = join(placement.cpuV1!, `sy-quota-test-${process.pid}`);
    mkdirSync(own);
    try {
      writeFileSync(join(own, 'cpu.cfs_period_us'), '100000');
      writeFileSync(join(own, 'cpu.cfs_quota_us'), '50000');
      const opened = ServerCgroups.open({ log, placement: { cpuV1: own } });
      expect(opened.cgroups !== undefined && opened.support).toMatchObject({ cpu: true, cpuCeiling: 0.5 });
      const launch = opened.cgroups!.forLaunch({ tasks: 0, memoryMib: 0, cpus: 2 }, 'alice');
      expect(readFileSync(join(launch.dirs[0]!, 'cpu.cfs_quota_us'), 'utf8').trim()).toBe('50000');
      // Without the clamp, the kernel's refusal this stands in for.
      expect(() => writeFileSync(join(launch.dirs[0]!, 'cpu.cfs_quota_us'), '200000')).toThrow(/EINVAL/);
      expect(launch.retune({ tasks: 0, cpus: 0.25 })).toBe('changed');
      expect(readFileSync(join(launch.dirs[0]!, 'cpu.cfs_quota_us'), 'utf8').trim()).toBe('25000');
      await launch.end();
      opened.cgroups!.close();
    } finally {
      rmdirSync(own);
    }
  });

  it('lets the same server grow where no memory limit is set', async () => {
    const handle = await open(0, 0).launch({ command: process.execPath, args: ['-e', GROW], env: {}, policy: null });
    handles.push(handle);
    expect(await outcomeOf(handle)).toEqual({ exit: { code: 0, signal: null }, out: 'grew\n' });
  });

  it('holds the limit inside a bubblewrap sandbox, whose PID namespace hides nothing from the host\'s cgroup', async () => {
    const pids = join(dir, 'pids');
    const handle = await open(16).launch({ command: '/bin/sh', args: ['-c', FORKER(pids)], env: {}, policy: testBubblewrapPolicy(REPO, { extra: ['--bind', dir, dir] }) });
    handles.push(handle);
    // bubblewrap passes on its shell's status: 2, the fork refused in there.
    expect(await handle.exited).toEqual({ code: 2, signal: null });
    const started = sleepersIn(pids);
    expect(started.length).toBeGreaterThan(0);
    expect(started.length).toBeLessThan(16);
    await handle.dispose();
    await executor!.disposeAll();
    expect(warnings.map((warning) => warning.msg)).toEqual(['A server reached its task limit: forks were refused']);
  });

  it('ends a descendant that left the server\'s process group (setsid) with the server', async () => {
    const escaped = join(dir, 'escaped');
    const handle = await open(64).launch({
      command: '/bin/sh',
      args: ['-c', `setsid /bin/sh -c 'echo $$ > ${escaped}.tmp; mv ${escaped}.tmp ${escaped}; exec sleep 300' & read line`],
      env: { PATH: '/usr/bin:/bin' },
      policy: null,
    });
    handles.push(handle);
    const pid = await waitFor(() => (existsSync(escaped) ? Number(readFileSync(escaped, 'utf8')) : undefined), 'the escaped process');
    expect(isAlive(pid)).toBe(true);
    await handle.dispose();
    await executor!.disposeAll();
    expect(isAlive(pid)).toBe(false);
  });

  it('ends a descendant that left the server\'s process group with a sidecar killed outright, through the group watchdog', { timeout: 60_000 }, async () => {
    const escaped = join(dir, 'escaped');
    // A stand-in for a sidecar: its executor, with cgroups and the watchdog, launches a server whose child calls setsid.
    const script = [
      `const { ProcessExecutor } = await import(${JSON.stringify(join(import.meta.dirname, 'process-executor.ts'))});`,
      `const { ServerCgroups } = await import(${JSON.stringify(join(import.meta.dirname, 'server-cgroups.ts'))});`,
      "const log = { warn() {}, info() {}, debug() {}, error() {}, child() { return this; } };",
      'const executor = new ProcessExecutor({ logger: log, groupWatchdog: true, cgroups: ServerCgroups.open({ log }).cgroups, treeLimits: { tasks: 64, memoryMib: 0 } });',
      `await executor.launch({ command: '/bin/sh', args: ['-c', ${JSON.stringify(`setsid /bin/sh -c 'echo $$ > ${escaped}.tmp; mv ${escaped}.tmp ${escaped}; exec sleep 300' & read line`)}], env: { PATH: '/usr/bin:/bin' }, policy: null });`,
      // Said once the launch is done, its watchdog started: killed before, the sidecar would leave the tree to the next start.
      "console.log('launched');",
      'setInterval(() => {}, 60000);',
    ].join('\n');
    const standIn = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: REPO, stdio: ['ignore', 'pipe', 'inherit'] });
    const launched = new Promise((resolve) => standIn.stdout!.once('data', resolve));
    try {
      await launched;
      // Up to 30 s: tsx compiles the executor's modules anew after an edit, on a loaded machine.
      const pid = await waitFor(() => (existsSync(escaped) ? Number(readFileSync(escaped, 'utf8')) : undefined), 'the escaped process', 1200);
      standIn.kill('SIGKILL');
      await waitFor(() => (isAlive(pid) ? undefined : true), 'the escaped process ended by the watchdog');
    } finally {
      standIn.kill('SIGKILL');
      // What the next sidecar's start removes: the stand-in's cgroups. One still holding the killed
      // process as a zombie (v1 lists it until PID 1 reaps it) is left to that start.
      if (standIn.exitCode === null && standIn.signalCode === null) await new Promise((resolve) => standIn.once('exit', resolve));
      ServerCgroups.open({ log: silentLogger }).cgroups?.close();
    }
  });

  it('refuses a launch whose cgroup cannot be made, and starts nothing', async () => {
    const opened = open(16);
    // The sidecar's own cgroups gone behind its back: no launch runs outside its limit.
    const ownBases = [placement.unified, placement.pidsV1].flatMap((base) => (base === undefined ? [] : [join(base, `switchyard-${process.pid}`)]));
    for (const base of ownBases) rmdirSync(base);
    const error = await opened.launch({ command: '/bin/true', args: [], env: {}, policy: null }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(WireError);
    expect(error).toMatchObject({ reason: 'launch-failed', message: 'Cannot start process: its cgroup could not be made, see the sidecar log' });
    expect(opened.spawnCount).toBe(0);
  });

  it('ends what a sidecar that is gone left in its cgroups, and removes them', async () => {
    // A dead sidecar's pid: a child that has exited and been reaped.
    const dead = spawn('/bin/true');
    const deadPid = dead.pid!;
    await new Promise((resolve) => dead.once('exit', resolve));
    const base = placement.pidsV1 ?? placement.unified!;
    // Under its agent's cgroup, as the sidecar makes them: removed deepest first.
    const left = join(base, `switchyard-${deadPid}`, 'agent-alice', '7');
    mkdirSync(left, { recursive: true });
    const orphan = spawn('/bin/sh', ['-c', `echo $$ > ${join(left, 'cgroup.procs')}; exec sleep 300`], { stdio: 'ignore', detached: true });
    orphan.unref();
    await waitFor(() => (readFileSync(join(left, 'cgroup.procs'), 'utf8').includes(String(orphan.pid)) ? true : undefined), 'the orphan in its cgroup');
    open(16);
    expect(warnings).toContainEqual({ msg: 'Ended server processes a sidecar that is gone left running', fields: { processes: 1, cgroup: base } });
    await waitFor(() => (isAlive(orphan.pid!) ? undefined : true), 'the orphan ended');
    await waitFor(() => (existsSync(join(base, `switchyard-${deadPid}`)) ? undefined : true), 'its cgroups removed');
  });
});

describe('the sidecar\'s start', () => {
  it('warns of limits of a whole tree a Node server cannot start under, as check does', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cgroups-start-'));
    const warnings: Array<{ msg: string; fields: Record<string, unknown> | undefined }> = [];
    const log = { ...silentLogger, warn: (msg: string, fields?: Record<string, unknown>) => void warnings.push({ msg, fields }) };
    const limits = { processesPerAgent: 4, processes: 4, memoryLimitMib: 0, launchBurstPerAgent: 4, launchesPerAgentPerMinute: 0 };
    const sidecar = createSidecarComposition({ configDir: dir, entityId: 'box', user: 'tester', log, limits: { ...limits, tasksPerServer: 8, memoryPerServerMib: 32, cpusPerServer: 0.02, tasksPerAgent: 12, memoryPerAgentMib: 48 } });
    try {
      expect(warnings.filter((warning) => warning.msg === 'Server limit too low for a Node server').map((warning) => warning.fields)).toEqual([
        { 'memory-per-server-mib': 32, why: expect.stringMatching(/^32 MiB is below the 64 MiB a Node server needs to start/) },
        { 'memory-per-agent-mib': 48, why: expect.stringMatching(/^48 MiB is below the 64 MiB a Node server needs to start/) },
        { 'tasks-per-server': 8, why: expect.stringMatching(/^8 is below the 16 processes and threads a Node server needs to start/) },
        { 'tasks-per-agent': 12, why: expect.stringMatching(/^12 is below the 16 processes and threads a Node server needs to start/) },
        { 'cpus-per-server': 0.02, why: expect.stringMatching(/^0.02 CPU is below the 0.1 a Node server needs to start within seconds: its start, about 0.5 s of CPU, takes 25 s or more under it/) },
      ]);
    } finally {
      await sidecar.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!IS_ROOT || !HAS_PIDS)('a sidecar.json reload (skipped unless root with a pids controller)', () => {
  it('gives running agents\' cgroups the new agent limits, and says so', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cgroups-reload-'));
    const infos: Array<{ msg: string; fields: Record<string, unknown> | undefined }> = [];
    const log = { ...silentLogger, info: (msg: string, fields?: Record<string, unknown>) => void infos.push({ msg, fields }) };
    const limits = { processesPerAgent: 4, processes: 4, memoryLimitMib: 0, launchBurstPerAgent: 4, launchesPerAgentPerMinute: 0, tasksPerServer: 100, memoryPerServerMib: 0, cpusPerServer: 0 };
    const sidecar = createSidecarComposition({ configDir: dir, entityId: 'box', user: 'tester', log, limits: { ...limits, tasksPerAgent: 300 } });
    try {
      // The start says what each agent is held to.
      expect(infos.find((line) => line.msg === 'Each server runs in a cgroup of its own')?.fields).toMatchObject({ 'tasks-per-server': 100, 'tasks-per-agent': 300 });
      const handle = await sidecar.executor.launch({ command: '/bin/cat', args: [], env: {}, policy: null, agent: 'alice' });
      await waitFor(() => (runsFile(handle.pid, '/bin/cat') ? true : undefined), 'cat to run');
      const own = cgroupPlacement(readFileSync('/proc/self/mountinfo', 'utf8'), readFileSync(`/proc/${handle.pid}/cgroup`, 'utf8'));
      const agentPidsMax = () => readFileSync(join(dirname(own.pidsV1 ?? own.unified!), 'pids.max'), 'utf8').trim();
      expect(agentPidsMax()).toBe('300');
      await sidecar.reload({ snapshot: ConfigSnapshot.take(dir), trust: { allowUncontained: true }, sandbox: { tmpSizeMib: 64 }, limits: { ...limits, tasksPerAgent: 40 } });
      expect(agentPidsMax()).toBe('40');
      expect(infos.filter((line) => line.msg === 'Running agents\' servers take the new agent limits').map((line) => line.fields)).toEqual([{ agents: 1, 'tasks-per-agent': 40, 'memory-per-agent-mib': 16384 }]);
      await handle.dispose();
    } finally {
      await sidecar.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the CPU cap\'s warnings, of a cap that cannot hold as set', () => {
  const said = (cpus: number, state: CpuCapState) => {
    const warnings: Array<{ msg: string; fields: Record<string, unknown> | undefined }> = [];
    warnOfCpuCap(cpus, state, { ...silentLogger, warn: (msg: string, fields?: Record<string, unknown>) => void warnings.push({ msg, fields }) });
    return warnings;
  };

  it('says a cap is not applied where the servers\' cgroups have no cpu controller, and why', () => {
    expect(said(1.5, { problem: 'no cpu controller is mounted where this sidecar can see it' })).toEqual([
      { msg: 'CPU cap not applied: the servers\' cgroups have no cpu controller', fields: expect.objectContaining({ 'cpus-per-server': 1.5, why: 'no cpu controller is mounted where this sidecar can see it' }) },
    ]);
  });

  it('says a cap above the quota the sidecar runs under gives servers at most that quota', () => {
    expect(said(2, { ceiling: 0.5 })).toEqual([{ msg: 'CPU cap above the sidecar\'s own CPU quota: servers get at most that', fields: expect.objectContaining({ 'cpus-per-server': 2, quota: 0.5 }) }]);
  });

  it('says nothing of no cap, or of a cap within the quota', () => {
    expect([...said(0, { problem: 'none' }), ...said(0.5, { ceiling: 0.5 }), ...said(4, {})]).toEqual([]);
  });
});

describe('cgroupReadiness', () => {
  it('says where a sidecar would make its servers\' cgroups, or why it could not', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cgroups-ready-'));
    try {
      writeFileSync(join(dir, 'cgroup.controllers'), 'cpu memory pids\n');
      expect(cgroupReadiness({ unified: dir })).toEqual({ ok: true, dir, v2: true, memory: true, cpu: true });
      writeFileSync(join(dir, 'cgroup.controllers'), 'cpu memory\n');
      expect(cgroupReadiness({ unified: dir })).toEqual({ ok: false, problem: `its cgroup ${dir} has no pids controller` });
      expect(cgroupReadiness({ unified: dir, pidsV1: dir })).toEqual({ ok: true, dir, v2: false, memory: true, cpu: true });
      expect(cgroupReadiness({ pidsV1: dir })).toEqual({ ok: true, dir, v2: false, memory: false, cpu: false });
      expect(cgroupReadiness({ pidsV1: dir, memoryV1: dir })).toEqual({ ok: true, dir, v2: false, memory: true, cpu: false });
      expect(cgroupReadiness({ pidsV1: dir, cpuV1: dir })).toEqual({ ok: true, dir, v2: false, memory: false, cpu: true });
      expect(cgroupReadiness({ pidsV1: join(dir, 'gone') })).toEqual({ ok: false, problem: `cannot make cgroups in ${dir}/gone: ENOENT` });
      expect(cgroupReadiness({})).toEqual({ ok: false, problem: 'no cgroup hierarchy is mounted where this process can see it' });
      // A v2 cgroup shared with another process (PID 1 here: a login shell's scope, a container's init) cannot hand pids down (review s31).
      writeFileSync(join(dir, 'cgroup.controllers'), 'pids memory\n');
      writeFileSync(join(dir, 'cgroup.procs'), `1\n${process.pid}\n`);
      expect(cgroupReadiness({ unified: dir })).toEqual({ ok: false, problem: `a sidecar started as this doctor was shares its cgroup ${dir} with 1 other process(es), which a cgroup v2 that limits its children may not hold: run it as a service of its own (a systemd unit with Delegate=yes)` });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('ServerCgroups.open', () => {
  it('says why where no cgroup is mounted', () => {
    expect(ServerCgroups.open({ log: silentLogger, placement: {} })).toEqual({ cgroups: undefined, problem: 'no cgroup hierarchy is mounted where this sidecar can see it' });
  });

  it('says why where it may not make one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cgroups-open-'));
    try {
      // A file where its cgroup would be: mkdir under it fails, as it would without write permission (root has every permission).
      const own = join(dir, 'file');
      writeFileSync(own, '');
      const opened = ServerCgroups.open({ log: silentLogger, placement: { unified: own } });
      expect(opened).toEqual({ cgroups: undefined, problem: `cannot make ${own}/switchyard-${process.pid}: ENOTDIR` });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

const UNIFIED_ROOT = placement.unified === '/sys/fs/cgroup/unified' ? placement.unified : undefined;
const SPARE = UNIFIED_ROOT === undefined ? undefined : readFileSync(join(UNIFIED_ROOT, 'cgroup.controllers'), 'utf8').trim().split(/\s+/).find((name) => name !== '' && name !== 'pids');

// The leaf a sidecar moves into on cgroup v2, tried on a real unified hierarchy with a controller it
// has to spare: this host's v2 hierarchy sits beside the v1 ones (hybrid), which hold pids.
describe.skipIf(!IS_ROOT || SPARE === undefined)('a sidecar alone in its cgroup v2 moves into a leaf to hand a controller to its servers (skipped unless root on a hybrid host, whose unified hierarchy has a controller to spare)', () => {
  const root = UNIFIED_ROOT!;
  const own = join(root, `switchyard-leaf-test-${process.pid}`);
  const children: ReturnType<typeof spawn>[] = [];
  let addedAtRoot = false;

  beforeEach(() => {
    addedAtRoot = !readFileSync(join(root, 'cgroup.subtree_control'), 'utf8').includes(SPARE!);
    if (addedAtRoot) writeFileSync(join(root, 'cgroup.subtree_control'), `+${SPARE}`);
    mkdirSync(own);
  });

  afterEach(async () => {
    for (const child of children.splice(0)) child.kill('SIGKILL');
    await waitFor(() => (readFileSync(join(own, 'cgroup.events'), 'utf8').includes('populated 0') ? true : undefined), 'the test cgroup empty');
    for (const leaf of readdirSync(own, { withFileTypes: true }).filter((entry) => entry.isDirectory())) rmdirSync(join(own, leaf.name));
    rmdirSync(own);
    if (addedAtRoot) writeFileSync(join(root, 'cgroup.subtree_control'), `-${SPARE}`);
  });

  /** A Node process in `own` that asks `enableForChildren` once told to, and prints its answer and its cgroup. */
  const sidecarStandIn = async () => {
    const script = `process.stdin.once('data', async () => { const { enableForChildren } = await import(${JSON.stringify(join(import.meta.dirname, 'server-cgroups.ts'))}); const result = enableForChildren(${JSON.stringify(own)}, process.pid, ${JSON.stringify(SPARE)}); console.log(JSON.stringify({ result, cgroup: require('node:fs').readFileSync('/proc/self/cgroup', 'utf8').split('\\n').find((line) => line.startsWith('0::')) })); process.stdin.destroy(); });`;
    const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
    children.push(child);
    writeFileSync(join(own, 'cgroup.procs'), String(child.pid));
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stdin!.write('go\n');
    await new Promise((resolve) => child.once('exit', resolve));
    return { pid: child.pid!, answer: JSON.parse(out) as { result: true | string; cgroup: string } };
  };

  it('moves into switchyard-sidecar-PID and enables the controller for the cgroups beside it', async () => {
    const { pid, answer } = await sidecarStandIn();
    expect(answer).toEqual({ result: true, cgroup: `0::/${own.slice(root.length + 1)}/switchyard-sidecar-${pid}` });
    expect(readFileSync(join(own, 'cgroup.subtree_control'), 'utf8').trim().split(' ')).toContain(SPARE);
  });

  it('leaves a cgroup it shares with another process as it is, and says why', async () => {
    const other = spawn('/bin/sh', ['-c', `echo $$ > ${join(own, 'cgroup.procs')}; exec sleep 300`], { stdio: 'ignore' });
    children.push(other);
    await waitFor(() => (readFileSync(join(own, 'cgroup.procs'), 'utf8').includes(String(other.pid)) ? true : undefined), 'the other process in the cgroup');
    const { answer } = await sidecarStandIn();
    expect(answer).toEqual({ result: `the sidecar shares its cgroup ${own} with 1 other process(es), which a cgroup v2 that limits its children may not hold: run it as a service of its own (a systemd unit with Delegate=yes)`, cgroup: `0::/${own.slice(root.length + 1)}` });
    expect(readFileSync(join(own, 'cgroup.subtree_control'), 'utf8').trim()).toBe('');
  });
});
