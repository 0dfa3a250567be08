"""Before anything starts: the turn's authority, its prompt, its turn dir and the spec of its process.

:func:`prepare_turn` resolves the world and its envelope once, wraps the envelope in the latch,
composes the prompt and instructions (annotating ``promptHash``), writes the turn dir, and renders
the profile into the :class:`~runner.sandbox.container.ContainerSpec` and the transcript sinks. It
starts no server and no process: :mod:`runner.turn.run_turn` does that with what is prepared here.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import runner
from runner.conformance.behaviours import Behaviour, actions_for
from runner.conformance.cases import Case, Condition
from runner.conformance.prompt import instructions_for, prompt_for, prompt_hash
from runner.core.envelope import Envelope, ServerIdentity
from runner.core.latch import EscalationLatch
from runner.core.outcomes import JsonValue
from runner.core.scrub import Scrubber
from runner.core.timeline import Timeline, TimelineEvent, TurnClock, answer_of
from runner.core.vocabulary import Code
from runner.core.world import World, build_world
from runner.harnesses.interpreters import get_interpreter
from runner.harnesses.profile import Profile
from runner.harnesses.stream import StreamReader, Tail
from runner.images import ImageRecord
from runner.model.settings import ModelMode
from runner.sandbox.container import CELL_LABEL, RUN_LABEL
from runner.sandbox.interface import ContainerSpec
from runner.sandbox.lease import lease_labels
from runner.sandbox.ownership import container_user
from runner.turn.model_choice import ModelChoice
from runner.turn.settings import TurnSettings
from runner.turn.timeline import TimelineFile, open_timeline, start_clock
from runner.turn.transcript import StreamSink
from runner.turn.turndir import TurnDir, create_turn_dir, placeholder_values

if TYPE_CHECKING:
    from runner.mcp.server import Invoker  # the MCP SDK is imported when the turn serves it, not before


@dataclass(frozen=True)
class TurnRequest:
    case: Case
    profile: Profile
    image: ImageRecord
    out_dir: Path
    model: ModelChoice  # the column's model, fault included (chosen once, by the plan)
    # what the command asked for, and the host's environment
    settings: TurnSettings = field(default_factory=TurnSettings)
    condition_id: str | None = None  # the row's condition; the case's first when None
    # a row of several turns runs each against one world (its stores, files and audit): turn n > 1 is handed the
    # world turn n-1 ran on, with this turn's authority already opened (World.open_turn); None: a fresh world
    world: World | None = None
    turn: int = 1

    @property
    def condition(self) -> Condition:
        return self.case.condition_for(self.condition_id)

    @property
    def behaviour(self) -> Behaviour:
        """What this turn plays: a coin is tossed for each trial by its plan (``CellPlan.turn_settings``), before
        the turn is asked for."""
        behaviour = self.settings.behaviour
        if not isinstance(behaviour, Behaviour):
            raise TypeError(f"behaviour {behaviour.value}: a coin is tossed by the cell's plan, per trial")
        return behaviour

    @property
    def deadline(self) -> float | None:
        """Seconds; the profile's default when None."""
        return self.settings.deadline

    @property
    def keep(self) -> bool:
        return self.settings.keep

    @property
    def run_id(self) -> str:
        return self.settings.run_id


@dataclass
class Transcript:
    """The CLI's two streams: files on disk, bounded tails, and stdout read through the interpreter."""

    reader: StreamReader
    tail: Tail
    err_tail: Tail
    stdout: StreamSink
    stderr: StreamSink

    def close(self) -> None:
        self.stdout.close()
        self.stderr.close()


@dataclass
class PreparedTurn:
    req: TurnRequest
    execution_id: str
    deadline: float
    scrubber: Scrubber
    envelope: Envelope
    latch: EscalationLatch
    invoker: Invoker  # what the MCP server calls: the latch (the envelope only for a deliberately broken build)
    instructions: str
    prompt: str
    actions: list[dict[str, JsonValue]]
    script: dict[str, JsonValue]
    model_id: str | None
    turn_dir: TurnDir
    spec: ContainerSpec
    transcript: Transcript
    timeline: Timeline
    timeline_file: TimelineFile
    mcp_log: list[dict[str, JsonValue]] = field(default_factory=list)

    @property
    def profile(self) -> Profile:
        return self.req.profile

    def log_mcp(self, kind: str, data: dict[str, JsonValue]) -> None:
        """One MCP server event, stamped on the turn's clock; a tool call also goes on the timeline, with how it
        was answered: the ask that closed the latch, and every call the latch refused after it."""
        if kind != "tool.called":
            self.mcp_log.append({"event": kind, **self.timeline.clock.now().to_json(), **data})
            return
        tool, given = data.get("tool"), data.get("code")
        code = given if isinstance(given, str) else None
        after = code == Code.ESCALATION_PENDING
        stamp = self.timeline.record(TimelineEvent.MCP_CALL, tool=tool, answer=answer_of(str(data.get("status")), code),
                                     afterAsk=after)
        self.mcp_log.append({"event": kind, **stamp.to_json(), **data})
        if self.latch.ask_call_id is not None and data.get("callId") == self.latch.ask_call_id:
            self.timeline.record(TimelineEvent.ASK_ANSWERED, stamp, tool=tool)
        elif after:
            self.timeline.record(TimelineEvent.REFUSED_AFTER_ASK, stamp, tool=tool, code=code)


def prepare_turn(req: TurnRequest, clock: TurnClock | None = None) -> PreparedTurn:
    """Everything the turn needs before its servers and its process start; creates the turn dir and opens the
    turn's timeline on ``clock`` (started now when None), its first entry ``turn_started`` at the clock's start."""
    profile, case, condition = req.profile, req.case, req.condition
    execution_id = turn_execution_id(case, condition, profile.id, req.turn)
    scrubber = Scrubber(req.settings.host.variables, profile.credentials)
    clock = clock or start_clock()
    req.out_dir.mkdir(parents=True, exist_ok=True)

    world = req.world if req.world is not None else build_world(condition.world)
    server = ServerIdentity(f"runner.{profile.id}.mcp", runner.__version__, req.settings.protocol.value)
    envelope = Envelope(world, execution_id, server, clock=world.clock)
    latch = EscalationLatch(envelope, envelope.catalogue.names)
    # A deliberately broken build, for proving the judge and the gate catch it: the MCP server calls
    # the envelope directly, and the CLI's own outcome is the turn's (ADR 0018's "before").
    invoker: Invoker = envelope if req.settings.host.latch_disabled else latch
    instructions = instructions_for(world.book.grants)  # the reach this turn loaded
    prompt = prompt_for(case, issue_uncatalogued=profile.issues_uncatalogued, condition=condition, turn=req.turn)
    envelope.annotate("promptHash", prompt_hash(instructions, prompt))

    actions = [
        a.to_json()
        for a in actions_for(case, req.behaviour, issue_uncatalogued=profile.issues_uncatalogued, condition=condition,
                             turn=req.turn)
    ]
    script: dict[str, JsonValue] = {"harness": profile.id, "server": profile.mcp_server_name, "actions": [*actions]}
    model_id = _model_id(profile, req.model)
    values = placeholder_values(profile, prompt, model_id, profile.model.placeholder_key if profile.model else None)
    turn_dir = create_turn_dir(profile, script, values, req.run_id, container_user())
    timeline, timeline_file = open_timeline(req.out_dir, scrubber, clock)
    timeline.record(TimelineEvent.TURN_STARTED, clock.started)
    return PreparedTurn(
        req=req, execution_id=execution_id,
        deadline=req.deadline if req.deadline is not None else profile.default_deadline_seconds,
        scrubber=scrubber, envelope=envelope, latch=latch, invoker=invoker, instructions=instructions,
        prompt=prompt, actions=actions, script=script, model_id=model_id, turn_dir=turn_dir,
        spec=_container_spec(req, execution_id, turn_dir, prompt, values),
        transcript=_transcript(req, profile, scrubber), timeline=timeline, timeline_file=timeline_file,
    )


def turn_execution_id(case: Case, condition: Condition, harness: str, turn: int = 1) -> str:
    """``<case>.<condition>.<column>``, with ``.turn-<n>`` when the row spans more than one turn (upstream §6.5)."""
    base = f"{case.id}.{condition.id}.{harness}"
    return f"{base}.turn-{turn}" if case.turns > 1 else base


def _container_spec(
    req: TurnRequest, execution_id: str, turn_dir: TurnDir, prompt: str, values: dict[str, str]
) -> ContainerSpec:
    profile = req.profile
    env = {**profile.render_env(values), "HOME": turn_dir.home}
    if profile.home == "turn":
        env.update({"RUNNER_CD": turn_dir.workdir, "PWD": turn_dir.workdir})
    if profile.model is not None:
        env["RUNNER_MODEL_PORT"] = str(profile.model.port)
    return ContainerSpec(
        image_id=req.image.image_id,
        argv=profile.render_argv(values),
        env=env,
        turn_dir=turn_dir.host,
        # the run's lease says whether it is live, for `runner gc` (runner.sandbox.lease)
        labels={RUN_LABEL: req.run_id, CELL_LABEL: execution_id, "runner.harness": profile.id,
                **lease_labels(req.run_id)},
        stdin=_stdin_for(profile, prompt, values),
        keep_stdin_open=profile.prompt.keep_stdin_open,
        workdir=turn_dir.workdir,
        user=turn_dir.user,
    )


def _transcript(req: TurnRequest, profile: Profile, scrubber: Scrubber) -> Transcript:
    reader = StreamReader(get_interpreter(profile.interpreter))
    tail, err_tail = Tail(), Tail(max_lines=20)
    return Transcript(
        reader, tail, err_tail,
        stdout=StreamSink(req.out_dir / "stdout.log", scrubber, tail, reader),
        stderr=StreamSink(req.out_dir / "stderr.log", scrubber, err_tail),
    )


def _model_id(profile: Profile, choice: ModelChoice) -> str | None:
    if profile.model is None:
        return None
    if choice.mode is ModelMode.LIVE and profile.model.live and profile.model.live.model:
        return profile.model.live.model
    return profile.model.scripted_model


def _stdin_for(profile: Profile, prompt: str, values: dict[str, str]) -> bytes | None:
    feed = profile.prompt
    if feed.via == "stdin-line":
        line = string.Template(feed.stdin_template).substitute(values) if feed.stdin_template else prompt
        return line.encode() + b"\n"
    if feed.via == "stdin-file":
        return prompt.encode()
    return None
