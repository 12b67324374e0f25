// A gateway still running from before an upgrade talks to a holder started by the new version's
// `unlock`. Its holder client asks one question per line and takes the next line as the answer.
// The holder began telling every connection it released a value on that a secret was stored or
// removed (`{"changed":N}`, a line that answers no question): such an old client took that line as
// the answer to its next question, and every later answer as the answer to the question before it
// (a value released for one host read as the answer to another question). The holder now sends
// it only on a connection whose release asked for it (`"changes":true`). Real CLI, real holder
// process, a raw socket client speaking the protocol as the old version did.
import { createConnection, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { holderSocketPath } from "../../src/vault/holder.js";
import { removeDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const HOST = "api.old-client.example:443";
const OTHER = "api.other-client.example:443";
const FIRST = "old-client-first-value-2b7e";
const ROTATED = "old-client-rotated-value-91c4";
const OTHER_VALUE = "old-client-other-value-c03d";

/** One connection to the holder: a question per line, the next line its answer. */
class LineClient {
  private buf = "";
  private readonly lines: string[] = [];
  private readonly waiters: ((line: string) => void)[] = [];
  /** every line the holder wrote on this connection, in order */
  readonly seen: string[] = [];

  constructor(private readonly socket: Socket) {
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      this.buf += chunk;
      for (let nl = this.buf.indexOf("\n"); nl >= 0; nl = this.buf.indexOf("\n")) {
        const line = this.buf.slice(0, nl);
        this.buf = this.buf.slice(nl + 1);
        this.seen.push(line);
        const w = this.waiters.shift();
        if (w) w(line);
        else this.lines.push(line);
      }
    });
  }

  static async open(stateDir: string): Promise<LineClient> {
    const socket = createConnection(holderSocketPath(stateDir));
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("error", reject);
    });
    const c = new LineClient(socket);
    cleanup.push(() => socket.destroy());
    return c;
  }

  /** the next line the holder writes, parsed */
  next(): Promise<Record<string, unknown>> {
    const queued = this.lines.shift();
    if (queued !== undefined) return Promise.resolve(JSON.parse(queued) as Record<string, unknown>);
    return new Promise((resolve) =>
      this.waiters.push((l) => resolve(JSON.parse(l) as Record<string, unknown>)),
    );
  }

  /** the old client: writes the question, takes the next line as its answer */
  ask(req: Record<string, unknown>): Promise<Record<string, unknown>> {
    this.socket.write(`${JSON.stringify(req)}\n`);
    return this.next();
  }
}

async function setSecret(stateDir: string, name: string, host: string, value: string): Promise<void> {
  const r = await runCli(["vault", "set", name, "--from-stdin", "--host", host], {
    stateDir,
    env: passphraseEnv(),
    input: value,
  });
  expect(r.code, r.stderr).toBe(0);
}

async function unlocked(): Promise<string> {
  const stateDir = newStateDir();
  cleanup.push(() => removeDir(stateDir));
  await setSecret(stateDir, "api", HOST, FIRST);
  await setSecret(stateDir, "other", OTHER, OTHER_VALUE);
  const r = await runCli(["unlock"], { stateDir, env: passphraseEnv() });
  expect(r.code, r.stderr).toBe(0);
  cleanup.push(() => runCli(["lock"], { stateDir }));
  return stateDir;
}

describe("a holder client of an older portcullis, one line per question", () => {
  it("keeps its connection through a `vault set` by another process, and each answer is its question's", async () => {
    const stateDir = await unlocked();
    const old = await LineClient.open(stateDir);
    const first = await old.ask({ op: "release-http", scope: "api", host: HOST });
    expect(first.ok).toBe(true);
    expect(first.value === FIRST, "the first release is the stored value").toBe(true);
    expect(typeof first.generation).toBe("number");

    // another process stores a secret while the old client's connection stays open
    await setSecret(stateDir, "api", HOST, ROTATED);

    // the old client asks again, on the same connection: each line answers its own question
    const status = await old.ask({ op: "status" });
    expect(status).toMatchObject({ ok: true, unlocked: true });
    expect(status.generation).not.toBe(first.generation);
    const other = await old.ask({ op: "release-http", scope: "other", host: OTHER });
    expect(other.ok).toBe(true);
    expect(other.value === OTHER_VALUE, "the other secret's release carries the other secret").toBe(true);
    const again = await old.ask({ op: "release-http", scope: "api", host: HOST });
    expect(again.ok).toBe(true);
    expect(again.value === ROTATED, "the release after the rotation carries the rotated value").toBe(true);

    // a removal likewise: nothing but answers on this connection, one per question
    const rm = await runCli(["vault", "rm", "other"], { stateDir, env: passphraseEnv() });
    expect(rm.code, rm.stderr).toBe(0);
    expect(await old.ask({ op: "release-http", scope: "other", host: OTHER })).toEqual({
      ok: false,
      error: "credential_missing",
    });
    expect(old.seen).toHaveLength(5);
    for (const line of old.seen) expect(JSON.parse(line) as Record<string, unknown>).toHaveProperty("ok");
  });

  it("a client that asked for news of changes (`changes: true`) is told before the store is answered", async () => {
    const stateDir = await unlocked();
    const fresh = await LineClient.open(stateDir);
    const first = await fresh.ask({ op: "release-http", scope: "api", host: HOST, changes: true });
    expect(first.ok).toBe(true);
    // a rotation: the old value let go (forget), then the new one stored (put), each told
    await setSecret(stateDir, "api", HOST, ROTATED);
    const forgotten = await fresh.next();
    expect(forgotten).toEqual({ changed: expect.any(Number) });
    expect(forgotten.changed).not.toBe(first.generation);
    const stored = await fresh.next();
    expect(stored).toEqual({ changed: expect.any(Number) });
    expect(stored.changed).not.toBe(forgotten.changed);
    // then its questions are answered as before
    expect(await fresh.ask({ op: "status" })).toMatchObject({ ok: true, generation: stored.changed });
  });
});
