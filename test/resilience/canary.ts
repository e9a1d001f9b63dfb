/**
 * A canary: one agent session that keeps making echo calls, each with its own payload, for as
 * long as a test file feeds bad input or injects faults elsewhere. The claim "no other session
 * affected" is then a number: the canary made N calls and none failed or came back with another
 * caller's payload.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import { RawSession } from './raw-client.ts';

export interface CanaryReport {
  calls: number;
  failures: number;
  /** The first few failures, for the assertion message. */
  errors: string[];
}

export class Canary {
  readonly #report: CanaryReport = { calls: 0, failures: 0, errors: [] };
  readonly #session: RawSession;
  #running: Promise<void> | undefined;
  #stopped = false;

  private constructor(session: RawSession) {
    this.#session = session;
  }

  /** Opens the session on `url` (an echo server's endpoint) and starts calling, one call every `intervalMs`. */
  static async start(url: string, token: string, intervalMs = 20): Promise<Canary> {
    const canary = new Canary(await RawSession.open(url, token));
    canary.#running = canary.#loop(intervalMs);
    return canary;
  }

  get report(): CanaryReport {
    return { ...this.#report, errors: [...this.#report.errors] };
  }

  /** Stops calling, ends the session, and returns what happened. */
  async stop(): Promise<CanaryReport> {
    this.#stopped = true;
    await this.#running;
    await this.#session.close().catch(() => {});
    return this.report;
  }

  async #loop(intervalMs: number): Promise<void> {
    while (!this.#stopped) {
      const payload = `canary-${this.#report.calls}-${randomBytes(4).toString('hex')}`;
      try {
        const response = await this.#session.request('tools/call', { name: 'echo', arguments: { message: payload } });
        const text = (response.result as { content?: Array<{ text?: string }> } | undefined)?.content?.[0]?.text;
        if (text !== `Echo: ${payload}`) throw new Error(`unexpected answer ${JSON.stringify(response).slice(0, 300)}`);
      } catch (error) {
        this.#report.failures++;
        if (this.#report.errors.length < 5) this.#report.errors.push((error as Error).message);
      }
      this.#report.calls++;
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  }
}
