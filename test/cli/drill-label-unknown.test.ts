// `drill LABEL` without --file, for a label defined nowhere, lists the labels each file found
// defines, as `run --config FILE LABEL` and `drill --file FILE LABEL` do (it listed none); with no
// file found, it says where it looked. The label itself is never repeated. The real CLI, with HOME
// and the hosts' directories in a temporary directory of the test's.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";

const NOT_REPEATED = "the label given is not repeated, in case it is a secret typed in the wrong place";

/** A project directory inside a home of its own: no host file of the machine's is read. */
function home(): { home: string; project: string; env: Record<string, string> } {
  const home = tempDir();
  const project = join(home, "project");
  mkdirSync(project);
  const env = {
    HOME: home,
    XDG_CONFIG_HOME: join(home, ".config"),
    APPDATA: join(home, "AppData"),
    CODEX_HOME: join(home, ".codex"),
  };
  return { home, project, env };
}

const drill = (cwd: string, env: Record<string, string>, label: string) =>
  runCli(["drill", label], { cwd, env, noTerminal: true });

describe("drill LABEL, a label defined nowhere, without --file", () => {
  it("lists the labels of portcullis.json and of each host file found, as run --config does", async () => {
    const h = home();
    const config = join(h.project, "portcullis.json");
    writeFileSync(
      config,
      JSON.stringify({ servers: { alpha: { command: "node" }, beta: { command: "node" } } }),
    );
    const mcp = join(h.project, ".mcp.json");
    writeFileSync(mcp, JSON.stringify({ mcpServers: { gamma: { command: "node" } } }));
    const vscode = join(h.project, ".vscode", "mcp.json");
    mkdirSync(join(h.project, ".vscode"));
    writeFileSync(vscode, JSON.stringify({ servers: {} }));
    const r = await drill(h.project, h.env, "nosuch");
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `portcullis drill: no server by that label (${NOT_REPEATED}); known: alpha, beta in ${config}; gamma in ${mcp}; none in ${vscode}.\n`,
    );
    // the same list run gives for the same file
    const run = await runCli(["run", "--config", config, "nosuch"], { cwd: h.project, env: h.env });
    expect(run.stderr).toContain(`${config}: no server by that label (${NOT_REPEATED}); known: alpha, beta.`);
  });

  it("with no file found, says where it looked", async () => {
    const h = home();
    const r = await drill(h.project, h.env, "nosuch");
    expect(r.code).toBe(2);
    const looked = [
      join(h.project, ".mcp.json"),
      join(h.home, ".claude.json"),
      join(h.home, ".config", "Claude", "claude_desktop_config.json"),
      join(h.project, ".cursor", "mcp.json"),
      join(h.home, ".cursor", "mcp.json"),
      join(h.project, ".vscode", "mcp.json"),
      join(h.home, ".codex", "config.toml"),
    ];
    expect(r.stderr).toBe(
      `portcullis drill: no server by that label (${NOT_REPEATED}): no portcullis.json in ${h.project} or above, and no host configuration found (looked in ${looked.join(", ")}); give --file PATH, or define the server in one of them.\n`,
    );
  });
});
