"""``python -m embedded_es serve``: the development Elasticsearch of Atlas Memory."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from .server import serve


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m embedded_es", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("serve", help="run the engine and the security gateway until SIGINT/SIGTERM")
    run.add_argument("--port", type=int, default=9200, help="public port of the gateway (0 = any free port)")
    run.add_argument("--data-dir", type=Path, default=Path(".data/es"), help="where documents and keys are kept")
    run.add_argument(
        "--password",
        default=os.environ.get("ATLAS_ES_PASSWORD"),
        help="password of the bootstrap superuser 'elastic' (default: $ATLAS_ES_PASSWORD)",
    )
    run.add_argument(
        "--license",
        choices=("trial", "basic"),
        default=os.environ.get("EMBEDDED_ES_LICENSE", "trial"),
        help="licence to report; 'basic' has no document level security, as on a real Basic cluster",
    )
    args = parser.parse_args(argv)
    if not args.password:
        parser.error("a password for the 'elastic' superuser is required: --password or ATLAS_ES_PASSWORD")
    return asyncio.run(serve(port=args.port, data_dir=args.data_dir, password=args.password, license_type=args.license))


if __name__ == "__main__":
    sys.exit(main())
