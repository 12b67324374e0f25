// A relative XDG_CONFIG_HOME is ignored, as the XDG Base Directory specification asks ("must be
// absolute ... consider the path invalid and ignore it"), as it is for XDG_STATE_HOME
// (test/cli/xdg-relative.test.ts): taken from the working directory, `wrap claude-desktop` read
// and rewrote `./conf/Claude/claude_desktop_config.json` of whatever folder it ran in, a file
// Claude Desktop never reads, and doctor listed it as the host's. The real CLI in a fake home.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { fakeUsersOfEachTest } from "./hosts.js";

const user = fakeUsersOfEachTest();

describe("XDG_CONFIG_HOME", () => {
  it("relative: ignored; Claude Desktop's file is ~/.config/Claude/claude_desktop_config.json whatever the working directory", async () => {
    const u = user();
    // a file where the relative value would lead from the project folder, with a server of its own
    const decoy = join(u.project, "conf", "Claude", "claude_desktop_config.json");
    mkdirSync(join(u.project, "conf", "Claude"), { recursive: true });
    writeFileSync(decoy, JSON.stringify({ mcpServers: { decoy: { command: "node", args: ["decoy.js"] } } }));
    const env = { ...u.env, XDG_CONFIG_HOME: "conf" };
    const wrap = await runCli(["wrap", "claude-desktop", "--dry-run"], { env, cwd: u.project });
    expect(wrap.code, wrap.stderr).toBe(0);
    expect(wrap.stdout).toContain(`${u.files["claude-desktop"]}: would wrap filesystem`);
    expect(wrap.stdout).not.toContain(decoy);
    const doctor = await runCli(["doctor", "--json"], { env, cwd: u.project });
    const report = JSON.parse(doctor.stdout) as { hosts: { host: string; file: string }[] };
    expect(report.hosts.filter((h) => h.host === "claude-desktop").map((h) => h.file)).toEqual([
      u.files["claude-desktop"],
    ]);
  });

  it("absolute: used as documented", async () => {
    const u = user();
    const elsewhere = join(u.root, "elsewhere");
    const file = join(elsewhere, "Claude", "claude_desktop_config.json");
    mkdirSync(join(elsewhere, "Claude"), { recursive: true });
    writeFileSync(file, JSON.stringify({ mcpServers: { other: { command: "node", args: ["other.js"] } } }));
    const wrap = await runCli(["wrap", "claude-desktop", "--dry-run"], {
      env: { ...u.env, XDG_CONFIG_HOME: elsewhere },
      cwd: u.project,
    });
    expect(wrap.code, wrap.stderr).toBe(0);
    expect(wrap.stdout).toContain(`${file}: would wrap other`);
  });
});
