"""What a bench run hands back: the JSON document (``bench-results.json``) and the table printed from it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict

from runner.bench.figures import INFO, MISS, NOT_MEASURED, PASS, Figure, FigureRecord
from runner.bench.machine import MachineInfo
from runner.core.outcomes import JsonValue

if TYPE_CHECKING:
    from rich.table import Table

SCHEMA = "runner.bench/1"


# the functional form: "pass" is a keyword, so the class form cannot name that key
Summary = TypedDict("Summary", {"pass": int, "miss": int, "notMeasured": int, "missed": list[str]})


class BenchDocument(TypedDict):
    """``bench-results.json``."""

    schema: str
    startedAt: str
    elapsedSeconds: float
    machine: MachineInfo
    versions: dict[str, JsonValue]
    options: dict[str, JsonValue]
    figures: list[FigureRecord]
    summary: Summary


def document(
    figures: Sequence[Figure],
    machine: MachineInfo,
    versions: dict[str, JsonValue],
    options: dict[str, JsonValue],
    started_at: str,
    elapsed: float,
) -> BenchDocument:
    """The JSON written to ``--out``."""
    verdicts = [f.verdict for f in figures]
    return {
        "schema": SCHEMA,
        "startedAt": started_at,
        "elapsedSeconds": round(elapsed, 1),
        "machine": machine,
        "versions": versions,
        "options": options,
        "figures": [f.to_json() for f in figures],
        "summary": {
            "pass": verdicts.count(PASS),
            "miss": verdicts.count(MISS),
            "notMeasured": verdicts.count(NOT_MEASURED),
            "missed": [f.key for f in figures if f.verdict == MISS],
        },
    }


def fmt(value: float, unit: str) -> str:
    digits = 3 if abs(value) < 10 else 1
    return f"{value:.{digits}f} {unit}".strip()


def table(doc: BenchDocument) -> Table:
    """A rich ``Table`` of the document's figures: value, target and verdict side by side, machine in the caption."""
    from rich.table import Table

    machine, versions = doc["machine"], doc["versions"]
    engine = machine.get("docker", {})
    memory = machine.get("memoryMiB")
    caption = (
        f"{machine.get('cores')} cores · {'?' if memory is None else f'{memory:.0f}'} MiB · "
        f"kernel {machine.get('kernel')} · "
        f"docker {engine.get('server')} (API {engine.get('api')}, cgroup v{engine.get('cgroup')})\n"
        f"runner {versions.get('runner')} · mcp {versions.get('mcp')} · python {versions.get('python')} · "
        f"docker-py {versions.get('dockerPy')}{' · --quick' if doc['options'].get('quick') else ''} · "
        f"{doc['elapsedSeconds']:.0f} s"
    )
    result = Table("#", "figure", "value", "target", "verdict", "how / note", title="runner bench", caption=caption)
    style = {PASS: "green", MISS: "red", NOT_MEASURED: "yellow", INFO: "dim"}
    for f in doc["figures"]:
        value = "—" if f["value"] is None else fmt(f["value"], f["unit"])
        target = "" if f["target"] is None else f"{f['target']['op']} {f['target']['threshold']:g}"
        words = f["how"] + (f" ({f['note']})" if f["note"] and f["how"] else f["note"])
        result.add_row(str(f["item"]), f["label"], value, target, f"[{style[f['verdict']]}]{f['verdict']}[/]", words)
    return result
