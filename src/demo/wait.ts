/** Polls `check` every 50 ms until it gives a value; throws naming `what` after `ms`. */
export async function waitFor<T>(
  check: () => T | null | undefined | false,
  what: string,
  ms = 30_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
