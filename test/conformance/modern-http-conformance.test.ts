/**
 * The official suite's 2026-07-28 requirements (`server --requirements 2026-07-28`, as
 * `modern-conformance.test.ts` runs it) through `/servers/:name/mcp` of the worker under Deno, to
 * an **edge-direct** HTTP server: the modern conformance fixture (stdio) behind
 * `modern-http-server.mjs`, a stateless 2026-07-28 Streamable HTTP front. The worker forwards each
 * request as a modern POST and keeps nothing between them; no host is in the path.
 *
 * Asserted as in the stdio run: every check passes but the listed ones, each with its reason, and
 * a listed one that passes fails the test. The tasks extension is printed, not asserted.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO } from '../support/paths.ts';
import { ProcessSet, startModernHttp } from '../support/processes.ts';
import { startStack, type Stack } from '../support/stack.ts';
import { startBearerProxy, type BearerProxy } from './bearer-proxy.ts';
import { describeResult, runConformanceSuite, scenariosOf, score, type SuiteResults } from './conformance-cli.ts';

const SCENARIOS = 50;
const isTasks = (key: string): boolean => key.startsWith('tasks-');

/** `<scenario>/<check id>` → why it does not pass edge-direct. */
const EXCEPTIONS: Readonly<Record<string, string>> = {};

let stack: Stack;
const procs = new ProcessSet();
let proxy: BearerProxy | undefined;
let run: SuiteResults;

beforeAll(async () => {
  const server = await startModernHttp(procs, join(REPO, 'test/conformance/modern-conformance-fixture-server.mjs'));
  stack = await startStack({
    servers: {},
    worker: { servers: { direct: { executor: { type: 'http', url: server.url } }, offline: { executor: { type: 'reverse-http', 'entity-id': 'res-host-b' } } } },
    agents: [{ name: 'carol', servers: ['direct'] }],
  });
  proxy = await startBearerProxy(stack.url, stack.tokens.carol!);
  run = await runConformanceSuite(procs, `${proxy.url}/servers/direct/mcp`, join(stack.dir, 'conformance-direct'), { requirements: '2026-07-28' });
}, 180_000);

afterAll(async () => {
  await procs.stopAll();
  await proxy?.close();
  await stack?.stop();
});

describe('the 2026-07-28 conformance requirements to an edge-direct HTTP server', () => {
  it('a modern HTTP server reached edge-direct passes every scenario', () => {
    const scored = new Map([...run].filter(([key]) => !isTasks(key)));
    const tasks = new Map([...run].filter(([key]) => isTasks(key)));
    const clean = scenariosOf(scored).filter((name) => [...scored].every(([key, r]) => !key.startsWith(`${name}/`) || r.status === 'SUCCESS' || r.status === 'INFO'));
    console.log(
      `[conformance 2026-07-28] edge-direct modern HTTP: ${clean.length}/${scenariosOf(scored).length} scenarios outside tasks with every check passing; ` +
        `checks passed ${score(scored)} (${Object.keys(EXCEPTIONS).length} listed exceptions); tasks extension ${score(tasks)} (not asserted)`,
    );
    expect(scenariosOf(run)).toHaveLength(SCENARIOS);
    const problems: string[] = [];
    for (const [key, result] of scored) {
      if (result.status === 'SUCCESS' || result.status === 'INFO' || Object.hasOwn(EXCEPTIONS, key)) continue;
      problems.push(`${key} is ${describeResult(result)}`);
    }
    for (const key of Object.keys(EXCEPTIONS)) {
      const result = run.get(key);
      if (result === undefined) problems.push(`${key} is listed but was not reported: remove the entry`);
      else if (result.status === 'SUCCESS') problems.push(`${key} is listed but passes: remove the entry`);
    }
    expect(problems, problems.join('\n')).toEqual([]);
    expect(run.get('server-stateless/sep-2575-server-implements-discover')?.status).toBe('SUCCESS');
  });
});
