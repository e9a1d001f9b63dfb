import { describe, expect, it } from 'vitest';
import { packageRunnerOf } from './package-runner.ts';

describe('packageRunnerOf', () => {
  it('tells the package runners that fetch at start from other commands', () => {
    expect([['npx', ['-y', 'x']], ['/usr/local/bin/npx', []], ['C:\\node\\npx.cmd', []], ['pnpm', ['dlx', 'x']], ['yarn', ['dlx']], ['npm', ['exec', 'x']], ['uvx', ['x']], ['bunx', []], ['pipx', ['run', 'x']]].map(([c, a]) => packageRunnerOf(c as string, a as string[])))
      .toEqual(['npx', 'npx', 'npx', 'pnpm dlx', 'yarn dlx', 'npm exec', 'uvx', 'bunx', 'pipx run']);
    expect([['node', ['server.js']], ['npm', ['run', 'x']], ['pnpm', ['x']], ['/opt/npxtool', []]].map(([c, a]) => packageRunnerOf(c as string, a as string[]))).toEqual([undefined, undefined, undefined, undefined]);
  });
});
