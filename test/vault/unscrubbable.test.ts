// A server's answer that cannot be scrubbed, through a real gateway: the vaulted fixture
// (test/fixtures/servers/vaulted.mjs) is given by the vault a one-character value, "~", under a
// 128-character name, and its `reveal` tool echoes the note it is called with: a note of 130,000
// "~" makes an answer (the note twice) whose markers (139 characters for each "~") would add 36 M
// characters, past what scrubbing may add (MAX_GROWTH, src/vault/scrub.ts); a few more megabytes
// of such text took it past V8's longest string, and a RangeError. The answer is dropped unshown, the call gets
// `response_invalid` (ServerMessages.unscrubbable, src/gateway/serverMessages.ts), and the gateway
// serves on. With PORTCULLIS_DEBUG=1 the gateway also quotes the client's request line (the note
// included) in its trace: that line, which cannot be scrubbed either, is shown as a fixed sentence
// (Gateway.scrub), where the throw ended the gateway.
import { afterEach, describe, expect, it } from "vitest";
import { runCli, startGateway } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { storeSecret, vaultedProject } from "./helpers.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const NAME = "tok".padEnd(128, "_");
const MARKER = `[redacted:${NAME}]`;

// biome-ignore lint/suspicious/noExplicitAny: tool results are read loosely
const textOf = (r: any): string => r.content?.[0]?.text ?? "";

async function gatewayWithTilde(env: Record<string, string> = {}) {
  const stateDir = newStateDir();
  cleanup.push(async () => {
    await runCli(["lock"], { stateDir });
  });
  await storeSecret(stateDir, NAME, "~", "--deliver", "env");
  expect((await runCli(["unlock"], { stateDir, env: passphraseEnv() })).code).toBe(0);
  const project = vaultedProject({
    credentials: { API_TOKEN: { secret: NAME, deliver: "env" } },
    approval: { default: "none" },
  });
  cleanup.push(() => project.cleanup());
  const gw = await startGateway({ args: ["vaulted"], cwd: project.dir, stateDir, env });
  cleanup.push(() => gw.close());
  return gw;
}

/** Calls `reveal` with a note too full of the value to scrub: the call's error. */
async function unscrubbableCall(gw: Awaited<ReturnType<typeof gatewayWithTilde>>) {
  const note = "~ ".repeat(130_000);
  const e = await gw.client.callTool({ name: "reveal", arguments: { form: "raw", note } }).then(
    () => null,
    (err: unknown) => err as { code?: number; data?: unknown; message?: string },
  );
  expect(e, "the call must fail").not.toBeNull();
  expect(e!.code).toBe(-32603);
  expect(e!.data).toMatchObject({ error: "response_invalid" });
  expect(e!.message).toContain("could not be scrubbed");
}

describe("a server's answer that cannot be scrubbed", () => {
  it("is dropped unshown, its caller gets response_invalid, and the gateway serves on", async () => {
    const gw = await gatewayWithTilde();
    // scrubbed as ever when it can be
    expect(textOf(await gw.client.callTool({ name: "reveal", arguments: { form: "raw", note: "a" } }))).toBe(
      `a ${MARKER}`,
    );
    await unscrubbableCall(gw);
    await gw.waitForStderr(/dropped a message from the server: it could not be scrubbed/);
    // still serving, and still scrubbing
    expect(textOf(await gw.client.callTool({ name: "reveal", arguments: { form: "raw", note: "b" } }))).toBe(
      `b ${MARKER}`,
    );
    expect(gw.stderr()).not.toContain("internal error");
    expect(gw.stderr()).not.toContain("~ ~");
  });

  it("PORTCULLIS_DEBUG=1: the trace of the client's line that cannot be scrubbed is a fixed sentence, and serving goes on", async () => {
    const gw = await gatewayWithTilde({ PORTCULLIS_DEBUG: "1" });
    await unscrubbableCall(gw);
    await gw.waitForStderr(/← client "\(not shown: it could not be scrubbed\)"/);
    expect(textOf(await gw.client.callTool({ name: "reveal", arguments: { form: "raw", note: "c" } }))).toBe(
      `c ${MARKER}`,
    );
    expect(gw.stderr()).not.toContain("internal error");
    expect(gw.stderr()).not.toContain("~ ~");
  });
});
