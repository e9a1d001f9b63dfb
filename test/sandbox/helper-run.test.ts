/**
 * `runHelper`, which runs the sidecar's short-lived helpers (the containment probes), on real
 * processes: a helper that ends, one that fails, and one killed for its time, which the probes
 * must not keep as the host's verdict (`isLastingRun`).
 */
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
});
