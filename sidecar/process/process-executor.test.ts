import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { text } from 'node:stream/consumers';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalError, WireError } from '../../shared/errors.ts';
import type { BubblewrapPolicy } from '../sandbox/containment-policy.ts';
import { seatbeltLaunch } from '../sandbox/seatbelt/seatbelt-backend.ts';
import { ProcessExecutor, type ProcessHandle, type SpawnAttempt } from './process-executor.ts';
import { type ContainedLaunch, LAUNCH_AGAIN, type SpawnedSandbox } from './contained-launch.ts';
import { testBubblewrapPolicy } from '../../test/support/bubblewrap-policy.ts';
import { isAlive, waitFor } from '../../test/support/processes.ts';
import { childrenOf } from '../../test/support/descriptors.ts';
import { oldSetpriv } from '../../test/support/old-setpriv.ts';
import { findSetpriv } from './parent-death.ts';
import { createLogger, silentLogger } from '../log.ts';

const REPO = resolve(import.meta.dirname, '../..');
const FIXTURES = join(REPO, 'test/fixtures');
const NODE = process.execPath;

function bwrapPolicy(extra: readonly string[] = [], executable = '/usr/bin/bwrap'): BubblewrapPolicy {
  return testBubblewrapPolicy(REPO, { extra, executable, env: { SANDBOXED: 'yes' } });
}

describe('ProcessExecutor', () => {
  let executor: ProcessExecutor;
  let attempts: SpawnAttempt[];
  let handles: ProcessHandle[];
  let dir: string;

  beforeEach(() => {
    attempts = [];
    handles = [];
    dir = mkdtempSync(join(tmpdir(), 'executor-test-'));
    executor = new ProcessExecutor({ termGraceMs: 300, stdinGraceMs: 100, onSpawn: (a) => attempts.push(a) });
  });

  afterEach(async () => {
    await Promise.all(handles.map((h) => h.dispose(0)));
    await executor.disposeAll();
    rmSync(dir, { recursive: true, force: true });
  });

  const launch = async (...args: Parameters<ProcessExecutor['launch']>) => {
    const handle = await executor.launch(...args);
    handles.push(handle);
    return handle;
  };

  it('still launches ordinary servers when setpriv lacks --pdeathsig (util-linux before 2.33), without it, and says so once', async () => {
    const warnings: Array<{ msg: string; fields: Record<string, unknown> }> = [];
    const logger = { ...silentLogger, warn: (msg: string, fields: Record<string, unknown> = {}) => void warnings.push({ msg, fields }) };
    const current = findSetpriv(process.env);
    expect(current, 'setpriv (util-linux) is installed').not.toBeNull();
    for (const [setpriv, warned] of [[current!, 0], [oldSetpriv(dir), 1]] as const) {
      warnings.length = 0;
      const own = new ProcessExecutor({ termGraceMs: 300, stdinGraceMs: 100, setpriv, logger });
      try {
        for (const word of ['one', 'two']) {
          const handle = await own.launch({ command: NODE, args: ['-e', 'process.stdin.pipe(process.stdout)'], env: {}, policy: null });
          handle.stdin.end(word);
          expect(await text(handle.stdout)).toBe(word);
          await handle.dispose(0);
        }
      } finally {
        await own.disposeAll();
      }
      expect(warnings, setpriv).toHaveLength(warned);
    }
    expect(warnings[0]).toMatchObject({ msg: expect.stringContaining('setpriv does not take --pdeathsig'), fields: { problem: expect.stringContaining("unrecognized option '--pdeathsig'") } });
  });

  it('launches an uncontained process with exactly the given environment, in its own process group', async () => {
    const script = 'process.stdout.write(JSON.stringify({env: process.env, cwd: process.cwd()}))';
    const handle = await launch({ command: NODE, args: ['-e', script], cwd: dir, env: { ONLY: 'this' }, policy: null });
    const stat = readFileSync(`/proc/${handle.pid}/stat`, 'utf8');
    expect(Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2])).toBe(handle.pid);
    const seen = JSON.parse(await text(handle.stdout));
    expect(seen).toEqual({ env: { ONLY: 'this' }, cwd: dir });
    expect(await handle.exited).toEqual({ code: 0, signal: null });
    expect(attempts).toEqual([{ backend: 'none', file: NODE, pid: handle.pid }]);
  });

  it('rejects with launch-failed when an uncontained command does not exist', async () => {
    const error = await executor.launch({ command: join(dir, 'missing'), args: [], env: {}, policy: null }).catch((e) => e);
    expect(error).toBeInstanceOf(WireError);
    expect(error.reason).toBe('launch-failed');
    expect(error.detail.errno).toBe('ENOENT');
    expect(executor.liveCount).toBe(0);
  });

  it('runs the command under bubblewrap with the policy environment and working directory', async () => {
    const script = 'process.stdout.write(JSON.stringify({env: process.env, cwd: process.cwd(), net: Object.keys(require("os").networkInterfaces())}))';
    const handle = await launch({ command: '/usr/bin/node', args: ['-e', script], cwd: dir, env: { LEAK: 'no' }, policy: bwrapPolicy() });
    const seen = JSON.parse(await text(handle.stdout));
    expect(seen.env).toEqual({ PATH: '/usr/bin:/bin', SANDBOXED: 'yes', PWD: REPO });
    expect(seen.cwd).toBe(REPO);
    expect(seen.net).toEqual(['lo']);
    expect(await handle.exited).toEqual({ code: 0, signal: null });
    expect(attempts.map((a) => a.backend)).toEqual(['bubblewrap']);
  });

  it('launches again when the sandbox setup lost a race its backend reports (LAUNCH_AGAIN), the lost sandboxes gone, at most three times', async () => {
    const policy = bwrapPolicy();
    const racing = (losses: number) => {
      let lost = 0;
      return {
        ...policy,
        whenReady(sandbox: SpawnedSandbox, signal: AbortSignal) {
          if (lost++ >= losses) return policy.whenReady(sandbox, signal);
          sandbox.kill();
          return Promise.reject(new LocalError(LAUNCH_AGAIN, 'lost the race'));
        },
      };
    };
    const script = 'process.stdout.write("up")';
    const handle = await launch({ command: '/usr/bin/node', args: ['-e', script], env: {}, policy: racing(2) });
    expect(await text(handle.stdout)).toBe('up');
    expect(attempts.map((a) => a.backend)).toEqual(['bubblewrap', 'bubblewrap', 'bubblewrap']);
    for (const lost of attempts.slice(0, 2)) expect(isAlive(lost.pid!)).toBe(false);
    attempts.length = 0;
    const error = await executor.launch({ command: '/usr/bin/node', args: ['-e', script], env: {}, policy: racing(3) }).catch((e) => e);
    expect(error).toBeInstanceOf(WireError);
    expect(error.reason).toBe('launch-failed');
    expect(attempts).toHaveLength(3);
    await handle.exited;
    await waitFor(() => (executor.liveCount === 0 ? true : undefined), 'every sandbox gone');
  });

  it('fails closed with containment-unavailable when the bubblewrap executable is missing, and never retries', async () => {
    const marker = join(dir, 'marker');
    const request = { command: NODE, args: [join(FIXTURES, 'marker-server.mjs'), marker], env: {}, policy: bwrapPolicy([], join(dir, 'no-bwrap')) };
    const error = await executor.launch(request).catch((e) => e);
    expect(error).toBeInstanceOf(WireError);
    expect(error.reason).toBe('containment-unavailable');
    expect(attempts.map((a) => [a.backend, a.file])).toEqual([['bubblewrap', join(dir, 'no-bwrap')]]);
    expect(existsSync(marker)).toBe(false);
  });

  it('rejects with launch-failed when bubblewrap fails during setup, and never retries', async () => {
    const patient = new ProcessExecutor({ setupWindowMs: 10_000, onSpawn: (a) => attempts.push(a) });
    const marker = join(dir, 'marker');
    const policy = bwrapPolicy(['--ro-bind', join(dir, 'no-such-source'), '/mnt']);
    const error = await patient.launch({ command: NODE, args: [join(FIXTURES, 'marker-server.mjs'), marker], env: {}, policy }).catch((e) => e);
    expect(error).toBeInstanceOf(WireError);
    expect(error.reason).toBe('launch-failed');
    expect(error.message).not.toContain('no-such-source');
    expect(attempts.map((a) => a.backend)).toEqual(['bubblewrap']);
    expect(patient.liveCount).toBe(0);
    expect(existsSync(marker)).toBe(false);
  });

  it('refuses a Seatbelt policy off macOS before spawning anything', async () => {
    const policy = seatbeltLaunch({ backend: 'seatbelt', executable: '/usr/bin/sandbox-exec', profile: '(version 1)', env: {}, cwd: '/', revision: 'sha256:x' }, 'linux');
    const error = await executor.launch({ command: NODE, args: [], env: {}, policy }).catch((e) => e);
    expect(error.reason).toBe('containment-unavailable');
    expect(attempts).toEqual([]);
  });

  it('launches a Seatbelt policy through its executable on macOS, failing closed when it is missing', async () => {
    const mac = new ProcessExecutor({ onSpawn: (a) => attempts.push(a) });
    const seatbelt = seatbeltLaunch({ backend: 'seatbelt', executable: join(dir, 'sandbox-exec'), profile: '(version 1)', env: {}, cwd: '/', revision: 'sha256:x' }, 'darwin');
    // Seatbelt has no way to close descriptors, and on macOS the executor finds none (no /proc).
    // Here on Linux this test's own process may hold some (a runner's pipe), refusing the launch first.
    const policy = { ...seatbelt, wrap: (command: string, args: readonly string[]) => ({ ...seatbelt.wrap(command, args), inherited: null }) };
    const error = await mac.launch({ command: NODE, args: [], env: {}, policy }).catch((e) => e);
    expect(error.reason).toBe('containment-unavailable');
    expect(attempts.map((a) => [a.backend, a.file])).toEqual([['seatbelt', policy.executable]]);
  });

  it('dispose ends a tree that ignores SIGTERM, grandchild included, and is idempotent', async () => {
    const pidFile = join(dir, 'pids.json');
    const handle = await launch({ command: NODE, args: [join(FIXTURES, 'forking-server.mjs'), pidFile], env: {}, policy: null });
    const pids = await waitFor(() => (existsSync(pidFile) ? JSON.parse(readFileSync(pidFile, 'utf8')) : undefined), 'pid file');
    expect(isAlive(pids.server) && isAlive(pids.grandchild)).toBe(true);
    const first = handle.dispose();
    expect(handle.dispose()).toBe(first);
    expect(await first).toEqual({ code: null, signal: 'SIGKILL' });
    expect(isAlive(pids.server)).toBe(false);
    expect(isAlive(pids.grandchild)).toBe(false);
  });

  it('dispose still ends the group after its leader exited on its own', async () => {
    const script = "const c = require('child_process').spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], {stdio: 'ignore'}); c.unref(); console.log(c.pid)";
    const handle = await launch({ command: NODE, args: ['-e', script], env: {}, policy: null });
    const orphan = Number(await text(handle.stdout));
    expect(await handle.exited).toEqual({ code: 0, signal: null });
    expect(isAlive(orphan)).toBe(true);
    expect(executor.liveCount).toBe(1);
    await handle.dispose();
    expect(isAlive(orphan)).toBe(false);
    expect(executor.liveCount).toBe(0);
  });

  it('disposeAll ends every live process', async () => {
    const hang = { command: NODE, args: [join(FIXTURES, 'hang-server.mjs')], env: {}, policy: null };
    const a = await executor.launch(hang);
    const b = await executor.launch({ ...hang, args: ['-e', 'process.on("SIGTERM", () => {}); setInterval(() => {}, 1000); console.log("ready")'] });
    await new Promise((ready) => b.stdout.once('data', ready)); // its SIGTERM handler is installed
    expect(executor.liveCount).toBe(2);
    await executor.disposeAll();
    expect([0, 'SIGTERM']).toContain((await a.exited).code ?? (await a.exited).signal); // stdin closed or SIGTERM
    expect((await b.exited).signal).toBe('SIGKILL'); // ignores SIGTERM
    expect(executor.liveCount).toBe(0);
  });

  it('ties the sandbox\'s own PID 1, outside bwrap\'s process group, to the launch: it ends with it (CI, s26)', async () => {
    // bwrap's PID 1 leaves bwrap's group (--new-session) and binds itself to bwrap
    // (--die-with-parent) only after forking the command: a launch ended between the two left it
    // running, with the server. The backend hands it to the executor as soon as bwrap names it.
    const base = bwrapPolicy();
    const adopted: number[] = [];
    const policy: ContainedLaunch = { ...base, whenReady: (sandbox, signal) => base.whenReady({ ...sandbox, adopt: (pid) => (adopted.push(pid), sandbox.adopt(pid)) }, signal) };
    const handle = await launch({ command: '/usr/bin/sleep', args: ['30'], env: {}, policy });
    expect(adopted).toHaveLength(1);
    const pidOne = adopted[0]!;
    const server = await waitFor(() => childrenOf(pidOne).find((pid) => readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'sleep'), 'the server under the sandbox\'s PID 1');
    const group = (pid: number) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[2];
    expect(group(pidOne)).not.toBe(String(handle.pid));
    await handle.dispose(0);
    await waitFor(() => (isAlive(pidOne) || isAlive(server) ? undefined : true), 'the sandbox to end');
  });

  it('has the group watchdog end the sandbox\'s PID 1 too, with a sidecar killed outright before PID 1 bound itself to bwrap', async () => {
    // A stand-in for bwrap at the moment that matters: its PID 1 has called setsid (a group of its
    // own, its command in it) and not yet set --die-with-parent, which no real bwrap can be held
    // at. It reports that PID 1 as bwrap does, on the status descriptor.
    const standIn = join(dir, 'bwrap');
    writeFileSync(standIn, '#!/bin/sh\nsetsid /bin/sh -c \'sleep 30 & wait\' &\necho "{ \\"child-pid\\": $! }" >&3\nwait\n', { mode: 0o755 });
    const script = [
      `import { ProcessExecutor } from ${JSON.stringify(join(REPO, 'sidecar/process/process-executor.ts'))};`,
      `import { testBubblewrapPolicy } from ${JSON.stringify(join(REPO, 'test/support/bubblewrap-policy.ts'))};`,
      'const executor = new ProcessExecutor({ groupWatchdog: true });',
      `const policy = testBubblewrapPolicy(${JSON.stringify(REPO)}, { executable: ${JSON.stringify(standIn)} });`,
      "const handle = await executor.launch({ command: '/usr/bin/sleep', args: ['30'], env: {}, policy });",
      'console.log(JSON.stringify({ tool: handle.pid, pidOne: handle.adopted[0] }));',
      'setInterval(() => {}, 60000);',
    ].join('\n');
    const sidecar = spawn(NODE, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: REPO, stdio: ['ignore', 'pipe', 'inherit'] });
    const { tool, pidOne } = await new Promise<{ tool: number; pidOne: number }>((done) => sidecar.stdout!.once('data', (d: Buffer) => done(JSON.parse(String(d)))));
    const command = await waitFor(() => childrenOf(pidOne)[0], 'the command under PID 1');
    try {
      expect(readFileSync(`/proc/${pidOne}/stat`, 'utf8').split(') ')[1]!.split(' ')[2]).toBe(String(pidOne)); // a group of its own
      sidecar.kill('SIGKILL');
      await waitFor(() => ([tool, pidOne, command].some(isAlive) ? undefined : true), 'the tool, its PID 1 and the command to end with the sidecar');
    } finally {
      sidecar.kill('SIGKILL');
      for (const pid of [tool, pidOne, command]) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
    }
  });

  it('killAllNow sends SIGKILL to every live group at once, for process exit hooks', async () => {
    const handle = await executor.launch({ command: NODE, args: ['-e', 'process.on("SIGTERM", () => {}); setInterval(() => {}, 1000); console.log("ready")'], env: {}, policy: null });
    await new Promise((ready) => handle.stdout.once('data', ready));
    executor.killAllNow();
    expect(await handle.exited).toEqual({ code: null, signal: 'SIGKILL' });
  });

  it('logs the descriptors a sandbox closes at debug, not info: every contained spawn closes them, and there is nothing for a user to do', async () => {
    const lines: Array<{ level: string; msg: string }> = [];
    const logger = createLogger({ level: 'debug', write: (line) => void lines.push(JSON.parse(line) as { level: string; msg: string }) });
    const own = new ProcessExecutor({ termGraceMs: 300, stdinGraceMs: 100, logger });
    const base = bwrapPolicy();
    // As the backend reports a mask when the sidecar holds a descriptor without close-on-exec.
    const mask = { fds: [], stdio: [], describe: () => [{ fd: 9, target: 'pipe:[1]' }], close: () => {} };
    const policy = { ...base, wrap: (command: string, args: readonly string[]) => ({ ...base.wrap(command, args), inherited: mask }) };
    const handle = await own.launch({ command: '/usr/bin/node', args: ['-e', ''], env: {}, policy });
    handles.push(handle);
    await handle.exited;
    await own.disposeAll();
    const line = lines.find((l) => l.msg === 'Descriptors the sidecar holds without close-on-exec are closed in the sandbox');
    expect(line?.level).toBe('debug');
  });

  it('an aborted launch rejects with aborted and leaves no process', async () => {
    for (const policy of [null, bwrapPolicy()]) {
      const controller = new AbortController();
      const pending = executor.launch({ command: NODE, args: [join(FIXTURES, 'hang-server.mjs')], env: {}, policy }, { signal: controller.signal });
      controller.abort();
      const error = await pending.catch((e) => e);
      expect(error).toBeInstanceOf(LocalError);
      expect(error.code).toBe('aborted');
      const pid = attempts.at(-1)?.pid;
      expect(pid).toBeGreaterThan(0);
      expect(isAlive(pid ?? 0)).toBe(false);
    }
    expect(executor.liveCount).toBe(0);
  });
});
