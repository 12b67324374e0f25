// The drill prints the server's words: the names of the tools it lists, a call's result, the
// gateway's errors. A tool named with a terminal escape ("a\u001b[31mb") was written raw to the
// user's terminal by step 2 (it repaints the screen, or hides what follows), and a name holding a
// comma read as two tools. Now names are shown as the review shows them (bare when plain, else
// quoted with escapes) and every line the drill writes has its hidden characters escaped. The
// real CLI, against the catalog fixture serving such names.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { passphraseEnv } from "../helpers/state.js";

const HOSTILE = ["a\u001b[31mb", "x, y", "ok", "r\u202eevil"];
const SHOWN = '"a\\u001b[31mb", "x, y", ok, "r\\u202eevil"';

async function drill(args: string[]) {
  const dir = tempDir("portcullis-drill-words-");
  const tools = join(dir, "tools.json");
  writeFileSync(tools, JSON.stringify(HOSTILE.map((name) => ({ name, inputSchema: { type: "object" } }))));
  const entry = { command: NODE, args: [FIXTURES.catalog], env: { FIXTURE_CATALOG: tools } };
  writeFileSync(join(dir, "portcullis.json"), JSON.stringify({ servers: { s: entry } }));
  return runCli(["drill", "s", ...args], {
    cwd: dir,
    env: { ...passphraseEnv(), HOME: dir },
    timeoutMs: 60_000,
  });
}

describe.concurrent("drill: the server's tool names on the user's terminal", () => {
  it("step 2 lists them escaped and quoted, never raw", async () => {
    const r = await drill([]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`✓ 2. list the tools: 4 tools: ${SHOWN}\n`);
    expect(r.stdout).not.toContain("\u001b");
  });

  it("a --tool it does not list: the names it lists, escaped, in the failure", async () => {
    const r = await drill(["--tool", "nope"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`the server lists no tool "nope" (it lists ${SHOWN})`);
    expect(r.stdout).not.toContain("\u001b");
  });

  it("a call's result, the server's text, is written with its hidden characters escaped", async () => {
    // the fixture answers with the tool's name in its JSON text: JSON.stringify leaves the
    // right-to-left override (U+202E) as it is, which reorders what the reader sees after it
    const r = await drill(["--tool", "r\u202eevil"]);
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).toMatch(/^✓ 3\. .*result: \{"tool":"r\\u202eevil"/m);
    expect(r.stdout).not.toContain("\u202e");
  });
});
