import { spawn } from 'node:child_process';
import { existsSync, lstatSync, mkdtempSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalError } from '../shared/errors.ts';
import { LOCK_FILE, lockStateDir } from './state-dir-lock.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function stateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sy-lock-'));
  dirs.push(dir);
  return dir;
}

/** Another process that takes the dir's lock and holds it until its stdin ends (or it is killed). */
async function holder(dir: string) {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '-e', `import('./cli/state-dir-lock.ts').then(({ lockStateDir }) => { lockStateDir(${JSON.stringify(dir)}, 'switchyard start on http://127.0.0.1:1'); console.log('locked'); process.stdin.resume(); process.stdin.on('end', () => process.exit(0)); })`],
    { cwd: join(import.meta.dirname, '..'), stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes('locked') && resolve());
    void exited.then(() => reject(new Error('the holder exited before it locked')));
  });
  return { child, exited };
}

function refusal(dir: string): unknown {
  try {
    lockStateDir(dir, 'switchyard worker').release();
    return 'locked';
  } catch (error) {
    return error instanceof LocalError ? { code: error.code, message: error.message } : error;
  }
}

describe('lockStateDir', () => {
  it('refuses a dir another live process holds, naming it, and takes it once that process is gone', async () => {
    const dir = stateDir();
    const { child, exited } = await holder(dir);
    try {
      expect(refusal(dir)).toEqual({
        code: 'state-dir-in-use',
        message: `State dir ${dir} is in use by switchyard start on http://127.0.0.1:1 (pid ${child.pid}): stop it, or pass --state-dir with another folder`,
      });
    } finally {
      // Killed: no exit handler runs, the lock file stays behind, naming a pid that is gone.
      child.kill('SIGKILL');
      await exited;
    }
    expect(existsSync(join(dir, LOCK_FILE))).toBe(true);
    const lock = lockStateDir(dir, 'switchyard worker');
    expect(JSON.parse(readFileSync(lock.file, 'utf8'))).toMatchObject({ pid: process.pid, what: 'switchyard worker' });
    lock.release();
    expect(existsSync(lock.file)).toBe(false);
  });

  it('is released when the holder exits, however it exits', async () => {
    const dir = stateDir();
    const { child, exited } = await holder(dir);
    child.stdin!.end();
    await exited;
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
  });

  it('refuses a second lock in the same process, and says what holds it once described', () => {
    const dir = stateDir();
    const lock = lockStateDir(dir, 'switchyard start');
    try {
      lock.describe('switchyard start on http://127.0.0.1:8787');
      expect(refusal(dir)).toMatchObject({ code: 'state-dir-in-use', message: expect.stringContaining(`in use by switchyard start on http://127.0.0.1:8787 (pid ${process.pid})`) });
    } finally {
      lock.release();
    }
  });

  it.runIf(existsSync('/proc/self/stat'))('takes over a lock whose pid now belongs to another process (a restart reused it)', () => {
    const dir = stateDir();
    // This process's pid, but not its start time: the process that wrote it is gone.
    writeFileSync(join(dir, LOCK_FILE), JSON.stringify({ pid: process.pid, what: 'switchyard start', started: '1' }));
    expect(refusal(dir)).toBe('locked');
  });

  it('takes over a lock file that names no owner once it is old (a process died writing it), not while it is new', () => {
    const dir = stateDir();
    writeFileSync(join(dir, LOCK_FILE), '{"pid":');
    expect(refusal(dir)).toMatchObject({ code: 'state-dir-in-use', message: expect.stringContaining('is being locked by another process') });
    utimesSync(join(dir, LOCK_FILE), new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
    expect(refusal(dir)).toBe('locked');
  });

  it('gives the lock to exactly one of many processes that ask at once, with no lock there before, and with a stale one', async () => {
    for (const before of ['none', 'stale'] as const) {
      const dir = stateDir();
      if (before === 'stale') writeFileSync(join(dir, LOCK_FILE), JSON.stringify({ pid: process.pid, what: 'switchyard start', started: '1' }));
      const racers = Array.from({ length: 8 }, () =>
        // Each loads the module, says so, and asks for the lock only when told: all at once.
        spawn(process.execPath, ['--import', 'tsx', '-e', `import('./cli/state-dir-lock.ts').then(({ lockStateDir }) => { console.log('ready'); process.stdin.once('data', () => { try { lockStateDir(${JSON.stringify(dir)}, 'racer'); console.log('locked'); } catch (e) { console.log(e.code); } process.stdin.on('end', () => process.exit(0)); }); })`], {
          cwd: join(import.meta.dirname, '..'),
          stdio: ['pipe', 'pipe', 'inherit'],
        }),
      );
      const lines = racers.map((child) => {
        const seen: string[] = [];
        const next = () => new Promise<string>((resolve) => {
          const take = () => (seen.length > 0 ? resolve(seen.shift()!) : child.stdout!.once('data', (d: Buffer) => (seen.push(...String(d).split('\n').filter(Boolean)), take())));
          take();
        });
        return next;
      });
      expect(await Promise.all(lines.map((next) => next()))).toEqual(racers.map(() => 'ready'));
      for (const child of racers) child.stdin!.write('go\n');
      const said = await Promise.all(lines.map((next) => next()));
      await Promise.all(racers.map((child) => new Promise<void>((resolve) => (child.once('exit', () => resolve()), child.stdin!.end()))));
      expect([before, said.filter((s) => s === 'locked').length, said.filter((s) => s === 'state-dir-in-use').length]).toEqual([before, 1, 7]);
    }
  });

  it('puts its description in place of the lock file, never through a symlink planted there', () => {
    const dir = stateDir();
    const lock = lockStateDir(dir, 'switchyard start');
    const target = join(dir, 'elsewhere');
    writeFileSync(target, 'keep me');
    rmSync(lock.file);
    symlinkSync(target, lock.file);
    lock.describe('switchyard start on http://127.0.0.1:8787');
    expect(readFileSync(target, 'utf8')).toBe('keep me');
    expect(lstatSync(lock.file).isFile()).toBe(true);
    lock.release();
  });
});
