/**
 * Ending a process tree on Windows, where there are no process groups to signal.
 *
 * @module
 */

/**
 * The command that ends a process and all its descendants on Windows. A pure function so the
 * Linux test suite can check it; `SystemRoot` is read case-insensitively, as Windows does.
 */
export function windowsTreeKillCommand(pid: number, env: Readonly<Record<string, string | undefined>>): { file: string; args: string[] } {
  const rootKey = Object.keys(env).find((k) => k.toLowerCase() === 'systemroot');
  const root = (rootKey !== undefined ? env[rootKey] : undefined) ?? 'C:\\Windows';
  return { file: `${root.replace(/\\+$/, '')}\\System32\\taskkill.exe`, args: ['/PID', String(pid), '/T', '/F'] };
}
