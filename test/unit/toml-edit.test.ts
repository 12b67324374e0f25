// editTomlEntries: a Codex config.toml edited in place, only the values that change; any layout it
// cannot edit exactly gives null (the caller then writes the document again).
import { parse } from "smol-toml";
import { describe, expect, it } from "vitest";
import { editTomlEntries } from "../../src/onboard/tomlEdit.js";

const wrapped = { command: "/usr/bin/node", args: ["cli.js", "run", "--", "npx", "x"] };

describe("editTomlEntries", () => {
  it("rewrites command and args only, keeping CRLF line ends, comments and a '#' inside a string", () => {
    const text = [
      "# top",
      "[mcp_servers.a]   # the a server",
      'command = "npx # not a comment"  # a comment',
      "args = ['x']",
      "",
      "[other]",
      "k = 1",
      "",
    ].join("\r\n");
    const out = editTomlEntries(text, "mcp_servers", { a: wrapped });
    expect(out).toBe(
      [
        "# top",
        "[mcp_servers.a]   # the a server",
        'command = "/usr/bin/node"  # a comment',
        'args = [ "cli.js", "run", "--", "npx", "x" ]',
        "",
        "[other]",
        "k = 1",
        "",
      ].join("\r\n"),
    );
  });

  it("adds args under command when the entry had none, and removes them again", () => {
    const text = '[mcp_servers."my server"]\ncommand = "npx"\nenv = { A = "1" }\n';
    const out = editTomlEntries(text, "mcp_servers", { "my server": { ...wrapped, env: { A: "1" } } });
    expect(out).toBe(
      '[mcp_servers."my server"]\ncommand = "/usr/bin/node"\nargs = [ "cli.js", "run", "--", "npx", "x" ]\nenv = { A = "1" }\n',
    );
    const back = editTomlEntries(
      out!,
      "mcp_servers",
      { "my server": { command: "npx", env: { A: "1" } } },
      text,
    );
    expect(back).toBe(text);
  });

  it("a restored value is written as the source spelled it: literal quotes, a multi-line array with comments", () => {
    const text = "[mcp_servers.a]\ncommand = 'npx'\nargs = [\n  'x', # first\n  \"y\",\n]\n";
    const out = editTomlEntries(text, "mcp_servers", { a: wrapped })!;
    expect(parse(out)).toEqual(
      parse(`[mcp_servers.a]\ncommand = "/usr/bin/node"\nargs = ${JSON.stringify(wrapped.args)}\n`),
    );
    expect(editTomlEntries(out, "mcp_servers", { a: { command: "npx", args: ["x", "y"] } }, text)).toBe(text);
  });

  it("gives null for layouts it does not edit: inline tables, dotted keys, an entry that is not there", () => {
    expect(
      editTomlEntries('mcp_servers = { a = { command = "npx" } }\n', "mcp_servers", { a: wrapped }),
    ).toBeNull();
    expect(
      editTomlEntries('[mcp_servers]\na = { command = "npx" }\n', "mcp_servers", { a: wrapped }),
    ).toBeNull();
    expect(editTomlEntries('[mcp_servers]\na.command = "npx"\n', "mcp_servers", { a: wrapped })).toBeNull();
    expect(editTomlEntries('[mcp_servers.a]\ncommand = "npx"\n', "mcp_servers", { b: wrapped })).toBeNull();
  });
});
