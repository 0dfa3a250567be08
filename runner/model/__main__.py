"""Run the model endpoint standalone, for manual checks of a CLI against it.

    python -m runner.model --actions script.json --port 8787 --log exchanges.jsonl
    python -m runner.model --live-base-url https://api.openai.com/v1 --credential OPENAI_API_KEY \\
        --auth bearer --dialect openai-chat --uds /tmp/model.sock --log exchanges.jsonl
    python -m runner.model --replay runs/x/model-exchanges.jsonl --port 8787 --log replayed.jsonl

``--actions`` is a JSON file holding an action list (or an object with an ``actions`` list, like the
reference harness's script). Stops on SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

import anyio

from runner.core.scrub import Scrubber
from runner.model.config import ModelEndpointConfig, ModelMode
from runner.model.server import serve_model, serve_model_tcp
from runner.model.types import DIALECT_NAMES, LiveModel, ModelEndpointError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runner.model", description=__doc__.split("\n\n")[0])
    parser.add_argument("--actions", type=Path, help="scripted mode: the action list (JSON)")
    parser.add_argument("--live-base-url", help="live mode: the vendor API base URL")
    parser.add_argument("--replay", type=Path, help="replay mode: a recorded exchange log to serve back")
    parser.add_argument("--credential", action="append", default=[], help="live mode: host variable(s) to try")
    parser.add_argument("--auth", choices=["bearer", "x-api-key", "x-goog-api-key"], default="bearer")
    parser.add_argument("--dialect", choices=list(DIALECT_NAMES), default="openai-chat",
                        help="live mode: the dialect whose model calls are forwarded (nothing else is)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8787)
    parser.add_argument("--uds", type=Path, help="listen on this unix socket instead of TCP")
    parser.add_argument("--log", type=Path, default=Path("model-exchanges.jsonl"))
    parser.add_argument("--server-name", default="sharedos")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    live = None
    if args.live_base_url:
        live = LiveModel(base_url=args.live_base_url, credentials=args.credential or ["API_KEY"], auth=args.auth)
    actions = []
    if args.actions:
        data = json.loads(args.actions.read_text(encoding="utf-8"))
        actions = data["actions"] if isinstance(data, dict) else data
    mode = ModelMode.REPLAY if args.replay else ModelMode.LIVE if live else ModelMode.SCRIPTED
    environ = os.environ  # read here, at the command's edge, only: the scrubber's and the credential's
    try:
        config = ModelEndpointConfig(
            mode=mode, actions=actions, live=live, scrubber=Scrubber(environ, args.credential),
            environ=environ, recording=args.replay, dialect=args.dialect,
        )
    except ModelEndpointError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2

    async def run() -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            if args.uds:
                async with serve_model(args.uds, config, args.log, server_name=args.server_name):
                    print(f"serving {config.mode.value} on unix:{args.uds}; log {args.log}", file=sys.stderr)
                    async for _ in signals:
                        return
            async with serve_model_tcp(
                config, args.log, host=args.host, port=args.port, server_name=args.server_name
            ) as handle:
                print(f"serving {config.mode.value} on {handle.url}; log {args.log}", file=sys.stderr)
                async for _ in signals:
                    return

    anyio.run(run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
