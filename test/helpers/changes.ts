import { sleep } from "./files.js";

/** The next batch of changed paths an artifact watcher reported into `seen` (taken out of it). */
export async function nextChange(seen: string[][], timeoutMs = 10_000): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  while (seen.length === 0) {
    if (Date.now() > deadline) throw new Error("no change reported");
    await sleep(25);
  }
  return seen.shift()!;
}
