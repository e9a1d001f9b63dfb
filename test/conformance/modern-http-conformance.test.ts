/**
 * The official suite's 2026-07-28 requirements (`server --requirements 2026-07-28`, run as
 * `modern-conformance.test.ts` runs it) through `/servers/:name/mcp` of the worker under Deno to
 * HTTP servers, three runs at once:
 *
 * - **direct**: edge-direct, the modern conformance fixture behind `modern-http-server.mjs` (a
 *   stateless 2026-07-28 Streamable HTTP front). The worker sends each request as a modern POST
 *   and keeps nothing between them; no host is in the path.
 * - **web-modern**: the same kind of server (another one) as a host's HTTP target: the sidecar's
 *   probe finds it modern and its instance for the agent sends modern POSTs.
 * - **web-legacy**: `conformance-fixture-server.mjs http` (SDK 1.32, sessions) as a host's HTTP
 *   target: the host's legacy instance is a Streamable HTTP session, MRTR bridged as for stdio.
 *
 * Asserted as in the stdio run (`modern-requirements.ts`).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { REPO } from '../support/paths.ts';
import { ProcessSet, startModernHttp, waitForOutput } from '../support/processes.ts';
import { HOST_A, startStack, type Stack } from '../support/stack.ts';
import { startBearerProxy, type BearerProxy } from './bearer-proxy.ts';
import { runConformanceSuite, type SuiteResults } from './conformance-cli.ts';
import { assertPasses, LEGACY_EXCEPTIONS } from './modern-requirements.ts';

type Server = 'direct' | 'web-modern' | 'web-legacy';
let stack: Stack;
const procs = new ProcessSet();
let proxy: BearerProxy | undefined;
const results = new Map<Server, SuiteResults>();

async function startLegacyFixtureHttp(): Promise<string> {
  const proc = procs.spawn(process.execPath, [join(REPO, 'test/conformance/conformance-fixture-server.mjs'), 'http'], { PORT: '0' });
  const match = await waitForOutput(proc, proc.stderr, /listening on port (\d+)/, 'conformance fixture');
  return `http://127.0.0.1:${match[1]}/mcp`;
}

beforeAll(async () => {
  // Each run gets a server of its own: a scenario's list changes must not reach the other run's listen.
  const modernFixture = () => startModernHttp(procs, join(REPO, 'test/conformance/modern-conformance-fixture-server.mjs')).then((s) => s.url);
  const [modern, modernBehindHost, legacy] = await Promise.all([modernFixture(), modernFixture(), startLegacyFixtureHttp()]);
  const onA = { type: 'user-computer-profile', 'entity-id': HOST_A, target: { type: 'local' } };
  stack = await startStack({
    servers: { 'web-modern': { url: modernBehindHost }, 'web-legacy': { url: legacy } },
    worker: {
      servers: {
        direct: { executor: { type: 'http', url: modern } },
        'web-modern': { executor: onA },
        'web-legacy': { executor: onA },
        offline: { executor: { type: 'reverse-http', 'entity-id': 'res-host-b' } },
      },
    },
    agents: [{ name: 'carol', servers: ['direct', 'web-modern', 'web-legacy'] }],
  });
  proxy = await startBearerProxy(stack.url, stack.tokens.carol!);
  const run = async (server: Server) => results.set(server, await runConformanceSuite(procs, `${proxy!.url}/servers/${server}/mcp`, join(stack.dir, `conformance-${server}`), { requirements: '2026-07-28' }));
  await Promise.all([run('direct'), run('web-modern'), run('web-legacy')]);
}, 240_000);

afterAll(async () => {
  await procs.stopAll();
  await proxy?.close();
  await stack?.stop();
});

describe('the 2026-07-28 conformance requirements to HTTP servers', () => {
  it('a modern HTTP server reached edge-direct passes every scenario', () => {
    assertPasses('modern HTTP server, edge-direct', results.get('direct')!, {});
  });

  it('the same kind of server as a host\'s HTTP target passes every scenario', () => {
    assertPasses('modern HTTP server, a host\'s target', results.get('web-modern')!, {});
  });

  it('a legacy HTTP server as a host\'s target passes what the legacy stdio server does, MRTR through the host\'s bridge', () => {
    assertPasses('legacy HTTP server, a host\'s target', results.get('web-legacy')!, LEGACY_EXCEPTIONS);
  });
});
