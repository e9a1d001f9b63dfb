/**
 * `switchyard sidecar host-entry --config-dir DIR`: prints this host's line again (see
 * `host-line.ts`), e.g. after its servers or trust profiles changed; exit 1 when a profile had to
 * be left out: a trust profile that does not resolve, or an `mcp.json` that cannot be read.
 *
 * @module
 */
import { parseArgs } from 'node:util';
import { describeHostLine, readHostLine } from './host-line.ts';
import { configDirFrom } from './sidecar-command.ts';
import { FULL_CLI, type Program } from './program.ts';

export async function runHostEntryCommand(argv: string[], program: Program = FULL_CLI): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { 'config-dir': { type: 'string' } } });
  const { line, skipped } = await readHostLine(configDirFrom(values, program));
  process.stdout.write(describeHostLine(line, skipped).join('\n') + '\n');
  return skipped.length > 0 ? 1 : 0;
}
