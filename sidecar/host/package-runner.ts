/**
 * Package runners (`npx`, `pnpm dlx`, `uvx`, …) fetch the package they run at each start: under a
 * trust profile whose sandbox has no internet they retry against a registry they cannot reach,
 * then fail, and the agent sees only a timeout or an exit. The most common first server of a
 * contained host (`npx -y @scope/server`) fails that way, so both `doctor --launch` and the
 * sidecar's launch name it, in these words.
 *
 * @module
 */

/** The package runner `command` is, named as a user would say it; `undefined` for any other command. */
export function packageRunnerOf(command: string, args: readonly string[]): string | undefined {
  const bin = command.slice(Math.max(command.lastIndexOf('/'), command.lastIndexOf('\\')) + 1).replace(/\.(cmd|exe)$/i, '');
  if (bin === 'npx' || bin === 'bunx' || bin === 'uvx') return bin;
  const sub = args[0];
  if ((bin === 'pnpm' || bin === 'yarn') && sub === 'dlx') return `${bin} dlx`;
  if (bin === 'npm' && sub === 'exec') return 'npm exec';
  if (bin === 'pipx' && sub === 'run') return 'pipx run';
  return undefined;
}

/** The sidecar's log line for such a launch (its fields: `runner`, `fix`); doctor, which says it as its fix, leaves it out of the log it quotes. */
export const PACKAGE_RUNNER_WARNING = 'Server runs a package runner in a sandbox without internet: it cannot fetch its package';

/** Why such a server fails without internet, and the two ways out. */
export function packageRunnerWithoutInternet(runner: string): string {
  return `${runner} fetches the server's package at each start, from a network its trust profile does not grant (it retries, then fails): install the package on this host and name its own command in mcp.json, or grant "internet-client" in the profile`;
}
