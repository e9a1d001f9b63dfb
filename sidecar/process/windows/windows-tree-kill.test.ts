import { describe, expect, it } from 'vitest';
import { windowsTreeKillCommand } from './windows-tree-kill.ts';

describe('windowsTreeKillCommand', () => {
  it('ends the whole tree with taskkill from SystemRoot, whatever the key case', () => {
    const table: Array<[Record<string, string>, string]> = [
      [{ SystemRoot: 'C:\\Windows' }, 'C:\\Windows\\System32\\taskkill.exe'],
      [{ SYSTEMROOT: 'D:\\WINNT\\' }, 'D:\\WINNT\\System32\\taskkill.exe'],
      [{}, 'C:\\Windows\\System32\\taskkill.exe'],
    ];
    for (const [env, file] of table) expect(windowsTreeKillCommand(4242, env)).toEqual({ file, args: ['/PID', '4242', '/T', '/F'] });
  });
});
