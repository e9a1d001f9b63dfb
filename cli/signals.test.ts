import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const REPO = join(import.meta.dirname, '..');

/**
 * A process stopping on signals whose stop ends only once its stdin says so. It says on stdout
 * which signal it has taken (a listener after `stopOnSignals`' own, so none once that one forced
 * the exit): each signal is sent once the one before was taken, as two of one kind pending at
 * once are delivered as one.
 */
async function twoSignals(echoMs: number): Promise<{ code: number | null; stdout: string }> {
  const script = `
    const { stopOnSignals } = await import(${JSON.stringify(join(REPO, 'cli/signals.ts'))});
    stopOnSignals(() => new Promise((resolve) => {
      process.stdin.once('data', () => { process.stdout.write('stopped\\n'); resolve(); });
    }), { echoMs: ${echoMs} });
    let signals = 0;
    process.on('SIGINT', () => process.stdout.write('signal ' + ++signals + '\\n'));
    setInterval(() => {}, 1 << 30); // a long-running command's work
    process.stdout.write('ready\\n');
  `;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: REPO, stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = once(child, 'exit') as Promise<[number | null]>;
  child.stdin.on('error', () => {}); // a process forced out reads no more
  let stdout = '';
  const waiting: Array<() => void> = [];
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    for (const look of waiting.splice(0)) look();
  });
  /** Resolves once the process said `text`, or ended without saying it. */
  const said = (text: string) => Promise.race([exited, new Promise<void>((resolve) => {
    const look = () => (stdout.includes(text) ? resolve() : void waiting.push(look));
    look();
  })]);
  await said('ready');
  child.kill('SIGINT');
  await said('signal 1');
  child.kill('SIGINT');
  await said('signal 2');
  if (child.exitCode === null) child.stdin.write('go\n');
  const [code] = await exited;
  return { code, stdout };
}

describe('stopOnSignals', () => {
  it('takes a second signal right after the first for the same Ctrl-C (the terminal\'s and npm\'s), and stops in order (review s21)', async () => {
    expect(await twoSignals(60_000)).toEqual({ code: 0, stdout: 'ready\nsignal 1\nsignal 2\nstopped\n' });
  });

  it('forces the exit on a second signal once the first is past its echo', async () => {
    expect(await twoSignals(0)).toEqual({ code: 130, stdout: 'ready\nsignal 1\n' });
  });
});
