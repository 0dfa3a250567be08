"""A hostile CLI's bytes, through the real box: what it prints on stdout, what it sends its model, and the session log
it leaves behind, read by runner on the host (issue 29, the intake of streams and payloads).

The CLIs are the profiles under ``tests/hostile/`` (``streams-*.yaml``): Python scripts in the real reference image,
run by ``runner exec --profile ... --json`` on both transports and under gVisor, as a user would. Each attack is one
that took runner down or made it balloon before the intake: a frame nested 100,000 levels deep (RecursionError, no
result.json), lone surrogates in frames (UnicodeEncodeError writing the artifacts), model requests over the size
bound, a gzip bomb, 100,000 levels and a million values (read whole; 1.1 GiB of RSS), a 12 KB zstd session log
of 375 MiB (0.6 GiB). Here: runner exits 0 with one JSON report and a result.json, the cell is graded from the
CLI's own (malformed) output with its cause, never as an infrastructure error, and runner's peak RSS, measured on
its process tree, stays within a bound far under what the same attack cost before.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import docker
import pytest

from runner.images import ImageRecord
from runner.intake.payload import MAX_DEPTH
from runner.model.exchange_log import MAX_REQUEST_BYTES, MAX_REQUEST_VALUES
from tests.support import no_containers_left, peak_mib, runner_exec

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]

HOSTILE = Path(__file__).resolve().parents[1] / "hostile"
# (transport, runtime): the readers are runner's, on the host, so the runtime changes nothing they read; it is
# run under gVisor too so that no attack depends on runc's way of carrying the bytes
ARRANGEMENTS = [("mount", "runc"), ("stream", "runc"), ("mount", "runsc")]
IDS = [f"{transport}-{runtime}" for transport, runtime in ARRANGEMENTS]
# runner's own peak for one reference turn is about 85 MiB here; the attacks cost it 0.6 to 1.1 GiB before
RSS_BOUND_MIB = 250


def hostile_exec(tmp_path: Path, name: str, transport: str, runtime: str) -> tuple[dict[str, Any], float]:
    """``runner exec`` of the hostile profile ``name`` (exit 0, one JSON object: checked by runner_exec); the
    report and runner's peak RSS in MiB."""
    peak = tmp_path / "peak"
    report = runner_exec(tmp_path, "--profile", str(HOSTILE / f"{name}.yaml"), "--case", "escalation",
                         "--transport", transport, "--runtime", runtime, peak_to=peak)
    assert report["transport"] == transport and report["pins"].get("runtime", "runc") == runtime
    return report, peak_mib(peak)


def graded_as_the_clis(report: dict[str, Any]) -> dict[str, Any]:
    """The cell's result.json, checked to be the CLI's own ending graded, and every artifact valid UTF-8 JSON."""
    assert report["infrastructureError"] is None
    out = Path(report["files"]["record"]).parent
    for name in ("result.json", "record.json", "execution-result.json"):
        json.loads((out / name).read_bytes().decode("utf-8"))  # strict: a lone surrogate would not decode
    result = json.loads((out / "result.json").read_text())
    assert result.get("infrastructureError") is None and result["grade"]["recordUsable"] is True
    return result


@pytest.mark.parametrize(("transport", "runtime"), ARRANGEMENTS, ids=IDS)
def test_a_frame_nested_past_the_bound_is_the_clis_malformed_output(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord, transport: str, runtime: str
) -> None:
    report, peak = hostile_exec(tmp_path, "streams-frames", transport, runtime)
    assert report["status"] == "failed" and report["reasonCode"] == "harness_malformed_output"
    assert report["error"]["message"].endswith(f"the first: JSON nested deeper than {MAX_DEPTH} levels.")
    result = graded_as_the_clis(report)
    assert result["turn"]["reasonCode"] == "harness_malformed_output"
    assert result["grade"]["reasonCodes"] == ["harness_malformed_output"]
    stdout = Path(report["files"]["stdout"]).read_bytes()
    assert b"\x1b[2J" in stdout and b"[cut: line over the frame limit]" in stdout  # kept as printed, cut at the bound
    assert peak < RSS_BOUND_MIB, f"runner peaked at {peak:.0f} MiB"
    no_containers_left(engine, report)


@pytest.mark.parametrize(("transport", "runtime"), ARRANGEMENTS, ids=IDS)
def test_lone_surrogates_in_frames_reach_every_artifact_as_replacement_characters(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord, transport: str, runtime: str
) -> None:
    report, _ = hostile_exec(tmp_path, "streams-surrogates", transport, runtime)
    assert report["status"] == "failed" and report["error"]["code"] == "hostile_\ufffd"
    assert report["error"]["message"] == "gone \ufffd"
    result = graded_as_the_clis(report)
    assert result["turn"]["reasonCode"] == "hostile_\ufffd"
    no_containers_left(engine, report)


@pytest.mark.parametrize(("transport", "runtime"), [*ARRANGEMENTS, ("stream", "runsc")],
                         ids=[*IDS, "stream-runsc"])
def test_hostile_model_requests_are_answered_by_runner_and_never_read_whole(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord, transport: str, runtime: str
) -> None:
    report, peak = hostile_exec(tmp_path, "streams-requests", transport, runtime)
    assert report["status"] == "succeeded"  # the CLI's own ending, after runner refused four of its five requests
    assert report["outcome"]["output"] == {"text": "statuses [413, 413, 400, 413, 200]"}
    graded_as_the_clis(report)
    logged = sorted((json.loads(line) for line in Path(report["files"]["modelExchanges"]).read_text().splitlines()),
                    key=lambda r: r["request_seq"])
    assert [(r["response"]["status"], r.get("refused")) for r in logged] == [
        (413, f"the request body is over runner's bound of {MAX_REQUEST_BYTES} bytes"),
        (413, f"the gzip body inflates over the bound of {MAX_REQUEST_BYTES} bytes"),
        (400, f"JSON nested deeper than {MAX_DEPTH} levels"),
        (413, f"JSON of more than {MAX_REQUEST_VALUES} values"),
        (200, None),
    ]
    assert logged[4]["request"]["body"]["model"] == "\ufffd-model"
    assert peak < RSS_BOUND_MIB, f"runner peaked at {peak:.0f} MiB"
    no_containers_left(engine, report)


@pytest.mark.parametrize(("transport", "runtime"), ARRANGEMENTS[:2], ids=IDS[:2])
def test_a_small_session_log_that_inflates_to_hundreds_of_mib_costs_runner_a_piece_of_it(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord, transport: str, runtime: str
) -> None:
    report, peak = hostile_exec(tmp_path, "streams-session", transport, runtime)
    assert report["status"] == "succeeded"  # the turn/end event before the bomb was read: dsh's rule is met
    graded_as_the_clis(report)
    assert peak < RSS_BOUND_MIB, f"runner peaked at {peak:.0f} MiB"
    no_containers_left(engine, report)
