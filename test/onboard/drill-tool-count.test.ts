// The drill's counts take their noun's number. Step 2 counts the tools the server lists: it said
// "1 tools: echo" for a one-tool server, and "0 tools: " (a colon before nothing) for a server
// that lists none. A failed drill's last line counts the steps not run: "1 later steps not run".
// The real CLI against real servers: the echo fixture (one tool) and the catalog fixture.
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

describe.concurrent("a failed drill's last line: the count of steps not run", () => {
  const failing = async (rebuild: (dir: string) => string) => {
    const dir = tempDir("portcullis-drill-count-");
    const tools = join(dir, "tools.json");
    writeFileSync(tools, JSON.stringify([tool("ok")]));
    const entry = {
      command: NODE,
      args: [FIXTURES.catalog],
      env: { FIXTURE_CATALOG: tools },
      identity: { include: ["tools.json"] },
    };
    writeFileSync(join(dir, "portcullis.json"), JSON.stringify({ servers: { s: entry } }));
    const r = await runCli(["drill", "s", "--tool", "ok", "--rebuild", rebuild(dir)], {
      cwd: dir,
      env: { ...passphraseEnv(), HOME: dir },
      timeoutMs: 60_000,
    });
    expect(r.code).toBe(1);
    return r.stdout.trimEnd().split("\n").at(-1);
  };

  it("one: the rebuild drops the tool, so step 6 cannot call it and step 7 is not run", async () => {
    const other = JSON.stringify(JSON.stringify([tool("other")]));
    expect(await failing(() => `printf '%s' ${other} > tools.json`)).toBe(
      "drill: could not prove step 6 (re-list, approve again, call again); 1 later step not run",
    );
  });

  it("three: the rebuild fails, so steps 5 to 7 are not run", async () => {
    expect(await failing(() => "exit 3")).toMatch(
      /^drill: could not prove step 4 \(.*\); 3 later steps not run$/,
    );
  });
});
