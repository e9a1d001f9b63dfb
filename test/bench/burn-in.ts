/**
 * Burn-in: the echo calls every gateway process of the bench serves, through one session, before
 * any call of it is timed. V8 runs a fresh process's code in its baseline tiers and optimizes it
 * only as calls accumulate: on this machine a fresh sidecar spent about twice the CPU per call in
 * its first thousand calls as after five thousand, and supergateway likewise (the warm-up curve,
 * `warm-up-curve.ts`). The old 50 warm-up calls per variant measured that climb, and unevenly:
 * Switchyard's stack ran for the whole bench while supergateway started afresh for every row.
 * With a burn-in at each start, every side's rows are its steady state, as a gateway that has
 * served agents for a while runs.
 *
 * @module
 */
import { connectHttp, echoLoop } from './client.ts';

/**
 * Echo calls a process serves before it is measured, unless `--burn-in` says otherwise: past the
 * knee of every side's warm-up curve here (supergateway's CPU per call still fell between 3,000
 * and 4,000 calls, Switchyard's from about 2,000 on only within noise).
 */
export const BURN_IN_CALLS = 5000;

/** `calls` echo calls (tool `echo`) through one new session on `url`, then the session closed. */
export async function burnIn(url: string, calls: number, token?: string, tool = 'echo'): Promise<void> {
  if (calls <= 0) return;
  const agent = await connectHttp(url, token);
  try {
    await echoLoop(agent, tool, 0, calls, 'burn-in');
  } finally {
    await agent.close();
  }
}
