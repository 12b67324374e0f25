// `portcullis run LABEL` from portcullis.json: the server's command, cwd, env, per-tool approval
// modes and onChange come from the file, found upward from the working directory.
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeCatalog } from "../helpers/catalog.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { makeProject } from "../helpers/project.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("portcullis run LABEL", () => {
  it("takes command, cwd, env and per-tool approval modes from portcullis.json found upward", async () => {
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const config = {
      mcpServers: {
        inventory: {
          command: NODE,
          args: ["dist/server.js"],
          cwd: ".",
          env: { ...project.env },
          credentials: { INVENTORY_API_KEY: "inventory-api-staging" },
          approval: { default: "none", tools: { adjust_inventory: "per-call" } },
          onChange: "restart",
        },
      },
    };
    writeFileSync(join(project.dir, "portcullis.json"), JSON.stringify(config, null, 2));
    const sub = join(project.dir, "src", "deep");
    mkdirSync(sub, { recursive: true });
    const stateDir = newStateDir();
    // the credential comes from the vault (unlocked before the server is spawned)
    const pass = passphraseEnv();
    const value = project.credentialEnv.INVENTORY_API_KEY;
    await runCli(["vault", "set", "inventory-api-staging", "--from-stdin", "--deliver", "env"], {
      stateDir,
      env: pass,
      input: value,
    });
    expect((await runCli(["unlock"], { stateDir, env: pass })).code).toBe(0);
    cleanup.push(async () => {
      await runCli(["lock"], { stateDir });
    });
    const gw = await startGateway({ args: ["inventory"], cwd: sub, stateDir });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    // mode none for read_status: no human asked
    const read = await gw.client.callTool({ name: "read_status", arguments: {} });
    expect(read.isError).toBeFalsy();
    // per-call for adjust_inventory: a human is asked, and the request names the credential scope
    const write = gw.client.callTool({ name: "adjust_inventory", arguments: { sku: "c", delta: 1 } });
    const req = await waitFor(
      async () => {
        const r = await runCli(["approvals", "--json", "--state-dir", stateDir]);
        return (
          JSON.parse(r.stdout).requests as { request: string; mode: string; credentialScope: string[] }[]
        )[0];
      },
      15_000,
      "the per-call request",
    );
    expect(req.mode).toBe("per-call");
    expect(req.credentialScope).toEqual(["inventory-api-staging"]);
    const ok = await runCli(["approve", req.request, "--for", "call", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    expect(ok.code).toBe(0);
    expect((await write).isError).toBeFalsy();
    expect(project.records().map((r) => r.tool)).toEqual(["read_status", "adjust_inventory"]);
    const status = JSON.parse((await runCli(["status", "--json", "--state-dir", stateDir])).stdout);
    expect(status.gateways[0].serverLabel).toBe("inventory");
    expect(status.gateways[0].record.workingDirectory).toBe(project.dir);
  });

  it("a cwd that is not there is refused naming the file and the key, not blamed on the command", async () => {
    const dir = tempDir();
    cleanup.push(() => removeDir(dir));
    writeFileSync(join(dir, "file.txt"), "");
    const config = {
      servers: {
        x: { command: NODE, args: [FIXTURES.echo], cwd: "./no-such-dir" },
        y: { command: NODE, args: [FIXTURES.echo], cwd: "file.txt" },
      },
    };
    writeFileSync(join(dir, "portcullis.json"), JSON.stringify(config));
    const stateDir = newStateDir();
    const missing = await runCli(["run", "x"], { cwd: dir, stateDir });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe(
      `portcullis run: ${join(dir, "portcullis.json")}: servers.x.cwd: ${join(dir, "no-such-dir")} does not exist.\n`,
    );
    const notDir = await runCli(["run", "y"], { cwd: dir, stateDir });
    expect(notDir.code).toBe(2);
    expect(notDir.stderr).toContain(`servers.y.cwd: ${join(dir, "file.txt")} is not a directory.`);
    expect(notDir.stderr).not.toContain("command not found");
  });

  it("a file saved with a byte order mark is read (the next check, cwd, is what refuses it)", async () => {
    const dir = tempDir();
    cleanup.push(() => removeDir(dir));
    const config = { servers: { x: { command: NODE, args: [FIXTURES.echo], cwd: "./no-such-dir" } } };
    writeFileSync(join(dir, "portcullis.json"), `\uFEFF${JSON.stringify(config)}`);
    const r = await runCli(["run", "x"], { cwd: dir, stateDir: newStateDir() });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `portcullis run: ${join(dir, "portcullis.json")}: servers.x.cwd: ${join(dir, "no-such-dir")} does not exist.\n`,
    );
  });

  it("a key written twice (a server label, a server's command) is refused naming both lines, not read as the last", async () => {
    const dir = tempDir();
    cleanup.push(() => removeDir(dir));
    const file = join(dir, "portcullis.json");
    const stateDir = newStateDir();
    const echo = JSON.stringify(FIXTURES.echo);
    writeFileSync(
      file,
      [
        "{",
        '  "servers": {',
        `    "x": { "command": ${JSON.stringify(NODE)}, "args": [${echo}], "approval": { "default": "per-call" } },`,
        `    "y": { "command": ${JSON.stringify(NODE)}, "args": [${echo}] },`,
        `    "x": { "command": ${JSON.stringify(NODE)}, "args": [${echo}], "approval": { "default": "none" } }`,
        "  }",
        "}",
        "",
      ].join("\n"),
    );
    for (const label of ["x", "y"]) {
      const r = await runCli(["run", label], { cwd: dir, stateDir });
      expect(r.code).toBe(2);
      expect(r.stderr).toBe(
        `portcullis run: ${file}: servers has the key "x" twice (lines 3 and 5); only the last would be read, so remove one.\n`,
      );
    }
    writeFileSync(
      file,
      `{"servers": {"x": {\n"command": ${JSON.stringify(NODE)},\n"args": [${echo}],\n"command": "true"}}}\n`,
    );
    const r = await runCli(["run", "x"], { cwd: dir, stateDir });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `portcullis run: ${file}: servers.x has the key "command" twice (lines 2 and 4); only the last would be read, so remove one.\n`,
    );
  });

  it("a NUL byte or a name that is no variable name is refused naming the key, not an internal error", async () => {
    const dir = tempDir();
    cleanup.push(() => removeDir(dir));
    const stateDir = newStateDir();
    const file = join(dir, "portcullis.json");
    const node = JSON.stringify(NODE);
    const echo = JSON.stringify(FIXTURES.echo);
    const nul = "contains a NUL byte, which cannot be passed to a program.";
    const noName = 'which is not an environment variable name (empty, or with "=" or a NUL byte).';
    // written as JSON text: \u0000 is how a NUL byte gets into the file
    for (const [entry, said] of [
      [`"command": "no\\u0000de"`, `servers.x.command ${nul}`],
      [`"command": ${node}, "args": [${echo}, "b\\u0000"]`, `servers.x.args[1] ${nul}`],
      [`"command": ${node}, "args": [${echo}], "env": {"A": "x\\u0000y"}`, `servers.x.env.A ${nul}`],
      [
        `"command": ${node}, "args": [${echo}], "env": {"A\\u0000": "x"}`,
        `servers.x.env has the name "A\\u0000", ${noName}`,
      ],
      // "A=B": "x" would reach the server as A="B=x"
      [
        `"command": ${node}, "args": [${echo}], "env": {"A=B": "x"}`,
        `servers.x.env has the name "A=B", ${noName}`,
      ],
      [`"command": ${node}, "args": [${echo}], "env": {"": "x"}`, `servers.x.env has the name "", ${noName}`],
    ]) {
      writeFileSync(file, `{"servers": {"x": {${entry}}}}\n`);
      const r = await runCli(["run", "x"], { cwd: dir, stateDir, input: "" });
      expect(r.code, entry).toBe(2);
      expect(r.stderr).toBe(`portcullis run: ${file}: ${said}\n`);
    }
  });

  it("a FIFO or a device in place of the file is refused in one sentence: no hang, no crash", async () => {
    const dir = tempDir();
    cleanup.push(() => removeDir(dir));
    const fifo = join(dir, "portcullis.json");
    expect(spawnSync("mkfifo", [fifo]).status).toBe(0);
    const stateDir = newStateDir();
    // found upward, and given to --config; /dev/zero was read until memory ran out (an abort)
    for (const [args, file] of [
      [["run", "x"], fifo],
      [["run", "--config", fifo, "x"], fifo],
      [["run", "--config", "/dev/zero", "x"], "/dev/zero"],
    ] as const) {
      const r = await runCli([...args], { cwd: dir, stateDir, input: "", timeoutMs: 15_000 });
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr).toBe(`portcullis run: ${file}: is not a regular file (a FIFO, socket or device).\n`);
    }
  });

  it("a tool named __proto__ keeps the approval mode portcullis.json gives it", async () => {
    const cat = makeCatalog([
      { name: "__proto__", description: "Deletes production.", inputSchema: { type: "object" } },
    ]);
    cleanup.push(() => cat.cleanup());
    const config = {
      servers: {
        p: {
          command: NODE,
          args: [FIXTURES.catalog],
          env: cat.env,
          // parsed, as the gateway parses the file: an own "__proto__" key (a literal would set the prototype)
          approval: { default: "none", tools: JSON.parse('{"__proto__": "per-call"}') },
        },
      },
    };
    writeFileSync(join(cat.dir, "portcullis.json"), JSON.stringify(config));
    const stateDir = newStateDir();
    const gw = await startGateway({ args: ["p"], cwd: cat.dir, stateDir });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const call = gw.client.callTool({ name: "__proto__", arguments: {} });
    call.catch(() => {}); // refused while the deny command is still running: handled from the start
    const req = await waitFor(
      async () => {
        const r = await runCli(["approvals", "--json", "--state-dir", stateDir]);
        return (JSON.parse(r.stdout).requests as { request: string; mode: string; tool: string }[])[0];
      },
      15_000,
      "the per-call request",
    );
    expect(req.mode).toBe("per-call");
    expect(cat.records()).toEqual([]);
    expect(
      (await runCli(["deny", req.request, "--state-dir", stateDir], { env: passphraseEnv() })).code,
    ).toBe(0);
    await expect(call).rejects.toThrow();
    expect(cat.records()).toEqual([]);
  });
});
