// wrap leaves an HTTP entry ("url") alone, and said only that: "left alone: remote (an HTTP entry
// (url), which wrap leaves alone)", with no word of how such a server is put behind portcullis,
// where every other line of wrap ends in a next step. Now a line says it is done by hand and
// names the doctor that gives the entry to write; followed, that doctor does. Nor did it say that
// the entry's "headers" keep a token in clear (it says so of a wrapped entry's env): now it does,
// by name, never the value, with run's vault form for it (--header-secret, the secret's name on
// the command line). The doctor named carries the state directory (here $PORTCULLIS_HOME's):
// pasted into a shell without the variable, it reads the same store. The real CLI.
import { writeFileSync } from "node:fs";
import { expect, it } from "vitest";
import { fakeUsersOfEachTest, read } from "./hosts.js";

const user = fakeUsersOfEachTest();

it("an HTTP entry wrap leaves alone: its line is followed by the next step, which doctor gives", async () => {
  const u = user();
  for (const dryRun of [true, false]) {
    const r = await u.cli(["wrap", "claude-code", ...(dryRun ? ["--dry-run"] : [])]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("  left alone: remote (an HTTP entry (url), which wrap leaves alone)\n");
    expect(r.stdout).toContain(
      `  to guard remote: replace its entry by hand with one that runs portcullis with --url; 'portcullis doctor --state-dir ${u.stateDir}' gives the entry to write\n`,
    );
  }
  const doctor = await u.cli(["doctor"]);
  expect(doctor.stdout).toMatch(
    /not stdio servers, which wrap leaves alone: remote\n\s+next: to guard one, replace its entry by hand with \{"command"/,
  );
});

it("an HTTP entry whose headers hold a token in clear: wrap says it keeps it there, by name", async () => {
  const u = user();
  const file = u.files["claude-code"];
  const token = "tok-8c1e5a9f3b7d2046";
  const doc = JSON.parse(read(file));
  doc.mcpServers.remote.headers = { Authorization: `Bearer ${token}`, "X-Team": "blue" };
  writeFileSync(file, JSON.stringify(doc, null, 2));
  for (const dryRun of [true, false]) {
    const r = await u.cli(["wrap", "claude-code", ...(dryRun ? ["--dry-run"] : [])]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(
      `  remote keeps "Authorization" in its "headers", in clear: every process of this user can read the host file; the vault keeps it instead when the entry runs portcullis with --url and --header-secret 'Authorization: Bearer {}=NAME', NAME a secret stored with vault set: 'portcullis doctor --state-dir ${u.stateDir}' says how\n`,
    );
    expect(r.stdout).not.toContain("X-Team");
    expect(r.stdout + r.stderr).not.toContain(token);
  }
});
