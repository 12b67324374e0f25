// The server is started while its dependency tree is digested (src/supervisor/launchCapture.ts):
// a slow digest — a large tree with a cold cache — and a client that speaks at once. Whatever
// arrives before the epoch's execution record exists is held, then forwarded to that epoch.

import { isAscii } from "node:buffer";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DigestCache } from "../../src/identity/cache.js";
import { verifiedAuditEvents } from "../helpers/approvals.js";
import { completeLines } from "../helpers/completeLines.js";
import { tempDir, waitFor } from "../helpers/files.js";
import { assertBuilt, hostEnv, startGateway } from "../helpers/gateway.js";
import { CLI, FIXTURES, NODE, REPO } from "../helpers/paths.js";
import { makeProject } from "../helpers/project.js";
import { rawGateway, rawPeer } from "../helpers/raw.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** node_modules/bulk-N/…: files the server never loads, that the capture must still digest. */
function bulkTree(dir: string, packages: number, files: number): void {
  for (let p = 0; p < packages; p++) {
    const pkg = join(dir, "node_modules", `bulk-${p}`);
    mkdirSync(pkg, { recursive: true });
    for (let f = 0; f < files; f++)
      writeFileSync(join(pkg, `f${f}.js`), `export const v = ${p * files + f};\n`);
  }
}

const events = verifiedAuditEvents;

describe("startup: the server starts while its identity is captured", () => {
  it("a call sent before the execution record exists is held, then forwarded to that epoch once it is recorded", async () => {
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    bulkTree(project.dir, 40, 100); // 4,000 files, hashed cold: the digest takes a while
    const stateDir = newStateDir();
    const gw = rawGateway({
      args: ["--label", "inventory", "--approval", "none", "--", ...project.command],
      cwd: project.dir,
      // a cache of its own: cold, so every file of the tree is read and hashed
      env: { ...project.env, PORTCULLIS_CACHE_DIR: tempDir("portcullis-cold-cache-") },
      stateDir,
    });
    cleanup.push(() => gw.close());
    // Everything at once, without waiting for any answer: the digest is still running.
    gw.send({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } },
    });
    gw.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    gw.send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "read_status", arguments: {} } });
    const res = await gw.next((m) => m.id === 2, 60_000);
    expect(res.error).toBeUndefined();
    const status = JSON.parse((res.result as { content: { text: string }[] }).content[0]!.text);
    expect(status.revision).toBe("A");

    // The server's own evidence: it received the call, in the process the record names.
    const calls = project.records();
    expect(calls.map((c) => c.tool)).toEqual(["read_status"]);
    gw.closeStdin();
    await gw.exited;

    const all = await events(stateDir);
    const started = all.filter((e) => e.type === "server_started");
    expect(started).toHaveLength(1);
    const record = started[0]!.record as {
      epoch: string;
      processId: number;
      dependencyTree: { files: number };
    };
    expect(record.dependencyTree.files).toBeGreaterThanOrEqual(4000);
    const called = all.filter((e) => e.type === "tool_called");
    expect(called).toHaveLength(1);
    // recorded after the record, against its epoch, and answered by the process it names
    expect(called[0]!.seq).toBeGreaterThan(started[0]!.seq);
    expect(called[0]!.epoch).toBe(record.epoch);
    expect(calls[0]!.pid).toBe(record.processId);
  });

  it("a dependency changed by the starting server itself, before the digest read it: that process is killed unused and the server started again, capture first", async () => {
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    bulkTree(project.dir, 40, 100);
    // Sorted last in the tree: with a cold cache it is hashed well after the wrapper touched it.
    const last = join(project.dir, "node_modules", "zzz-last", "index.js");
    mkdirSync(join(project.dir, "node_modules", "zzz-last"));
    writeFileSync(last, "export default 1;\n");
    const starts = join(project.dir, "state", "starts");
    const wrapper = join(project.dir, "scripts", "touchy.sh");
    writeFileSync(
      wrapper,
      `#!/bin/sh\necho "$$" >> ${JSON.stringify(starts)}\ntouch ${JSON.stringify(last)}\nexec ${JSON.stringify(NODE)} "$(dirname "$0")/../dist/server.js"\n`,
    );
    chmodSync(wrapper, 0o755);
    const stateDir = newStateDir();
    const gw = rawGateway({
      args: ["--label", "inventory", "--approval", "none", "--", wrapper],
      cwd: project.dir,
      env: { ...project.env, PORTCULLIS_CACHE_DIR: tempDir("portcullis-cold-cache-") },
      stateDir,
    });
    cleanup.push(() => gw.close());
    await gw.initialize();
    const res = await gw.request("tools/call", { name: "read_status", arguments: {} }, 60_000);
    expect(res.error).toBeUndefined();
    // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
    await waitFor(
      () => /changed while the server was starting; starting it again/.test(gw.stderr()),
      20_000,
      "the gateway's line on the restart",
    );
    expect(gw.stderr()).toMatch(
      /zzz-last\/index\.js changed while the server was starting; starting it again/,
    );
    // two starts: the first process never got a message, the second answered
    const pids = completeLines(readFileSync(starts, "utf8")).map(Number);
    expect(pids).toHaveLength(2);
    const calls = project.records();
    expect(calls).toHaveLength(1);
    gw.closeStdin();
    await gw.exited;
    const started = (await events(stateDir)).filter((e) => e.type === "server_started");
    expect(started).toHaveLength(1); // one epoch: the killed process never had one
    const record = started[0]!.record as { processId: number };
    expect(record.processId).toBe(pids[1]);
  });

  it.runIf(process.platform === "linux")(
    "the client's executables are digested with the server's tree, before the client is answered, and the run records them",
    async () => {
      const project = makeProject("A");
      cleanup.push(() => project.cleanup());
      const stateDir = newStateDir();
      const cacheDir = tempDir("portcullis-cold-cache-");
      // The gateway's parent (its stdio client) is a shell that stays: `"$@"; exit $?` is not exec'd.
      const runArgs = ["run", "--state-dir", stateDir, "--label", "inventory", "--approval", "none"];
      const gw = rawPeer(
        "/bin/sh",
        ["-c", '"$@"; exit $?', "sh", NODE, CLI, ...runArgs, "--", ...project.command],
        { ...project.env, PORTCULLIS_CACHE_DIR: cacheDir },
        { cwd: project.dir },
      );
      cleanup.push(() => gw.close());
      const shell = readlinkSync(`/proc/${gw.pid}/exe`);
      await gw.initialize();
      // The capture saved the cache before the epoch came up, the shell's binary in it: the
      // client's chain was digested alongside the server's tree, not on the event loop after it.
      const shellSha = createHash("sha256").update(readFileSync(shell)).digest("hex");
      expect(new DigestCache(join(cacheDir, "digests.bin")).cachedDigest(shell)).toBe(shellSha);
      gw.closeStdin();
      await gw.exited;
      const run = (await events(stateDir)).find((e) => e.type === "run_started") as
        | { agent: { pid: number; executable: string; sha256: string }[] }
        | undefined;
      expect(run?.agent[0]).toMatchObject({ pid: gw.pid, executable: shell, sha256: `sha256:${shellSha}` });
    },
  );

  it("`run` reads its command line before it loads the gateway, and loads, before it serves, no console pages, passkey library, certificate code, onboarding or demo, nor the HTTP front, remote link or egress proxy it is not configured for", () => {
    assertBuilt();
    const dist = join(REPO, "dist");
    // The static import graph of a module (dynamic imports load only when used).
    const graph = (entry: string) => {
      const seen = new Set<string>();
      const packages = new Set<string>();
      const visit = (file: string) => {
        if (seen.has(file)) return;
        seen.add(file);
        const src = readFileSync(file, "utf8");
        for (const m of src.matchAll(/^(?:import|export)\s[^;]*?from\s+"([^"]+)"|^import\s+"([^"]+)"/gm)) {
          const spec = (m[1] ?? m[2])!;
          if (spec.startsWith(".")) visit(resolve(dirname(file), spec));
          else if (!spec.startsWith("node:"))
            packages.add(
              spec
                .split("/")
                .slice(0, spec.startsWith("@") ? 2 : 1)
                .join("/"),
            );
        }
      };
      visit(join(dist, entry));
      return { seen, packages, modules: [...seen].map((f) => relative(dist, f)) };
    };
    // First the command line and configuration only: no package, no store, no gateway.
    const first = graph("cli/run.js");
    expect(first.modules).toContain("config/config.js");
    expect([...first.packages]).toEqual([]);
    // (the catalog's text rules aside: a leaf module, which the state directory's shell quoting
    // uses to escape what a terminal would act on; and the store's header read with the version it
    // is compared with, two leaves: a store a newer portcullis migrated is refused before any spawn)
    expect(
      first.modules.filter((f) =>
        /^(?:gateway|audit|approval|catalog\/(?!text\.js$))\/?|^store\/(?!(?:stateDir|headerVersion|knownVersion)\.js$)/.test(
          f,
        ),
      ),
    ).toEqual([]);
    expect(graph("catalog/text.js").modules.sort()).toEqual(["catalog/text.js", "util/cut.js"]);
    expect(readFileSync(join(dist, "cli", "run.js"), "utf8")).toContain('import("./serve.js")');
    // Then the gateway: run.js and serve.js together.
    const second = graph("cli/serve.js");
    const seen = new Set([...first.seen, ...second.seen]);
    const packages = new Set([...first.packages, ...second.packages]);
    expect(seen.size).toBeGreaterThan(20); // the graph was followed
    expect([...packages].sort()).toEqual(["better-sqlite3", "canonicalize", "ulid"]);
    const modules = [...seen].map((f) => relative(dist, f));
    expect(modules).toContain("gateway/gateway.js");
    const heavy = modules.filter((f) =>
      /^(?:console\/(?!address\.js$|launch\.js$)|cli\/(?:demo|console|passkey|onboard|wrap|doctor|drill)|onboard\/|demo\/)/.test(
        f,
      ),
    );
    expect(heavy).toEqual([]);
    // Loaded only when the configuration asks for them (--listen, --url, an egress proxy).
    const onDemand = modules.filter((f) =>
      /^(?:cli\/(?:listen|runRemote)\.js$|transport\/http(?!Access)|supervisor\/(?:remote|remoteEpoch|remoteSession|remoteTransport|remoteWire|sse)\.js$|vault\/egress\/(?:proxy|ca|env|release|holderClient)\.js$)/.test(
        f,
      ),
    );
    expect(onDemand).toEqual([]);

    // What ships (scripts/bundle.mjs): `run` is served from dist/cli/gateway.cjs, main.ts in one
    // CommonJS file with the other commands left out; the gateway's parts loaded only when asked
    // (--listen, --url) are in it, the pages, onboarding and demo are not.
    const map = JSON.parse(readFileSync(join(dist, "cli", "gateway.cjs.map"), "utf8")) as {
      sources: string[];
    };
    const bundled = map.sources.map((f) => f.replace(/^(?:\.\.\/)+/, ""));
    expect(bundled).toEqual(
      expect.arrayContaining(["src/cli/run.ts", "src/cli/serve.ts", "src/gateway/gateway.ts"]),
    );
    expect(bundled).toEqual(expect.arrayContaining(["src/cli/listen.ts", "src/cli/runRemote.ts"]));
    expect(
      bundled.filter((f) =>
        /^src\/(?:console\/(?!address\.ts$|launch\.ts$)|cli\/(?:demo|console|passkey|onboard|wrap|doctor|drill|status|approvals|vault|audit|init|catalog|egress)\.ts$|onboard\/|demo\/)/.test(
          f,
        ),
      ),
    ).toEqual([]);
    // ASCII, which main.cjs reads as Latin-1, faster than node's UTF-8 reader (scripts/bundle.mjs):
    // a file that is not would be read as node reads it, as fast as before this check
    expect(isAscii(readFileSync(join(dist, "cli", "gateway.cjs")))).toBe(true);
    expect(isAscii(readFileSync(join(dist, "cli", "validatorEngine.cjs")))).toBe(true);
    // the one package inside it: ES-module-only, which `require` cannot load
    expect(bundled.filter((f) => f.startsWith("node_modules/"))).toEqual([
      "node_modules/canonicalize/lib/canonicalize.js",
    ]);
    // Each other command from a CommonJS file of its own, with none of the others' modules (the
    // drill without the demo it borrows a few lines from); the demo from the ES module bundle.
    const sourcesOf = (file: string) =>
      (
        JSON.parse(readFileSync(join(dist, "cli", `${file}.map`), "utf8")) as { sources: string[] }
      ).sources.map((f) => f.replace(/^(?:\.\.\/)+/, ""));
    const commandModules =
      /^src\/cli\/(status|catalog|init|audit|passkey|demo|wrap|doctor|console|drill|vault|egress|approvals|run)\.ts$/;
    for (const command of ["status", "approvals", "audit", "vault", "drill", "wrap", "init"]) {
      const own = sourcesOf(`${command}.cjs`);
      expect(own.filter((f) => commandModules.test(f))).toEqual([`src/cli/${command}.ts`]);
      expect(own.filter((f) => /^src\/(?:gateway\/gateway|demo\/demo|console\/server)\.ts$/.test(f))).toEqual(
        [],
      );
    }
    expect(sourcesOf("usage.cjs").filter((f) => commandModules.test(f))).toEqual([]);
    expect(readFileSync(join(dist, "cli", "main.cjs"), "utf8")).toContain('"demo":"cli.js"');
    expect(graph("cli/cli.js").packages.size).toBe(0);
  });

  it("what ships: `run` loads gateway.cjs and, by its first list, no package but SQLite's and ulid; a usage error loads none; other commands never load gateway.cjs", async () => {
    assertBuilt();
    const dir = tempDir("portcullis-requires-");
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const preload = join(REPO, "test", "catalog", "children", "logRequires.cjs");
    /** The CommonJS files a command loaded, as paths, and the packages among them. */
    const loaded = (log: string) => {
      const files = existsSync(log) ? completeLines(readFileSync(log, "utf8")).filter(Boolean) : [];
      const packages = new Set(
        files.flatMap((f) => {
          const m = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(f);
          return m ? [m[1]!] : [];
        }),
      );
      return { files, packages: [...packages].sort() };
    };
    const env = (log: string) => hostEnv({ NODE_OPTIONS: `--require ${preload}`, REQUIRE_LOG: log });
    const gateway = join(REPO, "dist", "cli", "gateway.cjs");

    const usageLog = join(dir, "usage.log");
    const usage = spawnSync(NODE, [CLI, "run", "--no-such-flag", "--", NODE, "server.js"], {
      env: env(usageLog),
      encoding: "utf8",
    });
    expect(usage.status).toBe(2);
    expect(loaded(usageLog).files).toContain(gateway);
    expect(loaded(usageLog).packages).toEqual([]);

    const runLog = join(dir, "run.log");
    const session = await startGateway({
      args: ["--approval", "none", "--", NODE, FIXTURES.echo],
      env: { NODE_OPTIONS: `--require ${preload}`, REQUIRE_LOG: runLog },
    });
    cleanup.push(() => session.close());
    expect((await session.client.listTools()).tools.length).toBeGreaterThan(0);
    expect(loaded(runLog).files).toContain(gateway);
    // better-sqlite3 finds its addon through these two
    expect(loaded(runLog).packages).toEqual(["better-sqlite3", "bindings", "file-uri-to-path", "ulid"]);

    const statusLog = join(dir, "status.log");
    const status = spawnSync(NODE, [CLI, "status", "--json", "--state-dir", session.stateDir!], {
      env: hostEnv({ NODE_OPTIONS: `--require ${preload}`, REQUIRE_LOG: statusLog }),
      encoding: "utf8",
    });
    expect(status.status).toBe(0);
    expect(loaded(statusLog).packages).toContain("better-sqlite3"); // the log works for it too
    expect(loaded(statusLog).files).not.toContain(gateway);
    // the files of dist/cli a command loaded besides main.cjs, the entry every command starts from
    const commandFiles = (log: string) =>
      loaded(log)
        .files.filter((f) => f.startsWith(join(REPO, "dist", "cli")))
        .map((f) => relative(join(REPO, "dist", "cli"), f))
        .filter((f) => f !== "main.cjs");
    expect(commandFiles(statusLog)).toEqual(["status.cjs"]);

    // a command's --help through `help`, and --version, from the files named
    const helpLog = join(dir, "help.log");
    const help = spawnSync(NODE, [CLI, "help", "approve"], { env: env(helpLog), encoding: "utf8" });
    expect(help.status).toBe(0);
    expect(help.stdout).toContain("usage: portcullis approve");
    expect(commandFiles(helpLog)).toEqual(["approvals.cjs"]);
    const versionLog = join(dir, "version.log");
    const version = spawnSync(NODE, [CLI, "--version"], { env: env(versionLog), encoding: "utf8" });
    expect(version.stdout).toMatch(/^portcullis \d+\.\d+\.\d+/);
    expect(commandFiles(versionLog)).toEqual(["usage.cjs"]);
    expect(loaded(versionLog).packages).toEqual([]);
    // the WebAuthn library (and its ASN.1 code) only for a ceremony, not to list the passkeys
    const passkeyLog = join(dir, "passkey.log");
    const passkeys = spawnSync(NODE, [CLI, "passkey", "list", "--state-dir", session.stateDir!], {
      env: env(passkeyLog),
      encoding: "utf8",
    });
    expect(passkeys.status, passkeys.stderr).toBe(0);
    expect(commandFiles(passkeyLog)).toEqual(["passkey.cjs"]);
    expect(loaded(passkeyLog).packages).toContain("better-sqlite3");
    expect(loaded(passkeyLog).packages.filter((p) => p.startsWith("@simplewebauthn/"))).toEqual([]);
  });
});
