"""``runner cases`` (the matrix rows) and ``runner harnesses`` (the harnesses, and whether each can run here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, NotRequired, TypedDict

import typer

from runner.cli.render import escape, fail, listing, print_json, print_table
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
    state: str  # ok, unavailable or invalid
    why: str
    dialects: NotRequired[list[str]]  # a profile that loads: the model dialects it speaks


def harnesses(
    profiles_dir: Annotated[Path | None, typer.Option(help="Extra profiles directory.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per harness, in a list.")] = False,
) -> None:
    """List the harnesses found (their profiles: the matrix's columns), whether each loads, and whether it can run here.
    Ends with exit code 4 when one does not load (each such profile's file and field on stderr)."""
    from runner.cli.settings import profiles_dirs
    from runner.harnesses.profile import ProfileError, find_profile, known_harnesses

    rows: list[HarnessRow] = []
    invalid: list[ProfileError] = []
    search = profiles_dirs(profiles_dir)
    for harness_id in known_harnesses(search):
        try:
            p = find_profile(harness_id, search)
        except ProfileError as error:
            invalid.append(error)
            rows.append({"harness": harness_id, "label": "", "image": "", "interpreter": "", "state": "invalid",
                         "why": str(error)})
            continue
        state, why = ("unavailable", " ".join(p.unavailable.split())) if p.unavailable else ("ok", "")
        rows.append({"harness": p.id, "label": p.label, "image": p.image, "interpreter": p.interpreter,
                     "state": state, "why": why, "dialects": p.model.speaks if p.model else []})
    if as_json:
        print_json(json.dumps(rows, ensure_ascii=False))
    else:
        print_harnesses(rows)
    if invalid:  # listed, then the exit code an unusable profile ends any command with (its file and field)
        fail(Exit.PROFILE, "\n".join(str(error) for error in invalid))


def print_harnesses(rows: list[HarnessRow]) -> None:
    """One line a harness; the state and why last, since why is the long free text."""
    table = listing("harness", "label", "image", "interpreter", "state")
    colour = {"ok": "green", "unavailable": "yellow", "invalid": "red"}
    for row in rows:
        shown = f"[{colour[row['state']]}]{row['state']}[/]" + (f": {escape(row['why'])}" if row["why"] else "")
        table.add_row(row["harness"], escape(row["label"]), row["image"], row["interpreter"], shown)
    print_table(table)
