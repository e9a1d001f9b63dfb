/**
 * `"audit": {"file": …}` on both sides: the worker under Deno (given `--allow-write` for that file
 * alone by its launcher) and the sidecar CLI append every audit line to their files (0600), and
 * none to stderr; with `include-arguments` the values are kept there. Moved away (logrotate's
 * default), each file is created again at its path, and no line is lost.
 */
import { existsSync, readFileSync, renameSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { closeClient, connectClient } from '../support/clients.ts';
import { everythingServer } from '../support/paths.ts';
import { startStack, type Stack } from '../support/stack.ts';

let stack: Stack;
const ARGUMENT = `kept-argument-${Math.random().toString(36).slice(2)}`;

beforeAll(async () => {
  stack = await startStack({
    servers: { everything: everythingServer() },
    // Relative: the worker's from its config file's directory, the sidecar's from its config dir.
    worker: { audit: { file: 'worker-audit.jsonl', 'include-arguments': true } },
    sidecar: { audit: { file: 'sidecar-audit.jsonl' } },
  });
}, 90_000);

afterAll(async () => {
  await stack?.stop();
});

const read = (file: string) => readFileSync(file, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);

it('writes audit lines to the configured files, not to stderr', async () => {
  const client = await connectClient(`${stack.url}/servers/everything/mcp`, stack.tokens.alice!);
  try {
    await client.callTool({ name: 'echo', arguments: { message: ARGUMENT } });
  } finally {
    await closeClient(client);
  }
  const workerFile = join(stack.dir, 'worker-audit.jsonl');
  const sidecarFile = join(stack.dir, 'sidecar', 'sidecar-audit.jsonl');
  // The sidecar's line is written before its answer leaves, the worker's before the agent gets it.
  const [worker] = read(workerFile).filter((line) => line.event === 'call');
  const [sidecar] = read(sidecarFile).filter((line) => line.event === 'call');
  // Before the call, each side wrote the link's coming up there too.
  expect(read(workerFile)[0]).toMatchObject({ msg: 'audit', event: 'link', decision: 'allowed' });
  expect(read(sidecarFile)[0]).toMatchObject({ msg: 'audit', component: 'sidecar', event: 'link', decision: 'allowed' });
  expect(worker).toMatchObject({ msg: 'audit', component: 'worker', agent: 'alice', tool: 'echo', decision: 'allowed', arguments: { message: ARGUMENT } });
  expect(sidecar).toMatchObject({ msg: 'audit', component: 'sidecar', agent: 'alice', tool: 'echo', decision: 'allowed', traceId: worker!.traceId });
  expect(sidecar!.arguments).toBeUndefined();
  for (const file of [workerFile, sidecarFile]) expect(statSync(file).mode & 0o777).toBe(0o600);
  for (const log of [stack.worker.err, stack.sidecar.err]) expect(log.filter((l) => l.json.msg === 'audit')).toEqual([]);
});

it('writes to a new file at the path once the file is moved away, losing no line (logrotate without copytruncate)', async () => {
  const files = [join(stack.dir, 'worker-audit.jsonl'), join(stack.dir, 'sidecar', 'sidecar-audit.jsonl')];
  const before = files.map((file) => read(file).length);
  for (const file of files) renameSync(file, `${file}.1`);
  const client = await connectClient(`${stack.url}/servers/everything/mcp`, stack.tokens.alice!);
  let calls = 0;
  try {
    // Each side looks at its path again at most once a second, at a write: calls go on until both
    // have written at the path (bounded; a side that never follows fails here).
    const deadline = Date.now() + 15_000;
    while (!files.every((file) => existsSync(file)) && Date.now() < deadline) {
      await client.callTool({ name: 'echo', arguments: { message: 'after the move' } });
      calls += 1;
    }
  } finally {
    await closeClient(client);
  }
  for (const [i, file] of files.entries()) {
    expect(existsSync(file), file).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const echoes = [...read(`${file}.1`).slice(before[i]), ...read(file)].filter((line) => line.tool === 'echo');
    expect(echoes).toHaveLength(calls);
  }
});
