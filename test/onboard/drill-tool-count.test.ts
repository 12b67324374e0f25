// Step 2 of `portcullis drill` counts the tools the server lists. It said "1 tools: echo" for a
// one-tool server, and "0 tools: " (a colon before nothing) for a server that lists none. The
// real CLI against real servers: the echo fixture (one tool) and the catalog fixture (two, none).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { FIXTURES, fixtureCommand, NODE } from "../helpers/paths.js";
import { passphraseEnv } from "../helpers/state.js";

const tool = (name: string) => ({ name, inputSchema: { type: "object" } });

async function stepTwo(entry: Record<string, unknown>): Promise<string> {
  const dir = tempDir("portcullis-drill-count-");
  writeFileSync(join(dir, "portcullis.json"), JSON.stringify({ servers: { s: entry } }));
  const r = await runCli(["drill", "s"], {
    cwd: dir,
    env: { ...passphraseEnv(), HOME: dir },
    timeoutMs: 60_000,
  });
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  return r.stdout.split("\n").find((line) => line.startsWith("✓ 2. ")) ?? r.stdout;
}

function catalogEntry(tools: unknown[]): Record<string, unknown> {
  const file = join(tempDir("portcullis-drill-catalog-"), "tools.json");
  writeFileSync(file, JSON.stringify(tools));
  return { command: NODE, args: [FIXTURES.catalog], env: { FIXTURE_CATALOG: file } };
}

describe.concurrent("drill step 2: the count of tools the server lists", () => {
  it("one tool: singular", async () => {
    const [command, ...args] = fixtureCommand("echo");
    expect(await stepTwo({ command, args })).toBe("✓ 2. list the tools: 1 tool: echo");
  });

  it("two tools: plural", async () => {
    expect(await stepTwo(catalogEntry([tool("a"), tool("b")]))).toBe("✓ 2. list the tools: 2 tools: a, b");
  });

  it("none: the count alone, no list after it", async () => {
    expect(await stepTwo(catalogEntry([]))).toBe("✓ 2. list the tools: 0 tools");
  });
});
