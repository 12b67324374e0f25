// "The server's command line is digested as given but kept redacted" (docs/security.md, "What a
// same-user attacker can still do" / other limits): the identity digest covers the real argv, so
// a changed secret on the command line is a new identity, while the copy in the store and in the
// audit log has its secrets replaced, so two records that differ only in a redacted value look
// the same except for their digests. src/identity/capture.ts identityDigest;
// src/util/redact/records.ts redactRecord.
//
// End to end, real processes: the same inventory fixture server launched through the real
// gateway three times on one state directory, its command line carrying `--token S1`, then
// `--token S2` (same length, same alphabet: identical once redacted), then `--token S1` again.
// Observed through `portcullis status --json` while each gateway runs and through the audit's
// server_started records (decrypted with the passphrase, and `audit show`):
//  - S1 and S2 give different identity digests; S1 again gives S1's digest (the control: the
//    digest moves with the secret, not with something else of each launch);
//  - the recorded command lines (launchCommand, each process's argv) are identical for S1 and
//    S2, with `[redacted]` in the secret's place;
//  - neither secret appears in any `status` output, the audit's views and export, a gateway's
//    stderr, or any byte of the state directory.
//
// What it would catch being removed: a digest computed over the redacted copy (S1 and S2 would
// share one digest, so a changed secret would not be a new identity); the redaction of the
// stored or audited command line (a secret in status, the audit or the store's bytes); a digest
// over something that changes at every launch, such as a pid (the control would differ).
// The real argv reaches the identity digest twice: as the processes' argv and launchCommand
// (src/identity/capture.ts) and inside configDigest, the digest of the server's configuration
// with its args in clear (src/cli/serve.ts). Checked on a copy of the build: with only one of the
// two redacted the digests still differ (the test passes); with both, it fails; with
// redactRecord's launchCommand left in clear, it fails on the stored command line.
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents } from "../helpers/approvals.js";
import { runCli, startInventory } from "../helpers/gateway.js";
import { makeProject } from "../helpers/project.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

interface RecordShown {
  epoch: string;
  identityDigest: string;
  launchCommand: string[];
  processes: { argv: string[] }[];
}

/** Every file under `dir`, with its bytes. */
function filesUnder(dir: string): { path: string; bytes: Buffer }[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [{ path, bytes: readFileSync(path) }];
  });
}

/** A secret shaped as tokens are, distinctive enough to be searched for in any output. */
const secret = () => `tok_${randomBytes(18).toString("hex")}`;

describe("a secret on the server's command line", () => {
  it("is digested as given (two secrets that redact alike are two identities) and shown nowhere", async () => {
    const s1 = secret();
    const s2 = secret();
    expect(s2).not.toBe(s1);
    expect(s2).toHaveLength(s1.length);
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const stateDir = newStateDir();
    const outputs: string[] = [];

    /** A gateway launching the server with `--token value`: its record as status --json shows it. */
    const launch = async (value: string): Promise<RecordShown> => {
      const gw = await startInventory(project, ["--approval", "none"], {
        stateDir,
        command: [...project.command, "--token", value],
      });
      try {
        await gw.client.listTools();
        expect((await gw.client.callTool({ name: "read_status", arguments: {} })).isError).toBeFalsy();
        const json = await runCli(["status", "--json", "--state-dir", stateDir]);
        const text = await runCli(["status", "--state-dir", stateDir]);
        expect(json.code, json.stderr).toBe(0);
        outputs.push(json.stdout, json.stderr, text.stdout, text.stderr);
        const running = (
          JSON.parse(json.stdout) as { gateways: { running: boolean; record: RecordShown | null }[] }
        ).gateways.filter((g) => g.running);
        expect(running).toHaveLength(1);
        return running[0]!.record!;
      } finally {
        await gw.close();
        outputs.push(gw.stderr());
      }
    };
    const first = await launch(s1);
    const second = await launch(s2);
    const third = await launch(s1);

    // the real argv is digested: the two secrets are two identities; the same one is the same
    expect(second.identityDigest).not.toBe(first.identityDigest);
    expect(third.identityDigest).toBe(first.identityDigest);
    expect(new Set([first.epoch, second.epoch, third.epoch]).size).toBe(3);

    // the kept copy is redacted: the two command lines are the same text
    expect(first.launchCommand.slice(-2)).toEqual(["--token", "[redacted]"]);
    expect(second.launchCommand).toEqual(first.launchCommand);
    expect(second.processes.map((p) => p.argv)).toEqual(first.processes.map((p) => p.argv));
    expect(first.processes.flatMap((p) => p.argv)).toContain("[redacted]");

    // the audit: server_started of each epoch, the same digests, the same redacted command lines
    const events = await auditEvents(stateDir);
    const started = events.filter((e) => e.type === "server_started") as unknown as {
      epoch: string;
      record: RecordShown;
    }[];
    expect(started.map((e) => e.epoch)).toEqual([first.epoch, second.epoch, third.epoch]);
    const audited = started.map((e) => e.record);
    expect(audited.map((r) => r.identityDigest)).toEqual([
      first.identityDigest,
      second.identityDigest,
      third.identityDigest,
    ]);
    expect(audited[1]!.launchCommand).toEqual(audited[0]!.launchCommand);
    expect(audited[0]!.launchCommand.slice(-2)).toEqual(["--token", "[redacted]"]);
    outputs.push(JSON.stringify(events));
    for (const view of [["sessions", "--json"], ["activity", "--json"], ["export"], ["verify", "--json"]]) {
      const r = await runCli(["audit", ...view, "--state-dir", stateDir], { env: passphraseEnv() });
      expect(r.code, r.stderr).toBe(0);
      outputs.push(r.stdout, r.stderr);
    }

    // neither secret anywhere: what was printed, the audit decrypted, the state directory's bytes
    for (const s of [s1, s2]) {
      for (const out of outputs) expect(out).not.toContain(s);
      for (const f of filesUnder(stateDir)) {
        expect(f.bytes.includes(Buffer.from(s)), f.path).toBe(false);
      }
    }
  });
});
