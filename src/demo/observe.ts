// What the demo and the drill watch for while a gateway they started runs: its rows in the store,
// a result's text, a condition polled until it holds. Kept apart from the demo's story so that
// the drill's command loads these lines, not the demo (its console, its project writer).
import type { Store } from "../store/db.js";

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

/** The epoch of the newest gateway still running, or null. */
export function currentEpoch(db: Store): string | null {
  const row = db
    .prepare("SELECT epoch FROM gateways WHERE ended_at IS NULL ORDER BY started_at DESC LIMIT 1")
    .get() as { epoch: string | null } | undefined;
  return row?.epoch ?? null;
}

export function gatewayRunning(db: Store): boolean {
  return !!db.prepare("SELECT 1 FROM gateways WHERE ended_at IS NULL").get();
}

/** A tool result's text content, other content named by its type. */
export function text(res: unknown): string {
  const content = (res as { content?: { type: string; text?: string }[] }).content ?? [];
  return content.map((c) => c.text ?? `[${c.type}]`).join(" ");
}
