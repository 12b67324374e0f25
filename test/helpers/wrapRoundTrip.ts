// A host file taken through the real CLI: `wrap --dry-run` writes nothing, `wrap` then `wrap`
// again writes once, `unwrap` gives back the bytes, and the file damaged is refused in one line
// naming it, with nothing written and no state directory made. Shared by the JSONC and TOML
// property tests of wrap (test/onboard/wrap-*.property.test.ts).
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { runCli } from "./gateway.js";

export async function wrapRoundTripByCli(
  dir: string,
  file: string,
  text: string,
  damaged: string,
): Promise<void> {
  writeFileSync(file, text);
  const original = readFileSync(file);
  const stateDir = join(dir, "state");
  const listing = () => readdirSync(dir, { recursive: true }).map(String).sort();
  const before = listing();
  const cli = (args: string[]) => runCli(args, { cwd: dir, env: { HOME: dir } });
  // exit 1 when an entry holds a key its host does not read: refused by name, the others wrapped
  const wrapped0or1 = (r: { code: number | null; stderr: string }) => {
    expect([0, 1], r.stderr).toContain(r.code);
    if (r.code === 1)
      for (const line of r.stderr.trimEnd().split("\n"))
        expect(line).toMatch(
          /^portcullis wrap: (not wrapped|would not wrap): .* does not read in a server entry/,
        );
  };

  const dry = await cli(["wrap", file, "--dry-run", "--state-dir", stateDir]);
  wrapped0or1(dry);
  expect(readFileSync(file).equals(original)).toBe(true);
  expect(listing()).toEqual(before);

  const wrap = await cli(["wrap", file, "--state-dir", stateDir]);
  wrapped0or1(wrap);
  const wrapped = readFileSync(file);
  const again = await cli(["wrap", file, "--state-dir", stateDir]);
  wrapped0or1(again);
  expect(readFileSync(file).equals(wrapped)).toBe(true);
  if (!wrapped.equals(original)) {
    const un = await cli(["unwrap", file, "--state-dir", stateDir]);
    expect(un.code, un.stderr).toBe(0);
  }
  expect(readFileSync(file).equals(original)).toBe(true);

  writeFileSync(file, damaged);
  const broken = readFileSync(file);
  const other = join(dir, "state2");
  const bad = await cli(["wrap", file, "--state-dir", other]);
  expect(bad.code, bad.stderr).toBe(2);
  expect(bad.stderr.split("\n")).toHaveLength(2); // one line and its newline
  expect(bad.stderr).toContain(file);
  expect(readFileSync(file).equals(broken)).toBe(true);
  expect(existsSync(other)).toBe(false);
  // the first wrap's backup is still there when it wrapped something, and none was made now
  expect(existsSync(`${file}.portcullis-backup`)).toBe(!wrapped.equals(original));
}
