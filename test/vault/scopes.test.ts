// Per-tool credential scopes: `servers.<label>.tools.<name>.credentials`. The configuration is
// checked (a scope that is not one of the server's credentials names the key and the file); one
// function decides a call's scopes; and in a real gateway a call needs, is asked for, is granted
// and is recorded with only its own tool's scopes (a tool with `[]` needs no unlock at all).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError, loadConfigFile } from "../../src/config/config.js";
import { scopesForTool, toolScopeNote } from "../../src/vault/toolScopes.js";
import { decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { tempDir } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { NODE } from "../helpers/paths.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { storeSecret, VAULTED, vaultedProject } from "./helpers.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

function configFile(server: Record<string, unknown>): string {
  const file = join(tempDir("portcullis-scopes-"), "portcullis.json");
  writeFileSync(file, JSON.stringify({ servers: { s: { command: NODE, args: [VAULTED], ...server } } }));
  return file;
}

const CREDENTIALS = { API_TOKEN: "api-token", OTHER_TOKEN: { secret: "other-token", deliver: "env" } };

describe("tools.<name>.credentials in portcullis.json", () => {
  it("accepts the server's own scopes, any tool name (tools come and go), and []", () => {
    const file = configFile({
      credentials: CREDENTIALS,
      tools: { reveal: { credentials: ["api-token"] }, status: { credentials: [] }, gone_tool: {} },
    });
    const s = loadConfigFile(file).get("s")!;
    expect(s.tools).toEqual({
      reveal: { credentials: ["api-token"] },
      status: { credentials: [] },
      gone_tool: {},
    });
  });

  it("a tool named __proto__ is an entry of its own, not the object's prototype", () => {
    const file = join(tempDir("portcullis-scopes-"), "portcullis.json");
    writeFileSync(
      file,
      `{"servers":{"s":{"command":"node","credentials":{"A":"api-token"},"tools":{"__proto__":{"credentials":[]}}}}}`,
    );
    const s = loadConfigFile(file).get("s")!;
    expect(Object.hasOwn(s.tools!, "__proto__")).toBe(true);
    expect(scopesForTool(s.credentials, s.tools, "__proto__")).toEqual([]);
    expect(scopesForTool(s.credentials, s.tools, "other")).toEqual(["api-token"]);
  });

  it("a scope that is not one of the server's credentials is an error naming the key and the file", () => {
    const file = configFile({
      credentials: CREDENTIALS,
      tools: { reveal: { credentials: ["api-token", "typo"] } },
    });
    expect(() => loadConfigFile(file)).toThrow(ConfigError);
    expect(() => loadConfigFile(file)).toThrow(`${file}: servers.s.tools.reveal.credentials[1] names "typo"`);
    const none = configFile({ tools: { reveal: { credentials: ["api-token"] } } });
    expect(() => loadConfigFile(none)).toThrow("it declares none");
  });

  it("wrong shapes and unknown keys name the key", () => {
    const cases: [unknown, string][] = [
      [[], "servers.s.tools must be an object"],
      [{ reveal: "api-token" }, "servers.s.tools.reveal must be an object"],
      [{ reveal: { credentials: "api-token" } }, "servers.s.tools.reveal.credentials must be an array"],
      [{ reveal: { credentials: [1] } }, "servers.s.tools.reveal.credentials must be an array"],
      [{ reveal: { approval: "none" } }, "servers.s.tools.reveal.approval is not a known key"],
    ];
    for (const [tools, message] of cases) {
      expect(() => loadConfigFile(configFile({ credentials: CREDENTIALS, tools }))).toThrow(message);
    }
  });
});

describe("scopesForTool: the one decision", () => {
  const creds = { A: "api-token", B: "other-token", C: "api-token" };
  it("a declared list, [] for none, every scope when the tool (or every tool) declares nothing", () => {
    const tools = { reveal: { credentials: ["api-token"] }, status: { credentials: [] }, bare: {} };
    expect(scopesForTool(creds, tools, "reveal")).toEqual(["api-token"]);
    expect(scopesForTool(creds, tools, "status")).toEqual([]);
    expect(scopesForTool(creds, tools, "bare")).toEqual(["api-token", "other-token"]);
    expect(scopesForTool(creds, tools, "unlisted")).toEqual(["api-token", "other-token"]);
    expect(scopesForTool(creds, undefined, "reveal")).toEqual(["api-token", "other-token"]);
    expect(scopesForTool({}, undefined, "reveal")).toEqual([]);
    // own keys only: a tool named like an Object.prototype member reads no inherited value
    expect(scopesForTool(creds, tools, "constructor")).toEqual(["api-token", "other-token"]);
    expect(scopesForTool(creds, tools, "__proto__")).toEqual(["api-token", "other-token"]);
  });

  it("the review's one line: no declarations at all, or none for this tool", () => {
    expect(toolScopeNote({ A: "x" }, undefined, "t")).toBe(
      "this server declares no per-tool scopes: every tool may use every credential",
    );
    expect(toolScopeNote({ A: "x" }, { other: { credentials: [] } }, "t")).toContain(
      "this tool declares no scopes of its own",
    );
    expect(toolScopeNote({ A: "x" }, { t: { credentials: ["x"] } }, "t")).toBeNull();
    expect(toolScopeNote({}, undefined, "t")).toBeNull();
  });
});

describe("per-tool scopes in a gateway", () => {
  it("a call needs, is asked for, is granted and is recorded with only its tool's scopes", async () => {
    const stateDir = newStateDir();
    const pass = passphraseEnv();
    cleanup.push(async () => {
      await runCli(["lock"], { stateDir });
    });
    await storeSecret(stateDir, "api-token", "api-token-value-0001", "--deliver", "env");
    await storeSecret(stateDir, "other-token", "other-token-value-0002", "--deliver", "env");
    const project = vaultedProject({
      credentials: {
        API_TOKEN: { secret: "api-token", deliver: "env" },
        OTHER_TOKEN: { secret: "other-token", deliver: "env" },
      },
      tools: { reveal: { credentials: ["api-token"] }, status: { credentials: [] } },
      approval: { default: "none", tools: { reveal: "session", describe: "session" } },
    });
    cleanup.push(() => project.cleanup());
    const gw = await startGateway({ args: ["vaulted"], cwd: project.dir, stateDir });
    cleanup.push(() => gw.close());
    await gw.client.listTools();

    // locked: a tool with [] needs no unlock; the others are refused naming only their scopes
    const status = await gw.client.callTool({ name: "status", arguments: {} });
    expect(status.isError).toBeFalsy();
    await expect(gw.client.callTool({ name: "reveal", arguments: { form: "raw" } })).rejects.toMatchObject({
      code: -32056,
      data: { error: "vault_locked", scopes: ["api-token"] },
    });
    await expect(gw.client.callTool({ name: "describe", arguments: {} })).rejects.toMatchObject({
      data: { error: "vault_locked", scopes: ["api-token", "other-token"] },
    });

    expect((await runCli(["unlock"], { stateDir, env: pass })).code).toBe(0);
    // spawned while the vault was locked, the server holds placeholders until it starts again
    // (test/vault/locked-at-spawn.test.ts): the client reconnects it, and the new one has them
    await expect(gw.client.callTool({ name: "reveal", arguments: { form: "raw" } })).rejects.toMatchObject({
      data: { error: "credential_missing", scope: "api-token" },
    });
    await gw.close();
    const again = await startGateway({ args: ["vaulted"], cwd: project.dir, stateDir });
    cleanup.push(() => again.close());
    await again.client.listTools();
    const seen = new Set<string>();
    const reveal = again.client.callTool({ name: "reveal", arguments: { form: "raw", note: "n" } });
    const asked = await nextStoredRequest(stateDir, seen);
    const listed = JSON.parse((await runCli(["approvals", "--json"], { stateDir })).stdout) as {
      requests: { request: string; credentialScope: string[]; review: { credentialScope: string[] } }[];
    };
    const req = listed.requests.find((r) => r.request === asked.request)!;
    expect(req.credentialScope).toEqual(["api-token"]);
    expect(req.review.credentialScope).toEqual(["api-token"]);
    const text = (await runCli(["approvals"], { stateDir })).stdout;
    expect(text).toContain("credentials api-token\n");
    // the commands paste whole: with the state directory, not the default one here
    expect(text).toContain(
      `decide     portcullis approve ${asked.request} --state-dir ${stateDir}   or   portcullis deny ${asked.request} --state-dir ${stateDir}\n`,
    );
    expect(text).not.toContain("declares no");
    await decideByCli(stateDir, "approve", asked.request);
    expect((await reveal).isError).toBeFalsy();
    const grants = JSON.parse((await runCli(["grants", "--json"], { stateDir })).stdout) as {
      grants: { credentialScope: string[] }[];
    };
    expect(grants.grants.map((g) => g.credentialScope)).toEqual([["api-token"]]);

    // a tool that declares nothing, on a server where others do: every scope, and the review says so
    const describe = again.client.callTool({ name: "describe", arguments: {} });
    const askedAll = await nextStoredRequest(stateDir, seen);
    const textAll = (await runCli(["approvals"], { stateDir })).stdout;
    expect(textAll).toContain("credentials api-token, other-token");
    expect(textAll).toContain(
      "this tool declares no scopes of its own: it may use every credential of the server",
    );
    await decideByCli(stateDir, "approve", askedAll.request);
    expect((await describe).isError).toBeFalsy();

    // a secret removed while running: only the calls that use it are refused
    expect((await runCli(["vault", "rm", "other-token"], { stateDir, env: pass })).code).toBe(0);
    expect((await runCli(["lock"], { stateDir })).code).toBe(0);
    expect((await runCli(["unlock"], { stateDir, env: pass })).code).toBe(0);
    expect((await again.client.callTool({ name: "reveal", arguments: { form: "raw" } })).isError).toBeFalsy();
    await expect(again.client.callTool({ name: "describe", arguments: {} })).rejects.toMatchObject({
      code: -32059,
      data: { error: "credential_missing", scope: "other-token" },
    });

    // vault list names the tools that declare each scope
    const list = await runCli(["vault", "list", "--json"], { stateDir, cwd: project.dir });
    const secrets = JSON.parse(list.stdout).secrets as { name: string; usedBy: { tools?: string[] }[] }[];
    expect(secrets.find((x) => x.name === "api-token")?.usedBy).toMatchObject([{ tools: ["reveal"] }]);
    const listText = (await runCli(["vault", "list"], { stateDir, cwd: project.dir })).stdout;
    expect(listText).toContain("tools reveal and any that declare no scopes");

    // the activity view names the scopes each call used
    const activity = JSON.parse(
      (await runCli(["audit", "activity", "--json"], { stateDir, env: pass })).stdout,
    ) as { tool: string; outcome: string; credentials: string[] }[];
    const used = (tool: string) =>
      activity.filter((a) => a.tool === tool && a.outcome !== "refused").map((a) => a.credentials);
    expect(used("status")).toEqual([[]]);
    expect(used("reveal")).toEqual([["api-token"], ["api-token"]]);
    expect(used("describe")).toEqual([["api-token", "other-token"]]);
  });
});
