/**
 * The help of `portcullis vault`: what `vault --help` and each subcommand's `--help` print. A file
 * of its own because the command group (vault.ts) and each subcommand (vaultSet.ts, vaultList.ts,
 * vaultRm.ts) print it, and those import the group's words from here rather than from each other.
 */
import { PASSPHRASE_HELP } from "./passphrase.js";

export const VAULT_HELP = `usage:
  portcullis vault set NAME [--from-stdin] --host HOST[:PORT]...
  portcullis vault set NAME [--from-stdin] --deliver env
                                             store or rotate a secret (asks for the passphrase):
                                             for HTTP delivery to those hosts (--deliver http,
                                             the default; each host once, compared by value),
                                             or for the environment
  portcullis vault list [--json]             names, sizes, created and rotated times, who uses them;
                                             unlocked, whether the running holder holds each
  portcullis vault rm NAME                   remove a secret (asks for the passphrase)
  portcullis unlock [--for DURATION]         running gateways may use credentials until then
                                             (default 30m; e.g. 90s, 10m, 2h, 1h30m; at most 24h);
                                             replaces a running unlock (two at once take turns)
  portcullis lock                            credentials stop at once, in every gateway

NAME is the credential scope that portcullis.json's "credentials" (or a "url" server's
"headers") name, and that grants,
reviews and the audit log show. The value is typed on the terminal with echo off (UTF-8 text: a
terminal sending other bytes is refused), or read from standard input with --from-stdin (UTF-8
text; one trailing newline is dropped); never from an argument. Values are sealed under the keyring's data key in the store.

How a secret may be handed out is decided here, with the passphrase, not by portcullis.json
(which an agent can edit): --deliver http (the default) keeps the value inside portcullis and
sends it only to the --host destinations; --deliver env lets a server receive it in its
environment at spawn, where it holds it for its life. The delivery must match portcullis.json:
a credential given as a plain name ("ENV": "NAME") is delivered in the environment and needs
--deliver env; the object form ({"secret": "NAME", "hosts": [...]}) is delivered over HTTP and
needs --host, and so does a header of a server reached by "url" ({"secret": "NAME", "format":
"Bearer {}"} in its "headers"): --host with its URL's host, and its port unless 443 or 80
('portcullis vault list' warns of a mismatch, and 'run' refuses to start with one).
The first HTTP-delivered secret creates
the state directory's local CA (egress-ca.pem; its key is sealed like the secrets), which the
servers' egress proxy uses to read HTTPS to the declared hosts.

Every one of these takes --state-dir DIR (default: $PORTCULLIS_HOME, else
$XDG_STATE_HOME/portcullis, else ~/.local/state/portcullis): the state directory whose vault it acts on.
An option may come before the subcommand: 'vault --json list' is 'vault list --json'.

${PASSPHRASE_HELP}`;
