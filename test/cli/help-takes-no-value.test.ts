// `--help=x` is refused naming --help, as `--json=x` is refused naming --json. node names an option
// with a short alias as '-h, --help', which the refusal took for a word that does not read as an
// option: "an option (not shown: … may be a secret …) takes no value". Real CLI processes.
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

describe("--help given a value", () => {
  it("is refused naming --help, as any other flag given a value is", async () => {
    const stateDir = newStateDir();
    for (const [args, said] of [
      [["status", "--help=x"], "portcullis status: --help takes no value.\n"],
      [["vault", "list", "--help=1"], "portcullis vault list: --help takes no value.\n"],
      [["status", "--json=x"], "portcullis status: --json takes no value.\n"],
    ] as const) {
      const r = await runCli([...args], { stateDir });
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr, args.join(" ")).toBe(said);
    }
  });
});
