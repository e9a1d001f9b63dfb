/**
 * One sidecar per config dir (QA s30). A second one linked with the same key, and the worker took
 * each newer link in place of the other: the two knocked each other off every second or two,
 * failing every channel each time, and each logged only that its link was replaced. The second
 * start is refused, naming the first; one killed outright leaves a lock the next start takes over.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { hostCredential, writeSidecarDir } from '../support/configs.ts';
import { ProcessSet } from '../support/processes.ts';
import { startSidecar } from '../support/sidecar-process.ts';

const procs = new ProcessSet();
const dir = mkdtempSync(join(tmpdir(), 'sy-sidecar-lock-'));
afterAll(async () => {
  await procs.stopAll();
  rmSync(dir, { recursive: true, force: true });
});

describe('a sidecar config dir', () => {
  it('runs one sidecar: a second is refused naming the first, and a dir whose sidecar was killed is taken over', async () => {
    // No worker listens there: each keeps dialling, which is all a sidecar needs to be running.
    writeSidecarDir(dir, { worker: 'http://127.0.0.1:9', host: hostCredential('laptop') });
    const first = startSidecar(procs, dir);
    await first.waitForLine((l) => l.msg === 'Sidecar starting', 'its start');
    const second = startSidecar(procs, dir);
    expect(await second.process.exited).toBe(1);
    expect(second.err.lines.map((l) => l.text)).toContain(`switchyard: Config dir ${dir} is in use by switchyard sidecar (pid ${first.pid}): stop it: two sidecars of one host knock each other's link off`);

    first.process.child.kill('SIGKILL');
    await first.process.exited;
    const third = startSidecar(procs, dir);
    await third.waitForLine((l) => l.msg === 'Sidecar starting', 'its start over the killed one\'s lock');
  });
});
