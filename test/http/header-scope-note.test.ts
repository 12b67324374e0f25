// The review of a call to a server reached by "url" whose header comes from the vault said "this
// server declares no per-tool scopes: every tool may use every credential", which sends the
// human to declare per-tool scopes: such a server takes none (its header goes with every request,
// whatever the tool; config refuses tools.<tool>.credentials there). The note now says what is
// so: the headers carry the credential with every request. A real gateway in front of a real
// HTTP server, the header's secret in a real vault, the review as `approvals --json` gives it.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { nextStoredRequest } from "../helpers/approvals.js";
import { tempDir } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { storeSecret } from "../vault/helpers.js";
import { startFixture } from "./upstreamFixture.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

it("a call's review names the header's credential and says every tool uses it", async () => {
  const server = await startFixture({}, null);
  cleanup.push(() => server.kill());
  const stateDir = newStateDir();
  await storeSecret(
    stateDir,
    "remote-mcp-token",
    "tok-5e1d",
    "--deliver",
    "http",
    "--host",
    `127.0.0.1:${server.port}`,
  );
  expect((await runCli(["unlock"], { stateDir, env: passphraseEnv() })).code).toBe(0);
  cleanup.push(async () => {
    await runCli(["lock"], { stateDir });
  });
  const dir = tempDir("portcullis-cfg-");
  const headers = { Authorization: { secret: "remote-mcp-token", format: "Bearer {}" } };
  writeFileSync(
    join(dir, "portcullis.json"),
    JSON.stringify({ servers: { remote: { url: server.url, headers } } }),
  );
  const gw = await startGateway({ args: ["remote"], cwd: dir, stateDir });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  void gw.client.callTool({ name: "echo", arguments: { message: "x" } }).catch(() => {});
  const request = await nextStoredRequest(stateDir);
  const listed = await runCli(["approvals", "--json"], { stateDir });
  const review = (
    JSON.parse(listed.stdout) as { requests: { request: string; review: Record<string, unknown> }[] }
  ).requests.find((r) => r.request === request.request)!.review;
  expect(review.credentialScope).toEqual(["remote-mcp-token"]);
  expect(review.scopeNote).toBe(
    "this server's headers carry these credentials with every request to it: every tool uses them",
  );
});
