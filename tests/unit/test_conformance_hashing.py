"""The hashes that pin a run (§6.6) and the comparability check (§8 item 14)."""

from __future__ import annotations

import dataclasses
import hashlib

import pytest
from pydantic import ValidationError

from runner.conformance.cases import CASES, get_case
from runner.conformance.hashing import (
    JudgeVersion,
    Pins,
    PromptEntry,
    case_set_hash,
    comparable,
    current_pins,
    evaluator_hash,
    judge_version_text,
    prompt_set_hash,
    same_judge_version,
    spec_hash,
    strip_descriptions,
    world_description,
    world_set_hash,
)
from runner.conformance.jsonmodel import JsonModel
from runner.core.canonical import canonical_json


def sha(value: object) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


def test_descriptions_are_stripped_at_any_depth() -> None:
    value = {"description": 1, "a": [{"description": 2, "b": {"description": 3, "c": 4}}]}
    assert strip_descriptions(value) == {"a": [{"b": {"c": 4}}]}


def test_case_set_hash_ignores_prose_and_sees_declarations() -> None:
    cases = list(CASES.values())
    base = case_set_hash(cases)
    assert base == case_set_hash() == case_set_hash(CASES)
    assert len(base) == 64 and base == base.lower()
    escalation = get_case("escalation")
    reworded = dataclasses.replace(
        escalation, conditions=(dataclasses.replace(escalation.condition, description="other words"),)
    )
    assert case_set_hash([reworded if c.id == "escalation" else c for c in cases]) == base
    attempt = dataclasses.replace(escalation.attempts[1], arguments={"path": ["Workspace", "other.md"]})
    changed = dataclasses.replace(escalation, attempts=(escalation.attempts[0], attempt))
    assert case_set_hash([changed if c.id == "escalation" else c for c in cases]) != base
    assert case_set_hash(cases[::-1]) != base  # order is part of the declaration


def test_world_set_hash_covers_every_condition_and_keeps_tool_prose() -> None:
    replayed = get_case("replayed-grant")
    expected = sha([
        {"case": "replayed-grant", "conditions": [
            {"condition": c.id, "world": world_description(c)} for c in replayed.conditions
        ]}
    ])
    assert world_set_hash([replayed]) == expected
    world = world_description(replayed.condition)
    assert world["condition"] == {"revoked": ["grant-read"]}
    assert world["namespaceId"] == "world-conformance"
    assert any(g["id"] == "grant-root-files" for g in world["grants"])  # roots included
    assert all("description" in t for t in world["tools"])  # prose included
    assert world_set_hash([get_case("escalation")]) != world_set_hash([get_case("escalation-refused")])


def test_prompt_set_spec_and_evaluator_hashes() -> None:
    assert prompt_set_hash([]) is None
    entry = PromptEntry("escalation", "baseline", 1, "ab" * 32)
    assert prompt_set_hash([entry]) == sha([{"case": "escalation", "condition": "baseline", "turn": 1,
                                            "promptHash": "ab" * 32}])
    assert prompt_set_hash([entry.to_json()]) == prompt_set_hash([entry])
    escalation = get_case("escalation")
    assert spec_hash(escalation, escalation.condition) == sha(
        {"case": "escalation", "move": escalation.to_json()["move"], "condition": "baseline"}
    )
    # the version is the string upstream's newer records write: the hash of the number 6 is what it was before
    assert evaluator_hash() == sha({"judge": "sharedos-conformance", "version": "6"})
    assert evaluator_hash() != sha({"judge": "sharedos-conformance", "version": 6})


def test_pins_name_every_difference() -> None:
    a = current_pins(prompt_hash="p", catalog_hash="sha256:c", image_id="img", behaviour="cooperative")
    assert a.judge_version == "6" and a.case_set_hash == case_set_hash()
    assert comparable(a, a) == []
    b = dataclasses.replace(a, prompt_hash="q", image_id=None, extra={"cliVersion": "2"})
    assert comparable(a, b) == ["cliVersion", "imageId", "promptHash"]
    assert comparable(a.to_json(), b) == ["cliVersion", "imageId", "promptHash"]
    assert set(Pins("x", "y").to_json()) == {"caseSetHash", "worldSetHash", "judgeVersion"}


def test_an_older_records_judge_version_number_is_the_same_judge_as_the_newer_string() -> None:
    new = current_pins(image_id="img").to_json()
    assert new["judgeVersion"] == "6"
    old = {**new, "judgeVersion": 6}  # what a record written before the version became a string says
    assert comparable(old, new) == [] and comparable(new, old) == []
    assert comparable({**new, "judgeVersion": 5}, new) == ["judgeVersion"]
    assert comparable({**new, "judgeVersion": "5"}, old) == ["judgeVersion"]
    assert comparable({k: v for k, v in new.items() if k != "judgeVersion"}, old) == ["judgeVersion"]
    assert judge_version_text(6) == judge_version_text("6") == "6"
    assert judge_version_text(True) is None and judge_version_text(None) is None and judge_version_text("") is None
    assert same_judge_version(6, "6") and same_judge_version(None, None) and not same_judge_version(5, "6")


def test_a_typed_record_reads_either_form_and_holds_the_string() -> None:
    class Pinned(JsonModel):
        judge_version: JudgeVersion | None = None

    assert Pinned.model_validate({"judgeVersion": 6}).judge_version == "6"
    assert Pinned.model_validate({"judgeVersion": "6"}).to_dict() == {"judgeVersion": "6"}
    assert Pinned.model_validate({}).judge_version is None
    with pytest.raises(ValidationError):
        Pinned.model_validate({"judgeVersion": True})


# The hashes of today's case set and world set. Issue 10 pinned them when the case data and the world were split
# into packages; issue 19 moved them on purpose (the seven rows the kernel now serves are armed rather than
# declared, 1.0.0-preview's two rows are added, the route-lease expectation is narrowed). A move that changes a
# declaration, its order or a world moves these; the full declaration hash (prose included) catches a reworded
# description too.
PINNED_CASE_SET_HASH = "21c42c2e4159f638261b2a14ecb07c610281f8aef09ca7b74d31c088208771c2"
PINNED_WORLD_SET_HASH = "98cf54fcdb7248470b9895b27882e955e0e5dc51807b34e7bd13571d0a760c7c"
PINNED_DECLARATION_HASH = "29303c4e8d19cb17fc42d342408d45daf964cd93706e63bdc89d9d3e1ed34112"
PINNED_ORDER = (
    "forged-grant", "hidden-tool", "host-policy-denied", "read-to-mutation", "expired-grant", "replayed-grant",
    "revoked-mid-turn", "expired-mid-turn", "namespace-crossing", "bounded-grant", "usage-store-unavailable",
    "authority-unavailable", "audit-unavailable", "tool-ceiling-escape", "invalid-tool-result", "budget-exceeded",
    "turn-draining", "grant-material", "over-broad-delegation", "rollback-unavailable", "rollback-out-of-scope",
    "broker-ungranted",
    "broker-out-of-scope", "catalogue-moved-mid-turn", "escalation", "escalation-refused", "runtime-crashed",
    "route-lease-revoked", "record-completeness", "typed-governed-views", "replay-freshness",
)


def test_the_case_set_and_world_set_hashes_are_pinned() -> None:
    assert tuple(CASES) == PINNED_ORDER
    assert case_set_hash() == PINNED_CASE_SET_HASH
    assert world_set_hash() == PINNED_WORLD_SET_HASH
    assert sha([c.to_json() for c in CASES.values()]) == PINNED_DECLARATION_HASH
