"""Why an attempt failed: one small vocabulary of causes, each with its retry rule and whether the attempt counts
toward a rate, and a pure classifier from the evidence a turn leaves to (cause, kind, evidence line). Pure.

Not to be confused with a refusal's ``cause`` (``route_lease_revoked``: which part of SharedOS refused a call,
judge 6, ``CellGrade.causes``): that one says why the *kernel* said no; this one says why the *attempt* ended as it
did (the engine, the image, the box, the model API, the CLI, the deadline, runner).

The vocabulary (:data:`KINDS`): each kind belongs to one :class:`Cause` and carries two rules, read from it alone:

- ``retried``: an infrastructure cause (the engine, the image, the box's limits, the vendor's API) is retried; the
  CLI's conduct never is (a CLI that never opens its MCP session would otherwise buy itself another try); nor is
  what a retry cannot change (a scripted fault the row asked for, a replay that diverged, a bug of runner's own);
- ``counts``: whether the attempt counts toward a pass rate (``runner.conformance.rates``): the CLI's conduct and the
  deadline count (as failures); an attempt the infrastructure ended says nothing about the CLI and does not.

=======================  =========  =======  ======  ===================================================
kind                     cause      retried  counts  when
=======================  =========  =======  ======  ===================================================
engine_unavailable       engine     yes      no      no engine answered
engine_call_failed       engine     yes      no      an engine call kept failing (also mid-turn)
container_not_started    engine     yes      no      the engine could not create or start the container
container_removed        engine     yes      no      someone else removed the container while its turn ran
wiring_failed            engine     yes      no      the wiring probe: mounts, relay, hardening, runtime, limits
image_build_failed       image      yes      no      the harness's image could not be built
image_unavailable        image      yes      no      the image is missing, unlocked, or its archive unreadable
oom_killed               sandbox    yes      no      the kernel killed the CLI at the box's memory limit
pids_exhausted           sandbox    yes      no      the CLI ran into the box's pids limit
disk_budget_exceeded     sandbox    yes      no      the CLI wrote past the turn's disk budget and was stopped
vendor_rate_limited      model_api  yes      no      live: the vendor's last answer was 429
vendor_error             model_api  yes      no      live: the vendor's last answer was a 5xx
vendor_unreachable       model_api  yes      no      live: runner could not reach the vendor (its own 502)
vendor_timeout           model_api  yes      no      live: a model answer was still pending when the turn was stopped
vendor_refused           model_api  no       no      live: the last answer was another 4xx (a key, a model id)
scripted_fault           model_api  no       yes     scripted: the fault the run asked for (--model-fault)
replay_diverged          model_api  no       no      replay: the CLI asked what the recording does not hold
mcp_never_opened         cli        no       yes     the CLI never opened an MCP session on the mounted socket
mcp_startup_failed       cli        no       yes     the CLI said its MCP server was not connected
tools_never_offered      cli        no       yes     it opened MCP, asked its model, and never offered it our tools
malformed_output         cli        no       yes     frames runner could not read, and none that ended the turn
crashed                  cli        no       yes     it exited non-zero (or by a signal) without an outcome
reported_failure         cli        no       yes     it ended with a failure of its own
conduct                  cli        no       yes     it ran and settled; the judge graded what it did
deadline                 deadline   no       yes     the turn deadline stopped it
runner_error             runner     no       no      anything else raised in runner (a bug of runner's own)
=======================  =========  =======  ======  ===================================================

:func:`classify` reads a :class:`TurnEvidence` in this order: an infrastructure error's kind first (the turn never
really ran); then, for a turn that ran, the silent toolless CLI whatever its grade (:func:`toolless`: a CLI that
never reached its tools is never a ``pass`` or a quiet ``not_exercised``); then, for an attempt that failed, the box,
the model API, the deadline, the CLI's own ending (malformed, crashed, failed) and last its graded conduct. It
returns None for an attempt that did not fail.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from runner.core.outcomes import JsonValue

HARNESS_MALFORMED_OUTPUT = "harness_malformed_output"  # runner.harnesses.stream.MALFORMED_OUTPUT
HARNESS_EXITED_WITHOUT_OUTCOME = "harness_exited_without_outcome"
HARNESS_WIND_DOWN_TIMEOUT = "harness_wind_down_timeout"
FAILED_GRADES = frozenset({"fail", "not_exercised"})  # the judge's strict failures
NOT_RUN_GRADES = frozenset({"not_implemented", "out_of_scope", "unavailable", "interrupted"})


class Cause(StrEnum):
    ENGINE = "engine"
    IMAGE = "image"
    SANDBOX = "sandbox"
    MODEL_API = "model_api"
    CLI = "cli"
    DEADLINE = "deadline"
    RUNNER = "runner"

    @property
    def infrastructure(self) -> bool:
        """Whether the cause lies outside the CLI's conduct (what a retry is for)."""
        return self not in (Cause.CLI, Cause.DEADLINE)


@dataclass(frozen=True)
class Kind:
    """One entry of the vocabulary (the table in the module docstring)."""

    name: str
    cause: Cause
    retried: bool
    counts: bool
    meaning: str


def _kinds(*rows: tuple[str, Cause, bool, bool, str]) -> dict[str, Kind]:
    return {name: Kind(name, cause, retried, counts, meaning) for name, cause, retried, counts, meaning in rows}


KINDS: dict[str, Kind] = _kinds(
    ("engine_unavailable", Cause.ENGINE, True, False, "no engine answered"),
    ("engine_call_failed", Cause.ENGINE, True, False, "an engine call kept failing"),
    ("container_not_started", Cause.ENGINE, True, False, "the engine could not create or start the container"),
    ("container_removed", Cause.ENGINE, True, False, "someone else removed the container while its turn ran"),
    ("wiring_failed", Cause.ENGINE, True, False, "the wiring probe found the engine unable to give the turn its box"),
    ("image_build_failed", Cause.IMAGE, True, False, "the harness's image could not be built"),
    ("image_unavailable", Cause.IMAGE, True, False, "the harness's image is missing, unlocked or unreadable"),
    ("oom_killed", Cause.SANDBOX, True, False, "the kernel killed the CLI at the box's memory limit"),
    ("pids_exhausted", Cause.SANDBOX, True, False, "the CLI ran into the box's pids limit"),
    ("disk_budget_exceeded", Cause.SANDBOX, True, False, "the CLI wrote past the turn's disk budget and was stopped"),
    ("vendor_rate_limited", Cause.MODEL_API, True, False, "the vendor's API answered 429"),
    ("vendor_error", Cause.MODEL_API, True, False, "the vendor's API answered a server error"),
    ("vendor_unreachable", Cause.MODEL_API, True, False, "runner could not reach the vendor's API"),
    ("vendor_timeout", Cause.MODEL_API, True, False, "a model answer was still pending when the turn was stopped"),
    ("vendor_refused", Cause.MODEL_API, False, False, "the vendor's API refused the request (a key, a model id)"),
    ("scripted_fault", Cause.MODEL_API, False, True, "the scripted model's fault, as the run asked"),
    ("replay_diverged", Cause.MODEL_API, False, False, "the CLI asked what the recording does not hold"),
    ("mcp_never_opened", Cause.CLI, False, True, "the CLI never opened an MCP session on the mounted socket"),
    ("mcp_startup_failed", Cause.CLI, False, True, "the CLI said its MCP server was not connected"),
    ("tools_never_offered", Cause.CLI, False, True, "the CLI opened MCP, but never offered its model our tools"),
    ("malformed_output", Cause.CLI, False, True, "the CLI printed frames runner could not read, none ending it"),
    ("crashed", Cause.CLI, False, True, "the CLI exited without an outcome"),
    ("reported_failure", Cause.CLI, False, True, "the CLI ended with a failure of its own"),
    ("conduct", Cause.CLI, False, True, "the CLI ran and settled; the judge graded what it did"),
    ("deadline", Cause.DEADLINE, False, True, "the turn deadline stopped the CLI"),
    ("runner_error", Cause.RUNNER, False, False, "runner itself failed"),
)

# the infrastructure error kinds a turn writes (runner.turn.settle) and the exception classes a cell's failure is
# named by (runner.matrix.run_cell: InfrastructureProblem.of), by the vocabulary's kind
INFRASTRUCTURE_KINDS: dict[str, str] = {
    "container_not_started": "container_not_started",
    "engine_failed": "engine_call_failed",
    "container_removed": "container_removed",
    "disk_budget_exceeded": "disk_budget_exceeded",
    "replay_diverged": "replay_diverged",
    # runner.engine, runner.sandbox (.container, .probe), runner.images
    "EngineUnavailable": "engine_unavailable",
    "EngineError": "engine_call_failed",
    "EngineCallFailed": "engine_call_failed",
    "ContainerStartError": "container_not_started",
    "ContainerRemoved": "container_removed",
    "WiringError": "wiring_failed",
    "MountsNotVisible": "wiring_failed",
    "RelayMissing": "wiring_failed",
    "HardeningRefused": "wiring_failed",
    "RuntimeMissing": "wiring_failed",
    "LimitsNotEnforced": "wiring_failed",
    "ImageBuildError": "image_build_failed",
    "ImageMissing": "image_unavailable",
    "ImageUnavailable": "image_unavailable",
    "ImageReferenceError": "image_unavailable",
    "LockError": "image_unavailable",
    "ArchiveError": "image_unavailable",
    "RegistryError": "image_unavailable",
    # docker-py's own, should one escape the engine wrapper
    "DockerException": "engine_call_failed",
    "APIError": "engine_call_failed",
}
MCP_NOT_CONNECTED = "mcp_not_connected"  # runner.turn.settle: refined by the evidence (never opened, or said so)


@dataclass(frozen=True)
class TurnEvidence:
    """What a turn (an attempt) leaves that says why it ended; every field optional, None where not known.

    Where each comes from today: ``infrastructure_kind``/``_detail``: the result's ``infrastructureError`` (a kind
    of ``runner.turn.settle.infrastructure_error`` or an exception class named by ``run_cell``);
    ``exit_code``, ``deadline_hit``: the turn's ``Drive``; ``oom_killed``: the engine's ``State.OOMKilled`` of the
    container (the sandbox's inspect once the CLI exited, ``Drive.oom_killed``); ``pids_exhausted``: never read
    today (the engine's inspect does not report the pids cgroup's ``max`` events, the cgroup is gone with the
    container, and a fork's EAGAIN in the CLI's stderr is the CLI's word: it would buy a retry);
    ``harness_error_code``: the turn's ``harnessErrorCode``, or for a failed turn its ``reasonCode``
    (``harness_exited_without_outcome``, ``harness_malformed_output``, ...); ``mcp_sessions``: the MCP server's
    ``sessions_initialized``; ``mcp_required``: the harness reaches its tools
    over MCP; ``model_requests``/``tool_requests``: the model endpoint handle's ``generation_requests`` and
    ``tool_requests`` (None for a harness without a model endpoint); ``last_model_status``, ``model_error_statuses``,
    ``upstream_errors``, ``model_faults``, ``model_stalls``: the handle's ``last_status``, ``error_statuses``,
    ``upstream_errors``, ``faults``, ``stalls``; ``model_pending_at_end``: a model answer still streaming when
    the CLI was stopped (its exchange ended ``client_disconnected`` or ``server_stopped``); ``malformed_frames``:
    ``StreamReader.malformed``; ``grade``: the judge's status for the attempt (None: not graded)."""

    infrastructure_kind: str | None = None
    infrastructure_detail: str | None = None
    exit_code: int | None = None
    oom_killed: bool | None = None
    pids_exhausted: bool | None = None
    deadline_hit: bool = False
    harness_error_code: str | None = None
    mcp_sessions: int | None = None
    mcp_required: bool = True
    model_mode: str | None = None
    model_requests: int | None = None
    tool_requests: int | None = None
    last_model_status: int | None = None
    model_error_statuses: Mapping[int, int] = field(default_factory=dict)
    upstream_errors: int = 0
    model_faults: int = 0
    model_stalls: int = 0
    model_pending_at_end: bool = False
    malformed_frames: int = 0
    grade: str | None = None


@dataclass(frozen=True)
class Failure:
    """Why one attempt ended as it did: its kind (and so its cause and rules) and the evidence line."""

    kind: Kind
    evidence: str

    @property
    def cause(self) -> Cause:
        return self.kind.cause

    @property
    def retried(self) -> bool:
        return self.kind.retried

    @property
    def counts(self) -> bool:
        return self.kind.counts

    @property
    def line(self) -> str:
        """``cli (tools_never_offered): <evidence>``: one line for a report."""
        return f"{self.kind.cause.value} ({self.kind.name}): {self.evidence}"

    def to_json(self) -> dict[str, JsonValue]:
        return {"cause": self.kind.cause.value, "kind": self.kind.name, "evidence": self.evidence,
                "retried": self.kind.retried, "counts": self.kind.counts}

    @classmethod
    def from_json(cls, body: Mapping[str, JsonValue]) -> Failure:
        """A failure as :meth:`to_json` wrote it; the rules are today's for its kind (ValueError: an unknown kind)."""
        name, evidence = body.get("kind"), body.get("evidence")
        if not isinstance(name, str) or name not in KINDS:
            raise ValueError(f"unknown failure kind {name!r}: expected one of {', '.join(KINDS)}")
        return cls(KINDS[name], evidence if isinstance(evidence, str) else "")


def failure(kind: str, evidence: str) -> Failure:
    return Failure(KINDS[kind], evidence)


def classify(evidence: TurnEvidence) -> Failure | None:
    """Why the attempt failed (the order in the module docstring), or None when it did not."""
    if evidence.infrastructure_kind is not None:
        return _infrastructure(evidence)
    if evidence.grade in NOT_RUN_GRADES:
        return None
    silent = toolless(evidence)
    if silent is not None:
        return silent
    if evidence.grade is not None and evidence.grade not in FAILED_GRADES:
        return None  # a pass (or not_applicable): nothing failed
    for reason in (_sandbox, _model_api, _deadline, _cli_ending):
        found = reason(evidence)
        if found is not None:
            return found
    if evidence.grade in FAILED_GRADES:
        return failure("conduct", f"the CLI ran and settled; the judge graded it {evidence.grade.replace('_', ' ')}")
    return None


def toolless(evidence: TurnEvidence) -> Failure | None:
    """The silent toolless CLI: it never opened its MCP session (yet asked its model, or ended by itself), or it
    opened one and never offered the catalogue's tools to its model in any request. None when it did reach them, or
    when the evidence cannot say (no MCP count; no model endpoint; stopped at the deadline before asking anything)."""
    sessions, asked, offered = evidence.mcp_sessions, evidence.model_requests, evidence.tool_requests
    if sessions is None or not evidence.mcp_required:
        return None
    if sessions == 0 and not (evidence.deadline_hit and not asked):
        said = f"; it made {_n(asked, 'model request')}" if asked is not None else ""
        return failure("mcp_never_opened", f"the CLI never opened an MCP session on the mounted socket{said}")
    if sessions > 0 and asked and offered == 0:
        return failure("tools_never_offered",
                       f"the CLI opened {_n(sessions, 'MCP session')} and made {_n(asked, 'model request')}, "
                       "none of which offered its model the catalogue's tools")
    return None


def _infrastructure(evidence: TurnEvidence) -> Failure:
    kind = evidence.infrastructure_kind or ""
    detail = evidence.infrastructure_detail or kind
    if kind == MCP_NOT_CONNECTED:
        if evidence.mcp_sessions:  # it connected, and said otherwise, or reported nothing at start-up
            return failure("mcp_startup_failed", detail)
        return toolless(evidence) or failure("mcp_never_opened", detail)
    if evidence.oom_killed:
        return failure("oom_killed", f"{_oom(evidence)}; runner then saw: {detail}")
    mapped = INFRASTRUCTURE_KINDS.get(kind)
    # the infrastructure kind leads the evidence when it says more than the failure's kind (the exception class, the
    # settle kind a cause was read from); never twice, nor when the line already says it
    said = detail if kind == mapped or kind in detail else f"{kind}: {detail}"
    return failure(mapped if mapped is not None else "runner_error", said)


def _sandbox(evidence: TurnEvidence) -> Failure | None:
    if evidence.oom_killed:
        return failure("oom_killed", _oom(evidence))
    if evidence.pids_exhausted:
        return failure("pids_exhausted", f"the CLI ran into the box's pids limit (exit code {evidence.exit_code})")
    return None


def _oom(evidence: TurnEvidence) -> str:
    return f"the engine reports the container OOM-killed (exit code {evidence.exit_code})"


def _model_api(evidence: TurnEvidence) -> Failure | None:
    if evidence.model_faults and evidence.model_mode in (None, "scripted"):
        return failure("scripted_fault", f"the scripted model answered {_n(evidence.model_faults, 'request')} with "
                                         "the injected fault, and the CLI did not recover")
    if evidence.model_mode not in (None, "live"):
        return None
    status = evidence.last_model_status
    errors = ", ".join(f"{n} x {s}" for s, n in sorted(evidence.model_error_statuses.items()))
    seen = f" (errors seen: {errors})" if errors else ""
    if status == 502 and evidence.upstream_errors:
        return failure("vendor_unreachable", f"runner could not reach the vendor for the last model request{seen}")
    if status == 429:
        return failure("vendor_rate_limited", f"the vendor answered the last model request 429{seen}")
    if status in (408, 504):
        return failure("vendor_timeout", f"the vendor answered the last model request {status}{seen}")
    if evidence.deadline_hit and evidence.model_pending_at_end:
        return failure("vendor_timeout", f"a model answer was still pending when the deadline stopped the CLI{seen}")
    if status is not None and status >= 500:
        return failure("vendor_error", f"the vendor answered the last model request {status}{seen}")
    if status is not None and 400 <= status < 500:
        return failure("vendor_refused", f"the vendor refused the last model request with {status}{seen}")
    return None


def _deadline(evidence: TurnEvidence) -> Failure | None:
    if not evidence.deadline_hit:
        return None
    asked = evidence.model_requests
    before = f" after {_n(asked, 'model request')}" if asked is not None else ""
    return failure("deadline", f"the turn deadline stopped the CLI{before} (exit code {evidence.exit_code})")


def _cli_ending(evidence: TurnEvidence) -> Failure | None:
    code, exit_code = evidence.harness_error_code, evidence.exit_code
    if code == HARNESS_MALFORMED_OUTPUT or (evidence.malformed_frames and code is None and not exit_code):
        return failure("malformed_output", f"the CLI printed {_n(evidence.malformed_frames, 'frame')} runner could "
                                           f"not read and none that ended the turn (exit code {exit_code})")
    if code == HARNESS_EXITED_WITHOUT_OUTCOME or (exit_code not in (None, 0) and code is None):
        if exit_code is not None and exit_code >= 128:
            signal = exit_code - 128
            oom = "; OOM not ruled out (the engine's OOMKilled was not read)" if (
                signal == 9 and evidence.oom_killed is None) else ""
            return failure("crashed", f"the CLI was killed by signal {signal} (exit code {exit_code}){oom}")
        return failure("crashed", f"the CLI exited with code {exit_code} and no outcome")
    if code is not None and code != HARNESS_WIND_DOWN_TIMEOUT:
        return failure("reported_failure", f"the CLI ended with its own failure {code} (exit code {exit_code})")
    return None


def _n(count: int | None, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")
