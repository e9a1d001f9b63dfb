import { execFileSync } from 'node:child_process';

/** Says once, clearly, what the suite needs from the OS; contained tests then fail with `containment-unavailable`. */
export default function setup(): void {
  try {
    execFileSync('bwrap', ['--version'], { stdio: 'ignore' });
  } catch {
    process.stderr.write(
      '\n[switchyard] bubblewrap (bwrap) is not installed: contained-launch tests will fail with ' +
        'containment-unavailable. Install it with: sudo apt-get install -y bubblewrap\n\n',
    );
  }
}
