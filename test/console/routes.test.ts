// The route table's door for other modules (passkeys): a route added with `extraRoutes` gets the
// same Host, session, Origin and CSRF checks as the console's own, JSON bodies included.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningConsole, startConsole } from "../../src/console/server.js";
import { removeDir } from "../helpers/files.js";
import { newStateDir } from "../helpers/state.js";
import { httpLogin, raw } from "./helpers.js";

let stateDir: string;
let c: RunningConsole;

beforeAll(async () => {
  stateDir = newStateDir();
  c = await startConsole({
    stateDir,
    log: { info: () => {}, warn: () => {} },
    extraRoutes: [
      {
        method: "POST",
        path: /^\/passkey\/echo$/,
        session: true,
        body: "json",
        handle: ({ res, json }) => {
          res.setHeader("Content-Type", "application/json");
          res.end(JSON.stringify({ got: json }));
        },
      },
    ],
  });
});
afterAll(async () => {
  await c?.close();
  removeDir(stateDir);
});

function postJson(body: string, headers: Record<string, string>) {
  return raw(`${c.url}/passkey/echo`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Origin: c.url, ...headers },
    body,
  });
}

describe("extra routes", () => {
  it("a JSON route needs the session, the console's Origin and the X-CSRF-Token header", async () => {
    const s = await httpLogin(c.url);
    const other = await httpLogin(c.url);
    const body = JSON.stringify({ challenge: "x" });
    expect((await postJson(body, {})).status).toBe(403);
    expect((await postJson(body, { Cookie: s.cookie })).status).toBe(403);
    expect((await postJson(body, { Cookie: s.cookie, "X-CSRF-Token": other.csrf })).status).toBe(403);
    expect(
      (await postJson(body, { Cookie: s.cookie, "X-CSRF-Token": s.csrf, Origin: "http://evil.test" })).status,
    ).toBe(403);
    expect((await postJson("{", { Cookie: s.cookie, "X-CSRF-Token": s.csrf })).status).toBe(400);
    const form = await raw(`${c.url}/passkey/echo`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", Origin: c.url, Cookie: s.cookie },
      body: `csrf=${s.csrf}`,
    });
    expect(form.status).toBe(415);
    const ok = await postJson(body, { Cookie: s.cookie, "X-CSRF-Token": s.csrf });
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body)).toEqual({ got: { challenge: "x" } });
  });
});
