"""What every command group shares: the parser's one-line usage errors, argument types, the broker
options (`--endpoint`, TLS, credentials), the channels they open, tables, and the one line and exit
code each failure ends in."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, NoReturn

import grpc

from rockmq.client.errors import RockmqError

if TYPE_CHECKING:
    from google.protobuf.message import Message as ProtoMessage

    from rockmq.plumbing.channels import Tls
    from rockmq.plumbing.credentials import Credentials
    from rockmq.protocol import admin_grpc

    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]  # what each group's register() adds to

DEFAULT_ENDPOINT = os.environ.get("ROCKMQ_ENDPOINT") or "127.0.0.1:8081"
EXIT_REFUSED, EXIT_USAGE, EXIT_UNREACHABLE = 1, 2, 3
REQUEST_TIMEOUT_S = 10.0


class CliError(Exception):
    def __init__(self, message: str, code: int = EXIT_REFUSED) -> None:
        super().__init__(message)
        self.code = code


# --- parsing -----------------------------------------------------------------------------------


class Parser(argparse.ArgumentParser):
    """Usage errors as one line, like every other error of the command."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


# Options whose value may start with '-': `--delay -5s` is refused for what it says, not with argparse's
# "expected one argument" (which reads -5s as an option).
DASHED_VALUES = frozenset({"--delay"})


def glue_dashed_values(argv: Sequence[str]) -> list[str]:
    """`--delay -5s` -> `--delay=-5s`, which argparse reads as the option's value."""
    out: list[str] = []
    for arg in argv:
        if out and out[-1] in DASHED_VALUES and arg.startswith("-"):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


def subcommands(sub: Subparsers, command: str, help: str, run: Callable[[argparse.Namespace], int]) -> Subparsers:
    """A command group (`rockmq COMMAND ACTION ...`) run by `run`: its actions go on what this returns."""
    group = sub.add_parser(command, help=help)
    group.set_defaults(run=run)
    return group.add_subparsers(dest="action", required=True, metavar="ACTION")


def number(kind: Callable[[str], float], least: float) -> Callable[[str], float]:
    """An argparse type: a number of `kind` (int or float), `least` or more."""
    def parse(text: str) -> float:
        try:
            n = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, not {text!r}") from None
        if n < least:
            raise argparse.ArgumentTypeError(f"must be at least {least}, not {text}")
        return n
    return parse


def instant(text: str) -> int:
    """An argparse type: an ISO 8601 time with a zone -> ms since the epoch (rockmq.when)."""
    from rockmq.when import parse_instant_ms

    try:
        return parse_instant_ms(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _endpoint(text: str) -> str:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT with a port in 1..65535, not {text!r}")
    return text


def with_endpoint(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of a command that talks to a broker: where, over TLS or not, signed as whom."""
    parser.add_argument("--endpoint", type=_endpoint, default=DEFAULT_ENDPOINT,
                        help=f"broker HOST:PORT (default {DEFAULT_ENDPOINT}; env ROCKMQ_ENDPOINT)")
    parser.add_argument("--tls", action="store_true", help="connect over TLS (verified against the system's roots "
                                                           "or --tls-ca)")
    parser.add_argument("--tls-ca", metavar="FILE", help="verify the broker's certificate against this CA (PEM); "
                                                         "implies --tls")
    parser.add_argument("--access-key", metavar="K", help="sign requests as this user (a broker run with --auth; "
                                                          "env ROCKMQ_ACCESS_KEY)")
    parser.add_argument("--secret-key", metavar="S", help="the user's secret key (env ROCKMQ_SECRET_KEY)")
    return parser


# --- talking to a broker -----------------------------------------------------------------------


def tls(args: argparse.Namespace) -> Tls | None:
    """`--tls [--tls-ca FILE]` of a command that talks to a broker (None: plaintext)."""
    from rockmq.plumbing.channels import tls_of

    given = tls_of(getattr(args, "tls", False), getattr(args, "tls_ca", None))
    if given is not None and given.ca_file and not os.access(given.ca_file, os.R_OK):
        raise CliError(f"cannot read --tls-ca {given.ca_file}", EXIT_USAGE)
    return given


def channel(args: argparse.Namespace) -> grpc.Channel:
    from rockmq.plumbing.channels import open_channel

    return open_channel(args.endpoint, tls(args))


def credentials(args: argparse.Namespace) -> Credentials | None:
    """The credentials --access-key / --secret-key (or ROCKMQ_ACCESS_KEY / ROCKMQ_SECRET_KEY) give."""
    from rockmq.plumbing.credentials import credentials_from

    try:
        return credentials_from(args.access_key, args.secret_key)
    except ValueError as e:
        raise CliError(str(e), EXIT_USAGE) from None


def signed_channel(args: argparse.Namespace) -> grpc.Channel:
    """A channel to --endpoint signing every call with the command's credentials."""
    from rockmq.plumbing.credentials import signed

    return signed(channel(args), credentials(args))


def admin_stub(args: argparse.Namespace) -> admin_grpc.AdminStub:
    from rockmq.protocol import admin_grpc

    return admin_grpc.AdminStub(signed_channel(args))


def every_page(call: Callable[[str], Any], field: str) -> list[Any]:
    """Every entry of a paged listing (ListTopics, ListGroups): `call(page_token)` until the last page."""
    entries: list[Any] = []
    token = ""
    while True:
        reply = call(token)
        entries.extend(getattr(reply, field))
        token = reply.next_page_token
        if not token:
            return entries


# --- output ------------------------------------------------------------------------------------


def with_json(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """`--json`: a list or describe command prints what the broker answered as JSON, for scripts."""
    parser.add_argument("--json", action="store_true", help="print JSON (the broker's reply, every field) for scripts")
    return parser


def print_json(value: ProtoMessage | Sequence[ProtoMessage]) -> None:
    """A reply, or a listing's entries, as JSON: fields by their proto names, numbers as numbers
    (protobuf's own JSON writes 64-bit ones as strings), enums by name, every field even when empty."""
    shown = [as_dict(m) for m in value] if isinstance(value, Sequence) else as_dict(value)
    print(json.dumps(shown, indent=2, ensure_ascii=False))


def as_dict(message: ProtoMessage) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            out[field.name] = {k: as_dict(v) if hasattr(v, "DESCRIPTOR") else v for k, v in value.items()}
        elif field.is_repeated:
            out[field.name] = [_plain(field, v) for v in value]
        else:
            out[field.name] = _plain(field, value)
    return out


def _plain(field: Any, value: Any) -> Any:  # a FieldDescriptor (two classes: Python's and upb's)
    if field.message_type is not None:
        return as_dict(value)
    if field.enum_type is not None:
        return field.enum_type.values_by_number[value].name if value in field.enum_type.values_by_number else value
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return value


def table(rows: list[list[object]], header: list[str]) -> None:
    cells = [header] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    for r in cells:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())


def format_ms(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000).astimezone().isoformat(timespec="milliseconds")


def warn_unreachable(brokers: Sequence[str]) -> None:
    if brokers:
        print(f"warning: not shown, did not answer: {', '.join(brokers)}", file=sys.stderr)


# --- failures: one line on stderr and an exit code ---------------------------------------------


def unreachable(endpoint: str, details: str, tls_on: bool) -> str:
    """The one wording for a broker that cannot be reached, with what to do about it: gRPC's
    `details` tell a certificate not trusted and a plaintext port; a plaintext client on a TLS port
    sees only a closed socket, so the port is asked whether it speaks TLS."""
    if "CERTIFICATE_VERIFY_FAILED" in details:
        hint = "certificate not trusted: give --tls-ca FILE (the CA that signed the broker's certificate)"
    elif "WRONG_VERSION_NUMBER" in details:
        hint = "the server does not speak TLS: drop --tls"
    elif "handshake" in details.lower():
        hint = "the TLS handshake failed: " + details.rpartition("Tls handshake failed")[2].strip(" :")
    elif not tls_on and "Connection refused" not in details and speaks_tls(endpoint):
        hint = "the server speaks TLS: add --tls"
    else:
        hint = "is `rockmq serve` running there?"
    return f"cannot reach the broker at {endpoint}: {hint}"


def speaks_tls(endpoint: str, timeout_s: float = 2.0) -> bool:
    """Whether a TLS handshake (certificate not checked: this only asks) completes at `endpoint`."""
    import socket
    import ssl

    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    host, _, port = endpoint.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s) as raw, \
                context.wrap_socket(raw, server_hostname=host.strip("[]")):
            return True
    except (OSError, ValueError):
        return False


def rpc_failed(args: argparse.Namespace, code: grpc.StatusCode, details: str) -> int:
    """One line for a failed admin call."""
    endpoint = getattr(args, "endpoint", "?")
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        from rockmq.protocol.conventions import BROKER_SAYS_UNREACHABLE

        if details.startswith(BROKER_SAYS_UNREACHABLE):  # the broker answered: another did not
            print(f"rockmq: {details}", file=sys.stderr)
        else:
            print(f"rockmq: {unreachable(endpoint, details, tls(args) is not None)}", file=sys.stderr)
        return EXIT_UNREACHABLE
    if code == grpc.StatusCode.UNIMPLEMENTED and _is_name_server(args):
        return _name_server_named(endpoint)
    print(f"rockmq: {details}", file=sys.stderr)
    return EXIT_REFUSED


def client_failed(args: argparse.Namespace, e: RockmqError) -> int:
    """One line for a failed send, recall or tail."""
    from rockmq.client.errors import ConnectionFailed, Timeout

    endpoint = getattr(args, "endpoint", "?")
    if isinstance(e, ConnectionFailed) and not e.retriable and _is_name_server(args):
        return _name_server_named(endpoint)
    if isinstance(e, ConnectionFailed) and e.retriable and e.endpoint:
        print(f"rockmq: {unreachable(e.endpoint, e.details, tls(args) is not None)}", file=sys.stderr)
        return EXIT_UNREACHABLE
    print(f"rockmq: {e}", file=sys.stderr)
    return EXIT_UNREACHABLE if isinstance(e, ConnectionFailed | Timeout) and e.retriable else EXIT_REFUSED


def _is_name_server(args: argparse.Namespace) -> bool:
    """Whether `--endpoint` answers as a name server (asked only after it refused a broker's method)."""
    from rockmq.protocol import namesrv, namesrv_grpc

    try:
        with channel(args) as opened:
            namesrv_grpc.NameServerStub(opened).ListBrokers(namesrv.ListBrokersRequest(), timeout=2)
        return True
    except grpc.RpcError as e:  # a name server asking for the cluster's inner credentials is one too
        return e.code() == grpc.StatusCode.UNAUTHENTICATED


def _name_server_named(endpoint: str) -> int:
    print(f"rockmq: {endpoint} is a name server, not a broker: give --endpoint a broker's HOST:PORT", file=sys.stderr)
    return EXIT_REFUSED
