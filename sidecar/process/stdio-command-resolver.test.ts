import { describe, expect, it } from 'vitest';
import { LocalError } from '../../shared/errors.ts';
import { type ResolveContext, resolveStdioCommand } from './stdio-command-resolver.ts';

const posix = (files: string[], env: Record<string, string>, cwd = '/srv/app'): ResolveContext => ({
  platform: 'linux',
  env,
  cwd,
  isFile: (path) => files.includes(path),
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

describe('resolveStdioCommand on POSIX', () => {
  const table: Array<[string, string, string[], Record<string, string>, string]> = [
    ['the first PATH entry wins', 'npx', ['/a/npx', '/b/npx'], { PATH: '/a:/b' }, '/a/npx'],
    ['later PATH entries are searched', 'npx', ['/b/npx'], { PATH: '/a:/b' }, '/b/npx'],
    ['empty PATH entries are not the working directory', 'tool', ['/srv/app/tool', '/b/tool'], { PATH: ':/a::/b:' }, '/b/tool'],
    ['relative PATH entries are resolved against cwd', 'tool', ['/srv/app/node_modules/.bin/tool'], { PATH: 'node_modules/.bin' }, '/srv/app/node_modules/.bin/tool'],
    ['a command with a slash is resolved against cwd', './server', ['/srv/app/server'], { PATH: '/a' }, '/srv/app/server'],
    ['a nested relative command too', 'bin/server', ['/srv/app/bin/server'], {}, '/srv/app/bin/server'],
    ['an absolute command is used as it is', '/opt/x/server', ['/opt/x/server'], { PATH: '/a' }, '/opt/x/server'],
    ['a slash command skips PATH', 'sub/npx', ['/a/sub/npx', '/srv/app/sub/npx'], { PATH: '/a' }, '/srv/app/sub/npx'],
  ];
  it.each(table)('%s', (_, command, files, env, expected) => {
    const args = ['-y', 'a b', ''];
    expect(resolveStdioCommand(command, args, posix(files, env))).toEqual({ file: expected, args });
  });

  it('reports a command missing from PATH before any launch', () => {
    const error = failure(() => resolveStdioCommand('nope', [], posix(['/a/npx'], { PATH: '/a' })));
    expect(error.code).toBe('command-not-found');
    expect(error.message).toBe('Cannot launch server: command "nope" not found on PATH');
  });

  it('reports a missing relative command and an empty command', () => {
    expect(failure(() => resolveStdioCommand('./nope', [], posix([], {}))).message).toBe('Cannot launch server: command "./nope" not found');
    expect(failure(() => resolveStdioCommand(' ', [], posix([], {}))).code).toBe('command-not-found');
  });

  it('does not treat Windows names specially', () => {
    expect(() => resolveStdioCommand('npx', [], posix(['/a/npx.cmd'], { PATH: '/a', PATHEXT: '.CMD' }))).toThrow(LocalError);
  });
});
