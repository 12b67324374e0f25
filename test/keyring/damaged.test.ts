// A keyring.json that exists but cannot be used (empty, not JSON, a directory, a device, a FIFO,
// a key derivation other than scrypt): every command that reads it says so in one sentence naming
// the file, exit 2 (never "internal error", never a hang), and doctor reports it as a problem
// instead of "keyring exists".
// The real CLI, as separate processes.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type CliResult, runCli } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

const COMMANDS = [
  ["run", "--label", "x", "--", ...fixtureCommand("echo")],
  ["unlock", "--for", "1m"],
  ["audit", "activity"],
];

function oneSentence(r: CliResult, about: RegExp): void {
  expect(r.stderr).not.toMatch(/internal error| {4}at /);
  expect(r.stderr.trim().split("\n"), r.stderr).toHaveLength(1);
  expect(r.stderr).toMatch(about);
  expect(r.code).toBe(2);
}

/** A state directory whose keyring.json has been replaced by `make(path)`. */
function damaged(make: (path: string) => void): { stateDir: string; path: string } {
  const stateDir = newStateDir();
  const path = join(stateDir, "keyring.json");
  rmSync(path);
  make(path);
  return { stateDir, path };
}

async function everyReaderRefuses(stateDir: string, about: RegExp): Promise<void> {
  // a timeout of its own: a command that hangs on the file fails here instead of the run
  for (const args of COMMANDS)
    oneSentence(await runCli(args, { stateDir, env: passphraseEnv(), timeoutMs: 20_000 }), about);
  // vault list reads only whether a keyring is there: it may list, but never crash or hang
  const list = await runCli(["vault", "list"], { stateDir, timeoutMs: 20_000 });
  if (list.code !== 0) oneSentence(list, about);
  const doctor = await runCli(["doctor", "--json"], { stateDir, timeoutMs: 20_000 });
  expect(doctor.stderr).toBe("");
  expect(doctor.code).toBe(1);
  const report = JSON.parse(doctor.stdout) as { keyring: boolean; findings: { ok: boolean; what: string }[] };
  expect(report.keyring).toBe(false);
  expect(report.findings.some((f) => !f.ok && about.test(`portcullis: ${f.what}`))).toBe(true);
  expect(report.findings.some((f) => f.ok && /keyring/.test(f.what))).toBe(false);
}

describe("a keyring.json that cannot be used", () => {
  it.each([
    ["empty (zero bytes)", (p: string) => writeFileSync(p, ""), "is not a usable keyring: it is empty"],
    ["not JSON", (p: string) => writeFileSync(p, "{ half a keyr"), "is not a usable keyring: it is not JSON"],
    ["a directory", (p: string) => mkdirSync(p), "is not a usable keyring: it is not a regular file"],
    [
      "a link to /dev/zero",
      (p: string) => symlinkSync("/dev/zero", p),
      "is not a usable keyring: it is not a regular file",
    ],
    [
      "a FIFO nobody writes to",
      (p: string) => execFileSync("mkfifo", [p]),
      "is not a usable keyring: it is not a regular file",
    ],
    [
      "far larger than a keyring",
      (p: string) => writeFileSync(p, " ".repeat(1 << 20)),
      "is not a usable keyring: it is 1048576 bytes",
    ],
  ])("%s: one sentence naming the file from every reader, a problem in doctor", async (_, make, what) => {
    const { stateDir, path } = damaged(make);
    await everyReaderRefuses(stateDir, new RegExp(`^portcullis( \\w+){0,2}: (run: )?${path} ${what}`));
  });
});

describe("a keyring.json whose key derivation is not scrypt", () => {
  // A keyring made by another tool, or by hand, with Argon2id: refused by the name of its kdf,
  // never read as a file damaged in some unsaid way, and never tried as scrypt.
  it.each([
    ["argon2id", '"argon2id"'],
    ["ARGON\u001b[31m", "not scrypt"],
  ])("kdf.alg %j: one sentence naming it from every reader", async (alg, shown) => {
    const stateDir = newStateDir();
    const path = join(stateDir, "keyring.json");
    const keyring = JSON.parse(readFileSync(path, "utf8")) as { kdf: Record<string, unknown> };
    keyring.kdf.alg = alg;
    writeFileSync(path, JSON.stringify(keyring));
    const said = `is not a usable keyring: its kdf.alg is ${shown}; this portcullis derives the keyring's key with scrypt only`;
    await everyReaderRefuses(stateDir, new RegExp(`^portcullis( \\w+){0,2}: (run: )?${path} ${said}`));
  });
});
