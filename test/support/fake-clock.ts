/**
 * Deadlines and liveness under vitest's fake clock instead of real waits: a test installs the
 * fake timers before the code under test starts its timers, then advances the clock until the
 * outcome it awaits has settled. Microtasks stay real (in-memory sockets and streams deliver
 * through them), so every step lets the code react before the clock moves on.
 *
 * @module
 */
import { vi } from 'vitest';

/** Timers and clocks (wall and monotonic) a deadline or a keepalive reads; `queueMicrotask` and `nextTick` stay real. */
export function useFakeClock(): void {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'] });
}

/**
 * Advances the fake clock `stepMs` at a time until `promise` settles, then returns its outcome.
 * Fails once `limitMs` of fake time passed: the outcome never came, whatever the clock said.
 */
export async function advanceUntilSettled<T>(promise: Promise<T>, options: { stepMs?: number; limitMs?: number } = {}): Promise<T> {
  const stepMs = options.stepMs ?? 10;
  const limitMs = options.limitMs ?? 120_000;
  let outcome: { ok: true; value: T } | { ok: false; error: unknown } | undefined;
  void promise.then(
    (value) => (outcome = { ok: true, value }),
    (error: unknown) => (outcome = { ok: false, error }),
  );
  for (let elapsed = 0; outcome === undefined; elapsed += stepMs) {
    if (elapsed > limitMs) throw new Error(`Nothing settled within ${limitMs} ms of fake time`);
    await vi.advanceTimersByTimeAsync(stepMs);
  }
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}

/** Advances the fake clock by `ms`, letting every timer due in between fire in order. */
export async function advanceBy(ms: number): Promise<void> {
  await vi.advanceTimersByTimeAsync(ms);
}
