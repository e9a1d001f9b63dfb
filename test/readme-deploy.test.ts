/**
 * Follows the README's "Deploying" walkthrough exactly as written, on this machine: two folders
 * outside the repo stand for the two machines (each its own `$HOME`), the commands are read from
 * the README's `sh` blocks (`# on the workstation`, `# on the worker's machine`) so the two cannot
 * drift, and each runs in bash as a user would run it.
 *
 * What the walkthrough needs installed is put there first, as a user would have it: the
 * workstation gets `sidecar.js` (dist/sidecar.js), the worker's machine the package as `npm pack`
 * packs it (unpacked into its node_modules, its dependencies linked from this checkout's, so
 * `npx switchyard-mcp` runs the packed bin with no registry). npm reads this machine's cache.
 *
 * Copied by hand: only what a command printed. Between the machines that is the host line
 * (counted, at most one); the agent's client gets the SDK client config `agent add` printed. The
 * one deviation from the text is the port: 8787 becomes a free port everywhere, so the test never
 * collides with a Switchyard already running here.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { freePort } from './support/processes.ts';
import { processesUnder } from './support/processes-under.ts';

const REPO = join(import.meta.dirname, '..');
const root = mkdtempSync(join(tmpdir(), 'switchyard-deploy-'));
const workstation = join(root, 'workstation');
const workerMachine = join(root, 'worker');
const run = promisify(execFile);

type Machine = 'workstation' | 'worker';
interface Step {
  machine: Machine;
  command: string;
}

/** The walkthrough's commands, in order, each with its machine; a heredoc stays with its command. */
function walkthrough(readme: string): Step[] {
  const section = readme.slice(readme.indexOf('## Deploying'), readme.indexOf('### The worker on a public host'));
  const steps: Step[] = [];
  for (const [, body] of section.matchAll(/```sh\n([\s\S]*?)```/g)) {
    const lines = body!.split('\n');
    const marker = lines.shift();
    const machine: Machine | undefined = marker === '# on the workstation' ? 'workstation' : marker === "# on the worker's machine" ? 'worker' : undefined;
    if (machine === undefined) throw new Error(`a Deploying sh block must start with its machine, not ${marker}`);
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!;
      if (line.trim() === '' || line.startsWith('#')) continue;
      const heredoc = /<<\s*'?(\w+)'?\s*$/.exec(line);
      let command = line;
      if (heredoc !== null) {
        while (i + 1 < lines.length && lines[i + 1] !== heredoc[1]) command += `\n${lines[++i]}`;
        command += `\n${lines[++i]}`;
      }
      steps.push({ machine, command });
    }
  }
  return steps;
}

/** Installs the package the way `npm pack` ships it into `dir/node_modules`, with its bins. */
async function installPackedPackage(dir: string): Promise<void> {
  const packs = join(root, 'packs');
  mkdirSync(packs, { recursive: true });
  // beforeAll built dist/ already: pack's own build (prepack) would only do it twice.
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--pack-destination', packs, '--silent'], { cwd: REPO });
  const tarball = join(packs, stdout.trim().split('\n').pop()!);
  const modules = join(dir, 'node_modules');
  mkdirSync(join(modules, '.bin'), { recursive: true });
  await run('tar', ['xzf', tarball, '-C', packs]);
  await run('mv', [join(packs, 'package'), join(modules, 'switchyard-mcp')]);
  const pkg = JSON.parse(readFileSync(join(modules, 'switchyard-mcp', 'package.json'), 'utf8')) as { bin: Record<string, string> };
  for (const [name, file] of Object.entries(pkg.bin)) symlinkSync(join('..', 'switchyard-mcp', file), join(modules, '.bin', name));
  // Its dependencies, as npm would hoist them beside it (scoped packages one level down).
  const deps = join(REPO, 'node_modules');
  for (const name of readdirSync(deps)) {
    if (name.startsWith('.')) continue;
    if (name.startsWith('@')) {
      mkdirSync(join(modules, name), { recursive: true });
      for (const sub of readdirSync(join(deps, name))) symlinkSync(join(deps, name, sub), join(modules, name, sub));
    } else if (!existsSync(join(modules, name))) symlinkSync(join(deps, name), join(modules, name));
  }
}

function envOf(home: string): NodeJS.ProcessEnv {
  const { SWITCHYARD_FROM_SOURCE: _source, ...env } = process.env;
  return {
    ...env,
    HOME: home,
    // This machine's npm cache, so a registry that is slow or out of reach does not decide.
    npm_config_cache: join(homedir(), '.npm'),
    npm_config_prefer_offline: 'true',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
  };
}

const background: { child: ChildProcess; out: () => string; err: () => string }[] = [];

function startInBackground(command: string, cwd: string): (typeof background)[number] {
  const child = spawn('bash', ['-c', `exec ${command}`], { cwd, env: envOf(cwd), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const started = { child, out: () => out, err: () => err };
  background.push(started);
  return started;
}

async function until(what: string, probe: () => boolean, proc: (typeof background)[number]): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!probe()) {
    if (proc.child.exitCode !== null || Date.now() > deadline) throw new Error(`${what}: ${proc.child.exitCode !== null ? 'it exited' : 'timed out'}\n${proc.out()}\n${proc.err()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The README's example config as a matcher: a `<…>` placeholder stands for any value after its prefix. */
function asMatcher(value: unknown): unknown {
  if (typeof value === 'string' && value.includes('<')) return expect.stringMatching(new RegExp(`^${value.slice(0, value.indexOf('<')).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}.+`));
  if (Array.isArray(value)) return value.map(asMatcher);
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, asMatcher(v)]));
  return value;
}

/** What a Ctrl-C in each terminal does (SIGINT to the foreground group), SIGKILL if it hangs. */
async function stopBackground(): Promise<void> {
  await Promise.all(
    background.map(async ({ child }) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      process.kill(-child.pid!, 'SIGINT');
      const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }),
  );
}

afterAll(async () => {
  await stopBackground();
  rmSync(root, { recursive: true, force: true });
});

describe('README Deploying, end to end on two "machines"', () => {
  // What the walkthrough ships: dist/sidecar.js, dist/worker.js and the packed package's dist/.
  beforeAll(async () => {
    await run('npm', ['run', 'build', '--silent'], { cwd: REPO });
  }, 120_000);

  it('runs as written: one line copied between the machines, and an SDK client calls server-filesystem through the worker, contained', async () => {
    const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
    const steps = walkthrough(readme);
    expect(steps.map((s) => s.machine)).toEqual([...Array(7).fill('workstation'), ...Array(3).fill('worker'), 'workstation', 'workstation']);

    mkdirSync(workstation, { recursive: true });
    mkdirSync(workerMachine, { recursive: true });
    copyFileSync(join(REPO, 'dist', 'sidecar.js'), join(workstation, 'sidecar.js'));
    await installPackedPackage(workerMachine);

    const port = String(await freePort());
    let copiedBetweenMachines = 0;
    let hostLine: string | undefined;
    let clientConfig: { url: string; headers: Record<string, string> } | undefined;
    let doctor: string | undefined;

    for (const step of steps) {
      const cwd = step.machine === 'workstation' ? workstation : workerMachine;
      let command = step.command.replaceAll('8787', port);
      if (command.includes('…')) {
        // The README's placeholder for the line the other machine printed: paste it.
        expect(hostLine, 'a line to paste was printed before').toBeDefined();
        expect(command.startsWith('npx --no switchyard-mcp host add --config worker.json ')).toBe(true);
        command = hostLine!;
        copiedBetweenMachines++;
      }
      if (/ (worker --config|sidecar --config-dir) /.test(command)) {
        const proc = startInBackground(command, cwd);
        if (command.includes(' worker --config')) await until('the worker listens', () => proc.out().includes('"event":"listening"'), proc);
        else await until('the sidecar links', () => proc.err().includes('Linked to the worker'), proc);
        continue;
      }
      const result = await run('bash', ['-c', command], { cwd, env: envOf(cwd), maxBuffer: 16 * 1024 * 1024 }).catch((error: { code: number; stdout: string; stderr: string }) => {
        throw new Error(`"${command}" failed (${error.code}):\n${error.stdout}\n${error.stderr}`);
      });
      if (command.includes('sidecar host-entry')) hostLine = result.stdout.split('\n').map((l) => l.trim()).find((l) => l.startsWith('npx --no switchyard-mcp host add '));
      if (command.includes(' agent add ')) {
        const lines = result.stdout.split('\n');
        const at = lines.findIndex((l) => l.startsWith('Any MCP SDK client'));
        clientConfig = JSON.parse(lines[at + 1] ?? 'null') as typeof clientConfig;
      }
      if (command.includes(' doctor ')) doctor = result.stdout;
    }
    expect(copiedBetweenMachines).toBe(1);

    // The workstation's doctor passed (its exit code) and compared what the worker expects.
    expect(doctor).toMatch(/^ok {3}link to the worker: /m);
    expect(doctor).toMatch(/^ok {3}worker's server "files": /m);
    expect(doctor).toMatch(/^ok {3}worker's pin of trust profile "workspace": sha256:[0-9a-f]{64}, as agent "alice" pins it$/m);
    expect(doctor).not.toMatch(/^FAIL/m);

    // The complete worker.json the README shows is the one the commands wrote.
    const example = /The `worker\.json` they wrote, complete:\n\n```json\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(JSON.parse(readFileSync(join(workerMachine, 'worker.json'), 'utf8'))).toEqual(asMatcher(JSON.parse(example!)));

    // The agent, with the config agent add printed and nothing else.
    expect(clientConfig?.url).toBe(`http://127.0.0.1:${port}/mcp`);
    const client = new Client({ name: 'readme-deploy', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(clientConfig!.url), { requestInit: { headers: clientConfig!.headers } }));
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name);
      expect(tools).toEqual(expect.arrayContaining(['files__write_file', 'files__list_directory']));
      const project = join(workstation, 'project');
      await client.callTool({ name: 'files__write_file', arguments: { path: join(project, 'hello.txt'), content: 'from the README' } });
      expect(readFileSync(join(project, 'hello.txt'), 'utf8')).toBe('from the README');
      const listed = await client.callTool({ name: 'files__list_directory', arguments: { path: project } });
      expect(JSON.stringify(listed.content)).toContain('hello.txt');
    } finally {
      await client.close();
    }
    // It ran contained: the sidecar spawned it under bubblewrap.
    expect(background.find((b) => b.err().includes('Linked to the worker'))?.err()).toMatch(/"msg":"Server spawned".*"backend":"bubblewrap"/);

    // Ctrl-C on both machines leaves nothing running (contained servers end a moment after the sidecar).
    await stopBackground();
    await expect.poll(() => processesUnder(root), { timeout: 10_000 }).toEqual([]);
  }, 300_000);

  it('runs dist/worker.js under deno serve as the public-host section writes it: the Deno of a checkout, the host and port given', async () => {
    const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('### The worker on a public host'), readme.indexOf('### One machine, no link'));
    const command = /```sh\n(.*deno serve.*)\n```/.exec(section)?.[1];
    expect(command).toBeDefined();
    const edge = join(root, 'edge');
    mkdirSync(join(edge, 'dist'), { recursive: true });
    copyFileSync(join(REPO, 'dist', 'worker.js'), join(edge, 'dist', 'worker.js'));
    writeFileSync(join(edge, 'worker.json'), JSON.stringify({ agents: [], servers: {} }));
    const port = String(await freePort());
    // "in a checkout after npm install it is node_modules/.bin/deno (not on PATH)": put it there.
    const env = { ...envOf(edge), PATH: `${join(REPO, 'node_modules', '.bin')}:${process.env.PATH ?? ''}` };
    const child = spawn('bash', ['-c', command!.replaceAll('8787', port)], { cwd: edge, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let err = '';
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    const proc = { child, out: () => '', err: () => err };
    background.push(proc);
    const healthz = async () => {
      if (child.exitCode !== null) throw new Error(`deno serve exited (${child.exitCode}):\n${err}`);
      try {
        return (await fetch(`http://127.0.0.1:${port}/healthz`)).ok;
      } catch {
        return false;
      }
    };
    await expect.poll(healthz, { timeout: 30_000 }).toBe(true);
    // Only where it was told to listen: not on deno serve's default 0.0.0.0:8000.
    expect(err).not.toContain('0.0.0.0:8000');
  }, 120_000);
});
