// The commands doctor and wrap print are for a human to paste, often into another terminal than
// the one that ran them. With the state directory taken from $PORTCULLIS_HOME, doctor's `console`
// and `vault set` advice named it (--state-dir) but its `wrap` advice and wrap's `unwrap` and
// `doctor` lines did not: pasted into a shell without the variable, the wrap put the servers
// behind the default state directory (another vault, another audit log) and the unwrap found no
// record of the file, so it could not give back the bytes before wrap. Each now names it, as
// every other pasted command does (stateDirFlagFor). The same for one taken from $XDG_STATE_HOME
// (its `portcullis` directory): it was taken for the default and left unnamed, so the pasted
// commands reached ~/.local/state/portcullis in a shell without the variable. The real CLI, in a
// fake home.
import { chmodSync, copyFileSync, existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";
import { fakeUsersOfEachTest, read } from "./hosts.js";

const user = fakeUsersOfEachTest();

/** Runs a printed `portcullis …` line, split at spaces, as a shell without PORTCULLIS_HOME (nor XDG_STATE_HOME) would. */
function pasted(u: ReturnType<typeof user>, line: string) {
  expect(line.startsWith("portcullis "), line).toBe(true);
  expect(line, "a line that needs a shell's quoting").not.toMatch(/['"\\]/);
  return runCli(line.split(" ").slice(1), {
    env: { ...u.env, PORTCULLIS_HOME: "", XDG_STATE_HOME: "" },
    cwd: u.project,
  });
}

/** A state directory set up (its console can be started, its vault listed): a keyring copied in. */
function setUp(stateDir: string): void {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  chmodSync(stateDir, 0o700);
  copyFileSync(join(newStateDir(), "keyring.json"), join(stateDir, "keyring.json"));
}

describe("advice pasted into a shell without PORTCULLIS_HOME", () => {
  it("doctor's wrap and console advice, and wrap's unwrap and doctor lines, reach the state directory doctor read", async () => {
    const u = user();
    // a state directory set up (its console can be started), in PORTCULLIS_HOME only
    setUp(u.stateDir);
    const codex = u.files.codex;
    const before = read(codex);

    const report = JSON.parse((await u.cli(["doctor", "--json"])).stdout) as {
      stateDir: unknown;
      console: { start: string };
      findings: { what: string; next: string }[];
    };
    const wrapAdvice = report.findings.find((f) => f.what.startsWith(`${codex}: not behind portcullis`));
    expect(wrapAdvice?.next).toBe(`portcullis wrap codex --dry-run --state-dir ${u.stateDir}`);
    // the same rule as the console's, in the same report
    expect(report.console.start).toBe(`portcullis console --state-dir ${u.stateDir}`);

    // the wrap, as the dry run shows it, without its --dry-run: the entries name this state directory
    const wrap = await pasted(u, wrapAdvice!.next.replace(" --dry-run", ""));
    expect(wrap.code, wrap.stderr).toBe(0);
    expect(read(codex)).toContain(u.stateDir);
    const doctorLine = /'(portcullis doctor[^']*)' then lists their gateways/.exec(wrap.stdout)?.[1];
    expect(doctorLine).toBe(`portcullis doctor --state-dir ${u.stateDir}`);

    // wrap again names the unwrap that undoes it; pasted, it finds the record and gives the bytes back
    const again = await u.cli(["wrap", "codex"]);
    const undo = /undo with (portcullis unwrap [^)]+)\)/.exec(again.stdout)?.[1];
    expect(undo).toBe(`portcullis unwrap ${codex} --state-dir ${u.stateDir}`);
    const unwrap = await pasted(u, undo!);
    expect(unwrap.code, unwrap.stderr).toBe(0);
    expect(unwrap.stdout).toContain("restored byte for byte");
    expect(read(codex)).toBe(before);
  });
});

describe("advice pasted into a shell without XDG_STATE_HOME", () => {
  it("the state directory $XDG_STATE_HOME/portcullis is named in every command printed, and reached when pasted", async () => {
    const u = user();
    const xdg = join(u.root, "xdg-state");
    const stateDir = join(xdg, "portcullis");
    setUp(stateDir);
    // the state directory from $XDG_STATE_HOME alone: no PORTCULLIS_HOME, no --state-dir
    const env = { ...u.env, PORTCULLIS_HOME: "", XDG_STATE_HOME: xdg };
    const cli = (args: string[]) => runCli(args, { env, cwd: u.project });
    const codex = u.files.codex;
    const before = read(codex);

    const report = JSON.parse((await cli(["doctor", "--json"])).stdout) as {
      stateDir: { path: string; why: string };
      console: { start: string };
      findings: { what: string; next: string }[];
    };
    expect(report.stateDir).toMatchObject({ path: stateDir, why: "default" });
    const wrapAdvice = report.findings.find((f) => f.what.startsWith(`${codex}: not behind portcullis`));
    // was: 'portcullis wrap codex --dry-run', which wraps into ~/.local/state/portcullis
    expect(wrapAdvice?.next).toBe(`portcullis wrap codex --dry-run --state-dir ${stateDir}`);
    expect(report.console.start).toBe(`portcullis console --state-dir ${stateDir}`);
    const vault = await cli(["vault", "list"]);
    expect(vault.stdout).toContain(`'portcullis vault set NAME --host HOST --state-dir ${stateDir}'`);

    const wrap = await pasted(u, wrapAdvice!.next.replace(" --dry-run", ""));
    expect(wrap.code, wrap.stderr).toBe(0);
    expect(read(codex)).toContain(stateDir);
    const doctorLine = /'(portcullis doctor[^']*)' then lists their gateways/.exec(wrap.stdout)?.[1];
    expect(doctorLine).toBe(`portcullis doctor --state-dir ${stateDir}`);

    const again = await cli(["wrap", "codex"]);
    const undo = /undo with (portcullis unwrap [^)]+)\)/.exec(again.stdout)?.[1];
    expect(undo).toBe(`portcullis unwrap ${codex} --state-dir ${stateDir}`);
    const unwrap = await pasted(u, undo!);
    expect(unwrap.code, unwrap.stderr).toBe(0);
    expect(unwrap.stdout).toContain("restored byte for byte");
    expect(read(codex)).toBe(before);
    // nothing reached the home's default directory
    expect(existsSync(join(u.home, ".local", "state", "portcullis"))).toBe(false);
  });
});
