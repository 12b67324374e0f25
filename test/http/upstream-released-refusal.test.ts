// A refusal the gateway builds itself can quote what a peer chose. For a server reached by URL,
// server_unavailable's reason is why it cannot be reached now: node's error, and a TLS error
// quotes the names of the certificate the server presented. A hostile server that was given a
// header credential from the vault can present a certificate named after it; the agent must
// still never see the value. Real processes: the HTTPS fixture, the gateway, the SDK client.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir, waitFor } from "../helpers/files.js";
import { runCli, type Session, startGateway } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { storeSecret } from "../vault/helpers.js";
import { makeTls, startFixture } from "./upstreamFixture.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const text = (r: unknown) => (r as { content: { text: string }[] }).content[0]!.text;

/** Every 8-character piece of `value`: none of them may reach the agent either. */
function piecesOf(value: string): string[] {
  const out: string[] = [];
  for (let i = 0; i + 8 <= value.length; i++) out.push(value.slice(i, i + 8));
  return out;
}

/** The data of the server_unavailable a call gets, once the server cannot be reached. */
async function unavailable(gw: Session<Client>): Promise<{ error?: string; reason?: string }> {
  return waitFor(
    async () => {
      const e = (await gw.client.callTool({ name: "echo", arguments: { message: "y" } }).catch((x) => x)) as {
        data?: { error?: string; reason?: string };
      };
      return e?.data?.error === "server_unavailable" ? e.data : null;
    },
    30_000,
    "server_unavailable",
  );
}

describe("a refusal that quotes why a server reached by URL cannot be reached", () => {
  it("never carries a released header credential the server put in its certificate's names", async () => {
    // only characters a DNS name may hold, so the certificate carries it as it is
    const SECRET = "leakcert-7d41c9e2a6b3f085";
    const tls = await makeTls();
    const server = await startFixture({}, tls);
    cleanup.push(() => server.kill());
    // by name: node's check of a host name quotes the certificate's DNS names when none matches
    const url = `https://localhost:${server.port}/mcp`;
    const stateDir = newStateDir();
    cleanup.push(async () => {
      await runCli(["lock"], { stateDir });
    });
    await storeSecret(
      stateDir,
      "remote-mcp-token",
      SECRET,
      "--deliver",
      "http",
      "--host",
      `localhost:${server.port}`,
    );
    expect((await runCli(["unlock"], { stateDir, env: passphraseEnv() })).code).toBe(0);
    const dir = tempDir("portcullis-cfg-");
    writeFileSync(
      join(dir, "portcullis.json"),
      JSON.stringify({
        servers: {
          remote: {
            url,
            headers: { "X-Api-Key": { secret: "remote-mcp-token", format: "{}" } },
            approval: { default: "none" },
          },
        },
      }),
    );
    const gw = await startGateway({
      args: ["remote"],
      cwd: dir,
      stateDir,
      env: { NODE_EXTRA_CA_CERTS: tls.ca.caFile },
    });
    cleanup.push(() => gw.close());
    // a first good session: the value is released to the server with every request
    await gw.client.listTools();
    expect(text(await gw.client.callTool({ name: "echo", arguments: { message: "x" } }))).toBe("Echo: x");

    // the server now presents a certificate (signed by the CA the gateway trusts) named after it
    await tls.renew([{ type: "dns", value: SECRET }]);
    server.proc.kill("SIGUSR2"); // new certificate, every connection closed
    const refused = await unavailable(gw);
    // the reason is node's hostname mismatch, which names the certificate's altnames: the value's
    // place is kept, marked
    expect(refused.reason).toContain(`cannot reach ${url}`);
    expect(refused.reason).toContain("altnames");
    expect(refused.reason).toContain("[redacted:remote-mcp-token]");

    const seen = JSON.stringify(gw.received());
    expect(seen).toContain("server_unavailable");
    for (const piece of piecesOf(SECRET)) expect(seen).not.toContain(piece);
    // nor do people see it: the log quotes the same error
    const status = await runCli(["status", "--json", "--state-dir", stateDir]);
    for (const shown of [gw.stderr(), status.stdout]) expect(shown).not.toContain(SECRET);
  });

  it("never carries a fixed --header value either; a short plain one (X-Tenant: acme) is not taken for a credential", async () => {
    const VALUE = "fixedhdr-19c7e4a2b8d6";
    const tls = await makeTls();
    const server = await startFixture({}, tls);
    cleanup.push(() => server.kill());
    const url = `https://localhost:${server.port}/mcp`;
    const gw = await startGateway({
      args: [
        "--url",
        url,
        "--header",
        `X-Api-Key: ${VALUE}`,
        "--header",
        "X-Tenant: acme",
        "--approval",
        "none",
      ],
      env: { NODE_EXTRA_CA_CERTS: tls.ca.caFile },
    });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    // an answer that holds the short plain value keeps it
    expect(text(await gw.client.callTool({ name: "echo", arguments: { message: "acme" } }))).toBe(
      "Echo: acme",
    );
    // What the server says, its answers included: a hostile server that echoes the header it got.
    const echoed = text(await gw.client.callTool({ name: "echo", arguments: { message: `got ${VALUE}` } }));
    expect(echoed).toBe("Echo: got [redacted:header_X-Api-Key]");

    await tls.renew([{ type: "dns", value: VALUE }]);
    server.proc.kill("SIGUSR2");
    const refused = await unavailable(gw);
    expect(refused.reason).toContain("altnames");
    expect(refused.reason).toContain("[redacted:header_X-Api-Key]");
    const seen = JSON.stringify(gw.received());
    for (const piece of piecesOf(VALUE)) expect(seen).not.toContain(piece);
    expect(gw.stderr()).not.toContain(VALUE);
  });
});
