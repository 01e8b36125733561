"""Command line of the Python implementation: info | check | run (see CONTRACT.md)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from testbed_crypto import SpecError, VectorFailure, check_vectors, info, run_spec
from testbed_crypto.algorithms import Unsupported


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="testbed_crypto", description="Crypto benchmark (Python, cryptography).")
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info", help="print language, library and algorithms")
    c = sub.add_parser("check", help="run every known-answer vector of a file")
    c.add_argument("--vectors", required=True)
    r = sub.add_parser("run", help="time one operation (vectors of --alg are checked first)")
    r.add_argument("--alg", required=True)
    r.add_argument("--key-bits", type=int)
    r.add_argument("--op")
    r.add_argument("--payload-bytes", type=int)
    r.add_argument("--input")
    r.add_argument("--stream")
    r.add_argument("--chunk-bytes", type=int)
    r.add_argument("--iterations", type=int, required=True)
    r.add_argument("--warmup", type=int, default=0)
    r.add_argument("--warmup-s", type=float, default=0.0)
    r.add_argument("--tolerance", type=float)
    r.add_argument("--update-bytes", type=int)
    r.add_argument("--vectors", required=True)
    return p


def main(argv: list[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        if exc.code:
            print(json.dumps({"error": "bad usage (see --help)"}))
        return int(exc.code or 0) and 2
    out: dict[str, Any]
    code = 0
    try:
        if args.cmd == "info":
            out = info()
        elif args.cmd == "check":
            out = check_vectors(args.vectors)
            code = 3 if out["failed"] else 0
        else:
            spec = {k: v for k, v in vars(args).items() if k != "cmd" and v is not None}
            out = run_spec(spec)
    except SpecError as exc:
        out, code = {"error": str(exc)}, 2
    except VectorFailure as exc:
        out, code = {"error": str(exc)}, 3
    except Unsupported as exc:
        out, code = {"error": str(exc)}, 4
    except (OSError, ValueError) as exc:
        out, code = {"error": f"{type(exc).__name__}: {exc}"}, 1
    print(json.dumps(out))
    return code


if __name__ == "__main__":
    sys.exit(main())
