"""``python -m embedded_es serve``: the development Elasticsearch of Atlas Memory."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .server import serve


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m embedded_es", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser(
        "serve", help="run the engine and the security gateway until SIGINT/SIGTERM", allow_abbrev=False
    )
    run.add_argument("--port", type=int, default=9200, help="public port of the gateway (0 = any free port)")
    run.add_argument("--data-dir", type=Path, default=Path(".data/es"), help="where documents and keys are kept")
    run.add_argument(
        "--password-file",
        type=Path,
        help="file holding the password of the bootstrap superuser 'elastic', readable by its owner only "
        "(default: $ATLAS_ES_PASSWORD; never on the command line, where every user sees it in ps)",
    )
    run.add_argument("--password", dest="argv_password", help=argparse.SUPPRESS)  # removed: say why
    run.add_argument(
        "--license",
        choices=("trial", "basic"),
        default=os.environ.get("EMBEDDED_ES_LICENSE", "trial"),
        help="licence to report; 'basic' has no document level security, as on a real Basic cluster",
    )
    args = parser.parse_args(argv)
    if args.argv_password is not None:
        parser.error(
            "--password is not accepted (every user sees it in ps): set ATLAS_ES_PASSWORD or use --password-file"
        )
    try:
        password = read_password_file(args.password_file) if args.password_file else os.environ.get("ATLAS_ES_PASSWORD")
    except ValueError as exc:
        parser.error(str(exc))
    if not password:
        parser.error("a password for the 'elastic' superuser is required: ATLAS_ES_PASSWORD or --password-file")
    return serve(port=args.port, data_dir=args.data_dir, password=password, license_type=args.license)


def read_password_file(path: Path) -> str:
    """The password in ``path`` (one trailing newline dropped), refused if group or others may access the file."""
    try:
        with open(path, "rb") as fh:
            mode = os.fstat(fh.fileno()).st_mode
            raw = fh.read()
    except OSError as exc:
        raise ValueError(f"cannot read the password file {path}: {exc.strerror}") from None
    if mode & 0o077:
        raise ValueError(f"the password file {path} is open to group or others (mode {mode & 0o777:o}); chmod 600 it")
    return raw.decode().removesuffix("\n").removesuffix("\r")


if __name__ == "__main__":
    sys.exit(main())
