// The passkey routes take the Host by value, as the rest of the console does (hostKey): a request
// with `Host: LOCALHOST:PORT` reached the passkey origin http://localhost:PORT (browsers write the
// host lowercased, so that is the origin in a ceremony's answer), and was refused with "passkeys
// work only at http://localhost:PORT" as if it were at 127.0.0.1. An address in any spelling is
// still not the passkey origin. A real console process over plain HTTP (Host set freely).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { removeDir } from "../helpers/files.js";
import { newStateDir, TEST_PASSPHRASE } from "../helpers/state.js";
import { httpLogin, type RunningConsole, raw, startConsoleProcess } from "./helpers.js";

let stateDir: string;
let console_: RunningConsole;
let port: string;

beforeAll(async () => {
  stateDir = newStateDir();
  console_ = await startConsoleProcess(stateDir);
  port = new URL(console_.url).port;
});

afterAll(async () => {
  await console_?.stop();
  removeDir(stateDir);
});

const WRONG_ORIGIN = "passkeys work only at http://localhost:";

describe("the passkey routes compare the Host by value", () => {
  it("LOCALHOST:PORT is the passkey origin: the registration options are given, the page is served; an address is not", async () => {
    const local = `http://localhost:${port}`;
    const session = await httpLogin(local);
    const options = (host: string) =>
      raw(`${local}/passkeys/options`, {
        method: "POST",
        headers: {
          Host: host,
          Origin: local,
          Cookie: session.cookie,
          "Content-Type": "application/json",
          "X-CSRF-Token": session.csrf,
        },
        body: JSON.stringify({ passphrase: TEST_PASSPHRASE }),
      });

    for (const host of [`LOCALHOST:${port}`, `LocalHost:${port}`, `localhost:${port}`]) {
      const r = await options(host);
      expect(r.body, host).not.toContain(WRONG_ORIGIN);
      expect(r.status, `${host}: ${r.body}`).toBe(200);
      expect((JSON.parse(r.body) as { options: { rp: { id: string } } }).options.rp.id).toBe("localhost");

      const page = await raw(`${local}/passkeys`, { headers: { Host: host, Cookie: session.cookie } });
      expect(page.status, `${host}: ${page.headers.location}`).toBe(200);
    }

    // an address, in whatever spelling, is refused (Origin its own, so only the passkey rule speaks)
    for (const host of [`127.0.0.1:${port}`, `[::ffff:7f00:1]:${port}`]) {
      const r = await raw(`${local}/passkeys/options`, {
        method: "POST",
        headers: {
          Host: host,
          Origin: new URL(`http://${host}`).origin,
          Cookie: session.cookie,
          "Content-Type": "application/json",
          "X-CSRF-Token": session.csrf,
        },
        body: JSON.stringify({ passphrase: TEST_PASSPHRASE }),
      });
      expect(r.status, `${host}: ${r.body}`).toBe(400);
      expect(r.body).toContain(`${WRONG_ORIGIN}${port}`);
    }
  });

  it("the login by passkey: LOCALHOST:PORT gets past the origin rule (409: no passkey is registered)", async () => {
    const local = `http://localhost:${port}`;
    const form = await raw(`${local}/login`);
    const token = /name="csrf" value="([^"]+)"/.exec(form.body)![1]!;
    const cookie = String(form.headers["set-cookie"]).split(";")[0]!;
    const r = await raw(`${local}/login/passkey/options`, {
      method: "POST",
      headers: {
        Host: `LOCALHOST:${port}`,
        Origin: local,
        Cookie: cookie,
        "Content-Type": "application/json",
        "X-CSRF-Token": token,
      },
      body: "{}",
    });
    expect(r.body).not.toContain(WRONG_ORIGIN);
    expect(r.status, r.body).toBe(409);
  });
});
