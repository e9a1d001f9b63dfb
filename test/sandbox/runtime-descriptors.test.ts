/**
 * The runtime's own descriptors stay the runtime's. V8 opens the files of its profiling flags
 * without O_CLOEXEC (`--perf-basic-prof`'s `/tmp/perf-PID.map`, the log `--logfile` names), so
 * they look just like a descriptor the sidecar inherited. A sidecar that closed them as inherited
 * let the next socket take the number, and V8 then wrote its map into the link. Here the real CLI
 * sidecar runs under both flags: calls go through, it still holds both files at their numbers
 * (and V8 kept writing the map after start, when the link was up), and the server it launched
 * holds neither.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeClient, connectClient } from '../support/clients.ts';
import { descriptorsOf } from '../support/descriptors.ts';
import { fixtureServer } from '../support/paths.ts';
import { startStack, type Stack } from '../support/stack.ts';

let stack: Stack;
let client: Client;
const logDir = mkdtempSync(join(tmpdir(), 'sy-v8-log-'));
const v8Log = join(logDir, 'v8.log');
let perfMap: string;

/** The descriptor of `fds` that points to `target`. */
const numberOf = (fds: Record<number, string>, target: string): number | undefined => {
  const found = Object.entries(fds).find(([, t]) => t === target)?.[0];
  return found === undefined ? undefined : Number(found);
};

beforeAll(async () => {
  stack = await startStack({ servers: { echo: fixtureServer('echo-server.mjs') }, sidecarNodeFlags: ['--perf-basic-prof', '--no-logfile-per-isolate', `--logfile=${v8Log}`] });
  perfMap = `/tmp/perf-${stack.sidecar.process.child.pid}.map`;
  client = await connectClient(`${stack.url}/servers/echo/mcp`, stack.tokens.alice!);
}, 90_000);

afterAll(async () => {
  if (client) await closeClient(client);
  await stack?.stop();
  if (perfMap !== undefined) rmSync(perfMap, { force: true });
  rmSync(logDir, { recursive: true, force: true });
});

describe("the sidecar under V8's profiling flags", () => {
  it('keeps the files V8 opened, serves calls over its link, and passes neither file to a server', async () => {
    const sidecarPid = stack.sidecar.process.child.pid!;
    const atStart = descriptorsOf(sidecarPid);
    const mapFd = numberOf(atStart, perfMap);
    const logFd = numberOf(atStart, v8Log);
    expect({ mapFd, logFd }).toEqual({ mapFd: expect.any(Number), logFd: expect.any(Number) });
    const mapSizeLinked = statSync(perfMap).size;

    for (let i = 0; i < 3; i++) {
      const result = await client.callTool({ name: 'echo', arguments: { message: `call ${i}` } });
      expect(result.content).toEqual([{ type: 'text', text: `Echo: call ${i}` }]);
    }
    expect((await stack.health()).hosts.find((h) => h['entity-id'] === 'res-host-a')?.linked).toBe(true);

    const after = descriptorsOf(sidecarPid);
    expect({ map: after[mapFd!], log: after[logFd!] }).toEqual({ map: perfMap, log: v8Log });
    // V8 wrote map entries for code compiled since the link came up (the launch, the calls), into the file.
    expect(statSync(perfMap).size).toBeGreaterThan(mapSizeLinked);
    expect(readFileSync(perfMap, 'utf8')).toMatch(/^[0-9a-f]+ [0-9a-f]+ \S/m);

    const [server] = stack.serverPids();
    expect(server).toEqual(expect.any(Number));
    expect(existsSync(`/proc/${server}/fd`)).toBe(true);
    const held = Object.values(descriptorsOf(server!));
    expect(held).not.toContain(perfMap);
    expect(held).not.toContain(v8Log);
  });
});
