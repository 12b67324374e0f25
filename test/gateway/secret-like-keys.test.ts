// Values the gateway records whose keys someone else chose: a client's arguments (with
// `audit.arguments: "clear"`), a server's tool definitions (catalog_revised), what a server reached
// by URL says of itself (server_started, server_identified). The log refuses a string under a key
// named like a secret (docs/audit-format.md, "Writing"), so one such string (`"token": "…"` in an
// input schema's examples, an OAuth `token_endpoint` in serverInfo, an empty `password`) must be
// redacted in the record, not make the record unwritable: it was dropped with a warning (the
// catalog's revisions, the remote server's start) or refused the call (audit_unavailable).
// Real processes: the gateway, the catalog and HTTPS fixture servers.
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { auditEvents } from "../helpers/approvals.js";
import { makeCatalog } from "../helpers/catalog.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";
import { newStateDir } from "../helpers/state.js";
import { makeTls, startFixture, type Tls } from "../http/upstreamFixture.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const LOGIN = {
  name: "login",
  description: "Log in.",
  inputSchema: {
    type: "object",
    properties: {
      user: { type: "string" },
      password: { type: "string" },
      auth: { type: "object", examples: [{ token: "example-value" }] },
      // a key the server chose in a keyword no redaction of schema values reads
      hints: { type: "object", "x-sample": { token: "example-value" } },
    },
  },
};

/**
 * `tools` listed once through a gateway (label "secretish", the catalog fixture) that then ends:
 * the gateway, its state directory kept until the test's cleanup, and its catalog_revised records.
 */
async function listedOnce(tools: unknown[]) {
  const cat = makeCatalog(tools as Parameters<typeof makeCatalog>[0]);
  cleanup.push(() => cat.cleanup());
  const gw = rawGateway({
    args: ["--label", "secretish", "--approval", "none", "--", ...fixtureCommand("catalog")],
    env: cat.env,
  });
  cleanup.push(() => gw.close());
  await gw.initialize();
  await gw.request("tools/list");
  gw.closeStdin();
  await gw.exited;
  const revised = (await auditEvents(gw.stateDir)).filter((e) => e.type === "catalog_revised");
  return { gw, revised };
}

describe("keys named like secrets in what others chose", () => {
  it("a tool definition holding one is recorded in catalog_revised, its string redacted", async () => {
    const { gw, revised } = await listedOnce([LOGIN]);
    expect(gw.stderr()).not.toContain("cannot record");
    expect(revised).toHaveLength(1);
    const inventory = revised[0]!.inventory as (typeof LOGIN)[];
    // (an example of `auth` is a value of `auth`: it goes whole, as the argument's value would)
    expect(inventory[0]!.inputSchema.properties.auth.examples).toEqual([{ redacted: true }]);
    expect(inventory[0]!.inputSchema.properties.hints["x-sample"]).toEqual({ token: { redacted: true } });
    expect(inventory[0]!.inputSchema.properties.user).toEqual({ type: "string" });
  });

  it("a default, const or examples under a secret-like property name: catalog_revised and catalog show keep them redacted", async () => {
    const tool = {
      name: "login",
      inputSchema: {
        type: "object",
        properties: {
          user: { type: "string", default: "bob", examples: ["alice"] },
          password: { type: "string", default: "hunter-default-42" },
          client_secret: { type: "string", const: "hunter-const-45", examples: ["hunter-example-43", ""] },
          // the choices offered to every caller: shown
          auth_mode: { type: "string", enum: ["oauth", "basic"] },
          // its schema by reference: the definition's default is the api_key's
          api_key: { $ref: "#/$defs/Key" },
          // the same, the reference written with the schema's own `$id`
          session_token: { $ref: "https://x.example/login.json#/$defs/Tok" },
        },
        // examples of the whole input: redacted by their keys
        examples: [{ user: "alice", session: "hunter-session-46" }],
        $id: "https://x.example/login.json",
        $defs: {
          Key: { type: "string", default: "hunter-defref-47" },
          Tok: { type: "string", default: "hunter-absref-48" },
        },
      },
    };
    const { gw, revised } = await listedOnce([tool]);
    expect(revised).toHaveLength(1);
    const inventory = revised[0]!.inventory as (typeof tool)[];
    expect(inventory[0]!.inputSchema.properties.password).toEqual({
      type: "string",
      default: { redacted: true },
    });
    expect(inventory[0]!.inputSchema.properties.user).toEqual({
      type: "string",
      default: "bob",
      examples: ["alice"],
    });
    expect(inventory[0]!.inputSchema.properties.client_secret).toEqual({
      type: "string",
      const: { redacted: true },
      examples: [{ redacted: true }, ""],
    });
    expect(inventory[0]!.inputSchema.properties.auth_mode).toEqual(tool.inputSchema.properties.auth_mode);
    expect(inventory[0]!.inputSchema.examples).toEqual([{ user: "alice", session: { redacted: true } }]);
    for (const json of [[], ["--json"]]) {
      const shown = await runCli(["catalog", "show", "secretish", ...json, "--state-dir", gw.stateDir]);
      expect(shown.code).toBe(0);
      expect(shown.stdout).toContain("password");
      expect(shown.stdout).toContain("client_secret");
      expect(shown.stdout).not.toContain("hunter-default-42");
      expect(shown.stdout).not.toMatch(/hunter-(const|example|session|defref|absref)/);
    }
    const json = await runCli(["catalog", "show", "secretish", "--json", "--state-dir", gw.stateDir]);
    const listed = (JSON.parse(json.stdout) as { tools: { tool: typeof tool }[] }).tools[0]!.tool;
    expect(listed.inputSchema.properties.client_secret).toEqual({
      type: "string",
      const: "[redacted]",
      examples: ["[redacted]", ""],
    });
    expect(listed.inputSchema.properties.auth_mode).toEqual(tool.inputSchema.properties.auth_mode);
    expect(listed.inputSchema.properties.user).toEqual(tool.inputSchema.properties.user);
    expect(listed.inputSchema.examples).toEqual([{ user: "alice", session: "[redacted]" }]);
    expect(listed.inputSchema.$defs.Key).toEqual({ type: "string", default: "[redacted]" });
    expect(inventory[0]!.inputSchema.$defs.Key).toEqual({ type: "string", default: { redacted: true } });
    expect(listed.inputSchema.$defs.Tok).toEqual({ type: "string", default: "[redacted]" });
    expect(inventory[0]!.inputSchema.$defs.Tok).toEqual({ type: "string", default: { redacted: true } });
  });

  it('an empty string under a secret-named argument, with audit.arguments "clear": the call is served and recorded', async () => {
    const cat = makeCatalog([LOGIN]);
    cleanup.push(() => cat.cleanup());
    const gw = rawGateway({
      args: [
        "--label",
        "secretish",
        "--approval",
        "none",
        "--audit-arguments",
        "clear",
        "--",
        ...fixtureCommand("catalog"),
      ],
      env: cat.env,
    });
    cleanup.push(() => gw.close());
    await gw.initialize();
    await gw.request("tools/list");
    gw.send(
      '{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"login","arguments":{"user":"bob","password":""}}}\n',
    );
    const answer = await gw.next((m) => m.id === "c1");
    expect(answer.error).toBeUndefined();
    expect(cat.records().map((r) => r.args)).toEqual([{ user: "bob", password: "" }]);
    gw.closeStdin();
    await gw.exited;
    const called = (await auditEvents(gw.stateDir)).filter((e) => e.type === "tool_called");
    expect(called).toHaveLength(1);
    expect(called[0]!.arguments).toEqual({ user: "bob", password: { redacted: true } });
  });

  describe("a server reached by URL", () => {
    let tls: Tls;
    beforeAll(async () => {
      tls = await makeTls();
    });

    it("whose serverInfo holds one: its start and identity are recorded, the string redacted", async () => {
      const info = { websiteUrl: "https://example.test", token_endpoint: "https://example.test/token" };
      const server = await startFixture({ FIXTURE_INFO: JSON.stringify(info) }, tls);
      cleanup.push(() => server.kill());
      const stateDir = newStateDir();
      const gw = await startGateway({
        args: ["--url", server.url, "--label", "remote", "--approval", "none"],
        env: { NODE_EXTRA_CA_CERTS: tls.ca.caFile },
        stateDir,
      });
      cleanup.push(() => gw.close());
      expect((await gw.client.listTools()).tools.length).toBeGreaterThan(0);
      await gw.close();
      expect(gw.stderr()).not.toContain("cannot record");
      const events = await auditEvents(stateDir);
      const started = events.filter((e) => e.type === "server_started");
      const identified = events.filter((e) => e.type === "server_identified");
      expect(started).toHaveLength(1);
      expect(identified).toHaveLength(1);
      expect((identified[0]!.record as { remote: unknown }).remote).toMatchObject({
        serverInfo: {
          name: "http-fixture",
          websiteUrl: "https://example.test",
          token_endpoint: { redacted: true },
        },
      });
    });
  });
});
