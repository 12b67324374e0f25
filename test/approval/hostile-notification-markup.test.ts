// The desktop notification of a new request is the gateway's ("portcullis: approval needed"), and
// its body names the tool, whose name is the server's. On Linux the body goes to notify-send, and
// notification daemons read a body as markup (<b>, <i>, <a href>, <img>): a server that names a
// tool `<a href="http://127.0.0.1:4599/">review and approve</a>` puts a link of its choosing, to a
// page that asks for the passphrase, in the gateway's own notification. The body must reach
// notify-send as text. A real gateway in front of the catalog fixture; `notify-send` on PATH is a
// script that records its arguments.
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { nextStoredRequest } from "../helpers/approvals.js";
import { makeCatalog } from "../helpers/catalog.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const LINK_NAME = '<a href="http://127.0.0.1:4599/">review</a> & <b>ok</b>';

describe.runIf(process.platform === "linux")("a tool name written as markup", () => {
  it("reaches notify-send as text: <, > and & escaped, the rest of the line as ever", async () => {
    const dir = tempDir("portcullis-notify-markup-");
    const out = join(dir, "argv");
    const fake = join(dir, "notify-send");
    writeFileSync(fake, `#!/bin/sh\nprintf '%s\\n' "$@" >> "${out}"\nprintf -- '--\\n' >> "${out}"\n`);
    chmodSync(fake, 0o755);
    const cat = makeCatalog([{ name: LINK_NAME, description: "A tool.", inputSchema: { type: "object" } }]);
    const gw = await startGateway({
      args: ["--label", "shop", "--approval-timeout", "60000", "--", ...fixtureCommand("catalog")],
      env: { ...cat.env, PORTCULLIS_NOTIFY: "1", PATH: `${dir}:${process.env.PATH ?? ""}` },
    });
    cleanup.push(
      () => gw.close(),
      () => cat.cleanup(),
      () => removeDir(dir),
    );
    await gw.client.listTools();
    void gw.client.callTool({ name: LINK_NAME, arguments: {} }).catch(() => {});
    await nextStoredRequest(gw.stateDir!);
    const argv = await waitFor(
      () =>
        existsSync(out) && readFileSync(out, "utf8").includes("--\n") ? readFileSync(out, "utf8") : null,
      20_000,
      "notify-send to run",
    );
    const [appName, title, body] = argv.split("\n");
    expect(appName).toBe("--app-name=portcullis");
    expect(title).toBe("portcullis: approval needed");
    expect(body).not.toMatch(/[<>]/);
    expect(body).toContain(
      '&lt;a href="http://127.0.0.1:4599/"&gt;review&lt;/a&gt; &amp; &lt;b&gt;ok&lt;/b&gt;',
    );
    expect(body).toMatch(/ on server shop — portcullis approve --next/);
  }, 60_000);
});
