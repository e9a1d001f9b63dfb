/**
 * Ends a long-running command on SIGINT/SIGTERM, once; a second signal forces the exit.
 *
 * One Ctrl-C often arrives twice: the terminal sends it to the whole foreground process group,
 * and npm (`npm start`) forwards the one it got to its child as well. So a signal within
 * `ECHO_MS` of the first is taken for the same one; only a later one, a person pressing again,
 * forces the exit past an orderly stop.
 *
 * @module
 */

const ECHO_MS = 1_000;

export function stopOnSignals(stop: () => Promise<void>, options: { echoMs?: number } = {}): void {
  const echoMs = options.echoMs ?? ECHO_MS;
  let first: number | undefined;
  const onSignal = () => {
    if (first !== undefined) {
      if (performance.now() - first >= echoMs) process.exit(130);
      return;
    }
    first = performance.now();
    stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}
