/** The one sleep and the one bounded poll of the test suite. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Polls `fn` until it returns a value (errors count as "not yet"); bounded in time, and the timeout names what it
 * waited for and the last error seen.
 */
export async function until<T>(
  what: string,
  fn: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 60_000,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last === undefined ? '' : ` (${describe(last)})`}`,
      );
    }
    await sleep(intervalMs);
  }
}

/** `until` for a synchronous condition. */
export async function waitFor(predicate: () => boolean, timeoutMs = 2000, what = 'condition'): Promise<void> {
  await until(what, () => (predicate() ? true : undefined), timeoutMs, 5);
}

function describe(e: unknown): string {
  return e instanceof Error ? e.message : typeof e === 'string' ? e : JSON.stringify(e);
}
