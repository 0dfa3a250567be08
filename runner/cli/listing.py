"""``runner cases`` (the matrix rows) and ``runner harnesses`` (the harnesses, and whether each can run here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, NotRequired, TypedDict

import typer

from runner.cli.render import escape, fail, listing, print_json, print_table, say
from runner.core.outcomes import JsonValue
from runner.errors import Exit


def cases(as_json: Annotated[bool, typer.Option("--json", help="One JSON object per row, in a list.")] = False) -> None:
    """List the cases (matrix rows) this runner can run."""
    from runner.conformance.cases import CASES

    if as_json:
        print_json(json.dumps([
            {"case": c.id, "conditions": [d.id for d in c.conditions], "kind": c.kind, "invariant": c.invariant,
             "notImplemented": c.not_implemented}
            for c in CASES.values()
        ], ensure_ascii=False))
        return
    table = listing("case", "condition", "expected turn", "invariant")
    for case in CASES.values():
        expect = case.condition.expect_turn
        table.add_row(case.id, case.condition.id, "/".join(expect) if expect else "-", escape(case.invariant))
    print_table(table)


class HarnessRow(TypedDict):
    """One harness as ``runner harnesses --json`` lists it."""

    harness: str
    label: str
    image: str
    interpreter: str
    source: str  # where it came from: built-in, a plugin (its distribution), or a directory of the search path
    path: str  # its profile file (empty for a plugin set aside)
    state: str  # ok, unavailable or invalid
    why: str
    dialects: NotRequired[list[str]]  # a profile that loads: the model dialects it speaks
    toolPolicy: NotRequired[dict[str, JsonValue]]  # a profile that loads: the tool policy it declares (ADR 0027)


def harnesses(
    profiles_dir: Annotated[Path | None, typer.Option(help="Look here first ($RUNNER_PROFILES_DIR too).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per harness, in a list.")] = False,
) -> None:
    """List the harnesses found (their profiles: the matrix's columns), where each came from, whether it loads, and
    whether it can run here; the places profiles are looked up in, in order, go to stderr. A plugin that cannot be
    used is listed by its name, invalid. Ends with exit code 4 when one does not load (each such profile's file and
    field, or plugin and why, on stderr)."""
    from runner.cli.settings import profile_search
    from runner.harnesses.interpreters import BROKEN, declared_policy, package_source
    from runner.harnesses.profile import ProfileError, find_profile, known_harnesses, looked_in, profile_dirs

    rows: list[HarnessRow] = []
    problems: list[str] = []
    labelled = profile_search(profiles_dir)
    search = [path for _, path in labelled]

    def source_of(path: str) -> str:
        folder = Path(path).parent
        return package_source(path) or next((label for label, d in labelled if d == folder), str(folder))

    for harness_id in known_harnesses(search):
        path = str(next(d / f"{harness_id}.yaml" for d in profile_dirs(search) if (d / f"{harness_id}.yaml").is_file()))
        try:
            p = find_profile(harness_id, search)
        except ProfileError as error:
            problems.append(str(error))
            rows.append({"harness": harness_id, "label": "", "image": "", "interpreter": "", "source": source_of(path),
                         "path": path, "state": "invalid", "why": str(error)})
            continue
        state, why = ("unavailable", " ".join(p.unavailable.split())) if p.unavailable else ("ok", "")
        rows.append({"harness": p.id, "label": p.label, "image": p.image, "interpreter": p.interpreter,
                     "source": source_of(p.source), "path": p.source, "state": state, "why": why,
                     "dialects": p.model.speaks if p.model else [], "toolPolicy": declared_policy(p.id).to_json()})
    for name, plugin in sorted(BROKEN.items()):
        problems.append(str(plugin))
        rows.append({"harness": name, "label": "", "image": "", "interpreter": "", "source": plugin.source,
                     "path": "", "state": "invalid", "why": plugin.problem})
    if as_json:
        print_json(json.dumps(rows, ensure_ascii=False))
    else:
        print_harnesses(rows)
        say("profiles are looked up in, in order: " + "; ".join(str(d) for d in looked_in(search)))
    if problems:  # listed, then the exit code an unusable profile ends any command with (its file and field)
        fail(Exit.PROFILE, "\n".join(problems))


def print_harnesses(rows: list[HarnessRow]) -> None:
    """One line a harness; the tool policy it declares (ADR 0027; ``-`` for one that does not load); the state and
    why last, since why is the long free text."""
    table = listing("harness", "label", "image", "interpreter", "source", "policy", "state")
    colour = {"ok": "green", "unavailable": "yellow", "invalid": "red"}
    for row in rows:
        shown = f"[{colour[row['state']]}]{row['state']}[/]" + (f": {escape(row['why'])}" if row["why"] else "")
        declared = row.get("toolPolicy")
        table.add_row(row["harness"], escape(row["label"]), row["image"], row["interpreter"], escape(row["source"]),
                      str(declared["mode"]) if declared else "-", shown)
    print_table(table)
