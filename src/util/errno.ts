import { accessSync, constants, statSync } from "node:fs";
import { dirname, resolve } from "node:path";

/**
 * What a system error code means for a file or a port the user named, in words a user acts on;
 * the code stays as a suffix, for a search or a bug report. `cannot read X: ENOENT` asked the
 * user to know errno; `cannot read X: it does not exist (ENOENT)` does not.
 */
export function fileProblem(code: string | undefined): string {
  const words = FILE_WORDS[code ?? ""];
  if (words) return `${words} (${code})`;
  return code ? `system error ${code}` : "an unknown error";
}

const FILE_WORDS: Record<string, string> = {
  ENOENT: "it does not exist; check the path",
  ENOTDIR: "a part of its path is a file, not a directory; check the path",
  EACCES: "permission denied: this user may not open it; check its mode and owner",
  EPERM: "the operation is not permitted to this user; check its mode and owner",
  EISDIR: "it is a directory, not a file",
  ELOOP: "its path has a loop of symbolic links",
  ENAMETOOLONG: "its path is too long",
  EMFILE: "this process has too many files open; try again",
  ENFILE: "the system has too many files open; try again",
  EIO: "an input/output error: the disk or file system failed",
  EROFS: "the file system is read-only",
  ENOSPC: "the disk is full",
  EDQUOT: "the disk quota is used up",
  EEXIST: "a file is already there",
  ENXIO: "no device or process is behind it",
  EBADF: "it is not open for writing (a file opened only to read, or closed)",
  EFBIG: "it would grow larger than this file system allows",
};

/** The same for a host and port to listen on (`run --listen`). */
export function listenProblem(code: string | undefined): string {
  const words = LISTEN_WORDS[code ?? ""];
  if (words) return `${words} (${code})`;
  return code ? `system error ${code}` : "an unknown error";
}

const LISTEN_WORDS: Record<string, string> = {
  EADDRINUSE: "another program listens on that port; stop it or choose another port",
  EACCES:
    "this user may not listen on that port (ports below 1024 need privileges); choose a port from 1024 up",
  EADDRNOTAVAIL:
    "no network interface of this machine has that address; use 127.0.0.1 or one of its addresses",
  EAFNOSUPPORT: "this machine does not support that kind of address",
};

/**
 * Why a server reached by URL (`run --url`) could not be: the system's code in words, with the
 * code as a suffix, as for a file or a port (`getaddrinfo ENOTFOUND example.com` asked the user to
 * know what getaddrinfo is). Any other error (a certificate refused, a timeout) keeps its own
 * message, which says it in words already.
 */
export function reachProblem(e: unknown): string {
  const code = (e as NodeJS.ErrnoException | null)?.code;
  const words = REACH_WORDS[code ?? ""];
  if (words && code) return `${words} (${code})`;
  return e instanceof Error ? e.message : String(e);
}

const REACH_WORDS: Record<string, string> = {
  ENOTFOUND: "its host name does not resolve (no such name in DNS); check the URL",
  EAI_AGAIN:
    "its host name could not be resolved just now (DNS did not answer); check the network, then try again",
  ECONNREFUSED: "nothing listens at its host and port; start the server, or check the URL",
  ECONNRESET: "the connection was closed by the other side (the server, or a proxy or firewall on the way)",
  EHOSTUNREACH: "there is no route to its host; check the network or the URL",
  ENETUNREACH: "the network of its host cannot be reached from here; check the network or the URL",
  ETIMEDOUT: "its host did not answer the connection in time; check the network or the URL",
};

/**
 * The first directory on the way to `file`, from the root down, that this user may not enter (no
 * search permission), with its mode; null when every one lets it in. Opening a file is refused
 * (EACCES) as much for such a directory (another user's state directory, mode 0700) as for the
 * file's own mode, and the sentence must name the one that refuses.
 */
export function closedDirectory(file: string): { dir: string; mode: string } | null {
  const dirs: string[] = [];
  for (let d = dirname(resolve(file)); ; d = dirname(d)) {
    dirs.unshift(d);
    if (dirname(d) === d) break;
  }
  for (const dir of dirs) {
    try {
      accessSync(dir, constants.X_OK);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== "EACCES" && code !== "EPERM") return null;
      let mode = "unknown";
      try {
        mode = (statSync(dir).mode & 0o7777).toString(8).padStart(3, "0");
      } catch {
        // its parent let us in; a race with a chmod or a removal leaves the mode unsaid
      }
      return { dir, mode };
    }
  }
  return null;
}
