"""How the Spark source and sink connect: the options they share besides `endpoint` (names
case-insensitive, the keys given here lower-cased).

- `tls` (default false): connect over TLS; `tlsCaFile`: verify the broker's certificate against
  this CA (PEM) instead of the system's roots (it implies `tls`). The file must be readable where
  the tasks run (every executor), as the one given to the driver.
- `accessKey`, `secretKey`: sign every request as this user (a broker run with `--auth`); both or
  neither. The secret travels to the executors with the tasks, as the options do.
"""

from __future__ import annotations

from collections.abc import Mapping

from rockmq.plumbing.channels import Tls, tls_of
from rockmq.plumbing.credentials import Credentials


def tls_options(tls: Tls | None) -> dict[str, str]:
    """A Tls as the options that say it (what the pipeline jobs hand to the source and sink)."""
    if tls is None:
        return {}
    return {"tls": "true", **({"tlsCaFile": tls.ca_file} if tls.ca_file else {})}


def tls_option(opts: Mapping[str, str]) -> Tls | None:
    """The `tls` and `tlsCaFile` options (keys lower-cased) -> a Tls, None for plaintext; ValueError if malformed."""
    enabled = str(opts.get("tls", "false")).strip().lower()
    if enabled not in ("true", "false"):
        raise ValueError(f"option tls is true or false, not {enabled!r}")
    return tls_of(enabled == "true", str(opts.get("tlscafile", "")).strip() or None)


def credentials_options(credentials: Credentials | None) -> dict[str, str]:
    """Credentials as the options that say them (what the pipeline jobs hand to the source and sink)."""
    return {} if credentials is None else {"accessKey": credentials.access_key, "secretKey": credentials.secret_key}


def credentials_option(opts: Mapping[str, str]) -> Credentials | None:
    """The `accessKey` and `secretKey` options (keys lower-cased) -> Credentials, None if neither; ValueError if one."""
    access_key, secret_key = (str(opts.get(k, "")).strip() for k in ("accesskey", "secretkey"))
    if not access_key and not secret_key:
        return None
    if not access_key or not secret_key:
        raise ValueError("options accessKey and secretKey go together")
    return Credentials(access_key, secret_key)
