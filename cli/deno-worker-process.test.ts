import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from './deno-binary.ts';
import { denoWorkerArgs } from './deno-worker-process.ts';

describe('the Deno worker\'s permissions', () => {
  it('reads only its config and state, never the package folder, where the quick start keeps its host key', () => {
    const root = packageRoot();
    const state = join(root, '.switchyard');
    const args = denoWorkerArgs({ configFile: join(state, 'worker.json'), stateDir: join(state, 'worker') }, root);
    const reads = args.filter((a) => a.startsWith('--allow-read')).map((a) => a.slice('--allow-read='.length).split(','));
    expect(reads).toEqual([[join(state, 'worker.json'), join(state, 'worker')]]);
    expect(args).not.toContain('--allow-read');
    expect(args.at(-1)).toBe(join(root, 'worker', 'adapters', 'deno', 'deno-worker.ts'));
  });
});
