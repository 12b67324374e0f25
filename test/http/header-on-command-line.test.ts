// `run --url --header 'Name: value'` puts the value on the gateway's command line: scrubbed from
// all the server says and redacted from every record, but `ps` (/proc/PID/cmdline) shows it to
// every user of the machine while the gateway runs. A header taken for a credential (by the rule a
// URL's query parameter is refused by: a secret-like name, a name ending in "key", or a value that
// looks generated) is served as given, with one warning on stderr naming the header and the
// --header-secret to use instead, never the value. A plain header (`X-Team: blue`) gets none.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readJsonLines, tempDir } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";
import { startFixture } from "./upstreamFixture.js";

const VALUE = "cmdline-value-7a6b5c4d3e2f";
const GENERATED = "9f8e7d6c5b4a39281706f5e4d3c2b1a0";
const WARNING =
  /warning: --header "([^"]+)" looks like a credential, and its value is on this gateway's command line/g;

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const warned = (stderr: string) => [...stderr.matchAll(WARNING)].map((m) => m[1]);

describe("a credential given with run --url --header", () => {
  it("is sent, and a warning names the header and --header-secret; the value is in the gateway's command line and nowhere in the warning", async () => {
    const log = join(tempDir("portcullis-hdr-"), "headers.jsonl");
    const server = await startFixture({ FIXTURE_HEADER: "Authorization", FIXTURE_HEADER_LOG: log }, null);
    cleanup.push(() => server.kill());
    const gw = await startGateway({
      args: ["--url", server.url, "--header", `Authorization: Bearer ${VALUE}`, "--approval", "none"],
      stateDir: newStateDir(),
    });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    // served as given: the documented way to send a fixed header still works
    const seen = readJsonLines<{ value: string | null }>(log);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((s) => s.value === `Bearer ${VALUE}`)).toBe(true);
    // what the warning says is so: any process that reads the gateway's command line has it
    const cmdline = readFileSync(`/proc/${gw.pid}/cmdline`, "utf8");
    expect(cmdline).toContain(VALUE);
    expect(warned(gw.stderr())).toEqual(["Authorization"]);
    expect(gw.stderr()).toContain("--header-secret 'Authorization=NAME'");
    expect(gw.stderr()).toContain(`portcullis vault set NAME --host 127.0.0.1:${server.port}`);
    expect(gw.stderr()).not.toContain(VALUE);
  });

  it("warns for a generated-looking value under a plain name, and not for a plain header", async () => {
    // nothing listens there: the flags are read, and said of, before the server is tried
    const url = "http://127.0.0.1:9/mcp";
    const r = await runCli([
      "run",
      "--state-dir",
      newStateDir(),
      "--url",
      url,
      "--header",
      "X-Team: blue",
      "--header",
      `X-Request-Source: ${GENERATED}`,
      "--header",
      "X-Region: eu-west-1",
    ]);
    expect(r.code).toBe(2);
    expect(warned(r.stderr)).toEqual(["X-Request-Source"]);
    expect(r.stderr).not.toContain(GENERATED);
  });
});
