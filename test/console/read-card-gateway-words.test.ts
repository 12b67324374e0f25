// A guarded read (resources/read …) asks a human like a tool call, as a pseudo-tool whose
// description the gateway writes ("Not a tool: the MCP request …"). On the console's card that
// description is the gateway's own, never framed as the server's words ("The server says, as the
// tool's description"), and it is capped like an argument value: its target is the agent's text.
// A real gateway before the lenient fixture, the console process, plain HTTP.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { ResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { nextStoredRequest } from "../helpers/approvals.js";
import { removeDir, tempDir } from "../helpers/files.js";
import { startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";
import { httpLogin, raw, startConsoleProcess } from "./helpers.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("the console's card of a guarded read", () => {
  it("shows the gateway's description of the request as its own, capped, never as the server's", async () => {
    const dir = tempDir("portcullis-read-card-");
    const [command, ...args] = fixtureCommand("lenient");
    const config = {
      servers: { lenient: { command, args, approval: { default: "none", resources: "per-call" } } },
    };
    writeFileSync(join(dir, "portcullis.json"), JSON.stringify(config));
    const stateDir = newStateDir();
    const gw = await startGateway({
      args: ["lenient"],
      cwd: dir,
      stateDir,
      env: { PORTCULLIS_NO_CONSOLE: "1" },
    });
    cleanup.push(
      () => removeDir(dir),
      () => removeDir(stateDir),
      () => gw.close(),
    );
    const console_ = await startConsoleProcess(stateDir);
    cleanup.push(() => console_.stop());

    const uri = `test://${"a".repeat(600)}`;
    gw.client.request({ method: "resources/read", params: { uri } }, ResultSchema).catch(() => {});
    const req = await nextStoredRequest(stateDir, new Set());
    expect(req.tool).toBe(`resources/read ${uri}`);

    const s = await httpLogin(console_.url);
    const card = await raw(`${console_.url}/requests/${req.request}`, { headers: { Cookie: s.cookie } });
    expect(card.status).toBe(200);
    const words =
      /<div class="request-kind" data-testid="gateway-words">([\s\S]*?)<\/div><p class="cut-note"/.exec(
        card.body,
      );
    expect(words, card.body.slice(0, 2000)).not.toBeNull();
    expect(words![1]).toContain("Not a tool: the MCP request resources/read for test://aaaa");
    expect(words![1]).toContain('class="value-box capped" data-capped');
    expect(card.body).not.toContain("The server says, as the tool&#39;s description");
    expect(card.body).not.toContain("The server says, as the tool's description");
  }, 60_000);
});
