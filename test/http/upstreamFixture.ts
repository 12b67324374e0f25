// The HTTPS fixture server (test/fixtures/servers/http-fixture.mjs) as a test controls it:
// started on a port, restarted on the same port (a new process: its sessions are gone), killed
// mid-call, told to present a new certificate.
import { type ChildProcess, spawn } from "node:child_process";
import { createHash, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { exitWithOutput } from "../helpers/exitWithOutput.js";
import { tempDir } from "../helpers/files.js";
import { NODE, REPO } from "../helpers/paths.js";

const FIXTURE = join(REPO, "test", "fixtures", "servers", "http-fixture.mjs");
/** answers the handshake properly and tools/call badly on purpose (see the file's header) */
export const HOSTILE = join(REPO, "test", "fixtures", "servers", "http-hostile.mjs");
/** speaks only the older HTTP+SSE transport (2024-11-05), with the SDK's SSEServerTransport */
export const OLDER_SSE = join(REPO, "test", "fixtures", "servers", "http-sse.mjs");
const CERTS = join(REPO, "test", "fixtures", "servers", "http-certs.mjs");

/** A subject alternative name of a leaf certificate. */
export interface AltName {
  type: "ip" | "dns";
  value: string;
}

interface Ca {
  caFile: string;
  dir: string;
}

export interface Tls {
  ca: Ca;
  certFile: string;
  keyFile: string;
  /** a new leaf certificate (new key) in the same files; for `altNames` if given, else the fixture's */
  renew(altNames?: AltName[]): Promise<void>;
  /** "sha256:…" over the DER of leaf then CA: what the gateway must record */
  chainDigest(): string;
}

export async function makeTls(): Promise<Tls> {
  const { makeCa, makeLeaf } = (await import(CERTS)) as {
    makeCa(dir: string): Promise<Ca>;
    makeLeaf(ca: Ca, altNames?: AltName[]): Promise<{ certFile: string; keyFile: string }>;
  };
  const ca = await makeCa(tempDir("portcullis-tls-"));
  const leaf = await makeLeaf(ca);
  return {
    ca,
    ...leaf,
    renew: async (altNames) => {
      await makeLeaf(ca, altNames);
    },
    chainDigest: () => {
      const der = (f: string) => new X509Certificate(readFileSync(f)).raw;
      return `sha256:${createHash("sha256")
        .update(Buffer.concat([der(leaf.certFile), der(ca.caFile)]))
        .digest("hex")}`;
    },
  };
}

export interface FixtureServer {
  port: number;
  url: string;
  proc: ChildProcess;
  stderr(): string;
  /** kill (SIGKILL by default) and wait for the exit */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** a new process on the same port, with `env` over the first one's */
  restart(env?: Record<string, string>): Promise<FixtureServer>;
}

export async function startFixture(
  env: Record<string, string>,
  tls: Tls | null,
  port = 0,
  file = FIXTURE,
): Promise<FixtureServer> {
  const fullEnv: Record<string, string> = {
    PATH: process.env.PATH ?? "",
    FIXTURE_PORT: String(port),
    ...(tls ? { FIXTURE_CERT: tls.certFile, FIXTURE_KEY: tls.keyFile } : {}),
    ...env,
  };
  const proc = spawn(NODE, [file], { env: fullEnv, stdio: ["ignore", "pipe", "pipe"] });
  let err = "";
  proc.stderr!.setEncoding("utf8").on("data", (s: string) => {
    err += s;
  });
  const got = await new Promise<number>((resolve, reject) => {
    let out = "";
    proc.stdout!.setEncoding("utf8").on("data", (s: string) => {
      out += s;
      // up to its newline: a chunk can end inside the number ("listening 4" of "listening 43117")
      const m = /listening (\d+)\n/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    proc.once("exit", (code) => reject(new Error(`fixture exited (${code}) before listening:\n${err}`)));
  });
  // once its output was read to its end too: a test reads stderr() once it was closed
  const exited = exitWithOutput(proc).then(() => {});
  const server: FixtureServer = {
    port: got,
    url: `${tls ? "https" : "http"}://127.0.0.1:${got}/mcp`,
    proc,
    stderr: () => err,
    kill: async (signal = "SIGKILL") => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      await exited;
    },
    restart: async (more = {}) => {
      await server.kill();
      return startFixture({ ...env, ...more }, tls, got, file);
    },
  };
  return server;
}
