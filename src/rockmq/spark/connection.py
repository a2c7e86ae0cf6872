"""How the Spark source and sink connect: the options they share besides `endpoint` (names
case-insensitive, the keys given here lower-cased).

- `tls` (default false): connect over TLS; `tlsCaFile`: verify the broker's certificate against
  this CA (PEM) instead of the system's roots (it implies `tls`). The file must be readable where
  the tasks run (every executor), as the one given to the driver.
"""

from __future__ import annotations

from collections.abc import Mapping

from rockmq.protocol.channels import Tls, tls_of


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
