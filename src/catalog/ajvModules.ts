/**
 * ajv, its 2020-12 flavour and its formats, loaded together. They are CommonJS spread over 94
 * files (their dependencies included), which node loads one by one: about 40 ms of a gateway's
 * main thread and 60 ms of CPU on the machines we measure. The build (scripts/bundle.mjs)
 * bundles the three into one file beside the command line's chunks, `validatorEngine.cjs`, which
 * loads in about 15 ms; the packages themselves, at the versions the lockfile pins, are what it
 * is made of. Run from the sources (the tests) or from tsc's module-by-module output, there is no
 * such file beside this module, and the packages are loaded as they are.
 */
import { createRequire } from "node:module";
import type { Ajv, Format, Options } from "ajv";
import type { Ajv2020 } from "ajv/dist/2020.js";
import type { CodeTemplates } from "./hashedKeywords.js";
import type { Dialect, ShippedMeta } from "./metaCheck.js";

export type FormatsPlugin = ((ajv: Ajv | Ajv2020) => unknown) & { get(name: string): Format };

export interface AjvModules {
  Ajv: new (opts: Options) => Ajv;
  Ajv2020: new (opts: Options) => Ajv2020;
  addFormats: FormatsPlugin;
  codegen: CodeTemplates;
  /** ajv's version (its package.json's) */
  version: string;
  /** the meta-schema checks the build generated (metaCheck.ts); none from the packages */
  meta: Partial<Record<Dialect, ShippedMeta>>;
  /** where they came from: "bundle" (validatorEngine.cjs) or "packages" */
  from: "bundle" | "packages";
}

/** What validatorEngine.cjs exports (scripts/bundle.mjs writes its entry). */
interface Exported {
  ajv: { Ajv: AjvModules["Ajv"] } & CodeTemplates;
  ajv2020: { Ajv2020: AjvModules["Ajv2020"] };
  formats: FormatsPlugin & { default?: FormatsPlugin };
  version: string;
  meta?: Partial<Record<Dialect, ShippedMeta>>;
}

export const ENGINE_FILE = "validatorEngine.cjs";

export function loadAjvModules(): AjvModules {
  const require = createRequire(import.meta.url);
  // Only the bundle's absence falls back. A bundle that is there and fails to load (its own error,
  // or a module it requires that is missing) is an error to see, not a reason to load other code:
  // hence the lookup first, rather than a guess from the error of a failed require (whose message
  // names the bundle also when the module missing is another one it requires).
  const bundle = bundlePath(require);
  const from: AjvModules["from"] = bundle === null ? "packages" : "bundle";
  const m: Exported =
    bundle !== null
      ? (require(bundle) as Exported)
      : {
          ajv: require("ajv") as Exported["ajv"],
          ajv2020: require("ajv/dist/2020.js") as Exported["ajv2020"],
          formats: require("ajv-formats") as Exported["formats"],
          version: (require("ajv/package.json") as { version: string }).version,
        };
  return {
    Ajv: m.ajv.Ajv,
    Ajv2020: m.ajv2020.Ajv2020,
    addFormats: m.formats.default ?? m.formats,
    codegen: { _: m.ajv._, str: m.ajv.str },
    version: m.version,
    meta: m.meta ?? {},
    from,
  };
}

/** The bundle beside this module, or null when there is none. */
function bundlePath(require: NodeJS.Require): string | null {
  try {
    return require.resolve(`./${ENGINE_FILE}`);
  } catch {
    return null;
  }
}
