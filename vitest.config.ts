/**
 * Three projects, so that a developer has a fast inner loop:
 * - `unit`: in-process tests (no real MCP server, no Deno, no bubblewrap, no CLI process), the
 *   `*.test.ts` beside the code plus a few in-process checks under test/; under a minute on 2 cores
 *   (`npm run test:unit`);
 * - `e2e`: real processes: the worker under Deno, the sidecar CLI, stdio servers, bubblewrap,
 *   including the tests beside their code listed in `REAL_PROCESSES_BESIDE_CODE`;
 * - `slow`: quick start from a fresh checkout, Chromium, the conformance suite, load.
 * `npm test` (`vitest run`) runs all three.
 *
 * The global setups sit at the root, not in a project: vitest then runs them once for the whole
 * run and what they `provide` reaches every project, so the resilience summary stays one line.
 */
import { defineConfig } from 'vitest/config';

const BESIDE_CODE = ['shared/**/*.test.ts', 'worker/**/*.test.ts', 'sidecar/**/*.test.ts', 'cli/**/*.test.ts'];

/** Tests beside their code that start real processes (servers, bubblewrap, Deno, the CLI). */
const REAL_PROCESSES_BESIDE_CODE = [
  'cli/check.test.ts',
  'cli/deno-worker-process.test.ts',
  'cli/doctor.test.ts',
  'cli/sidecar-bundle.test.ts',
  'cli/sidecar-init.test.ts',
  'cli/signals.test.ts',
  'cli/start.test.ts',
  'cli/state-dir-lock.test.ts',
  'sidecar/host/create-stdio-transport.test.ts',
  'sidecar/host/modern/legacy-agent-transport.test.ts',
  'sidecar/host/modern/legacy-instance.test.ts',
  'sidecar/host/modern/modern-server-instance.test.ts',
  'sidecar/host/modern/server-era.test.ts',
  'sidecar/host/remote-mcp-host-handler.test.ts',
  'sidecar/process/address-space-limit.test.ts',
  'sidecar/process/group-watchdog.test.ts',
  'sidecar/process/parent-death.test.ts',
  'sidecar/process/process-backed-transport.test.ts',
  'sidecar/process/process-executor.test.ts',
  'sidecar/process/server-cgroups.test.ts',
  'sidecar/sandbox/bubblewrap/bubblewrap-ready.test.ts',
  'sidecar/sandbox/contained.test.ts',
  'sidecar/sandbox/index.test.ts',
  'worker/adapters/deno/deno-unexpected-errors.test.ts',
];

/** In-process checks that live under test/ because they span the tree, and the bench's pure parts. */
const IN_PROCESS_UNDER_TEST = ['test/layering.test.ts', 'test/config-parsers.property.test.ts', 'test/config-secrets.test.ts', 'test/readme.test.ts', 'test/bench/**/*.test.ts'];

const SLOW = [
  'test/readme-quickstart.test.ts',
  'test/readme-deploy.test.ts',
  'test/status-page.test.ts',
  'test/oauth/oauth-browser.test.ts',
  'test/browser/browser-client.test.ts',
  'test/oauth/oauth-conformance.test.ts',
  'test/conformance/**/*.test.ts',
  'test/resilience/load.test.ts',
  // Waits out workerd's 10 s inactivity eviction.
  'test/cloudflare/hibernation.test.ts',
];

// The bench's modules are not tests; its `*.test.ts` (pure parts only) run in `unit`.
const EXCLUDE = ['**/node_modules/**'];

// Two files at once: vitest's default (one fewer than the cores) runs the whole suite one file at a
// time on the 2-core machines CI runs on, and most e2e time is spent waiting on real processes
// (Deno, bubblewrap, servers' starts): 958 s serial, 720 s with two (s29, the same 2,453 tests).
const common = { testTimeout: 30_000, hookTimeout: 60_000, pool: 'forks', maxWorkers: 2 } as const;

export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts', 'test/resilience/summary.global.ts'],
    projects: [
      {
        test: { ...common, name: 'unit', include: [...BESIDE_CODE, ...IN_PROCESS_UNDER_TEST], exclude: [...EXCLUDE, ...REAL_PROCESSES_BESIDE_CODE] },
      },
      {
        test: { ...common, name: 'e2e', include: ['test/**/*.test.ts', ...REAL_PROCESSES_BESIDE_CODE], exclude: [...EXCLUDE, ...IN_PROCESS_UNDER_TEST, ...SLOW] },
      },
      {
        test: { ...common, name: 'slow', include: SLOW, exclude: EXCLUDE },
      },
    ],
  },
});
