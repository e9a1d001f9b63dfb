/**
 * Issue 14, "Must show": the official suite's 2026-07-28 requirements
 * (`@modelcontextprotocol/conformance@0.2.0-alpha.12 server --requirements 2026-07-28`, run under
 * the repo's Deno binary, which has the `fs.globSync` Node 20 lacks) through `/servers/:name/mcp`
 * of the worker under the real Deno binary, a real `switchyard sidecar` linked to it, two stdio
 * servers behind it, both runs at once:
 *
 * - **modern**: `modern-conformance-fixture-server.mjs`, a server that speaks only 2026-07-28. The
 *   host's probe finds it modern and forwards requests with their `_meta`; its own
 *   InputRequiredResults pass through, their requestState sealed by the host for the agent and
 *   handed back to the server as it gave it on the retry.
 * - **legacy**: `conformance-fixture-server.mjs`, an SDK 1.32 server that knows only `initialize`.
 *   The host keeps a legacy instance for the agent, makes its results modern (`resultType`,
 *   caching hints, resource-not-found as -32602) and bridges its mid-call questions into
 *   InputRequiredResults (the MRTR bridge).
 *
 * Asserted per check: every check of every scenario is SUCCESS (or INFO), except the ones listed
 * below with their reason; a listed check that passes fails the test too, so a list cannot go
 * stale. The tasks extension (`tasks-*`, not scored for 2026-07-28) is not served by Switchyard or
 * the fixtures: its score is printed, not asserted.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO } from '../support/paths.ts';
import { ProcessSet } from '../support/processes.ts';
import { startStack, type Stack } from '../support/stack.ts';
import { startBearerProxy, type BearerProxy } from './bearer-proxy.ts';
import { runConformanceSuite, type SuiteResults } from './conformance-cli.ts';
import { assertPasses, LEGACY_EXCEPTIONS } from './modern-requirements.ts';

/** `<scenario>/<check id>` → why it does not pass with the modern fixture behind Switchyard: none does. */
const MODERN_EXCEPTIONS: Readonly<Record<string, string>> = {};

let stack: Stack;
/** The suite's own processes (the stack keeps its worker, sidecar and servers). */
const procs = new ProcessSet();
let proxy: BearerProxy | undefined;
const results = new Map<'modern' | 'legacy', SuiteResults>();

beforeAll(async () => {
  stack = await startStack({
    servers: {
      modern: { command: process.execPath, args: [join(REPO, 'test/conformance/modern-conformance-fixture-server.mjs')] },
      legacy: { command: process.execPath, args: [join(REPO, 'test/conformance/conformance-fixture-server.mjs'), 'stdio'] },
    },
  });
  // The suite's client cannot send headers; the proxy adds the bearer token (Host and Origin pass through).
  proxy = await startBearerProxy(stack.url, stack.tokens.alice!);
  const run = (server: 'modern' | 'legacy') => runConformanceSuite(procs, `${proxy!.url}/servers/${server}/mcp`, join(stack.dir, `conformance-${server}`), { requirements: '2026-07-28' });
  const [modern, legacy] = await Promise.all([run('modern'), run('legacy')]);
  results.set('modern', modern);
  results.set('legacy', legacy);
}, 180_000);

afterAll(async () => {
  await procs.stopAll();
  await proxy?.close();
  await stack?.stop();
});

function assertRun(server: 'modern' | 'legacy', exceptions: Readonly<Record<string, string>>): SuiteResults {
  const run = results.get(server)!;
  assertPasses(`${server} fixture through /servers/${server}/mcp`, run, exceptions);
  return run;
}

describe('the 2026-07-28 conformance requirements through /servers/:name/mcp', () => {
  it('a modern stdio server behind Switchyard passes every scenario', () => {
    const run = assertRun('modern', MODERN_EXCEPTIONS);
    // A broken setup must not pass vacuously: the scenarios that need the server's own answers ran.
    for (const key of [
      'server-stateless/sep-2575-server-implements-discover', 'input-required-result-multi-round/sep-2322-multi-round-r3', 'input-required-result-tampered-state/sep-2322-reject-tampered-state',
      'caching/sep-2549-tools-list-caching-hints', 'server-stateless/sep-2575-server-sends-subscription-ack', 'http-custom-header-server-validation/sep-2243-server-reject-param-mismatch',
    ]) {
      expect(run.get(key)?.status, key).toBe('SUCCESS');
    }
  });

  it('a legacy stdio server behind Switchyard passes every scenario a legacy server can express, MRTR through the host\'s bridge', () => {
    const run = assertRun('legacy', LEGACY_EXCEPTIONS);
    for (const key of [
      'server-stateless/sep-2575-server-rejects-undeclared-capability',
      'input-required-result-multiple-input-requests/sep-2322-multiple-inputs-complete',
      'input-required-result-multi-round/sep-2322-multi-round-r3',
      'input-required-result-non-tool-request/sep-2322-non-tool-complete',
      'sep-2164-resource-not-found/sep-2164-error-code',
      'server-stateless/sep-2575-server-honors-notification-filter',
      'http-custom-header-server-validation/sep-2243-server-validate-param-match',
      'input-required-result-capability-check/sep-2322-respect-client-capabilities',
    ]) {
      expect(run.get(key)?.status, key).toBe('SUCCESS');
    }
  });
});
