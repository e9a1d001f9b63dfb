/**
 * What a promise gives within a wait, or `fallback` once it has not: for a Durable Object asking
 * another, whose answer may never come (an object that hangs), where the asker must go on.
 *
 * @module
 */
export async function within<T, F>(promise: Promise<T>, ms: number, fallback: F): Promise<T | F> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<F>((resolve) => (timer = setTimeout(() => resolve(fallback), ms)));
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}
