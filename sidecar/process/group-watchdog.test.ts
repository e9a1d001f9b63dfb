import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isAlive, runsFile, waitFor, waitUntil } from '../../test/support/processes.ts';
import { GroupWatchdog, WATCHDOG_SCRIPT } from './group-watchdog.ts';
import { childNamed, childrenOf } from '../../test/support/descriptors.ts';
import { silentLogger } from '../log.ts';

const REPO = resolve(import.meta.dirname, '../..');

/** The groups the script would kill after reading `lines`, `kill` being a shell function that only says so. */
function killedAfter(lines: readonly string[]): string[] {
  const out = execFileSync('/bin/sh', ['-c', `kill() { echo "$*"; }\n${WATCHDOG_SCRIPT}`], { input: lines.map((l) => `${l}\n`).join(''), encoding: 'utf8' });
  return out.split('\n').filter(Boolean);
}

describe('the server group watchdog', () => {
  it('kills the groups still listed when its input ends: one added and not taken off, each once', () => {
    expect(killedAfter(['+123', '+1234', '+12', '-123', '+77', '-77'])).toEqual(['-KILL -1234', '-KILL -12']);
    expect(killedAfter(['+5', '-6', '-5'])).toEqual([]);
    expect(killedAfter([])).toEqual([]);
  });

  it('kills the members of the cgroups still listed: through cgroup.kill where there is one, else each member', () => {
    const dir = mkdtempSync(join(tmpdir(), 'watchdog-cgroups-'));
    try {
      const v2 = join(dir, 'v2');
      const v1 = join(dir, 'v1');
      const forgotten = join(dir, 'forgotten');
      for (const cgroup of [v2, v1, forgotten]) mkdirSync(cgroup);
      writeFileSync(join(v2, 'cgroup.kill'), '');
      writeFileSync(join(v1, 'cgroup.procs'), '41\n42\n');
      writeFileSync(join(forgotten, 'cgroup.kill'), '');
      expect(killedAfter([`c+${v2}`, `c+${v1}`, '+7', `c+${forgotten}`, `c-${forgotten}`])).toEqual(['-KILL 41', '-KILL 42', '-KILL -7']);
      expect(readFileSync(join(v2, 'cgroup.kill'), 'utf8')).toBe('1\n');
      expect(readFileSync(join(forgotten, 'cgroup.kill'), 'utf8')).toBe('');
      // A v1 cgroup has no cgroup.kill, and none is made.
      expect(existsSync(join(v1, 'cgroup.kill'))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('takes a cgroup path as text, not a pattern: systemd\'s \\x2d escape, glob characters and spaces (review s31: the list doubled, and the watchdog spun)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'watchdog-names-'));
    try {
      const escaped = join(dir, 'app-x\\x2dy.scope');
      const star = join(dir, 'a*b');
      const plain = join(dir, 'a1b');
      // A space in a path (s31 left such a cgroup to the next start), and one that a shorter one's removal must not cut.
      const spaced = join(dir, 'my app.scope');
      const spacedGone = join(dir, 'my app');
      for (const cgroup of [escaped, star, plain, spaced, spacedGone]) mkdirSync(cgroup);
      for (const cgroup of [escaped, star, spacedGone]) writeFileSync(join(cgroup, 'cgroup.kill'), '');
      writeFileSync(join(plain, 'cgroup.procs'), '41\n');
      writeFileSync(join(spaced, 'cgroup.procs'), '43\n44\n');
      expect(killedAfter([`c+${escaped}`, `c+${star}`, `c+${plain}`, `c+${spacedGone}`, `c+${spaced}`, `c-${escaped}`, `c-${star}`, `c-${spacedGone}`])).toEqual(['-KILL 41', '-KILL 43', '-KILL 44']);
      expect([escaped, star, spacedGone].map((cgroup) => readFileSync(join(cgroup, 'cgroup.kill'), 'utf8'))).toEqual(['', '', '']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('ends the groups it watches when the process that fed it is SIGKILLed, leader and grandchild alike; not the others', async () => {
    // A stand-in for a sidecar: it starts three server groups, each a leader (as `npx` is) whose
    // child outlives its stdin, watches two and takes one of those off the list again.
    const group = `spawn(process.execPath, ['-e', "require('node:child_process').spawn(process.execPath, ['-e', 'setInterval(() => {}, 60000)'], { stdio: 'ignore' }); setInterval(() => {}, 60000)"], { stdio: ['pipe', 'ignore', 'ignore'], detached: true })`;
    const script = [
      "import { spawn } from 'node:child_process';",
      `import { GroupWatchdog } from ${JSON.stringify(join(REPO, 'sidecar/process/group-watchdog.ts'))};`,
      'const live = [];',
      "const watchdog = new GroupWatchdog({ logger: { warn() {}, info() {}, debug() {}, error() {}, child() { return this; } }, liveGroups: () => live });",
      `const [watched, forgotten, unwatched] = [${group}, ${group}, ${group}];`,
      'for (const child of [watched, forgotten]) { live.push(child.pid); watchdog.watch(child.pid); }',
      'watchdog.forget(forgotten.pid);',
      'console.log(JSON.stringify([watched.pid, forgotten.pid, unwatched.pid]));',
      'setInterval(() => {}, 60000);',
    ].join('\n');
    const parent = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: REPO, stdio: ['ignore', 'pipe', 'inherit'] });
    const leaders = await new Promise<number[]>((done) => parent.stdout.once('data', (d: Buffer) => done(JSON.parse(String(d)) as number[])));
    const children = await Promise.all(leaders.map((leader) => waitFor(() => childrenOf(leader)[0], `the child of group ${leader}`)));
    const all = [...leaders, ...children];
    try {
      for (const pid of children) await waitUntil(() => runsFile(pid, process.execPath), 'each grandchild to run node', 10_000);
      parent.kill('SIGKILL');
      await waitUntil(() => !isAlive(leaders[0]!) && !isAlive(children[0]!), 'the watched group to end with the sidecar', 10_000);
      expect([leaders[1], children[1], leaders[2], children[2]].map((pid) => isAlive(pid!))).toEqual([true, true, true, true]);
    } finally {
      parent.kill('SIGKILL');
      for (const pid of all) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
    }
  });
});

describe('closing the watchdog', () => {
  it('does not wait for ever on a watchdog that does not end: it is killed, and the log says so (review s31)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'watchdog-stuck-'));
    try {
      // A shell that never reads its pipe: as the watchdog was, spinning on a path it read as a pattern.
      const stuck = join(dir, 'stuck-sh');
      writeFileSync(stuck, '#!/bin/sh\nexec sleep 60\n', { mode: 0o755 });
      const warnings: string[] = [];
      const watchdog = new GroupWatchdog({ logger: { ...silentLogger, warn: (msg: string) => void warnings.push(msg) }, liveGroups: () => [], shell: stuck });
      watchdog.watch(999_999);
      const sleeper = await waitFor(() => childNamed(process.pid, 'sleep'), 'the stuck watchdog to run');
      await watchdog.close();
      expect(warnings).toEqual(['The server group watchdog did not end when asked; it was killed']);
      await waitUntil(() => !isAlive(sleeper), 'the stuck watchdog gone', 5_000);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps a process with nothing else to do alive until the groups it listed are killed', async () => {
    // A process whose only pending work is the close (as doctor --launch ending): the group it
    // watches is unref'd too, so nothing else holds the process.
    const script = [
      "import { spawn } from 'node:child_process';",
      `import { GroupWatchdog } from ${JSON.stringify(join(REPO, 'sidecar/process/group-watchdog.ts'))};`,
      "const server = spawn(process.execPath, ['-e', 'setInterval(() => {}, 60000)'], { stdio: 'ignore', detached: true });",
      'server.unref();',
      "const watchdog = new GroupWatchdog({ logger: { warn() {}, info() {}, debug() {}, error() {}, child() { return this; } }, liveGroups: () => [] });",
      'watchdog.watch(server.pid);',
      'console.log(server.pid);',
      'await watchdog.close();',
      "console.log('closed');",
    ].join('\n');
    const parent = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: REPO, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    parent.stdout.on('data', (d: Buffer) => (out += String(d)));
    const code = await new Promise<number | null>((done) => parent.once('exit', (c) => done(c)));
    const pid = Number(out.split('\n')[0]);
    try {
      expect([code, out.trim().split('\n')[1]]).toEqual([0, 'closed']);
      expect(isAlive(pid)).toBe(false);
    } finally {
      if (pid > 0 && isAlive(pid)) process.kill(pid, 'SIGKILL');
    }
  });
});

describe('a watchdog that died', () => {
  it('is started again at the next watch, listing every live group, and kills them all when closed', async () => {
    const group = () => spawn(process.execPath, ['-e', 'setInterval(() => {}, 60000)'], { stdio: 'ignore', detached: true });
    const [first, second] = [group(), group()];
    const live = [first.pid!];
    const warnings: string[] = [];
    const watchdog = new GroupWatchdog({ logger: { ...silentLogger, warn: (msg: string) => void warnings.push(msg) }, liveGroups: () => live });
    try {
      watchdog.watch(first.pid!);
      const dead = await waitFor(() => childNamed(process.pid, 'sh'), 'the watchdog to run');
      process.kill(dead, 'SIGKILL');
      await waitUntil(() => warnings.length > 0, 'the watchdog\'s end to be noticed', 10_000);
      expect(warnings).toEqual(['The server group watchdog ended; the next launch starts another']);
      live.push(second.pid!);
      watchdog.watch(second.pid!);
      await watchdog.close();
      await waitUntil(() => !isAlive(first.pid!) && !isAlive(second.pid!), 'both groups to be killed by the new watchdog', 10_000);
    } finally {
      for (const child of [first, second]) if (isAlive(child.pid!)) child.kill('SIGKILL');
    }
  });
});
