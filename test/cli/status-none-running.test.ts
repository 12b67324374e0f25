// `status` with no gateway running says where the ones that ran are, when any did: a human who
// reads only "no gateway is running" after a session is not told that `--all` keeps their epochs,
// status lines and exits. The command carries the state directory, so it pastes as it is.
import { describe, expect, it } from "vitest";
import { removeDir } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

describe("status with no gateway running", () => {
  it("is bare on a state directory where none ran, and names status --all (with the directory) once one has, whose line gives the start and end", async () => {
    const stateDir = newStateDir();
    try {
      const fresh = await runCli(["status"], { stateDir });
      expect(fresh.code, fresh.stderr).toBe(0);
      expect(fresh.stdout).toBe("no gateway is running\n");

      const gw = await startGateway({
        args: ["--label", "once", "--approval", "none", "--", ...fixtureCommand("echo")],
        stateDir,
      });
      await gw.client.listTools();
      await gw.close();

      const after = await runCli(["status"], { stateDir });
      expect(after.code, after.stderr).toBe(0);
      expect(after.stdout).toBe(
        `no gateway is running (1 has run here: 'portcullis status --all --state-dir ${stateDir}' lists it)\n`,
      );
      const all = await runCli(["status", "--all"], { stateDir });
      expect(all.stdout).toMatch(/^once {2}ended {2}gateway pid \d+/);
      // an ended gateway's times are its start and its end: "ended … since START" read as ended since then
      const [row] = (
        JSON.parse((await runCli(["status", "--all", "--json"], { stateDir })).stdout) as {
          gateways: { startedAt: string; endedAt: string }[];
        }
      ).gateways;
      expect(all.stdout.split("\n")[0]).toMatch(
        new RegExp(`^once {2}ended {2}gateway pid \\d+ {2}started ${row!.startedAt}, ended ${row!.endedAt}$`),
      );
      // --json is unchanged: the running gateways, none
      const json = await runCli(["status", "--json"], { stateDir });
      expect(JSON.parse(json.stdout)).toMatchObject({ gateways: [] });
    } finally {
      removeDir(stateDir);
    }
  });
});
