// Doctor's list of a host file's servers says of an entry what its finding says. A stdio entry
// whose "type" is mistyped ("stdoi", beside its "command" and "args") was listed `http`
// (`"kind": "http"` in --json), since any "type" other than "stdio" reads as an HTTP entry, while
// its finding and wrap's refusal took it for the stdio entry it is. Now it is listed as what its
// keys say, marked `mistyped` (`"mistyped": true`), as is any entry holding a key its host does
// not read ("arg", "urll"); an entry with neither is listed as before. The real CLI, a host file
// in a fake home.
import { writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { fakeUsersOfEachTest } from "./hosts.js";

const user = fakeUsersOfEachTest();

type Listed = { key: string; wrapped: boolean; kind: string; mistyped?: true };

const URL_ = "https://mcp.example.com/mcp";

describe("doctor lists an entry with a mistyped type or key as what its keys say", () => {
  it("a stdoi entry with a command is stdio and mistyped, in --json and in the text listing", async () => {
    const u = user();
    const file = u.files["claude-code"];
    writeFileSync(
      file,
      JSON.stringify({
        mcpServers: {
          stdoi: { type: "stdoi", command: "node", args: ["x.js"] },
          nocmd: { type: "stdoi", cmd: "node" },
          htpp: { type: "htpp", url: URL_ },
          arg: { command: "node", arg: ["x.js"] },
          local: { command: "node", args: ["server.js"] },
          remote: { type: "http", url: URL_ },
        },
      }),
    );
    const json = await u.cli(["doctor", "--json"]);
    const report = JSON.parse(json.stdout) as {
      hosts: { file: string; servers: Listed[] }[];
      findings: { ok: boolean; what: string }[];
    };
    const servers = report.hosts.find((h) => h.file === file)?.servers;
    expect(servers).toEqual([
      // was { kind: "http" }: the listing said HTTP while the finding said stdio
      { key: "stdoi", wrapped: false, kind: "stdio", mistyped: true },
      // a stdio entry as its type means, which the host cannot start either (no "command")
      { key: "nocmd", wrapped: false, kind: "unusable", mistyped: true },
      { key: "htpp", wrapped: false, kind: "http", mistyped: true },
      { key: "arg", wrapped: false, kind: "stdio", mistyped: true },
      { key: "local", wrapped: false, kind: "stdio" },
      { key: "remote", wrapped: false, kind: "http" },
    ]);
    // the finding the listing agrees with
    expect(report.findings.map((f) => f.what)).toContain(
      `${file}: "stdoi" has "type": "stdoi" (did you mean "stdio"?), a "type" Claude Code does not know: the host does not run the server as the entry means`,
    );

    const text = await u.cli(["doctor"]);
    expect(text.stdout).toContain(
      `    mistyped     stdoi  (a stdio entry with a mistyped key or "type", which wrap refuses: see the findings)\n`,
    );
    expect(text.stdout).toContain(
      `    mistyped     htpp  (an HTTP entry with a mistyped key or "type", which wrap refuses: see the findings)\n`,
    );
    expect(text.stdout).toContain("    not wrapped  local\n");
    expect(text.stdout).toContain("    http         remote\n");
    expect(text.stdout).not.toMatch(/ {4}http +stdoi/);
  });
});
