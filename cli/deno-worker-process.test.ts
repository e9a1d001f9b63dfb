import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { denoBinaryPath, packageRoot } from './deno-binary.ts';
import { denoWorkerArgs, spawnDenoWorker } from './deno-worker-process.ts';

describe('the Deno worker\'s permissions', () => {
  it('reads only its config and state, never the package folder, where the quick start keeps its host key', () => {
    const root = packageRoot();
    const state = join(root, '.switchyard');
    const args = denoWorkerArgs({ configFile: join(state, 'worker.json'), stateDir: join(state, 'worker') }, root);
    const reads = args.filter((a) => a.startsWith('--allow-read')).map((a) => a.slice('--allow-read='.length).split(','));
    expect(reads).toEqual([[join(state, 'worker.json'), join(state, 'worker')]]);
    expect(args).not.toContain('--allow-read');
    expect(args.at(-1)).toBe(join(root, 'worker', 'adapters', 'deno', 'deno-worker.ts'));
  });

  it('refuses a config, state dir or audit file whose path holds a comma: Deno would grant what lies on either side of it (review s19)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sy-comma-'));
    try {
      const config = join(dir, 'worker.json');
      writeFileSync(config, JSON.stringify({ audit: { file: 'audit.log,/tmp' } }));
      // The audit file as the config's problem, naming the file and key (review s22).
      expect(() => denoWorkerArgs({ configFile: config }, packageRoot())).toThrow(`${config}: audit.file: "${join(dir, 'audit.log,/tmp')}" holds a comma, which Deno's permission flags split on: rename it or move it (or run the worker with --runtime node)`);
      expect(() => denoWorkerArgs({ configFile: join(dir, 'a,b', 'worker.json') }, packageRoot())).toThrow(/holding a comma/);
      expect(() => denoWorkerArgs({ configFile: join(dir, 'w.json'), stateDir: join(dir, 's,t') }, packageRoot())).toThrow(/holding a comma/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('spawnDenoWorker', () => {
  const saved = { deno: process.env.SWITCHYARD_DENO, inline: process.env.SWITCHYARD_WORKER_CONFIG };
  afterEach(() => {
    if (saved.deno === undefined) delete process.env.SWITCHYARD_DENO;
    else process.env.SWITCHYARD_DENO = saved.deno;
    if (saved.inline === undefined) delete process.env.SWITCHYARD_WORKER_CONFIG;
    else process.env.SWITCHYARD_WORKER_CONFIG = saved.inline;
  });

  it('runs the config file it is given, whatever inline config this process\'s environment holds (review of s21)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sy-stray-inline-'));
    try {
      const configFile = join(dir, 'worker.json');
      writeFileSync(configFile, JSON.stringify({ agents: [], servers: {} }));
      process.env.SWITCHYARD_WORKER_CONFIG = JSON.stringify({ agents: [], servers: {}, bogus: 1 });
      const worker = spawnDenoWorker({ configFile, port: 0, stderr: 'pipe' });
      try {
        expect(await worker.listening).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      } finally {
        await worker.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('says which Deno it could not start and how to fix it, rather than crashing, when the binary cannot run (review s21)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sy-no-deno-'));
    try {
      const configFile = join(dir, 'worker.json');
      writeFileSync(configFile, '{}');
      process.env.SWITCHYARD_DENO = join(dir, 'missing', 'deno');
      const worker = spawnDenoWorker({ configFile, port: 0 });
      await expect(worker.listening).rejects.toMatchObject({
        code: 'deno-not-started',
        message: `Cannot start Deno (${join(dir, 'missing', 'deno')}): ENOENT: run "npm install", or set SWITCHYARD_DENO to a Deno binary this machine runs`,
      });
      expect(await worker.exited).toBe(127);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the Deno worker with an audit file it cannot open', () => {
  /** Deno's exit code and stderr for the worker entry run with `write` as its write permission. */
  async function start(dir: string, auditFile: string, write: string[]): Promise<{ code: number; stderr: string }> {
    const configFile = join(dir, 'worker.json');
    writeFileSync(configFile, JSON.stringify({ agents: [], servers: {}, audit: { file: auditFile } }));
    const entry = join(packageRoot(), 'worker', 'adapters', 'deno', 'deno-worker.ts');
    const args = ['run', '--quiet', '--no-prompt', '--allow-env', '--allow-net', `--allow-read=${configFile}`, ...write, `--config=${join(packageRoot(), 'deno.json')}`, entry];
    try {
      await promisify(execFile)(denoBinaryPath(), args, { env: { ...process.env, SWITCHYARD_WORKER_CONFIG: '', SWITCHYARD_WORKER_CONFIG_FILE: configFile, PORT: '0', NO_COLOR: '1' } });
      return { code: 0, stderr: '' };
    } catch (error) {
      const e = error as { code: number; stderr: string };
      return { code: e.code, stderr: e.stderr };
    }
  }

  it('starts with write permission on the audit file alone, as deno serve users give it (review s23: following the file asked for read)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sy-deno-audit-'));
    try {
      const configFile = join(dir, 'worker.json');
      const audit = join(dir, 'audit.jsonl');
      writeFileSync(configFile, JSON.stringify({ agents: [], servers: {}, audit: { file: audit } }));
      const entry = join(packageRoot(), 'worker', 'adapters', 'deno', 'deno-worker.ts');
      const { spawn } = await import('node:child_process');
      const child = spawn(denoBinaryPath(), ['run', '--quiet', '--no-prompt', '--allow-env', '--allow-net', `--allow-read=${configFile}`, `--allow-write=${audit}`, `--config=${join(packageRoot(), 'deno.json')}`, entry], {
        env: { ...process.env, SWITCHYARD_WORKER_CONFIG: '', SWITCHYARD_WORKER_CONFIG_FILE: configFile, PORT: '0', NO_COLOR: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      try {
        let stderr = '';
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        const first = await new Promise<string>((resolve) => {
          child.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString()));
          child.once('exit', (code) => resolve(`exited ${code}: ${stderr}`));
        });
        expect(first).toContain('"event":"listening"');
      } finally {
        child.kill('SIGKILL');
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names the config and the file, and adds the --allow-write hint only when permission is what failed (review s22)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sy-deno-audit-'));
    try {
      const missing = join(dir, 'no-such-folder', 'audit.jsonl');
      const noFolder = await start(dir, missing, [`--allow-write=${missing}`]);
      expect(noFolder.code).toBe(2);
      expect(noFolder.stderr).toContain(`${join(dir, 'worker.json')}: audit.file: cannot open "${missing}": its folder does not exist\n`);
      expect(noFolder.stderr).not.toContain('--allow-write');
      const denied = await start(dir, join(dir, 'audit.jsonl'), []);
      expect(denied.code).toBe(2);
      expect(denied.stderr).toContain(`${join(dir, 'worker.json')}: audit.file: cannot open "${join(dir, 'audit.jsonl')}": not writable (run Deno with --allow-write for it)`);
      expect(denied.stderr).toContain('(run Deno with --allow-write for it)');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
