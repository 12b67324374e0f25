// Under onChange "report" a rebuild leaves the old code running, and the status line says how to
// get the new code. The second way (restart on change) must point where this gateway reads it:
// an entry wrap wrote (`run --label L -- COMMAND`) reads no portcullis.json, so it names run's
// flag and where it goes in a host entry; a label from portcullis.json names that file and label.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterEach, describe, expect, it } from "vitest";
import { type Session, startGateway } from "../helpers/gateway.js";
import { NODE } from "../helpers/paths.js";
import { makeProject, type Project } from "../helpers/project.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function unchangedLine(project: Project, gw: Session<Client>): Promise<string> {
  cleanup.push(
    () => gw.close(),
    () => project.cleanup(),
  );
  await gw.client.listTools();
  project.rebuild("B");
  const line = await gw.waitForStderr(/^portcullis\[inventory\]: running server unchanged: .*$/m, 10_000);
  return line.trim();
}

describe("onChange report: the way to restart on change is named where this gateway reads it", () => {
  it("a `-- COMMAND` gateway (as wrap writes it) names run's flag before the --, not portcullis.json", async () => {
    const project = makeProject("A");
    const gw = await startGateway({
      args: ["--label", "inventory", "--approval", "none", "--", ...project.command],
      cwd: project.dir,
      env: project.env,
    });
    const line = await unchangedLine(project, gw);
    expect(line).toMatch(
      /; the new code runs when the server starts again: have your MCP client reconnect it, or give run --on-change restart \(in a host's entry: in its args, before the "--"\)$/,
    );
    expect(line).not.toContain("portcullis.json");
  });

  it("a portcullis.json label names that file and the label to set onChange for", async () => {
    const project = makeProject("A");
    const config = join(project.dir, "portcullis.json");
    writeFileSync(
      config,
      JSON.stringify({
        servers: { inventory: { command: NODE, args: [project.entry], approval: { default: "none" } } },
      }),
    );
    const gw = await startGateway({ args: ["inventory"], cwd: project.dir, env: project.env });
    const line = await unchangedLine(project, gw);
    expect(
      line.endsWith(
        `; the new code runs when the server starts again: have your MCP client reconnect it, or set "onChange": "restart" for "inventory" in ${config}`,
      ),
    ).toBe(true);
  });
});
