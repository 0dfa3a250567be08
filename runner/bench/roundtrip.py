"""Item 1: the MCP ``tools/call`` round trip, from inside a container against the in-memory floor.

``files.read`` of ``["Workspace","policy.md"]`` against the baseline world's real envelope and
escalation latch, its tool-call budget raised so every call is a real read. *Real*:
:mod:`runner.bench.client` runs in the reference image under runner's own :class:`ContainerSpec`
(network none, uid 1000, read-only root, every capability dropped), reaches a host :func:`serve_mcp`
through ``socat STDIO UNIX-CONNECT:/run/runner/mcp.sock`` on the mounted turn dir (or, ``direct``,
straight to the socket), and times each call inside the container. *Floor*: the same client routine
against the same server handlers on the SDK's in-memory streams (:mod:`runner.mcp.memory`).
"""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING

from runner.bench.figures import BenchError, Figure
from runner.bench.plan import Plan
from runner.bench.process import give_socket, run_container, turn_dir
from runner.bench.stats import ratio, summarise
from runner.bench.world import baseline_authority
from runner.core.outcomes import JsonValue

if TYPE_CHECKING:
    import docker

    from runner.bench.client import Timings

ROUNDTRIP_TOOL = "files.read"
ROUNDTRIP_ARGUMENTS: dict[str, JsonValue] = {"path": ["Workspace", "policy.md"]}
CONTAINER_CLIENT = "bench_client.py"  # the client's name in the turn dir: /run/runner/bench_client.py


async def floor_roundtrip(warmup: int, calls: int) -> Timings:
    """The same client routine against the same server handlers, on the SDK's in-memory streams."""
    from runner.bench.client import session_timings
    from runner.mcp.memory import memory_streams

    catalogue, latch, instructions = baseline_authority(warmup + calls + 1)
    async with memory_streams(catalogue, latch, instructions=instructions) as transport:
        started = time.perf_counter()
        timings = await session_timings(transport.read, transport.write, started, warmup, calls,
                                        ROUNDTRIP_TOOL, ROUNDTRIP_ARGUMENTS)
        server_calls = transport.handle.calls
    if server_calls != warmup + calls:
        raise BenchError(f"the floor server saw {server_calls} calls, expected {warmup + calls}")
    return timings


async def real_roundtrip(
    client: docker.DockerClient, image_id: str, warmup: int, calls: int, run_id: str, transport: str = "relay",
    engine_transport: str = "mount",
) -> tuple[Timings, int]:
    """The bench client in the reference image, hardened as runner runs a CLI, through socat to serve_mcp
    (``relay``, as the reference harness and the CLIs connect) or straight to the socket (``direct``); the turn dir
    bind-mounted (``engine_transport`` mount) or carried over the engine API (stream:
    runner.sandbox.stream_transport)."""
    import shutil

    from runner.bench import client as bench_client
    from runner.bench.client import Timings
    from runner.mcp import unix_client
    from runner.mcp.server import serve_mcp
    from runner.sandbox.container import CELL_LABEL, RUN_LABEL, TURN_MOUNT, SandboxedProcess
    from runner.sandbox.interface import ContainerSpec
    from runner.sandbox.lease import lease_labels
    from runner.sandbox.stream_transport import StreamSandboxedProcess

    catalogue, latch, instructions = baseline_authority(warmup + calls + 1)
    turn = turn_dir()
    try:
        # the client imports unix_client from beside itself when the runner package is not there
        for module, name in ((bench_client, CONTAINER_CLIENT), (unix_client, "unix_client.py")):
            shutil.copyfile(str(module.__file__), turn / name)
            os.chmod(turn / name, 0o644)
        spec = ContainerSpec(
            image_id=image_id,
            argv=["/opt/venv/bin/python", f"{TURN_MOUNT}/{CONTAINER_CLIENT}", str(warmup), str(calls),
                  ROUNDTRIP_TOOL, json.dumps(ROUNDTRIP_ARGUMENTS), transport],
            turn_dir=turn,
            labels={RUN_LABEL: run_id, CELL_LABEL: f"bench.mcp-roundtrip-{transport}-{engine_transport}",
                    **lease_labels(run_id)},
            env={"PYTHONDONTWRITEBYTECODE": "1"},
        )
        async with serve_mcp(turn / "mcp.sock", catalogue, latch, instructions=instructions) as handle:
            give_socket(turn / "mcp.sock")
            kind = StreamSandboxedProcess if engine_transport == "stream" else SandboxedProcess
            code, out, err = await run_container(kind(client, spec), timeout=120)
            server_calls = handle.calls
    finally:
        shutil.rmtree(turn, ignore_errors=True)
    lines = [line for line in out.decode(errors="replace").splitlines() if line.strip()]
    try:
        body = json.loads(lines[-1])
    except (IndexError, ValueError) as exc:
        tail = err.decode(errors="replace").strip().splitlines()[-5:]
        raise BenchError(f"the in-container client exited {code} without timings: {' | '.join(tail)}") from exc
    timings = Timings(samples_ms=[float(s) for s in body["samplesMs"]], errors=int(body["errors"]),
                      first_text=str(body.get("firstText", "")), init_ms=body.get("initMs"))
    return timings, server_calls


async def measure_mcp(client: docker.DockerClient, image_id: str, plan: Plan, run_id: str) -> list[Figure]:
    from runner.bench.client import Timings

    # the floor is taken in two halves, before and after the real path, so drift on the machine hits both
    before = await floor_roundtrip(plan.mcp_warmup, plan.mcp_calls // 2)
    real, server_calls = await real_roundtrip(client, image_id, plan.mcp_warmup, plan.mcp_calls, run_id)
    direct, direct_calls = await real_roundtrip(client, image_id, plan.mcp_warmup, plan.mcp_calls, run_id, "direct")
    stream, stream_calls = await real_roundtrip(client, image_id, plan.mcp_warmup, plan.mcp_calls, run_id,
                                                engine_transport="stream")
    after = await floor_roundtrip(plan.mcp_warmup, plan.mcp_calls - plan.mcp_calls // 2)
    floor = Timings(before.samples_ms + after.samples_ms, before.errors + after.errors, before.first_text,
                    before.init_ms)
    for name, timings in (("floor", floor), ("real", real), ("direct", direct), ("stream", stream)):
        if timings.errors:
            raise BenchError(f"{timings.errors} of the {name} calls came back as errors: {timings.first_text[:120]}")
    expected = plan.mcp_warmup + plan.mcp_calls
    if server_calls != expected or direct_calls != expected or stream_calls != expected:
        raise BenchError(f"the host server saw {server_calls}, {direct_calls} and {stream_calls} calls, expected "
                         f"{expected} each")
    real_s, floor_s, direct_s = summarise(real.samples_ms), summarise(floor.samples_ms), summarise(direct.samples_ms)
    stream_s = summarise(stream.samples_ms)
    how_real = "in-container SDK client → socat → mounted socket → host serve_mcp (latch + envelope)"
    how_floor = "same client loop and server handlers on in-process memory streams (runner.mcp.memory)"
    n = f"{plan.mcp_calls} calls after {plan.mcp_warmup} warm-up"
    return [
        Figure("mcp.real.p50", 1, "tools/call real p50", real_s["p50"], "ms", how_real, n,
               {**real_s, "initMs": real.init_ms, "samplesMs": [round(s, 4) for s in real.samples_ms]}),
        Figure("mcp.real.p95", 1, "tools/call real p95", real_s["p95"], "ms", how_real, n),
        Figure("mcp.floor.p50", 1, "tools/call floor p50", floor_s["p50"], "ms", how_floor, n,
               {**floor_s, "initMs": round(floor.init_ms or 0, 3),
                "samplesMs": [round(s, 4) for s in floor.samples_ms]}),
        Figure("mcp.floor.p95", 1, "tools/call floor p95", floor_s["p95"], "ms", how_floor, n),
        Figure("mcp.ratio.p50", 1, "tools/call real / floor (p50)", ratio(real_s["p50"], floor_s["p50"]), "×",
               "p50 real ÷ p50 floor", detail={"p95Ratio": ratio(real_s["p95"], floor_s["p95"])}),
        Figure("mcp.direct.p50", 1, "… without the relay: direct p50", direct_s["p50"], "ms",
               "in-container SDK client → mounted socket (no socat) → host serve_mcp: where the relay's share "
               "shows", n, {**direct_s, "initMs": direct.init_ms}),
        Figure("mcp.stream.p50", 1, "tools/call over the stream transport p50", stream_s["p50"], "ms",
               "in-container SDK client → socat → relay → engine exec stream → host serve_mcp (no host path "
               "mounted: --transport stream)", n, {**stream_s, "initMs": stream.init_ms}),
        Figure("mcp.stream.p95", 1, "tools/call over the stream transport p95", stream_s["p95"], "ms",
               "as mcp.stream.p50", n),
        Figure("mcp.stream.ratio.p50", 1, "tools/call stream / floor (p50)", ratio(stream_s["p50"], floor_s["p50"]),
               "×", "p50 stream ÷ p50 floor"),
    ]
