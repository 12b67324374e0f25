// What a process writes when something goes badly wrong, outside its Logger, holds no released
// value: an exception nothing caught, a rejection nothing handled (node would print message and
// stack itself) and the command line's internal error. A real node process (children/lastWords.mjs)
// with the guard from dist/ installed as `portcullis run` installs it and a value released as the
// vault releases one; each case must still say what happened, and end the process as before.
// Then a real gateway, its server given the value by the real vault (env delivery), made to fail
// by a module loaded into it with NODE_OPTIONS=--import (children/crashInGateway.mjs).
import { spawnSync } from "node:child_process";
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { formsOf } from "../../src/vault/valueForms.js";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { NODE, REPO } from "../helpers/paths.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { storeSecret, vaultedProject } from "./helpers.js";

const CHILD = join(REPO, "test", "vault", "children", "lastWords.mjs");
// long enough that a JSON parse error quotes only its first ten characters
const VALUE = "sk-vault-7Qm2Xw9Lp4Rt8Zk3Hn6Bv1Cy5";
const MARK = "[redacted:payments]";

function lastWords(how: string, value = VALUE, flags: string[] = [], env: Record<string, string> = {}) {
  const r = spawnSync(NODE, [...flags, CHILD, how, value], {
    encoding: "utf8",
    timeout: 20_000,
    env: { ...process.env, ...env },
  });
  expect(r.stdout).toBe("released\n");
  return { code: r.status, stderr: r.stderr };
}

/** Any form of `value`, or any 8 characters of it as written, found in `text`. */
function traces(text: string, value = VALUE): string[] {
  const found = formsOf(value).filter((f) => text.includes(f));
  for (let i = 0; i + 8 <= value.length; i++) {
    const piece = value.slice(i, i + 8);
    if (text.includes(piece)) found.push(piece);
  }
  return found;
}

describe("a crash prints no released value", () => {
  it("an uncaught exception: a JSON parse error quoting the value cut short", () => {
    const r = lastWords("throw");
    expect(traces(r.stderr)).toEqual([]);
    expect(r.code).toBe(1);
    // what happened, and where, with the value taken out of it
    expect(r.stderr).toContain("portcullis: internal error (uncaught exception): SyntaxError:");
    expect(r.stderr).toContain("is not valid JSON");
    expect(r.stderr).toContain(MARK);
    expect(r.stderr).toMatch(/at JSON\.parse/);
  });

  it("an uncaught exception with the value whole in its message", () => {
    const r = lastWords("message");
    expect(traces(r.stderr)).toEqual([]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `portcullis: internal error (uncaught exception): Error: the upstream answered "${MARK}", not a session`,
    );
    expect(r.stderr).toContain("lastWords.mjs");
  });

  it("an unhandled rejection", () => {
    const r = lastWords("reject");
    expect(traces(r.stderr)).toEqual([]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `portcullis: internal error (unhandled rejection): TypeError: could not read ${MARK} as a header`,
    );
  });

  it("the command line's internal error: exit 70", () => {
    const r = lastWords("internal");
    expect(traces(r.stderr)).toEqual([]);
    expect(r.code).toBe(70);
    expect(r.stderr).toContain(`portcullis: internal error: RangeError: no room for ${MARK}`);
  });

  it("a value a control character splits: scrubbed, and the control written as an escape", () => {
    // on a terminal "pay\x1b[0mload…" shows as "payload…": raw, the value would show whole
    const value = "pay\u001b[0mload-Zx81kQ0pR7vW";
    const r = lastWords("message", value);
    expect(traces(r.stderr, value)).toEqual([]);
    expect(r.stderr).not.toContain("\u001b");
    expect(r.stderr).toContain(MARK);
    expect(r.code).toBe(1);
  });

  it("a message of a megabyte: cut at 64 KiB, the value it cuts through scrubbed whole first", () => {
    const r = lastWords("huge");
    expect(traces(r.stderr)).toEqual([]);
    // not even the five characters before the cut
    expect(r.stderr).not.toContain("xsk-va");
    expect(r.stderr).toMatch(
      /portcullis: internal error \(uncaught exception\): Error: x+\[reda \[\d+ more characters not shown\]/,
    );
    expect(r.stderr.length).toBeLessThan(70 * 1024);
    expect(r.code).toBe(1);
  });

  it("redacted as text too: a password in a URL that was never released", () => {
    const r = lastWords("url");
    expect(r.stderr).not.toContain("Hx81kQ0pR7vW");
    expect(r.stderr).toContain(
      "portcullis: internal error (uncaught exception): Error: could not reach https://deploy:[redacted]@db.example.com/prod",
    );
    expect(r.code).toBe(1);
  });
});

describe("a warning prints no released value, and warnings still print", () => {
  const ORDINARY = /^\(node:\d+\) Warning: an ordinary warning, after it$/m;

  it("as node prints it: code, message, detail and the hint, the value taken out", () => {
    const r = lastWords("warning");
    expect(traces(r.stderr)).toEqual([]);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(
      /^\(node:\d+\) \[PORTCULLIS_TEST\] Warning: could not read \[redacted:payments\] as a header$/m,
    );
    // twelve characters of the value: a piece, taken out too
    expect(r.stderr).toContain(`the header began ${MARK}`);
    expect(r.stderr).toContain("(Use `node --trace-warnings ...` to show where the warning was created)");
    // a warning that quotes nothing is printed as node prints it
    expect(r.stderr).toMatch(ORDINARY);
  });

  it("--trace-warnings: the stack too, scrubbed", () => {
    const r = lastWords("warning", VALUE, ["--trace-warnings"]);
    expect(traces(r.stderr)).toEqual([]);
    expect(r.stderr).toMatch(
      /^\(node:\d+\) \[PORTCULLIS_TEST\] Warning: could not read \[redacted:payments\] as a header\n {4}at .*lastWords\.mjs/m,
    );
    expect(r.stderr).toMatch(/^\(node:\d+\) Warning: an ordinary warning, after it\n {4}at /m);
    expect(r.stderr).not.toContain("--trace-warnings ...");
  });

  it("--redirect-warnings: the file gets them scrubbed", () => {
    const dir = tempDir("portcullis-warnings-");
    try {
      const file = join(dir, "warnings.txt");
      const r = lastWords("warning", VALUE, [`--redirect-warnings=${file}`]);
      expect(r.stderr).toBe("");
      const written = readFileSync(file, "utf8");
      expect(traces(written)).toEqual([]);
      expect(written).toContain("Warning: could not read [redacted:payments] as a header");
      expect(written).toMatch(ORDINARY);
    } finally {
      removeDir(dir);
    }
  });

  it("--no-warnings, NODE_NO_WARNINGS=1 and --disable-warning are honoured as before", () => {
    expect(lastWords("warning", VALUE, ["--no-warnings"]).stderr).toBe("");
    expect(lastWords("warning", VALUE, [], { NODE_NO_WARNINGS: "1" }).stderr).toBe("");
    const r = lastWords("warning", VALUE, ["--disable-warning=PORTCULLIS_TEST"]);
    expect(r.stderr).not.toContain("could not read");
    expect(r.stderr).toMatch(ORDINARY);
  });
});

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/**
 * A real gateway in front of the vaulted fixture, VALUE released to it at spawn; then the
 * module loaded into the gateway fails `how` on text that quotes VALUE. Its stderr and exit code.
 */
async function gatewayCrash(how: "parse" | "reject" | "warn") {
  const stateDir = newStateDir();
  cleanup.push(async () => {
    await runCli(["lock"], { stateDir });
  });
  await storeSecret(stateDir, "payments", VALUE, "--deliver", "env");
  expect((await runCli(["unlock"], { stateDir, env: passphraseEnv() })).code).toBe(0);
  const project = vaultedProject({
    credentials: { API_TOKEN: { secret: "payments", deliver: "env" } },
    approval: { default: "none", tools: {} },
  });
  cleanup.push(() => project.cleanup());
  const dir = tempDir("portcullis-crash-");
  cleanup.push(() => removeDir(dir));
  const trigger = join(dir, "trigger");
  const gw = await startGateway({
    args: ["vaulted"],
    cwd: project.dir,
    stateDir,
    env: {
      NODE_OPTIONS: `--import ${join(REPO, "test", "vault", "children", "crashInGateway.mjs")}`,
      CRASH_TRIGGER: trigger,
      CRASH_HOW: how,
    },
  });
  cleanup.push(() => gw.close());
  // released: the server's description names the value, and the client gets it scrubbed
  const { tools } = await gw.client.listTools();
  expect(tools.find((t) => t.name === "describe")?.description).toBe(
    `Describes the connection (key ${MARK})`,
  );
  // written whole, then moved into place: the gateway's timer may look between an open that
  // creates the file and the write that fills it, and would fail on an empty text
  writeFileSync(`${trigger}.part`, `{"ok": true, "key": ${VALUE}}`);
  renameSync(`${trigger}.part`, trigger);
  if (how === "warn") {
    // emitted after the one that quotes the value: once it is printed, both are
    await gw.waitForStderr(/an ordinary warning, after it/, 30_000);
    // and the gateway goes on serving
    expect((await gw.client.listTools()).tools.length).toBeGreaterThan(0);
    return { code: null, stderr: gw.stderr() };
  }
  const exit = await gw.exited;
  return { code: exit.code, stderr: gw.stderr() };
}

describe("a real gateway that crashes or warns prints no released value", () => {
  it("an uncaught JSON parse error quoting the value cut short: scrubbed, reported, exit 1", async () => {
    const r = await gatewayCrash("parse");
    expect(traces(r.stderr)).toEqual([]);
    expect(r.stderr).toContain("portcullis: internal error (uncaught exception): SyntaxError:");
    expect(r.stderr).toContain(MARK);
    expect(r.code).toBe(1);
  }, 60_000);

  it("an unhandled rejection quoting the value whole: scrubbed, reported, exit 1", async () => {
    const r = await gatewayCrash("reject");
    expect(traces(r.stderr)).toEqual([]);
    expect(r.stderr).toContain(
      `portcullis: internal error (unhandled rejection): Error: could not use {"ok": true, "key": ${MARK}}`,
    );
    expect(r.code).toBe(1);
  }, 60_000);

  it("a warning quoting the value whole: printed without it; an ordinary warning still printed", async () => {
    const r = await gatewayCrash("warn");
    expect(traces(r.stderr)).toEqual([]);
    expect(r.stderr).toMatch(
      /^\(node:\d+\) Warning: could not use \{"ok": true, "key": \[redacted:payments\]\}$/m,
    );
    expect(r.stderr).toMatch(/^\(node:\d+\) Warning: an ordinary warning, after it$/m);
  }, 60_000);
});
