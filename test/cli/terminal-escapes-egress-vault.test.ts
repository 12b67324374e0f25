// Terminal-safe views (docs/security.md: "`egress` and `vault list` print ... server labels ... and
// hosts as text, with control characters written as `\uXXXX`; `--json` output decodes to the exact values, its C1 controls and bidi characters written as `\uXXXX` too").
// What those two commands show comes from:
//   egress:     egress_destinations rows (server label, epoch, host, port, scheme, method, scopes,
//               times), written by a gateway's egress proxy from what its server sent, or by any
//               process of the same user with SQL;
//   vault list: vault_secrets rows (name, hosts, times: `vault set` validates them, SQL does not),
//               the holder's answer, and the portcullis.json found from the working directory
//               (servers' credentials, headers, tools: a hostile repository's file).
// Each source is attacked: a hostile server's requests to its proxy (the proxy refuses hosts and
// methods that are not plain, which is asserted here, so they never reach the table), rows written
// by SQL, names refused by `vault set`, and a hostile portcullis.json. No view may then put a C0/C1
// control character or a bidi/format character on the terminal.

import { writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { vaultWith } from "../helpers/vaultState.js";
import { egressKit, nodeServer, proxyPort } from "../vault/egress-kit.js";

let cleanup: (() => Promise<void> | void)[] = [];
const k = egressKit();
afterEach(async () => {
  await k.cleanupAll();
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** C0 and C1 control characters other than the newline a view writes itself. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are the subject
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;
/** Bidi overrides and isolates, zero-width and other format characters, line separators. */
const HIDDEN = /[\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/;

/** Clears the screen and rewrites the title: what a view must never pass through. */
const CLEAR = "\u001b[2J\u001b[H";
const TITLE = "\u001b]0;approved\u0007";
const C1 = "\u009b2J";
const RLO = "\u202e";

function expectTerminalSafe(out: string, what: string): void {
  expect(out, what).not.toMatch(CONTROL);
  expect(out, what).not.toMatch(HIDDEN);
}

/** A connection to the store, as any process of the same user can open one. */
function sql(stateDir: string): Database.Database {
  const db = new Database(join(stateDir, "portcullis.db"));
  db.pragma("busy_timeout = 10000");
  cleanup.push(() => {
    db.close();
  });
  return db;
}

/** Writes `first` to the proxy; returns what it answered (until it closes, or 5 s). */
function exchange(port: number, first: string | Buffer): Promise<string> {
  return new Promise((resolve) => {
    const s = connect(port, "127.0.0.1");
    let out = "";
    const timer = setTimeout(() => s.destroy(), 5000);
    s.on("data", (d: Buffer) => {
      out += d.toString("latin1");
    });
    s.on("close", () => {
      clearTimeout(timer);
      resolve(out);
    });
    s.on("error", () => {});
    s.write(first);
  });
}

describe("portcullis egress", () => {
  it("a server's requests with hostile hosts and methods are refused by its proxy; what is recorded shows as text", async () => {
    const { plain, hosts } = await k.upstreams();
    const stateDir = newStateDir();
    const dir = k.project(nodeServer, hosts);
    await k.storeHttpSecret(stateDir, ...hosts);
    await k.unlock(stateDir);
    const gw = await k.gateway(dir, stateDir);
    const port = await proxyPort(gw);

    // hosts: the refusal holds for each (a 400 before anything is recorded or contacted). Node's
    // HTTP parser refuses a control or non-ASCII byte in the request line, and the WHATWG URL
    // parser a forbidden host code point, before the proxy's own host check (parseAuthority) is
    // reached: so what a server can make the proxy record is ASCII by construction.
    const hostile = [
      `CONNECT a${CLEAR}b.example:443 HTTP/1.1\r\nHost: x\r\n\r\n`,
      `CONNECT x${TITLE}.example:443 HTTP/1.1\r\nHost: x\r\n\r\n`,
      Buffer.concat([
        Buffer.from("CONNECT ex"),
        Buffer.from(RLO, "utf8"),
        Buffer.from("elpmaxe.com:443 HTTP/1.1\r\nHost: x\r\n\r\n"),
      ]),
      Buffer.concat([
        Buffer.from("CONNECT a"),
        Buffer.from([0xc2, 0x9b]),
        Buffer.from("2J.example:443 HTTP/1.1\r\n\r\n"),
      ]),
      `GET http://a%1b%5b2Jb.example/ HTTP/1.1\r\nHost: x\r\n\r\n`,
      Buffer.concat([
        Buffer.from("GET http://ex"),
        Buffer.from(RLO, "utf8"),
        Buffer.from("elpmaxe.com/ HTTP/1.1\r\nHost: x\r\n\r\n"),
      ]),
      // methods: a control character in the request line
      `G\u001b[2JT http://127.0.0.1:${plain.port}/m HTTP/1.1\r\nHost: 127.0.0.1:${plain.port}\r\n\r\n`,
      Buffer.concat([
        Buffer.from("GE"),
        Buffer.from(RLO, "utf8"),
        Buffer.from(`T http://127.0.0.1:${plain.port}/m HTTP/1.1\r\n\r\n`),
      ]),
    ];
    // (the 400's body, read by the server, may quote what it sent: the server's own words back)
    for (const request of hostile) {
      const answer = await exchange(port, request);
      expect(answer, JSON.stringify(request.toString())).toMatch(/^HTTP\/1\.1 400 /);
    }
    // a plain request with an unusual (token) method is served and recorded
    const ok = await exchange(
      port,
      `PROPFIND http://127.0.0.1:${plain.port}/ok HTTP/1.1\r\nHost: 127.0.0.1:${plain.port}\r\nConnection: close\r\n\r\n`,
    );
    expect(ok).toMatch(/^HTTP\/1\.1 /);
    await gw.close();
    const contacted = plain.received.map((r) => r.path);
    expect(contacted).not.toContain("/m");
    // the gateway's stderr (the host's terminal): C0 and C1 written as escapes
    expect(gw.stderr()).not.toMatch(CONTROL);

    const shown = await runCli(["egress"], { stateDir });
    expect(shown.code, shown.stderr).toBe(0);
    expectTerminalSafe(shown.stdout, "egress");
    expect(shown.stdout).toContain(`127.0.0.1:${plain.port}`);
    const json = JSON.parse((await runCli(["egress", "--json"], { stateDir })).stdout) as {
      epochs: { destinations: { host: string; method: string }[] }[];
    };
    for (const d of json.epochs.flatMap((e) => e.destinations)) {
      expect(`${d.host} ${d.method}`).not.toMatch(CONTROL);
      expect(`${d.host} ${d.method}`).not.toMatch(HIDDEN);
    }
  });

  it("rows a same-user process wrote into the store with SQL: every field shows escaped; --json is exact", async () => {
    const stateDir = newStateDir();
    const label = `lbl${CLEAR}`;
    const row = {
      server_label: label,
      epoch: `ep${TITLE}`,
      host: `h${C1}${RLO}ost.example`,
      port: 443,
      scheme: `https${CLEAR}`,
      method: `GET${RLO}`,
      requests: 2,
      released: 1,
      refused: 1,
      scopes_json: JSON.stringify([`scope${TITLE}`]),
      first_at: `2026-01-01T00:00:00Z${CLEAR}`,
      last_at: `2026-01-01T00:00:01Z${CLEAR}`,
    };
    const ipv6 = { ...row, host: `::1${CLEAR}`, method: "POST" };
    const db = sql(stateDir);
    const insert = db.prepare(
      `INSERT INTO egress_destinations VALUES (@server_label, @epoch, @host, @port, @scheme, @method,
       @requests, @released, @refused, @scopes_json, @first_at, @last_at)`,
    );
    insert.run(row);
    insert.run(ipv6);
    db.close();

    const shown = await runCli(["egress"], { stateDir });
    expect(shown.code, shown.stderr).toBe(0);
    expectTerminalSafe(shown.stdout, "egress");
    for (const escaped of [
      "lbl\\u001b[2J\\u001b[H",
      "ep\\u001b]0;approved\\u0007",
      "h\\u009b2J\\u202eost.example:443",
      "[::1\\u001b[2J\\u001b[H]:443",
      "scope\\u001b]0;approved\\u0007",
      "GET\\u202e",
    ])
      expect(shown.stdout).toContain(escaped);

    // --json: exact, the values as they are in the store once decoded; C1 controls and bidi
    // characters written as \u escapes (printableJson), as JSON.stringify does for C0 ones
    const json = await runCli(["egress", "--json"], { stateDir });
    expect(json.code, json.stderr).toBe(0);
    expectTerminalSafe(json.stdout, "egress --json");
    const epochs = (
      JSON.parse(json.stdout) as {
        epochs: {
          serverLabel: string;
          epoch: string;
          destinations: { host: string; method: string; scopes: string[] }[];
        }[];
      }
    ).epochs;
    expect(epochs[0]!.serverLabel).toBe(label);
    expect(epochs[0]!.epoch).toBe(row.epoch);
    expect(epochs[0]!.destinations.map((d) => d.host).sort()).toEqual([row.host, ipv6.host].sort());
    expect(epochs[0]!.destinations[0]!.scopes).toEqual([`scope${TITLE}`]);

    // a label argument that is not a label is refused without being repeated
    const named = await runCli(["egress", label], { stateDir });
    expect(named.code).toBe(2);
    expectTerminalSafe(named.stdout + named.stderr, "egress LABEL");
  });
});

describe("portcullis vault list", () => {
  it("vault set refuses a name or a host that is not plain, without echoing it raw", async () => {
    const stateDir = newStateDir();
    for (const args of [
      ["vault", "set", `api${CLEAR}`, "--from-stdin", "--deliver", "env"],
      ["vault", "set", `api${RLO}`, "--from-stdin", "--deliver", "env"],
      ["vault", "set", "api", "--from-stdin", "--host", `h${TITLE}.example`],
      ["vault", "set", "api", "--from-stdin", "--host", `ex${RLO}elpmaxe.com`],
    ]) {
      const r = await runCli(args, { stateDir, env: passphraseEnv(), input: "value-1f4e" });
      expect(r.code, `${JSON.stringify(args)}: ${r.stderr}`).toBe(2);
      expectTerminalSafe(r.stdout + r.stderr, JSON.stringify(args));
    }
    const list = await runCli(["vault", "list", "--json"], { stateDir });
    expect(JSON.parse(list.stdout).secrets).toEqual([]);
  });

  /** A vault_secrets row as a same-user process writes it with SQL: no `vault set` checked it. */
  function hostileRow(stateDir: string, name: string): void {
    const db = sql(stateDir);
    db.prepare(
      "INSERT INTO vault_secrets (name, sealed, bytes, deliver, hosts_json, created_at, rotated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
    ).run(
      name,
      Buffer.from("not sealed"),
      5,
      "http",
      JSON.stringify([`h${TITLE}.example`, `x${C1}`]),
      `2026-01-01${CLEAR}`,
      `2026-01-02${RLO}`,
    );
    db.close();
  }
  const NAME = `evil${CLEAR}${RLO}`;

  it("a secret row a same-user process wrote with SQL, the vault locked: name, hosts and times show escaped; --json exact", async () => {
    const stateDir = await vaultWith("api", "terminal-escapes-value-91c3", (c) => cleanup.push(c), false);
    hostileRow(stateDir, NAME);
    const cwd = tempDir("portcullis-vault-list-cwd-");
    const locked = await runCli(["vault", "list"], { stateDir, cwd });
    expect(locked.code, locked.stderr).toBe(0);
    expectTerminalSafe(locked.stdout, "vault list (locked) stdout");
    expectTerminalSafe(locked.stderr, "vault list (locked) stderr");
    expect(locked.stdout).toContain("evil\\u001b[2J\\u001b[H\\u202e");
    expect(locked.stdout).toContain("h\\u001b]0;approved\\u0007.example");
    const json = JSON.parse((await runCli(["vault", "list", "--json"], { stateDir, cwd })).stdout) as {
      secrets: { name: string; hosts: string[] }[];
    };
    expect(json.secrets.find((s) => s.name === NAME)).toMatchObject({
      hosts: [`h${TITLE}.example`, `x${C1}`],
    });
  });

  it("a secret row written with SQL while the vault is unlocked (the holder does not hold it): its warning shows the name escaped", async () => {
    const stateDir = await vaultWith("api", "terminal-escapes-value-91c3", (c) => cleanup.push(c));
    hostileRow(stateDir, NAME);
    const cwd = tempDir("portcullis-vault-list-cwd-");
    const unlocked = await runCli(["vault", "list"], { stateDir, cwd });
    expect(unlocked.code, unlocked.stderr).toBe(0);
    expect(unlocked.stdout).toMatch(/^vault unlocked until /);
    expect(unlocked.stdout).toContain("the running vault holder does not hold it");
    expectTerminalSafe(unlocked.stdout, "vault list (unlocked) stdout");
    expectTerminalSafe(unlocked.stderr, "vault list (unlocked) stderr");
    const json = JSON.parse((await runCli(["vault", "list", "--json"], { stateDir, cwd })).stdout) as {
      secrets: { name: string; held: boolean | null }[];
    };
    expect(json.secrets.find((s) => s.name === NAME)).toMatchObject({ held: false });
  });

  // Beyond the two views the promise lists: the next `unlock` reads that row and refuses it.
  it("unlock refusing such a row names it escaped", async () => {
    const stateDir = await vaultWith("api", "terminal-escapes-value-91c3", (c) => cleanup.push(c), false);
    hostileRow(stateDir, NAME);
    const unlock = await runCli(["unlock", "--for", "10m"], { stateDir, env: passphraseEnv() });
    expect(unlock.code).toBe(2);
    expect(unlock.stderr).toMatch(/^portcullis unlock: the stored secret /);
    expectTerminalSafe(unlock.stdout + unlock.stderr, "unlock");
  });

  it("a hostile portcullis.json in the working directory: its uses of a secret show escaped, or its refusal does", async () => {
    const stateDir = await vaultWith("api", "terminal-escapes-value-91c3", (c) => cleanup.push(c), false);
    const http = await runCli(["vault", "set", "web", "--from-stdin", "--host", "api.example"], {
      stateDir,
      env: passphraseEnv(),
      input: "terminal-escapes-value-7d21",
    });
    expect(http.code, http.stderr).toBe(0);
    const cases: Record<string, unknown>[] = [
      // accepted by the loader: tool names are the server's to choose
      {
        servers: {
          shop: {
            command: "true",
            credentials: {
              API_KEY: { secret: "api", deliver: "env" },
              WEB_KEY: { secret: "web", deliver: "http", hosts: ["other.example"] },
            },
            tools: {
              [`list${CLEAR}items`]: { credentials: ["api"] },
              [`a${RLO}b`]: { credentials: ["web"] },
            },
          },
        },
      },
      // refused by the loader (its refusal is then the warning vault list prints)
      {
        servers: {
          shop: { command: "true", credentials: { [`K${CLEAR}`]: { secret: "api", deliver: "env" } } },
        },
      },
      {
        servers: {
          shop: { command: "true", credentials: { API_KEY: { secret: `api${TITLE}`, deliver: "env" } } },
        },
      },
      {
        servers: {
          shop: {
            command: "true",
            credentials: {
              WEB_KEY: { secret: "web", deliver: "http", hosts: [`h${C1}.example`, `a${RLO}.example`] },
            },
          },
        },
      },
      {
        servers: {
          [`shop${CLEAR}`]: { command: "true", credentials: { API_KEY: { secret: "api", deliver: "env" } } },
        },
      },
      {
        servers: {
          remote: { url: "https://api.example/mcp", headers: { [`X-Key${CLEAR}`]: { secret: "web" } } },
        },
      },
    ];
    for (const [i, doc] of cases.entries()) {
      const cwd = tempDir("portcullis-vault-list-cfg-");
      writeFileSync(join(cwd, "portcullis.json"), JSON.stringify(doc));
      const r = await runCli(["vault", "list"], { stateDir, cwd });
      expect(r.code, `case ${i}: ${r.stderr}`).toBe(0);
      expectTerminalSafe(r.stdout, `case ${i} stdout`);
      expectTerminalSafe(r.stderr, `case ${i} stderr`);
      // the first loads: its tool names are shown, escaped
      if (i === 0) {
        expect(r.stderr).toBe("");
        expect(r.stdout).toContain("list\\u001b[2J\\u001b[Hitems");
        expect(r.stdout).toContain("a\\u202eb");
      } else expect(r.stderr).toMatch(/^portcullis vault list: warning: /);
    }
  });
});
