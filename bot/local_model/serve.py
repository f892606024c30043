"""The embedded model's server process: `python -m bot.local_model.serve --model FILE ...`.

It loads the GGUF into xllamacpp's embedded llama.cpp server, listening on a loopback
address only, on a port the OS picks. Once the model is loaded it prints one JSON line,
`{"address": "http://127.0.0.1:PORT"}`, on stdout, then serves until its stdin closes.
The parent holds that pipe, so the server ends with the parent, even if the parent is
killed and never gets to stop it.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import sys
from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bot.local_model.serve", description=__doc__)
    parser.add_argument("--model", required=True, help="path of the GGUF file")
    parser.add_argument("--alias", required=True, help="the model name clients send")
    parser.add_argument("--host", default="127.0.0.1", help="a loopback address")
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ctx", type=int, default=12288, help="context size in tokens")
    parser.add_argument("--parallel", type=int, default=1, help="concurrent request slots")
    return parser


def is_loopback(host: str) -> bool:
    """Whether `host` is a loopback IP address (names are refused: they may resolve out)."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def main(argv: Sequence[str] | None = None) -> int:
    """Load the model, announce the address, serve until stdin closes."""
    args = build_parser().parse_args(argv)
    if not is_loopback(args.host):
        print(f"refusing to serve the local model on {args.host}: loopback only", file=sys.stderr)
        return 2
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.alias}
    params.hostnames = [args.host]
    params.port = args.port
    params.n_ctx = args.ctx * args.parallel  # llama.cpp splits the context between slots
    params.n_parallel = args.parallel
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.use_jinja = True  # the GGUF's own chat template
    params.endpoint_metrics = False
    params.ui = False
    server = xllamacpp.Server(params)  # returns once the model is loaded and listening
    print(json.dumps({"address": server.listening_address}), flush=True)
    try:
        sys.stdin.read()
    except KeyboardInterrupt:
        pass
    del server
    return 0


if __name__ == "__main__":
    sys.exit(main())
