/**
 * `runHelper`, which runs the sidecar's short-lived helpers (the containment probes), on real
 * processes: a helper that ends, one that fails, and one killed for its time, which the probes
 * must not keep as the host's verdict (`isLastingRun`).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runHelper } from '../../sidecar/process/masked-spawn.ts';
import { isLastingRun } from '../../sidecar/sandbox/availability.ts';

describe.runIf(process.platform === 'linux')('a helper run to its end', () => {
  it('is ok with its output when the helper exits 0, and lasting', async () => {
    const result = await runHelper('/bin/sh', ['-c', 'echo probed'], { timeoutMs: 10_000 });
    expect(result).toMatchObject({ ok: true, code: 0, stdout: 'probed\n', message: '' });
    expect(result.timedOut).toBeUndefined();
    expect(isLastingRun(result)).toBe(true);
  });

  it('says how it ended when the helper fails, and that verdict lasts', async () => {
    const result = await runHelper('/bin/sh', ['-c', 'exit 3'], { timeoutMs: 10_000 });
    expect(result).toMatchObject({ ok: false, code: 3, message: '/bin/sh exited with code 3' });
    expect(isLastingRun(result)).toBe(true);
  });

  it('kills a helper past its time and says so, and that run is not kept as the host\'s verdict', async () => {
    const result = await runHelper('/bin/sleep', ['30'], { timeoutMs: 50 });
    expect(result).toMatchObject({ ok: false, timedOut: true, signal: 'SIGKILL', message: '/bin/sleep did not finish within 50 ms' });
    expect(isLastingRun(result)).toBe(false);
  });

  it('ends a helper past its time with the processes it started, which held its output open (review s22: doctor hung)', async () => {
    // A wrapper that starts a child without exec: the child holds stdout and stderr.
    const result = await runHelper('/bin/sh', ['-c', 'sleep 300; echo never'], { timeoutMs: 50 });
    expect(result).toMatchObject({ ok: false, timedOut: true, message: '/bin/sh did not finish within 50 ms' });
  });

  it('does not wait for a process that left the helper\'s group and holds its output', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'helper-run-'));
    const pidFile = join(dir, 'pid');
    try {
      const result = await runHelper('/bin/sh', ['-c', `setsid /bin/sh -c 'echo $$ > ${pidFile}; exec sleep 300' & wait`], { timeoutMs: 200 });
      expect(result).toMatchObject({ ok: false, timedOut: true });
    } finally {
      // It left the group, so nothing of the helper's ends it: the test does, once it has said who it is.
      for (const until = Date.now() + 10_000; !(existsSync(pidFile) && readFileSync(pidFile, 'utf8').endsWith('\n')) && Date.now() < until; ) await new Promise((resolve) => setTimeout(resolve, 20));
      if (existsSync(pidFile)) process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
