// wrap leaves an HTTP entry ("url") alone, and said only that: "left alone: remote (an HTTP entry
// (url), which wrap leaves alone)", with no word of how such a server is put behind portcullis,
// where every other line of wrap ends in a next step. Now a line says it is done by hand and
// names the doctor that gives the entry to write; followed, that doctor does. The real CLI.
import { expect, it } from "vitest";
import { fakeUsersOfEachTest } from "./hosts.js";

const user = fakeUsersOfEachTest();

it("an HTTP entry wrap leaves alone: its line is followed by the next step, which doctor gives", async () => {
  const u = user();
  for (const dryRun of [true, false]) {
    const r = await u.cli(["wrap", "claude-code", ...(dryRun ? ["--dry-run"] : [])]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("  left alone: remote (an HTTP entry (url), which wrap leaves alone)\n");
    expect(r.stdout).toContain(
      "  to guard remote: replace its entry by hand with one that runs portcullis with --url; 'portcullis doctor' gives the entry to write\n",
    );
  }
  const doctor = await u.cli(["doctor"]);
  expect(doctor.stdout).toMatch(
    /not stdio servers, which wrap leaves alone: remote\n\s+next: to guard one, replace its entry by hand with \{"command"/,
  );
});
