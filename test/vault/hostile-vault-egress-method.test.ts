// HOSTILE SERVER: a value the server holds (here env-delivered; an HTTP value a declared host
// echoed back is the same) must not be written by the gateway into the egress record through the
// parts of a request inside a tunnel to a declared host that the proxy records as the server
// wrote them. Both were, in clear, before they went through the host's scrubbing:
// the request METHOD (index table egress_destinations, plain text in the state directory, and
// `portcullis egress --json`, no passphrase needed), and a placeholder NAMED after the value
// (`portcullis-placeholder:<value>`), recorded as a "withheld" scope in the `egress` audit event.
// docs/security.md: "No value is written down … never found in every byte of the state
// directory … audit export …"; "A host named after a value is recorded redacted" (the host is;
// the method and the withheld names now are too).
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { NODE, REPO } from "../helpers/paths.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { egressKit } from "./egress-kit.js";
import { everyFile } from "./helpers.js";

const hostile = { command: NODE, args: [join(REPO, "test", "fixtures", "servers", "hostile-vault.mjs")] };
const VALUE = "EnvMethodValue-4k9ZqT7w";

async function setup(k: ReturnType<typeof egressKit>) {
  const { plain, hosts } = await k.upstreams();
  const stateDir = newStateDir();
  const dir = k.project(hostile, hosts, {
    credentials: {
      API_KEY: { secret: "inventory-api", deliver: "http", hosts },
      ENV_KEY: { secret: "env-token", deliver: "env" },
    },
    approval: { default: "none" },
  });
  await k.storeHttpSecret(stateDir, ...hosts);
  const set = await runCli(["vault", "set", "env-token", "--from-stdin", "--deliver", "env"], {
    stateDir,
    env: passphraseEnv(),
    input: VALUE,
  });
  expect(set.code, set.stderr).toBe(0);
  await k.unlock(stateDir);
  const gw = await k.gateway(dir, stateDir);
  return { gw, stateDir, port: plain.port };
}

describe("hostile server: a value written into the egress record by the server's own request", () => {
  const k = egressKit();
  afterEach(() => k.cleanupAll());

  it("a request METHOD named after the value is recorded redacted (index table, egress --json, state dir)", async () => {
    const { gw, stateDir, port } = await setup(k);
    const r = await gw.client.callTool({ name: "raw_tunnel", arguments: { port, method: "$VALUE" } });
    // the client's result is scrubbed (the server's words), that part holds
    expect(JSON.stringify(r)).not.toContain(VALUE);
    const shown = await waitFor(
      async () => {
        const e = await runCli(["egress", "api", "--json"], { stateDir });
        expect(e.code, e.stderr).toBe(0);
        return e.stdout.includes(`${port}`) ? e.stdout : null;
      },
      10_000,
      "the request recorded",
    );
    await gw.close();
    const exported = await runCli(["audit", "export"], { stateDir });
    const leaks: string[] = [];
    if (shown.includes(VALUE)) leaks.push("portcullis egress --json");
    if (exported.stdout.includes(VALUE)) leaks.push("audit export");
    for (const f of everyFile(stateDir)) if (f.text.includes(VALUE)) leaks.push(f.path);
    expect(leaks).toEqual([]);
  });

  it("a placeholder NAMED after the value is recorded redacted as a withheld scope name in the egress audit event", async () => {
    const { gw, stateDir, port } = await setup(k);
    await gw.client.callTool({
      name: "raw_tunnel",
      arguments: { port, header: "portcullis-placeholder:$VALUE" },
    });
    await waitFor(
      async () => {
        const e = await runCli(["egress", "api", "--json"], { stateDir });
        return e.stdout.includes(`${port}`) ? true : null;
      },
      10_000,
      "the request recorded",
    );
    await gw.close();
    // the audit, read with the passphrase as a person reviewing it would: every record, decrypted
    const head = await runCli(["audit", "checkpoint"], { stateDir });
    const seq = (JSON.parse(head.stdout) as { seq: number }).seq;
    expect(seq).toBeGreaterThan(0);
    const leaks: string[] = [];
    const egress: string[] = [];
    for (let i = 1; i <= seq; i++) {
      const o = await runCli(["audit", "show", String(i), "--json"], { stateDir, env: passphraseEnv() });
      if (o.stdout.includes('"egress"')) egress.push(o.stdout);
      if (o.stdout.includes(VALUE)) leaks.push(`audit show ${i}: ${o.stdout.slice(0, 400)}`);
    }
    expect(egress.length).toBeGreaterThan(0);
    expect(leaks).toEqual([]);
  });
});
