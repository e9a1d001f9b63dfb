/**
 * Issue 13, finding 8: descriptors the sidecar inherited passed into every server it launched
 * (a pipe a shell left open was open inside the sandbox as fd 251), since libuv does not close a
 * parent's descriptors at spawn. A process holding the executor is started here with stray pipes
 * at fds 40 and 100 (not close-on-exec, as any inherited descriptor; Node itself marks a few low
 * ones close-on-exec at start, so the strays sit above those) and under `--perf-basic-prof`, whose
 * map V8 opens without close-on-exec too and writes to for as long as the process runs.
 *
 * Contained servers (with and without user-mode networking) hold only stdin, stdout and stderr;
 * an uncontained one holds those and `/dev/null` where the strays are; bwrap and slirp4netns hold
 * none of the strays, nor do the processes of its bubblewrap and slirp4netns probes. The process itself still holds every one of them afterwards, its parent's
 * pipe still carries what it writes, and a backend that cannot close descriptors in its sandbox
 * is refused a launch before anything is spawned.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { Figures } from '../resilience/figures.ts';
import { peerHoldersOf, STRAYS, strayStdio } from '../support/descriptors.ts';
import { REPO } from '../support/paths.ts';

/** Counted with the resilience suite's totals: each launch a session, each stray descriptor an input tried. */
const figures = new Figures('sandbox-descriptors');
const logDir = mkdtempSync(join(tmpdir(), 'sy-stray-fd-v8-'));
let perfMap: string | undefined;
afterAll(() => {
  void figures.report();
  if (perfMap !== undefined) rmSync(perfMap, { force: true });
  rmSync(logDir, { recursive: true, force: true });
});

type Fds = Record<string, string>;
interface Listing {
  server: Fds | null;
  tool: Fds | null;
  helper: Fds | null;
}
interface Result {
  strayBefore: Fds;
  strayAfter: Fds;
  uncontained: Listing;
  contained: Listing;
  'internet-client': Listing;
  refused: { reason: string; message: string; cause: string; spawned: number } | null;
  probes: Record<'bwrap' | 'slirp4netns', { available: boolean; runs: Fds[] }>;
}

const targets = (fds: Fds | null): string[] => Object.values(fds ?? {});

/** Longer than the runner ever takes (about 1 s alone), shorter than the test's own timeout, so a hang says who held it. */
const RUNNER_DEADLINE_MS = 25_000;

/**
 * The processes holding the other end of `streams`' pipes (node's are socket pairs: `ss` names
 * each peer's holders), what kept the runner's output open past its end, for the message of a
 * runner that never closes. In CI (s17, s24, s26) that was a sandbox's PID 1 and its server,
 * orphaned by a dispose before PID 1 bound itself to bwrap; the executor now ends PID 1 itself.
 */
function pipeHolders(streams: readonly unknown[]): string {
  const holders = streams.flatMap((stream) => {
    const fd = (stream as { _handle?: { fd?: number } } | null)?._handle?.fd;
    return typeof fd === 'number' && fd >= 0 ? peerHoldersOf(fd) : [];
  });
  return holders.length > 0 ? holders.join('; ') : 'no other process';
}

describe('a launched server holds no descriptor the sidecar holds without close-on-exec', () => {
  it('holds only 0, 1 and 2 contained, and /dev/null in their place uncontained, while the sidecar keeps them all', async () => {
    const stdio = strayStdio();
    const flags = ['--perf-basic-prof', '--no-logfile-per-isolate', `--logfile=${join(logDir, 'v8.log')}`];
    const runner = spawn(process.execPath, [...flags, '--import', 'tsx', join(REPO, 'test/sandbox/stray-fd-runner.ts')], { cwd: REPO, stdio, env: { ...process.env } });
    perfMap = `/tmp/perf-${runner.pid}.map`;
    let stdout = '';
    let stderr = '';
    let fromStray = '';
    runner.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    runner.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    (runner.stdio as unknown as Readable[])[40]!.on('data', (chunk: Buffer) => (fromStray += chunk.toString()));
    const code = await new Promise((resolve, reject) => {
      const deadline = setTimeout(() => {
        const holders = pipeHolders([runner.stdout, runner.stderr, ...(runner.stdio as unknown[]).slice(3)]);
        runner.kill('SIGKILL');
        reject(new Error(`The runner did not close its output within ${RUNNER_DEADLINE_MS} ms (exit code ${runner.exitCode}, signal ${runner.signalCode}); holding its pipes: ${holders}; its stderr: ${stderr.slice(-2000)}`));
      }, RUNNER_DEADLINE_MS);
      runner.once('close', (closed) => {
        clearTimeout(deadline);
        resolve(closed);
      });
    });
    expect(code, stderr).toBe(0);
    const result = JSON.parse(stdout) as Result;

    // The strays and V8's map were really there, inheritable, when the executor started launching.
    const strays = Object.keys(result.strayBefore).map(Number);
    expect(strays).toEqual(expect.arrayContaining([...STRAYS]));
    expect(targets(result.strayBefore)).toContain(perfMap);
    const strayTargets = targets(result.strayBefore);
    figures.sessions += 3;
    figures.inputs += 3 * strays.length;

    expect(Object.keys(result.uncontained.server ?? {}).map(Number).sort((a, b) => a - b)).toEqual([0, 1, 2, ...strays]);
    for (const fd of strays) expect(result.uncontained.server?.[fd], `uncontained fd ${fd}`).toBe('/dev/null');
    for (const name of ['contained', 'internet-client'] as const) {
      expect(Object.keys(result[name].server ?? {}).map(Number), name).toEqual([0, 1, 2]);
      // bwrap keeps descriptors of its own (its status fd, a grant's, its event fds), none of the strays.
      expect(targets(result[name].tool).filter((t) => strayTargets.includes(t)), name).toEqual([]);
    }
    expect(result['internet-client'].helper).not.toBeNull();
    expect(targets(result['internet-client'].helper).filter((t) => strayTargets.includes(t))).toEqual([]);

    // The probes' short-lived processes too: the strays' numbers hold /dev/null there.
    for (const name of ['bwrap', 'slirp4netns'] as const) {
      const probe = result.probes[name];
      expect(probe.available, name).toBe(true);
      expect(probe.runs.length, name).toBeGreaterThan(0);
      for (const fds of probe.runs) {
        expect(targets(fds).filter((t) => strayTargets.includes(t)), name).toEqual([]);
        for (const fd of strays) expect(fds[fd], `${name} fd ${fd}`).toBe('/dev/null');
      }
    }

    expect(result.refused).toMatchObject({ reason: 'launch-failed', spawned: 0 });
    expect(result.refused?.message).toMatch(/^Cannot start contained process: the sidecar holds descriptors a sandbox would inherit \(fd [\d, ]+\) and the bubblewrap backend cannot close them/);
    expect(result.refused?.message).not.toContain(perfMap);
    expect(result.refused?.cause).toContain(`(${perfMap})`);

    // Nothing was closed under the process: every descriptor is where it was, and the parent's pipe still works.
    expect(result.strayAfter).toEqual(result.strayBefore);
    expect(fromStray).toBe('fd 40 still open\n');
  });
});
