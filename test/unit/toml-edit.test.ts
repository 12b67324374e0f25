// editTomlEntries: a Codex config.toml edited in place, only the values that change, in each of the
// three shapes (sections, dotted keys, inline tables); what it cannot edit exactly gives null (the
// caller then writes the document again).
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

  it("edits inline tables (nested, multi-line) and dotted keys in place, and back", () => {
    const cases: [string, string][] = [
      [
        'mcp_servers = { a = { command = "npx" } } # all in one\n',
        'mcp_servers = { a = { command = "/usr/bin/node", args = [ "cli.js", "run", "--", "npx", "x" ] } } # all in one\n',
      ],
      [
        "[mcp_servers]\na = {command='npx',args=['x','y']}\n",
        '[mcp_servers]\na = {command="/usr/bin/node",args=[ "cli.js", "run", "--", "npx", "x" ]}\n',
      ],
      [
        '[mcp_servers]\na = {\n  command = "npx", # which\n  env = { K = "v" },\n}\n',
        '[mcp_servers]\na = {\n  command = "/usr/bin/node", args = [ "cli.js", "run", "--", "npx", "x" ], # which\n  env = { K = "v" },\n}\n',
      ],
      [
        '[mcp_servers]\n"a".command = "npx"  # c\n',
        '[mcp_servers]\n"a".command = "/usr/bin/node"  # c\n"a".args = [ "cli.js", "run", "--", "npx", "x" ]\n',
      ],
      [
        'mcp_servers.a.command = "npx"',
        'mcp_servers.a.command = "/usr/bin/node"\nmcp_servers.a.args = [ "cli.js", "run", "--", "npx", "x" ]',
      ],
    ];
    for (const [text, expected] of cases) {
      const original = parse(text) as { mcp_servers: { a: Record<string, unknown> } };
      const next = { ...original.mcp_servers.a, ...wrapped };
      const out = editTomlEntries(text, "mcp_servers", { a: next });
      expect(out, text).toBe(expected);
      expect(editTomlEntries(out!, "mcp_servers", { a: original.mcp_servers.a }, text), text).toBe(text);
    }
  });

  it("gives null for what it cannot read or edit: a key TOML escapes as JSON cannot, an entry that is not there", () => {
    expect(
      editTomlEntries('[mcp_servers."\\U0001F600"]\ncommand = "npx"\n', "mcp_servers", {
        "\u{1F600}": wrapped,
      }),
    ).toBeNull();
    expect(editTomlEntries('[mcp_servers.a]\ncommand = "npx"\n', "mcp_servers", { b: wrapped })).toBeNull();
  });
});
