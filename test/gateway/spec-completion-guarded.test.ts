// completion/complete is what a host sends as its user types a prompt's argument: one request per
// keystroke, each cancelling the one before (the SDK sends notifications/cancelled when its signal
// aborts). Behind a server whose `approval.resources` is "session", a completion is approved as the
// pseudo-tool `completion/complete prompt <name>` (docs/design.md). A request whose call the client
// cancelled stays pending for a retry with the same arguments; each keystroke's arguments differ
// (the typed value), so without more the human was left one request per keystroke for the one
// session approval, and a run may have at most 50 waiting: a long argument typed through a guarded
// server filled the run's quota, and its other calls were refused unasked. A newer call of the
// same tool now supersedes a session request its client gave up on; a per-call request is never
// superseded (its arguments are what the human decides).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents, decideByCli, storedPending } from "../helpers/approvals.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

type GatewayHandle = Awaited<ReturnType<typeof startGateway>>;

const PSEUDO_TOOL = "completion/complete prompt test_prompt_with_arguments";

async function guarded(mode: "session" | "per-call"): Promise<GatewayHandle> {
  const dir = tempDir();
  const [command, ...args] = fixtureCommand("conformance");
  writeFileSync(
    join(dir, "portcullis.json"),
    JSON.stringify({
      servers: { conf: { command, args, approval: { default: "none", resources: mode } } },
    }),
  );
  const gw = await startGateway({ args: ["conf"], cwd: dir });
  cleanup.push(
    () => gw.close(),
    () => removeDir(dir),
  );
  await gw.client.listTools();
  return gw;
}

/** Types `values` one keystroke after another, each cancelling the one before; the last waits. */
async function typeThrough(gw: GatewayHandle, values: string[]) {
  const type = (value: string) => {
    const typing = new AbortController();
    const answer = gw.client
      .complete(
        {
          ref: { type: "ref/prompt", name: "test_prompt_with_arguments" },
          argument: { name: "arg1", value },
        },
        { signal: typing.signal, timeout: 60_000 },
      )
      .catch((e: unknown) => e);
    return { answer, next: () => typing.abort("the user typed on") };
  };
  // each keystroke's ask: a request made, or one joined
  const asks = () =>
    gw.stderr().match(/approval needed for "completion|joins approval request/g)?.length ?? 0;
  let typed = type(values[0]!);
  await waitFor(() => asks() >= 1 || null, 20_000, "the first keystroke's approval request");
  for (const value of values.slice(1)) {
    // the keystroke waits for a human, and the user types on
    const before = asks();
    typed.next();
    await typed.answer;
    typed = type(value);
    await waitFor(() => asks() > before || null, 20_000, `the keystroke "${value}" asking`);
  }
  // (an object: an async function's returned promise would be awaited with it)
  return { last: typed.answer };
}

describe("completions typed through a server guarded for the session", () => {
  it("keystrokes that cancel each other leave the human one request, and its approval answers the last", async () => {
    const gw = await guarded("session");
    const stateDir = gw.stateDir!;
    const { last } = await typeThrough(gw, ["a", "ab", "abc"]);
    const pending = storedPending(stateDir).filter((p) => p.tool.startsWith("completion/complete"));
    expect(pending.map((p) => p.tool)).toEqual([PSEUDO_TOOL]);
    // the two given up on are closed and recorded, saying why
    const superseded = await waitFor(
      async () => {
        const e = (await auditEvents(stateDir)).filter(
          (r) => r.type === "approval_expired" && String(r.reason).startsWith("superseded"),
        );
        return e.length >= 2 ? e : null;
      },
      20_000,
      "two approval_expired records of superseded requests",
    );
    expect(superseded.map((e) => e.tool)).toEqual([PSEUDO_TOOL, PSEUDO_TOOL]);
    expect(superseded.map((e) => e.approvalRequest)).not.toContain(pending[0]!.request);
    // the human's one decision answers the keystroke still waiting
    await decideByCli(stateDir, "approve", pending[0]!.request);
    const answer = (await last) as { completion?: { values?: unknown } };
    expect(answer.completion?.values).toBeDefined();
  });

  it("a per-call request is never superseded: each keystroke's arguments are the human's to decide", async () => {
    const gw = await guarded("per-call");
    await typeThrough(gw, ["a", "ab", "abc"]);
    const pending = storedPending(gw.stateDir!).filter((p) => p.tool.startsWith("completion/complete"));
    expect(pending.map((p) => p.tool)).toEqual([PSEUDO_TOOL, PSEUDO_TOOL, PSEUDO_TOOL]);
    expect(gw.stderr()).not.toContain("superseded");
  });
});
