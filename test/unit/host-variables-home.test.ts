// `${userHome}` in a VS Code or Cursor entry, as the drill expands it (src/onboard/hostVariables.ts),
// is the user's home by the one rule every lookup of it takes (homeDirectory, src/util/xdg.ts):
// HOME when absolute, else the password database's. Read as it was, `HOME=` made
// `${userHome}/bin/server` the relative `bin/server` and `HOME=rel` made it `<cwd>/rel/bin/server`.
import { userInfo } from "node:os";
import { describe, expect, it } from "vitest";
import { expandHostVariables } from "../../src/onboard/hostVariables.js";

const vscode = {
  host: "vscode",
  file: "/p/.vscode/mcp.json",
  format: "jsonc",
  tables: [["servers"]],
} as const;
// biome-ignore lint/suspicious/noTemplateCurlyInString: a host's own expansion, as the host file holds it
const entry = { command: "${userHome}/bin/server" };

describe("userHome in a host entry", () => {
  it("is the user's own home when HOME is empty or relative", () => {
    for (const HOME of ["", "rel", "."]) {
      const out = expandHostVariables({ ...vscode, tables: [["servers"]] }, "k", entry, "/p", { HOME });
      expect(out.command, `HOME=${JSON.stringify(HOME)}`).toBe(`${userInfo().homedir}/bin/server`);
    }
  });

  it("is HOME when HOME is absolute", () => {
    const out = expandHostVariables({ ...vscode, tables: [["servers"]] }, "k", entry, "/p", {
      HOME: "/home/else",
    });
    expect(out.command).toBe("/home/else/bin/server");
  });
});
