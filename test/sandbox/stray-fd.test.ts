/**
 * Issue 13, finding 8: descriptors the sidecar inherited passed into every server it launched
 * (a pipe a shell left open was open inside the sandbox as fd 251), since libuv does not close a
 * parent's descriptors at spawn. A process holding the executor is started here with stray pipes
 * at fds 40 and 100 (not close-on-exec, as any inherited descriptor; Node itself marks a few low
 * ones close-on-exec at start, so the strays sit above those); the servers it launches,
 * uncontained and contained (with and without user-mode networking), hold only stdin, stdout and
 * stderr, and bwrap holds none of the strays either.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Figures } from '../resilience/figures.ts';
import { REPO } from '../support/paths.ts';

/** Counted with the resilience suite's totals: each launch a session, each stray descriptor an input tried. */
const figures = new Figures('sandbox-descriptors');
afterAll(() => void figures.report());

interface Listing {
  server: number[] | null;
  tool: number[] | null;
}

describe('a launched server holds no descriptor the sidecar inherited', () => {
  it('holds only 0, 1 and 2, contained or not', async () => {
    const STRAYS = [40, 100];
    const stdio = Array.from({ length: 101 }, (_, fd): 'pipe' | 'ignore' => (fd === 1 || fd === 2 || STRAYS.includes(fd) ? 'pipe' : 'ignore'));
    const runner = spawn(process.execPath, ['--import', 'tsx', join(REPO, 'test/sandbox/stray-fd-runner.ts')], { cwd: REPO, stdio, env: { ...process.env } });
    let stdout = '';
    let stderr = '';
    runner.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    runner.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise((resolve) => runner.once('close', resolve));
    expect({ code, stderr }).toMatchObject({ code: 0 });
    const result = JSON.parse(stdout) as { strayBefore: number[]; uncontained: Listing; contained: Listing; 'internet-client': Listing };
    // The strays were really there, inheritable, when the executor started launching.
    expect(result.strayBefore).toEqual(expect.arrayContaining(STRAYS));
    figures.sessions += 3;
    figures.inputs += 3 * result.strayBefore.length;
    expect(result.uncontained).toEqual({ server: [0, 1, 2], tool: null });
    for (const name of ['contained', 'internet-client'] as const) {
      expect(result[name].server, name).toEqual([0, 1, 2]);
      // bwrap keeps descriptors of its own (its status fd, a grant's, its event fds), none of the strays.
      expect(result[name].tool?.filter((fd) => result.strayBefore.includes(fd)), name).toEqual([]);
    }
  });
});
