// wrap's and unwrap's lines name the server keys they acted on. A key that is not a plain name
// was written as it is: an empty key as nothing at all ("wrapped nothing" of a file wrap had just
// edited), a key with a comma read as two. Such a key is quoted (and escaped, as a
// name from a file is wherever portcullis shows one). The real CLI.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";

describe("the server keys wrap and unwrap name", () => {
  it("are quoted when they are not plain names: an empty key is not 'nothing'", async () => {
    const dir = tempDir();
    const file = join(dir, ".mcp.json");
    const text = `${JSON.stringify({
      mcpServers: { "": { command: "x" }, "a, b": { command: "y" }, c: { command: "z" }, "d\u001b[2J": null },
    })}\n`;
    writeFileSync(file, text);
    const opts = { cwd: dir, env: { HOME: dir } };
    const state = ["--state-dir", join(dir, "state")];
    const wrap = await runCli(["wrap", file, ...state], opts);
    expect(wrap.code, wrap.stderr).toBe(0);
    expect(readFileSync(file, "utf8")).not.toBe(text);
    const lines = wrap.stdout.split("\n");
    expect(lines[0]).toBe(`${file}: wrapped "", "a, b", c`);
    expect(lines[1]).toBe(
      `  left alone: "d\\u001b[2J" (not a server entry: "mcpServers" → "d\\u001b[2J" is null, not an object)`,
    );
    // edited since, so unwrap names each entry it restores
    writeFileSync(file, readFileSync(file, "utf8").replace(/\n$/, "\n\n"));
    const unwrap = await runCli(["unwrap", file, ...state], opts);
    expect(unwrap.code, unwrap.stderr).toBe(0);
    expect(unwrap.stdout.split("\n")[0]).toBe(`${file}: restored "", "a, b", c`);
  });

  // `--label a=x --servers b`: the label was dropped without a word, and "a" left unwrapped
  it("a --label for a server --servers leaves out is refused, and nothing is written", async () => {
    const dir = tempDir();
    const file = join(dir, ".mcp.json");
    const text = `${JSON.stringify({ mcpServers: { a: { command: "x" }, b: { command: "y" } } })}\n`;
    writeFileSync(file, text);
    const r = await runCli(
      ["wrap", file, "--label", "a=a-mine", "--servers", "b", "--state-dir", join(dir, "state")],
      {
        cwd: dir,
        env: { HOME: dir },
      },
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      'portcullis wrap: --label names the server "a", which --servers leaves out; add it to --servers, or leave its --label out.\n',
    );
    expect(readFileSync(file, "utf8")).toBe(text);
  });
});
