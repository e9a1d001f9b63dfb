/**
 * Runs one hot-path micro-benchmark and prints its result as one JSON line, so `run.ts` can run
 * each in the runtime it belongs to, in a fresh process:
 *
 *   node --import tsx test/bench/hot-path-main.ts link
 *   deno run -A test/bench/hot-path-main.ts passthrough
 *
 * @module
 */
import { linkRoundTrip, passthroughRoundTrip } from './hot-path.ts';

const runtime = globalThis as unknown as { Deno?: { args: string[] }; process?: { argv: string[] } };
const which = runtime.Deno?.args[0] ?? runtime.process?.argv[2];
const result = which === 'passthrough' ? await passthroughRoundTrip() : which === 'link' ? await linkRoundTrip() : null;
if (result === null) throw new Error(`Usage: hot-path-main.ts link|passthrough (got ${which})`);
console.log(JSON.stringify({ bench: which, ...result }));
