/** A file identified by its content. */
export interface FileDigest {
  /** Relative to the working directory when inside it, else absolute. */
  path: string;
  /** Hex SHA-256 of the file's bytes. */
  sha256: string;
}

/** One process of a running server, as seen from outside it. */
export interface ProcessFact {
  pid: number;
  ppid: number;
  /** Opaque, stable for the life of the process (Linux: /proc/PID/stat field 22; macOS: `ps` lstart). */
  startTime: string;
  exe: string | null;
  argv: string[];
  exeSha256: string | null;
  scripts: FileDigest[];
}

export interface LaunchSpec {
  serverLabel: string;
  command: string;
  args: string[];
  cwd: string;
  /** The environment given to the server. Values are digested, never stored. */
  env: Record<string, string>;
  configDigest: string;
  /** Globs relative to cwd, from config `identity.include`. */
  include?: string[];
}

export interface StaticIdentity {
  serverLabel: string;
  launchCommand: string[];
  executable: { path: string; sha256: string } | null;
  runtime: string | null;
  entry: FileDigest | null;
  wrappers: FileDigest[];
  lockfile: FileDigest | null;
  dependencyTree: { root: string; files: number; sha256: string } | null;
  identityInputs: { patterns: string[]; files: number; sha256: string } | null;
  workingDirectory: string;
  /** "sha256:…" over the sorted KEY=VALUE pairs of the server's environment. */
  envDigest: string;
  configDigest: string;
}

export interface ExecutionRecord extends StaticIdentity {
  epoch: string;
  /** "sha256:…" over the static identity and the processes' (exe, exeSha256, argv, scripts). */
  identityDigest: string;
  processes: ProcessFact[];
  processId: number;
  startedAt: string;
}
