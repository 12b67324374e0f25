// doctor reported a credential written in clear in a host file's "headers", and its advice sends
// the user to portcullis.json; a portcullis.json server reached by "url" with
// "Authorization": "Bearer …" written out (rather than {"secret", "format"} from the vault) was
// passed over: doctor said nothing, exit 0. Now it is a problem naming the file and the key, with
// the vault form to write in its place; the value is never printed, and a header whose name says
// no credential, or one taken from the vault, is no finding. The real CLI.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

it("a url server's header holding a credential in portcullis.json: a problem naming the key, never the value", async () => {
  const VALUE = "tok-3b9f0c2e77d1";
  const dir = tempDir("portcullis-cfg-");
  const file = join(dir, "portcullis.json");
  const headers = {
    Authorization: `Bearer ${VALUE}`,
    "X-Team": "blue",
    "X-Api-Key": { secret: "remote-key", format: "{}" },
  };
  writeFileSync(
    file,
    JSON.stringify({ servers: { remote: { url: "https://mcp.example.com/mcp", headers } } }),
  );
  const stateDir = newStateDir();
  const doctor = await runCli(["doctor", "--json"], { stateDir, cwd: dir, env: { HOME: dir } });
  expect(doctor.code).toBe(1);
  const problems = (
    JSON.parse(doctor.stdout) as { findings: { ok: boolean; what: string; next: string }[] }
  ).findings.filter((f) => !f.ok && f.what.startsWith(file));
  expect(problems).toEqual([
    {
      ok: false,
      what: `${file}: servers.remote.headers.Authorization holds a credential written in clear: every process of this user can read it there`,
      next: `store the value in the vault ('portcullis vault set NAME --deliver http --host mcp.example.com --state-dir ${stateDir}'), then write {"secret":"NAME","format":"Bearer {}"} in its place; the value has been in a file, so rotate it`,
    },
  ]);
  expect(doctor.stdout + doctor.stderr).not.toContain(VALUE);
  const text = await runCli(["doctor"], { stateDir, cwd: dir, env: { HOME: dir } });
  expect(text.stdout).toContain("servers.remote.headers.Authorization holds a credential written in clear");
  expect(text.stdout + text.stderr).not.toContain(VALUE);
});
