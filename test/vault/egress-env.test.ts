// What a server's environment gets for HTTP delivery (src/vault/egress/env.ts), on real files:
// the user's own CA settings are kept inside the bundles, the local CA added; NO_PROXY keeps the
// user's entries except those that would send a declared host around the proxy; NODE_OPTIONS is
// appended to, never replaced.
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { egressEnv } from "../../src/vault/egress/env.js";
import { tempDir } from "../helpers/files.js";
import { NODE, REPO } from "../helpers/paths.js";

const LOCAL_CA = "-----BEGIN CERTIFICATE-----\nlocal\n-----END CERTIFICATE-----\n";
const USER_CA = "-----BEGIN CERTIFICATE-----\nuser\n-----END CERTIFICATE-----";

describe("egressEnv", () => {
  it("keeps the user's CA settings in the bundles, adds the local CA, appends the preload", () => {
    const dir = tempDir("portcullis-egress-env-");
    const userCa = join(dir, "user.pem");
    writeFileSync(userCa, USER_CA);
    const { env, cleanup } = egressEnv({
      base: {
        NODE_EXTRA_CA_CERTS: userCa,
        SSL_CERT_FILE: userCa,
        NODE_OPTIONS: "--max-old-space-size=512",
        NO_PROXY: "internal.example,.inventory.example,localhost:8080",
      },
      proxyUrl: "http://127.0.0.1:9999",
      caPem: LOCAL_CA,
      dir: join(dir, "bundles"),
      declaredHosts: ["api.inventory.example:443"],
    });
    for (const k of ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"])
      expect(env[k]).toBe("http://127.0.0.1:9999");
    expect(readFileSync(env.NODE_EXTRA_CA_CERTS!, "utf8")).toBe(`${USER_CA}\n${LOCAL_CA}`);
    expect(readFileSync(env.SSL_CERT_FILE!, "utf8")).toBe(`${USER_CA}\n${LOCAL_CA}`);
    expect(env.REQUESTS_CA_BUNDLE).toBe(env.SSL_CERT_FILE);
    // .inventory.example would send the declared host around the proxy: dropped; the others kept
    expect(env.NO_PROXY).toBe("internal.example,localhost:8080");
    expect(env.no_proxy).toBe(env.NO_PROXY);
    expect(env.NODE_OPTIONS).toMatch(
      /^--max-old-space-size=512 --import=file:\/\/.*\/vault\/egress\/preload\.js$/,
    );
    cleanup();
  });

  it("without the user's settings: the system bundle plus the local CA; without a local CA: proxy variables only", () => {
    const dir = tempDir("portcullis-egress-env-");
    const withCa = egressEnv({
      base: {},
      proxyUrl: "http://127.0.0.1:1",
      caPem: LOCAL_CA,
      dir,
      declaredHosts: [],
    });
    const system = (() => {
      try {
        return readFileSync("/etc/ssl/certs/ca-certificates.crt", "utf8");
      } catch {
        return "";
      }
    })();
    expect(readFileSync(withCa.env.SSL_CERT_FILE!, "utf8").endsWith(LOCAL_CA)).toBe(true);
    if (system) expect(readFileSync(withCa.env.SSL_CERT_FILE!, "utf8").length).toBeGreaterThan(system.length);
    expect(readFileSync(withCa.env.NODE_EXTRA_CA_CERTS!, "utf8")).toBe(LOCAL_CA);
    const none = egressEnv({
      base: { NO_PROXY: "*" },
      proxyUrl: "http://127.0.0.1:1",
      caPem: null,
      dir,
      declaredHosts: ["a.example"],
    });
    expect(none.env.NODE_EXTRA_CA_CERTS).toBeUndefined();
    expect(none.env.SSL_CERT_FILE).toBeUndefined();
    expect(none.env.NO_PROXY).toBe(""); // "*" would bypass the proxy for the declared host too
  });
});

describe("the Node preload", () => {
  it("never breaks a server: a proxy variable that is not a URL leaves the process running as before", () => {
    const preload = pathToFileURL(join(REPO, "dist", "vault", "egress", "preload.js")).href;
    for (const proxy of ["::not a url::", "http://127.0.0.1:1"]) {
      const r = spawnSync(
        NODE,
        ["-e", "console.log(typeof fetch, require('node:https').globalAgent ? 'ok' : 'none')"],
        {
          env: { PATH: process.env.PATH ?? "", HTTPS_PROXY: proxy, NODE_OPTIONS: `--import=${preload}` },
          encoding: "utf8",
        },
      );
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout.trim()).toBe("function ok");
      expect(r.stderr).toBe(""); // not even undici's "experimental" warning
    }
  });
});
