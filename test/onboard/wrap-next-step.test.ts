// After wrap writes a host file, the servers the host runs now are still the bare ones: a host
// reads its file when it starts its servers. Wrap's last line says so and what to run next; a dry
// run, a wrap that wrapped nothing and --json (whose object is the whole output) do not say it.
// Unwrap the same the other way: the host runs its gateways until it starts the servers again.
import { describe, expect, it } from "vitest";
import { fakeUsersOfEachTest, UNWRAP_NEXT } from "./hosts.js";

const user = fakeUsersOfEachTest();
/** The last line, naming the state directory (from PORTCULLIS_HOME: the shell it is pasted into may lack it). */
const next = (stateDir: string) =>
  `next: restart the host (or reconnect these servers in it) so that it starts them through portcullis; 'portcullis doctor --state-dir ${stateDir}' then lists their gateways`;

describe("wrap says what to do once it wrote", () => {
  it("a wrap that wrapped a server ends with the restart to make, and so does an unwrap that restored one; dry run, nothing to do and --json do not", async () => {
    const u = user();
    const dry = await u.cli(["wrap", "cursor", "--dry-run"]);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).not.toContain("next: restart");

    const wrap = await u.cli(["wrap", "cursor"]);
    expect(wrap.code, wrap.stderr).toBe(0);
    expect(wrap.stdout).toContain(`${u.files.cursor}: wrapped inventory\n`);
    expect(wrap.stdout.endsWith(`${next(u.stateDir)}\n`), wrap.stdout).toBe(true);

    const again = await u.cli(["wrap", "cursor"]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain(`${u.files.cursor}: wrapped nothing\n`);
    expect(again.stdout).not.toContain("next: restart");

    const unwrap = await u.cli(["unwrap", "cursor"]);
    expect(unwrap.code, unwrap.stderr).toBe(0);
    expect(unwrap.stdout).toBe(`${u.files.cursor}: restored byte for byte\n${UNWRAP_NEXT}`);
    // nothing left to restore: nothing to restart for
    const none = await u.cli(["unwrap", "cursor"]);
    expect(none.stdout).not.toContain("next:");
    const json = await u.cli(["wrap", "cursor", "--json"]);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ files: [{ wrapped: ["inventory"] }] });
  });
});
