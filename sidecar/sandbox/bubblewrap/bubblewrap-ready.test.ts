import { spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { whenSandboxReady } from './bubblewrap-ready.ts';

const BASE = ['--json-status-fd', '3', '--unshare-all', '--die-with-parent', '--ro-bind', '/', '/'];
const started: Array<{ kill(signal: NodeJS.Signals): boolean; exitCode: number | null }> = [];
afterEach(() => {
  for (const child of started.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

function bwrap(args: string[]) {
  const child = spawn('/usr/bin/bwrap', args, { stdio: ['ignore', 'ignore', 'pipe', 'pipe'] });
  started.push(child);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { status: child.stdio[3] as Readable, exited };
}

describe('whenSandboxReady', () => {
  it('reports ready once the sandbox runs its command', async () => {
    const { status } = bwrap([...BASE, '--', '/usr/bin/sleep', '5']);
    expect(await whenSandboxReady(status, new AbortController().signal)).toBe('ready');
  });

  it('never reports ready when setup fails: bwrap exits first', async () => {
    const { status, exited } = bwrap([...BASE, '--ro-bind', '/nonexistent-source', '/x', '--', '/usr/bin/true']);
    const stop = new AbortController();
    const outcome = await Promise.race([whenSandboxReady(status, stop.signal), exited.then((code) => ({ exited: code }))]);
    stop.abort();
    expect(outcome).toEqual({ exited: 1 });
  });

  it('says unknown when the status fd closes without a child pid', async () => {
    const { status } = bwrap(['--json-status-fd', '3', '--bogus-option']);
    expect(await whenSandboxReady(status, new AbortController().signal)).toBe('unknown');
  });
});
