// A relative XDG_STATE_HOME is ignored, as the XDG Base Directory specification asks ("must be
// absolute ... consider the path invalid and ignore it"): taken from the working directory, it
// gave each folder a command ran in a state directory of its own, so the `init` typed in one and
// the gateway a host started in another did not share a keyring.
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { passphraseEnv } from "../helpers/state.js";

describe("XDG_STATE_HOME", () => {
  it("relative: ignored, the state directory is ~/.local/state/portcullis whatever the working directory", async () => {
    const home = tempDir();
    const one = join(home, "one");
    const two = join(home, "two");
    mkdirSync(one);
    mkdirSync(two);
    const env = { ...passphraseEnv(), HOME: home, XDG_STATE_HOME: "xdg" };
    const fallback = join(home, ".local", "state", "portcullis");
    const made = await runCli(["init"], { env, cwd: one });
    expect(made.code, made.stderr).toBe(0);
    expect(existsSync(join(fallback, "keyring.json"))).toBe(true);
    expect(existsSync(join(one, "xdg"))).toBe(false);
    const doctor = await runCli(["doctor", "--json"], { env, cwd: two });
    const report = JSON.parse(doctor.stdout) as { stateDir: { path: string; why: string }; keyring: boolean };
    expect(report.stateDir).toMatchObject({ path: fallback, why: "default" });
    expect(report.keyring).toBe(true);
    // the default directory: the next steps printed carry no --state-dir
    const status = await runCli(["status"], { env, cwd: two });
    expect(status.code, status.stderr).toBe(0);
  });

  it("absolute: used as documented", async () => {
    const home = tempDir();
    const env = { HOME: home, XDG_STATE_HOME: join(home, "xdg") };
    const doctor = await runCli(["doctor", "--json"], { env, cwd: home });
    expect((JSON.parse(doctor.stdout) as { stateDir: { path: string } }).stateDir.path).toBe(
      join(home, "xdg", "portcullis"),
    );
  });
});
