import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The environment variable that gives the run's worker processes its scratch dir, for what a whole test file keeps. */
export const TEST_SCRATCH_ENV = 'SWITCHYARD_TEST_SCRATCH';

/**
 * Says once, clearly, what the suite needs from the OS (contained tests then fail with
 * `containment-unavailable`), and makes the run's scratch dir, removed after it. vitest ends its
 * worker processes with a signal, so a file's own `exit` handler never ran, and what it kept for
 * the whole file (the Workers bundle) stayed in the temp dir after every run.
 */
export default function setup(): () => void {
  const scratch = mkdtempSync(join(tmpdir(), 'switchyard-test-run-'));
  process.env[TEST_SCRATCH_ENV] = scratch;
  try {
    execFileSync('bwrap', ['--version'], { stdio: 'ignore' });
  } catch {
    process.stderr.write(
      '\n[switchyard] bubblewrap (bwrap) is not installed: contained-launch tests will fail with ' +
        'containment-unavailable. Install it with: sudo apt-get install -y bubblewrap\n\n',
    );
  }
  return () => rmSync(scratch, { recursive: true, force: true });
}
