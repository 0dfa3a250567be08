"""Tool policy measured on the wire (ADR 0027, version "2"), on the real tool lists of every runnable column.

``tests/golden/tool-lists.json`` holds, per column, the tool list of each distinct request of one scripted
escalation turn (``runner exec --harness <id> --case escalation --model scripted``, main at 4669fa6, 2026-12-06),
in the exchange log's entry shape with every description and schema dropped; plus the prototypes of issue 32
(Vibe 3) from its branch's own run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runner.model.names import ExposedTool
from runner.model.tool_policy import (
    MAX_LOCAL,
    MAX_NAME_CHARS,
    MAX_REQUEST_TOOLS,
    PROXIES,
    REVIEWED_PROXIES,
    OfferedTools,
    ToolPolicy,
    compare_policies,
    measure_inventory,
    measure_policy,
    offered_in_log,
    offered_in_request,
    other_server,
    recorded_name,
    tool_policy,
)

LISTS: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parents[1] / "golden" / "tool-lists.json").read_text(encoding="utf-8"))
RUNNABLE = ["claude-code", "cline", "codex", "copilot", "deepseek", "droid", "gemini", "kilo", "kimi", "model",
            "opencode", "pi", "pi-adapter", "pi-direct", "qwen", "vibe"]  # every runnable column with a model

# column: (mode, inventory, how many of our tools it names, its local tools (or their count), outside endpoints)
EXPECTED: dict[str, tuple[str, str, int, Any, list[str]]] = {
    "claude-code": ("broker-only", "complete", 17, [], []),  # --tools "" --strict-mcp-config
    "pi-direct": ("broker-only", "complete", 17, [], []),
    "model": ("broker-only", "complete", 17, [], []),  # runner's own agent loop
    "codex": ("mixed", "complete", 17, 15, ["hosted:web_search"]),
    "cline": ("mixed", "complete", 17, 25, []),
    "copilot": ("mixed", "complete", 17, 17, []),
    "deepseek": ("mixed", "complete", 17, 25, []),
    "gemini": ("mixed", "complete", 17, 15, []),
    "kilo": ("mixed", "complete", 17, 16, []),
    "kimi": ("mixed", "complete", 17, 25, []),
    "opencode": ("mixed", "complete", 17, 10, []),
    "vibe": ("mixed", "complete", 17, 9, []),  # 2.26 legacy harness: our tools direct, beside its own
    "droid": ("mixed", "unknown", 2, ["ToolSearch"], []),  # the loader: what it can load is not listed
    "pi": ("mixed", "unknown", 0, ["codemode"], []),  # an unreviewed proxy is local code
    "pi-adapter": ("mixed", "unknown", 0, ["mcp", "mcpScript", "mcp__sharedos"], []),
    "qwen": ("mixed", "unknown", 17, 14, []),
    "vibe-3-prototype": ("mixed", "unknown", 0, 10, []),
}


def policy_of(column: str, **kwargs: Any) -> tuple[ToolPolicy, Any]:
    return measure_policy(LISTS[column]["entries"], **kwargs)


def test_every_runnable_column_has_its_real_tool_list_here() -> None:
    assert set(RUNNABLE) <= set(LISTS) and set(RUNNABLE) <= set(EXPECTED)


@pytest.mark.parametrize("column", sorted(EXPECTED))
def test_each_columns_policy_from_what_it_offered_its_model(column: str) -> None:
    mode, inventory, managed, local, external = EXPECTED[column]
    policy, measured = policy_of(column)
    assert (policy.mode, policy.inventory) == (mode, inventory)
    assert len(measured.managed) == managed
    assert (list(policy.harness_local) if isinstance(local, list) else len(policy.harness_local)) == local
    assert list(policy.external_direct) == external
    assert policy.managed_mcp == ("sharedos",)
    assert policy.evidence and all(e.startswith("model-exchanges.jsonl#seq=") for e in policy.evidence)
    body = policy.to_json()
    assert list(body) == ["version", "mode", "inventory", "managedMcp", "harnessLocal", "externalDirect", "evidence"]
    assert body["version"] == "2" and ToolPolicy.from_json(body) == policy


def test_the_local_tools_named_are_the_clis_own() -> None:
    codex, _ = policy_of("codex")
    assert {"exec_command", "write_stdin", "multi_agent_v1/spawn_agent", "list_mcp_resources"} <= set(
        codex.harness_local)
    gemini, _ = policy_of("gemini")
    assert {"run_shell_command", "write_file", "web_fetch", "google_web_search"} <= set(gemini.harness_local)
    _, vibe3 = policy_of("vibe-3-prototype")
    assert {"run_typescript", "search_tool_functions", "bash", "edit"} <= set(vibe3.local)
    assert set(vibe3.proxies) == {"run_typescript", "search_tool_functions"}


def test_a_side_request_without_tools_adds_nothing_but_its_evidence() -> None:
    policy, inventory = policy_of("opencode")
    assert inventory.requests == 2 and policy.evidence == ("model-exchanges.jsonl#seq=1",
                                                           "model-exchanges.jsonl#seq=2")


def test_a_reviewed_proxy_counts_as_managed_and_its_review_is_cited() -> None:
    assert REVIEWED_PROXIES == {}  # runner ships none reviewed
    review = {"codemode": "runner/harnesses/pi/README.md#a-review-of-codemode"}
    policy, inventory = policy_of("pi", reviewed=review, extra_evidence=["image:sha256:abc", "cli:pi 1.6.0"])
    assert (policy.mode, policy.inventory, policy.harness_local) == ("broker-only", "complete", ())
    assert policy.evidence == ("image:sha256:abc", "cli:pi 1.6.0",
                               "review:codemode:runner/harnesses/pi/README.md#a-review-of-codemode",
                               "model-exchanges.jsonl#seq=1")
    assert inventory.reviewed == review
    # a review of one proxy is not a review of another
    adapter, _ = policy_of("pi-adapter", reviewed=review)
    assert adapter.mode == "mixed" and "codemode" not in adapter.harness_local


def test_hosted_and_outside_tools_in_every_dialect() -> None:
    responses = offered_in_request("openai-responses", {"tools": [
        {"type": "function", "name": "shell"}, {"type": "web_search"}, {"type": "file_search"},
        {"type": "local_shell"}, {"type": "mcp", "server_label": "github", "server_url": "https://x"},
        {"type": "namespace", "name": "mcp__github", "tools": [{"type": "function", "name": "create_issue"}]},
        {"type": "custom", "name": "apply_patch"}]}, "r#1")
    assert responses.names == ("shell", "mcp__github/create_issue", "apply_patch", "local_shell",
                               "hosted:web_search", "hosted:file_search", "mcp:github")
    anthropic = offered_in_request("anthropic-messages", {"tools": [
        {"name": "Bash", "input_schema": {}}, {"type": "web_search_20250305", "name": "web_search"},
        {"type": "bash_20250124", "name": "bash"}, {"name": "mcp__sharedos__files_read", "defer_loading": True},
        {"name": "mcp__github__create_issue"}], "mcp_servers": [{"type": "url", "name": "linear", "url": "u"}]},
        "r#2")
    assert anthropic.names == ("Bash", "bash", "mcp__github__create_issue", "mcp__sharedos__files_read",
                               "hosted:web_search", "mcp:linear")
    gemini = offered_in_request("gemini", {"tools": [{"functionDeclarations": [{"name": "mcp_sharedos_files.read"}]},
                                                     {"googleSearch": {}}, {"codeExecution": {}}]}, "r#3")
    assert gemini.names == ("mcp_sharedos_files.read", "hosted:googleSearch", "hosted:codeExecution")
    chat = offered_in_request("openai-chat", {"tools": [{"type": "function", "function": {"name": "bash"}},
                                                        {"type": "web_search"}]}, "r#4")
    assert chat.names == ("bash", "hosted:web_search")
    inventory = measure_inventory([responses, anthropic, gemini, chat])
    assert inventory.external == ("hosted:codeExecution", "hosted:file_search", "hosted:googleSearch",
                                  "hosted:web_search", "mcp:github", "mcp:linear")
    assert inventory.managed == ("mcp__sharedos__files_read", "mcp_sharedos_files.read")
    assert tool_policy(inventory).mode == "mixed"


def test_another_mcp_servers_tool_is_named_by_its_server_where_the_name_says_so() -> None:
    assert other_server(ExposedTool("mcp__github__create_issue"), "sharedos") == "github"
    assert other_server(ExposedTool("create_issue", "mcp__github"), "sharedos") == "github"
    assert other_server(ExposedTool("mcp_github_create_issue"), "sharedos") == "github"
    assert other_server(ExposedTool("mcp__sharedos__files_read"), "sharedos") is None
    assert other_server(ExposedTool("spawn_agent", "multi_agent_v1"), "sharedos") is None
    assert other_server(ExposedTool("github_create_issue"), "sharedos") is None  # no mcp prefix: counted local


def test_an_inventory_that_cannot_be_complete() -> None:
    nothing = measure_inventory([])
    assert not nothing.complete and tool_policy(nothing).to_json() == {
        "version": "2", "mode": "unknown", "inventory": "unknown", "managedMcp": ["sharedos"], "harnessLocal": [],
        "externalDirect": [], "evidence": []}
    cut = OfferedTools("log#seq=2", readable=False)
    ours = OfferedTools("log#seq=1", (ExposedTool("mcp__sharedos__files_read"),))
    partial = measure_inventory([ours, cut])
    assert partial.gaps == ("log#seq=2: its tool list could not be read",)
    assert (tool_policy(partial).mode, tool_policy(partial).inventory) == ("unknown", "unknown")
    assert tool_policy(measure_inventory([ours])).mode == "broker-only"
    truncated = offered_in_log([{"seq": 3, "dialect": "openai-chat", "request": {
        "method": "POST", "path": "/v1/chat/completions", "body": {"truncated": "over the bound", "text": "{"}}}])
    assert truncated == [OfferedTools("model-exchanges.jsonl#seq=3", readable=False)]


def test_only_generation_requests_are_read_from_a_log() -> None:
    entries = [{"seq": 1, "dialect": "openai-chat", "request": {"method": "GET", "path": "/v1/models", "body": None}},
               {"seq": 2, "dialect": "gemini", "request": {"method": "POST", "path": "/v1beta/models/m:countTokens",
                                                           "body": {"contents": []}}},
               {"seq": 3, "dialect": None, "request": {"method": "HEAD", "path": "/api/hello", "body": None}}]
    assert offered_in_log(entries) == []


def test_the_record_refuses_what_version_2_refuses() -> None:
    with pytest.raises(ValueError, match="local tool or outside endpoint"):
        ToolPolicy("mixed", "unknown", ("sharedos",))
    with pytest.raises(ValueError, match="complete inventory"):
        ToolPolicy("broker-only", "unknown", ("sharedos",))
    with pytest.raises(ValueError, match="cites its evidence"):
        ToolPolicy("broker-only", "complete", ("sharedos",))
    with pytest.raises(ValueError, match="names no local tool"):
        ToolPolicy("unknown", "unknown", ("sharedos",), ("bash",))
    with pytest.raises(ValueError, match="managedMcp"):
        ToolPolicy("unknown", "unknown", ())
    with pytest.raises(ValueError, match="only version '2'"):
        ToolPolicy.from_json({"version": "1", "mode": "strict"})
    with pytest.raises(ValueError, match="not version 2's"):
        ToolPolicy.from_json({"version": "2", "mode": "hybrid", "inventory": "unknown"})  # never relabelled
    assert ToolPolicy.from_json(None) is None  # an older record without one: unknown to upstream


def test_a_cli_bump_that_adds_a_built_in_tool_is_a_finding() -> None:
    before, _ = policy_of("pi-direct")
    entries = json.loads(json.dumps(LISTS["pi-direct"]["entries"]))
    entries[0]["request"]["body"]["tools"].append({"type": "function", "function": {"name": "bash"}})
    after, _ = measure_policy(entries)
    change = compare_policies(before, after)
    assert change.changed and change.added_local == ("bash",)
    assert change.findings() == ["tool policy broker-only -> mixed", "new local tools: bash"]
    assert not compare_policies(before, before).changed and compare_policies(before, before).findings() == []
    codex, _ = policy_of("codex")
    dropped = ToolPolicy("mixed", "complete", ("sharedos",), codex.harness_local, (), codex.evidence)
    assert compare_policies(codex, dropped).findings() == ["outside endpoints gone: hosted:web_search"]


def test_every_proxy_runner_knows_is_documented() -> None:
    assert all(description for description in PROXIES.values())
    assert {"mcp", "codemode", "tool_call", "ToolSearch", "run_typescript"} <= set(PROXIES)


def test_a_hostile_tool_list_is_read_bounded_and_recorded_with_short_printable_names() -> None:
    """What a CLI sent its model is its own: a name of 100,000 characters, escape sequences, a line break, a
    right-to-left override, a lone surrogate (the intake makes it U+FFFD) are recorded short and shown, never as
    sent; a list longer than runner reads makes the inventory incomplete, and the record stays within the ADR's
    bounds however many tools were offered."""
    odd = ["x" * 100_000, "\x1b[2J\x1b]8;;https://evil.invalid/\x07click", "two\nlines\tand a tab", "\u202eevil",
           "\ud83d", "\x9b31m"]
    body = {"model": "m", "messages": [], "tools": [{"type": "function", "function": {"name": n}} for n in odd]}
    offered = offered_in_request("openai-chat", body, "log#seq=1")
    names = [t.name for t in offered.tools]
    assert names[0] == "x" * (MAX_NAME_CHARS - 1) + "…" and offered.cut == 0
    assert names[1:] == ["\\x1b[2J\\x1b]8;;https://evil.invalid/\\x07click", "two\\nlines\\tand a tab",
                         "\\u202eevil", "\\ud83d", "\\x9b31m"]
    assert all(len(n) <= MAX_NAME_CHARS and n.isprintable() for n in names)
    assert recorded_name("sharedos_files.read") == "sharedos_files.read"  # a real name is kept as it is

    many = {"tools": [{"type": "function", "function": {"name": f"t{i:06d}"}} for i in range(30_000)]}
    requests = [offered_in_request("openai-chat", many, f"log#seq={n}") for n in range(3)]
    assert [(len(r.tools), r.cut) for r in requests] == [(MAX_REQUEST_TOOLS, 30_000 - MAX_REQUEST_TOOLS)] * 3
    inventory = measure_inventory([offered, *requests])
    assert not inventory.complete and inventory.gaps[0] == f"log#seq=0: {30_000 - MAX_REQUEST_TOOLS} of its tools " \
        f"past the {MAX_REQUEST_TOOLS} runner reads"
    policy = tool_policy(inventory, ["cli:1"])
    assert (policy.mode, policy.inventory, len(policy.harness_local)) == ("mixed", "unknown", MAX_LOCAL)
