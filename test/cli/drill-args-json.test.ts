// drill --args that is not a JSON object says where the JSON breaks (a line and a column, in the
// words a portcullis.json that does not parse gets) and what was expected, never the text given
// (it may hold a token); it said only "--args is not JSON". Checked before the label is looked up
// or a passphrase asked: the real CLI, in a directory with no configuration at all.
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";

const EXPECTED = `give the tool's arguments as a JSON object, such as --args '{"path": "README.md"}'.\n`;

async function drillArgs(args: string) {
  const cwd = tempDir();
  return runCli(["drill", "inventory", "--tool", "read_status", "--args", args], {
    cwd,
    env: { HOME: cwd },
    noTerminal: true,
  });
}

describe("drill --args that is not a JSON object", () => {
  it("names the line and column where the JSON breaks, and what was expected", async () => {
    const r = await drillArgs("{bad");
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `portcullis drill: --args is not JSON (line 1, column 2: something that is not a JSON value, such as a string without its double quotes); ${EXPECTED}`,
    );
    const comma = await drillArgs('{"path": "a",}');
    expect(comma.stderr).toBe(
      `portcullis drill: --args is not JSON (line 1, column 13: a comma before '}', which JSON does not allow); ${EXPECTED}`,
    );
  });

  it("does not repeat the text, which may hold a token", async () => {
    const r = await drillArgs('{"token": sk-live-0123456789}');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^portcullis drill: --args is not JSON \(line 1, column 11: /);
    expect(r.stderr).not.toContain("sk-live");
  });

  it("JSON that is not an object, and an empty value, are each said as such", async () => {
    const list = await drillArgs("[1, 2]");
    expect(list.code).toBe(2);
    expect(list.stderr).toBe(`portcullis drill: --args is JSON but not an object; ${EXPECTED}`);
    const empty = await drillArgs("");
    expect(empty.code).toBe(2);
    expect(empty.stderr).toBe(
      "portcullis drill: --args is empty; give the tool's arguments as a JSON object, or leave the flag out to call the tool with none ({}).\n",
    );
  });
});
