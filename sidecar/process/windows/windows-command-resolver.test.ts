import { describe, expect, it } from 'vitest';
import { LocalError } from '../../../shared/errors.ts';
import { type ResolveContext, resolveStdioCommand } from '../stdio-command-resolver.ts';
import { buildCmdShimLine } from './windows-command-line.ts';

/** Windows file systems are case-insensitive, so the probe is too. */
const windows = (files: string[], env: Record<string, string>, cwd = 'C:\\proj'): ResolveContext => ({
  platform: 'win32',
  env,
  cwd,
  isFile: (path) => files.some((file) => file.toLowerCase() === path.toLowerCase()),
});

function failure(run: () => unknown): LocalError {
  try {
    run();
  } catch (error) {
    if (error instanceof LocalError) return error;
    throw error;
  }
  throw new Error('Expected resolution to fail');
}

describe('resolveStdioCommand on Windows', () => {
  const env = { Path: 'C:\\a;C:\\b', PATHEXT: '.COM;.EXE;.BAT;.CMD', ComSpec: 'C:\\Windows\\System32\\cmd.exe' };
  const direct: Array<[string, string, string[], Record<string, string>, string]> = [
    ['PATH order outranks PATHEXT order', 'tool', ['C:\\a\\tool.exe', 'C:\\b\\tool.com'], env, 'C:\\a\\tool.exe'],
    ['PATHEXT order within one directory', 'tool', ['C:\\a\\tool.exe', 'C:\\a\\tool.com'], env, 'C:\\a\\tool.com'],
    ['env names are case-insensitive', 'tool', ['C:\\b\\tool.com', 'C:\\b\\tool.exe'], { PATH: 'C:\\b', pathext: '.EXE;.COM' }, 'C:\\b\\tool.exe'],
    ['an explicit extension is tried first', 'node.exe', ['C:\\a\\node.exe', 'C:\\a\\node.exe.com'], env, 'C:\\a\\node.exe'],
    ['extensions we cannot launch are skipped', 'tool', ['C:\\a\\tool.js', 'C:\\a\\tool.exe'], { ...env, PATHEXT: '.JS;.EXE' }, 'C:\\a\\tool.exe'],
    ['quoted PATH entries', 'node', ['C:\\Program Files\\nodejs\\node.exe'], { PATH: '"C:\\Program Files\\nodejs";C:\\a' }, 'C:\\Program Files\\nodejs\\node.exe'],
    ['a relative path is resolved against cwd', '.\\tools\\x', ['C:\\proj\\tools\\x.exe'], env, 'C:\\proj\\tools\\x.exe'],
    ['forward slashes count as separators', 'tools/x', ['C:\\proj\\tools\\x.exe'], env, 'C:\\proj\\tools\\x.exe'],
    ['an absolute path skips PATH', 'D:\\bin\\x', ['D:\\bin\\x.exe', 'C:\\a\\x.exe'], env, 'D:\\bin\\x.exe'],
    ['PATHEXT defaults when unset', 'tool', ['C:\\a\\tool.exe'], { PATH: 'C:\\a' }, 'C:\\a\\tool.exe'],
  ];
  it.each(direct)('%s', (_, command, files, envTable, expected) => {
    expect(resolveStdioCommand(command, ['a b'], windows(files, envTable))).toEqual({ file: expected, args: ['a b'] });
  });

  it('never searches the working directory implicitly, not even for "." on PATH', () => {
    const files = ['C:\\proj\\tool.exe', 'C:\\proj\\tool.cmd'];
    for (const Path of ['C:\\a', '.;C:\\a', 'tools;C:\\a', '\\proj;C:\\a']) {
      const error = failure(() => resolveStdioCommand('tool', [], windows(files, { Path })));
      expect(error.code).toBe('command-not-found');
      expect(error.message).toBe('Cannot launch server: command "tool" not found on PATH');
    }
  });

  it('runs npx as npx.cmd through ComSpec with /d /s /c and a quoted line', () => {
    const files = ['C:\\Program Files\\nodejs\\npx.cmd', 'C:\\Program Files\\nodejs\\node.exe'];
    const resolved = resolveStdioCommand('npx', ['-y', '@scope/server'], windows(files, { PATH: 'C:\\Program Files\\nodejs', COMSPEC: 'D:\\cmd.exe' }));
    expect(resolved).toEqual({
      file: 'D:\\cmd.exe',
      args: ['/d', '/s', '/c', '""C:\\Program Files\\nodejs\\npx.cmd" ^^^"-y^^^" ^^^"@scope/server^^^""'],
      verbatim: true,
    });
  });

  it('ComSpec defaults to the system cmd.exe, and .bat files go the same way', () => {
    const resolved = resolveStdioCommand('run', ['x'], windows(['C:\\a\\run.bat'], { PATH: 'C:\\a' }));
    expect(resolved).toEqual({ file: 'C:\\Windows\\System32\\cmd.exe', args: ['/d', '/s', '/c', `"${buildCmdShimLine('C:\\a\\run.bat', ['x'])}"`], verbatim: true });
  });

  it('reports a missing command, and one with a directory, before any launch', () => {
    expect(failure(() => resolveStdioCommand('npx', [], windows([], env))).message).toBe('Cannot launch server: command "npx" not found on PATH');
    expect(failure(() => resolveStdioCommand('.\\x', [], windows([], env))).message).toBe('Cannot launch server: command ".\\x" not found');
  });
});
