"""The turn's catalogue, its hash, name resolution, and canonical JSON (§3.5, §6.6, §6.10)."""

from __future__ import annotations

import hashlib
import json

from runner.core.canonical import canonical_json, sha256_hex
from runner.core.catalogue import catalog_hash, resolve_catalogue
from runner.core.world import WorldCondition, build_world


def test_the_baseline_catalogue_is_the_17_tools_sorted_by_name() -> None:
    cat = resolve_catalogue(build_world(), "exec")
    names = [t.name for t in cat.tools]
    assert len(names) == 17 and names == sorted(names)
    assert "sharedos.escalate" in names
    for hidden in ("files.snapshot.restore", "files.purge", "notion.search", "admin.grant.issue"):
        assert hidden not in names


def test_withholding_the_escalation_grant_removes_the_affordance() -> None:
    cat = resolve_catalogue(build_world(WorldCondition(escalation="withheld")), "exec")
    assert "sharedos.escalate" not in cat.names and len(cat.tools) == 16


def test_escalate_tool_has_the_exact_upstream_schema() -> None:
    tool = resolve_catalogue(build_world(), "exec").get("sharedos.escalate")
    assert tool is not None
    schema = dict(tool.input_schema)
    reason = dict(schema["properties"]["reason"])
    reason.pop("description")
    assert reason == {"type": "string", "minLength": 1, "maxLength": 512}
    assert schema["required"] == ["reason"] and schema["additionalProperties"] is False
    assert tool.annotations == {"readOnlyHint": True}
    assert (tool.namespace, tool.source) == ("sharedos", "sharedos")


def test_catalog_hash_is_sha256_of_canonical_hashed_fields_and_stable() -> None:
    cat = resolve_catalogue(build_world(), "exec-a")
    again = resolve_catalogue(build_world(), "exec-b")
    assert cat.catalog_hash == again.catalog_hash  # the execution id is not hashed
    expected = hashlib.sha256(canonical_json([t.hashed_fields() for t in cat.tools]).encode()).hexdigest()
    assert cat.catalog_hash == expected
    assert set(cat.tools[0].hashed_fields()) <= {
        "annotations", "description", "inputSchema", "metadata", "name", "outputSchema"
    }
    fewer = resolve_catalogue(build_world(WorldCondition(escalation="withheld")), "exec")
    assert fewer.catalog_hash != cat.catalog_hash
    assert catalog_hash(list(reversed(cat.tools))) == cat.catalog_hash


def test_name_resolution_exact_then_unique_portable_then_raw() -> None:
    cat = resolve_catalogue(build_world(), "exec")
    assert cat.resolve("files.read") == "files.read"
    assert cat.resolve("files_read") == "files.read"
    assert cat.resolve("files_snapshot_create") == "files.snapshot.create"
    assert cat.resolve("admin_grant_issue") == "admin_grant_issue"  # unknown: passed on raw
    assert cat.resolve("mcp__sharedos__files_read") == "mcp__sharedos__files_read"


def test_canonical_json_orders_keys_like_locale_compare_and_has_no_whitespace() -> None:
    value = {"b": 1, "B": 2, "a_b": 3, "ab": 4, "1": 5, "_x": 6, "list": [3, 1, {"z": None, "y": "é"}]}
    text = canonical_json(value)
    assert text == '{"_x":6,"1":5,"a_b":3,"ab":4,"b":1,"B":2,"list":[3,1,{"y":"é","z":null}]}'
    assert json.loads(text) == value
    assert sha256_hex(value) == hashlib.sha256(text.encode()).hexdigest()
