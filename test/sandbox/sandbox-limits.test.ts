/**
 * Issue 13, finding 9 and the /tmp cap: inside a sandbox a server cannot create user namespaces
 * (`--unshare-user --disable-userns`, and before that the seccomp filter refuses `unshare` with
 * EPERM; `unshare -U` is the door to most kernel attack surface left to a process without
 * capabilities), and its private `/tmp` and `/dev/shm` are tmpfs mounts
 * capped in size, so writing past the cap fails with ENOSPC instead of filling the host's memory;
 * `/dev` itself is read-only. Real bubblewrap through the real compiler and executor.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../sidecar/log.ts';
import { ProcessExecutor } from '../../sidecar/process/process-executor.ts';
import { bubblewrapProbe, compileContainment } from '../../sidecar/sandbox/index.ts';
import { NEUTRAL_PROFILE, type NetworkCapability } from '../../sidecar/trust/effective-profile.ts';

// A setup failure's bwrap line is only in the executor's log: warn lines go to stderr.
const executor = new ProcessExecutor({ termGraceMs: 300, logger: createLogger({ level: 'warn' }) });
let root: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'sy-limits-'));
  mkdirSync(join(root, 'granted'));
});
afterAll(async () => {
  await executor.disposeAll();
  rmSync(root, { recursive: true, force: true });
});

async function run(command: string, args: string[], options: { tmpSizeBytes?: number; network?: NetworkCapability[] } = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const effective = { ...NEUTRAL_PROFILE, filesystemPaths: [{ sourcePath: join(root, 'granted'), targetPath: join(root, 'granted'), accessMode: 'read-write' as const }], networkCapabilities: options.network ?? [] };
  const policy = await compileContainment(effective, { file: command, args }, {
    revision: 'sha256:test',
    platform: 'linux',
    probe: bubblewrapProbe('/usr/bin/bwrap'),
    ...(options.tmpSizeBytes !== undefined ? { tmpSizeBytes: options.tmpSizeBytes } : {}),
  });
  const handle = await executor.launch({ command, args, env: {}, policy });
  let stdout = '';
  let stderr = '';
  handle.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  handle.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [{ code }] = await Promise.all([handle.exited, new Promise((resolve) => handle.stdout.once('end', resolve)), new Promise((resolve) => handle.stderr.once('end', resolve))]);
  await handle.dispose();
  return { code, stdout, stderr };
}

/** Writes 1 MiB chunks to `path` until a write fails; prints how many MiB went in and the error code. */
const FILL = `
const fs = require('node:fs');
const chunk = Buffer.alloc(1024 * 1024, 1);
let written = 0;
try { const fd = fs.openSync(process.argv[1], 'w'); for (;;) { fs.writeSync(fd, chunk); written++; if (written > 4096) break; } } catch (e) { console.log(written + ' ' + e.code); }`;

describe('sandbox limits', () => {
  it.each<[string, NetworkCapability[]]>([
    ['without network', []],
    ['with user-mode networking joined to the sandbox', ['internet-client']],
  ])('cannot create a user namespace (%s)', async (_name, network) => {
    const result = await run('/usr/bin/unshare', ['-U', 'true'], { network });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/unshare failed: Operation not permitted/);
  });

  it.each(['/tmp', '/dev/shm'])('fills %s only up to the default cap of 64 MiB, then ENOSPC', async (dir) => {
    const result = await run(process.execPath, ['-e', FILL, `${dir}/fill`]);
    expect(result).toMatchObject({ code: 0, stdout: '64 ENOSPC\n' });
  });

  it('takes the configured cap', async () => {
    const result = await run(process.execPath, ['-e', FILL, '/tmp/fill'], { tmpSizeBytes: 3 * 1024 * 1024 });
    expect(result).toMatchObject({ code: 0, stdout: '3 ENOSPC\n' });
  });

  it('cannot write to /dev, but still to /dev/null', async () => {
    const script = `const fs = require('node:fs'); fs.writeFileSync('/dev/null', 'x');
try { fs.writeFileSync('/dev/fill-me', 'x'); console.log('written'); } catch (e) { console.log(e.code); }`;
    expect(await run(process.execPath, ['-e', script])).toMatchObject({ code: 0, stdout: 'EROFS\n' });
  });
});
