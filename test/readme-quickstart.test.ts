/**
 * Follows the README's quick start exactly as written, as a newcomer would: a fresh checkout in a
 * temp dir, the commands of the "Quick start" block, then an SDK client built from
 * `.switchyard/client-config.json` lists tools and calls a demo tool through `/mcp`. Ctrl-C is
 * sent the way a terminal sends it (SIGINT to the whole process group), and nothing may be left.
 *
 * The only deviation is `PORT=0` (documented in the README) so the test never collides with a
 * Switchyard a developer already runs on 8787.
 */
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { processesUnder } from './support/processes-under.ts';

const REPO = join(import.meta.dirname, '..');
const work = mkdtempSync(join(tmpdir(), 'switchyard-quickstart-'));
const checkout = join(work, 'switchyard');

afterAll(() => rmSync(work, { recursive: true, force: true }));

function quickStartCommands(): string[] {
  const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
  const section = readme.split('## Quick start')[1] ?? '';
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  return block.split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'));
}

/** Every tracked (and new, not ignored) file of this working tree: what a fresh clone would hold. */
function freshCheckout(): void {
  const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], { cwd: REPO, encoding: 'utf8' })
    .split('\0')
    .filter((f) => f !== '' && existsSync(join(REPO, f)));
  for (const file of files) {
    mkdirSync(dirname(join(checkout, file)), { recursive: true });
    cpSync(join(REPO, file), join(checkout, file));
  }
}

/**
 * Runs the README's `npm start` in the checkout, in a process group of its own (as a terminal
 * runs it), and resolves once its banner is out.
 */
async function npmStart(command: string) {
  const [cmd, ...args] = command.split(' ');
  const started = spawn(cmd!, args, { cwd: checkout, env: { ...process.env, PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  let err = '';
  started.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  started.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => started.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + 60_000;
  while (!out.includes('Ctrl-C stops everything')) {
    if (Date.now() > deadline || started.exitCode !== null) {
      if (started.exitCode === null) process.kill(-started.pid!, 'SIGKILL');
      throw new Error(`npm start did not come up:\n${out}\n${err}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { started, exited, out: () => out };
}

describe('README quick start', () => {
  it('npm install, npm start, an agent lists and calls tools through /mcp, Ctrl-C leaves no process', async () => {
    const commands = quickStartCommands();
    expect(commands).toEqual(['npm install', 'npm start']);
    freshCheckout();

    // The README's command as written; packages this machine already has come from npm's cache, so a
    // registry that is slow or out of reach does not decide whether the quick start works.
    execFileSync('npm', [...commands[0]!.split(' ').slice(1), '--no-audit', '--no-fund'], {
      cwd: checkout,
      stdio: 'pipe',
      timeout: 240_000,
      env: { ...process.env, npm_config_prefer_offline: 'true' },
    });

    const { started, exited, out } = await npmStart(commands[1]!);
    try {
      const config = JSON.parse(readFileSync(join(checkout, '.switchyard', 'client-config.json'), 'utf8')) as {
        mcpServers: { switchyard: { type: string; url: string; headers: Record<string, string> } };
      };
      const entry = config.mcpServers.switchyard;
      expect(entry.type).toBe('http');
      expect(out()).toContain(entry.url);

      const client = new Client({ name: 'quickstart', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(entry.url), { requestInit: { headers: entry.headers } }));
      const tools = (await client.listTools()).tools.map((t) => t.name);
      expect(tools).toEqual(expect.arrayContaining(['everything__echo', 'filesystem__list_directory', 'memory__read_graph']));
      const echoed = await client.callTool({ name: 'everything__echo', arguments: { message: 'from the README' } });
      expect(echoed.content).toEqual([{ type: 'text', text: 'Echo: from the README' }]);
      const listed = await client.callTool({ name: 'filesystem__list_directory', arguments: { path: join(checkout, '.switchyard', 'demo') } });
      expect(JSON.stringify(listed.content)).toContain('hello.txt');
      await client.close();
    } finally {
      // What a terminal's Ctrl-C does: SIGINT to the foreground process group.
      if (started.exitCode === null) process.kill(-started.pid!, 'SIGINT');
      const timer = setTimeout(() => process.kill(-started.pid!, 'SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    }
    // The servers of the stopped processes may take a moment to follow them out.
    await expect.poll(() => processesUnder(checkout), { timeout: 10_000 }).toEqual([]);
  }, 360_000);
  it('leaves no process when only npm is told to stop (an IDE\'s stop button, timeout, docker stop), not its whole group (review s21)', async () => {
    const commands = quickStartCommands();
    // The first test installed the checkout's packages.
    const { started, exited } = await npmStart(commands[1]!);
    try {
      process.kill(started.pid!, 'SIGTERM');
      await expect.poll(() => processesUnder(checkout), { timeout: 15_000 }).toEqual([]);
    } finally {
      if (started.exitCode === null) process.kill(-started.pid!, 'SIGKILL');
      await exited;
      // Whatever a failure left of the group, in the checkout's name, so the next run finds none.
      for (const line of processesUnder(checkout)) process.kill(Number.parseInt(line, 10), 'SIGKILL');
    }
  }, 120_000);
});
