// NODE_EXTRA_CA_CERTS in a server's environment names the certificates the egress proxy trusts
// for its upstreams, and the gateway reads that file before the server starts. A FIFO there
// blocked the gateway's event loop for ever (nothing served, no word said), and /dev/zero grew it
// past 2 GB: now a FIFO, a device or a file far larger than a bundle is not read, with a warning
// naming the variable, and the gateway goes on. Real CLI processes.
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { egressEnv } from "../../src/vault/egress/env.js";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { NODE } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

/** the largest bundle read (docs/security.md): the system's is some 220 KB */
const MAX_CA_BUNDLE_BYTES = 16 * 1024 * 1024;

function fifo(): string {
  const path = join(tempDir("portcullis-ca-fifo-"), "ca.pem");
  const made = spawnSync("mkfifo", [path]);
  if (made.status !== 0) throw new Error(`mkfifo failed: ${made.stderr}`);
  return path;
}

function hugeFile(): string {
  const path = join(tempDir("portcullis-ca-huge-"), "ca.pem");
  writeFileSync(path, "");
  truncateSync(path, MAX_CA_BUNDLE_BYTES + 1); // sparse: no disk used
  return path;
}

/** A gateway for a server with an egress proxy whose environment names `ca`; stdin closed at once. */
async function gatewayWith(ca: string) {
  const dir = tempDir("portcullis-ca-project-");
  writeFileSync(
    join(dir, "portcullis.json"),
    JSON.stringify({
      servers: {
        ca: {
          command: NODE,
          args: ["-e", "setInterval(() => {}, 1000)"],
          egress: "record",
          env: { NODE_EXTRA_CA_CERTS: ca },
        },
      },
    }),
  );
  // a hang is the failure this guards against: the timeout only ends the test
  return runCli(["run", "ca"], { stateDir: newStateDir(), cwd: dir, timeoutMs: 20_000 });
}

describe("NODE_EXTRA_CA_CERTS that names no certificate bundle", () => {
  it("a FIFO, /dev/zero, a huge file: not read, a warning names the variable, the gateway serves and ends", async () => {
    const cases: [string, string][] = [
      [fifo(), "it is not a regular file (a FIFO, socket or device)"],
      ["/dev/zero", "it is not a regular file (a FIFO, socket or device)"],
      [hugeFile(), `it is ${MAX_CA_BUNDLE_BYTES + 1} bytes, far more than a certificate bundle`],
    ];
    for (const [ca, why] of cases) {
      const r = await gatewayWith(ca);
      expect(r.stderr).toContain(
        `portcullis[ca]: warning: NODE_EXTRA_CA_CERTS (${ca}) is not used: ${why}; upstreams are verified against Node's roots only\n`,
      );
      expect(r.stderr).toContain("portcullis[ca]: egress proxy on http://127.0.0.1:");
      expect(r.stderr).not.toMatch(/ {4}at |internal error/);
      expect(r.code, r.stderr).toBe(0);
    }
  });

  it("the server's bundles: a FIFO named by SSL_CERT_FILE or REQUESTS_CA_BUNDLE is not read, and said", () => {
    const dir = tempDir("portcullis-ca-env-");
    const pipe = fifo();
    const said: string[] = [];
    const local = "-----BEGIN CERTIFICATE-----\nlocal\n-----END CERTIFICATE-----\n";
    mkdirSync(join(dir, "bundles"));
    const { env } = egressEnv({
      base: { SSL_CERT_FILE: pipe, REQUESTS_CA_BUNDLE: pipe, NODE_EXTRA_CA_CERTS: "/dev/zero" },
      proxyUrl: "http://127.0.0.1:1",
      caPem: local,
      dir: join(dir, "bundles"),
      declaredHosts: [],
      warn: (line) => said.push(line),
    });
    const notFile = "is not used: it is not a regular file (a FIFO, socket or device)";
    expect(said).toEqual([
      `NODE_EXTRA_CA_CERTS (/dev/zero) ${notFile}`,
      `SSL_CERT_FILE (${pipe}) ${notFile}`,
      `REQUESTS_CA_BUNDLE (${pipe}) ${notFile}`,
    ]);
    expect(readFileSync(env.NODE_EXTRA_CA_CERTS!, "utf8")).toBe(local);
    expect(readFileSync(env.REQUESTS_CA_BUNDLE!, "utf8").endsWith(local)).toBe(true);
  });
});
