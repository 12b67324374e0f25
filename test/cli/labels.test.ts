// A label a user types (a server LABEL to look up, a server key named with --servers) comes back
// in the sentence that refuses it: never whole when it can be of any length, never with the
// characters a terminal acts on. A LABEL that cannot be a label is refused without being
// repeated (no server runs under it); a host file's key, which can be anything, is quoted,
// escaped and shortened. The real CLI.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

const LONG = `inv${"x".repeat(5000)}`;
const ESCAPES = "inv\u001b]0;owned\u0007\u001b[2J";

/** A character a terminal acts on, other than the line's end. */
const control = (s: string) => [...s].some((c) => c.charCodeAt(0) < 0x20 && c !== "\n");

describe("a label typed by the user, when it is refused", () => {
  it("catalog, egress and run LABEL: a LABEL that cannot be one is said to be none, not repeated", async () => {
    const stateDir = newStateDir();
    const cwd = tempDir();
    for (const label of [LONG, ESCAPES]) {
      for (const args of [
        ["catalog", "show", label],
        ["catalog", "diff", label],
        ["catalog", "list", label],
        ["egress", label],
        ["run", label],
      ]) {
        const r = await runCli(args, { stateDir, cwd });
        const what = `${args[0]} ${args[1] === label ? "" : args[1]}`;
        expect(r.code, `${what}: ${r.stderr}`).toBe(2);
        expect(r.stderr.split("\n"), what).toHaveLength(2); // one sentence
        expect(r.stderr.length, what).toBeLessThan(400);
        expect(r.stderr, what).not.toContain("xxxxxxxx");
        expect(control(r.stderr), what).toBe(false);
        expect(r.stderr, what).toMatch(/the LABEL given is not a server label \(letters, digits/);
      }
    }
    // a label that can be one but names nothing is not repeated either (a token can look like one)
    const plain = await runCli(["catalog", "show", "inventory-local"], { stateDir, cwd });
    expect(plain.stderr).toContain("no catalog is recorded under that label");
    expect(plain.stderr).not.toContain("inventory-local");
  });

  it("wrap --servers quotes a name of any length, escaped and shortened; drill does not repeat it", async () => {
    const dir = tempDir();
    const file = join(dir, "mcp.json");
    writeFileSync(file, JSON.stringify({ mcpServers: { a: { command: "node", args: ["a.js"] } } }));
    for (const name of [LONG, ESCAPES]) {
      for (const args of [
        ["wrap", file, "--dry-run", "--servers", name, "--state-dir", join(dir, "state")],
        ["drill", name, "--file", file],
      ]) {
        const r = await runCli(args, { cwd: dir });
        expect(r.code, r.stderr).toBe(2);
        expect(r.stderr.length, args[0]).toBeLessThan(600);
        expect(control(r.stderr), args[0]).toBe(false);
        if (args[0] === "drill")
          expect(r.stderr).toMatch(/no server by that label \(the label given is not repeated/);
        else
          expect(r.stderr, args[0]).toMatch(
            /"inv(x+…" \(5003 characters, sha256 [0-9a-f]{16}…\)|\\u001b\]0;owned\\u0007\\u001b\[2J")/,
          );
      }
    }
  });
});
