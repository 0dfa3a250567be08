"""Name matching: every scheme a measured CLI uses, both proxies, and what is not offered."""

from __future__ import annotations

import pytest

from runner.harnesses.droid.naming import NAMING as DROID
from runner.harnesses.interpreters import PACKAGES
from runner.model.names import (
    BUILT_IN,
    ExposedTool,
    carries_server_tools,
    direct_candidates,
    resolve_tool,
)

ARGS = {"path": ["Workspace", "policy.md"]}


def flat(*names: str) -> list[ExposedTool]:
    return [ExposedTool(n) for n in names]


@pytest.mark.parametrize(
    ("exposed", "scheme", "name", "namespace"),
    [
        (flat("Bash", "mcp__sharedos__files_read"), "claude", "mcp__sharedos__files_read", None),  # Claude, Qwen
        ([ExposedTool("exec_command"), ExposedTool("files_read", "mcp__sharedos")], "codex", "files_read",
         "mcp__sharedos"),
        (flat("read", "sharedos_files_read", "mcp"), "server-prefix", "sharedos_files_read", None),  # opencode, Pi
        (flat("read_file", "mcp_sharedos_files_read"), "gemini", "mcp_sharedos_files_read", None),
        (flat("view", "sharedos-files-read"), "copilot", "sharedos-files-read", None),  # Copilot CLI 1.0.102
        (flat("read_files", "sharedos__files_read"), "cline", "sharedos__files_read", None),
    ],
)
def test_direct_schemes(exposed: list[ExposedTool], scheme: str, name: str, namespace: str | None) -> None:
    target = resolve_tool("files.read", ARGS, exposed)
    assert target is not None
    assert (target.scheme, target.name, target.namespace, target.proxy) == (scheme, name, namespace, False)
    assert target.arguments == ARGS
    assert target.canonical == "files.read"


def test_pi_proxy_wraps_tool_and_args() -> None:
    target = resolve_tool("files.read", ARGS, flat("read", "bash", "mcpScript", "mcp", "mcp__sharedos"))
    assert target is not None
    assert (target.scheme, target.name, target.proxy) == ("pi-proxy", "mcp", True)
    assert target.arguments == {"tool": "sharedos_files_read", "args": ARGS}


def test_pi_codemode_writes_a_script_that_calls_the_tool() -> None:
    # Pi 1.6 built-in MCP, exposure codemode (measured): the request's only tool is `codemode`
    target = resolve_tool("sharedos.escalate", {"reason": "need a human"}, flat("codemode"))
    assert target is not None
    assert (target.scheme, target.name, target.proxy) == ("pi-codemode", "codemode", True)
    assert target.arguments == {
        "code": 'return await tools.mcp__sharedos__sharedos_escalate({"reason": "need a human"});'
    }
    dotted = resolve_tool("files.read", ARGS, flat("codemode"), server="my-os")
    assert dotted is not None
    assert dotted.arguments["code"] == (
        'return await tools.mcp__my_os__files_read({"path": ["Workspace", "policy.md"]});'
    )


def test_pi_codemode_yields_to_direct_names_and_to_the_adapter_proxy() -> None:
    # a direct server declares its tools (and codemode may be active for another server)
    direct = resolve_tool("files.read", ARGS, flat("codemode", "mcp__sharedos__files_read"))
    assert direct is not None and direct.scheme == "claude"
    assert resolve_tool("sharedos.escalate", {}, flat("codemode", "mcp__sharedos__files_read")) is None
    adapter = resolve_tool("files.read", ARGS, flat("codemode", "mcp"))
    assert adapter is not None and adapter.scheme == "pi-proxy"


def test_qwen_proxy_wraps_name_and_arguments() -> None:
    target = resolve_tool("sharedos.escalate", {"reason": "r"}, flat("read_file", "tool_search", "tool_call"))
    assert target is not None
    assert (target.scheme, target.name, target.proxy) == ("qwen-proxy", "tool_call", True)
    assert target.arguments == {"name": "mcp__sharedos__sharedos_escalate", "arguments": {"reason": "r"}}


def test_direct_name_wins_over_a_proxy() -> None:
    # Qwen with alwaysLoadTools lists both the direct names and tool_call; Pi directTools lists mcp too
    qwen = resolve_tool("files.read", ARGS, flat("tool_search", "tool_call", "mcp__sharedos__files_read"))
    pi = resolve_tool("files.read", ARGS, flat("mcp", "sharedos_files_read"))
    assert qwen is not None and qwen.scheme == "claude"
    assert pi is not None and pi.scheme == "server-prefix"


def test_no_proxy_once_the_server_shows_its_tools_directly() -> None:
    # Qwen with alwaysLoadTools, Pi with directTools: a tool missing from the direct names is not offered
    assert resolve_tool("sharedos.escalate", {}, flat("mcp__sharedos__files_read", "tool_call")) is None
    assert resolve_tool("admin.grant.issue", {}, flat("sharedos_files_read", "mcp")) is None
    codex = [ExposedTool("files_read", "mcp__sharedos"), ExposedTool("mcp")]
    assert resolve_tool("sharedos.escalate", {}, codex) is None
    # through a gateway alone, every tool is callable: the model cannot know what the gateway holds
    assert resolve_tool("admin.grant.issue", {}, flat("mcp", "read")) is not None


def test_canonical_name_with_dot_is_matched_too() -> None:
    target = resolve_tool("files.read", ARGS, flat("mcp_sharedos_files.read"))
    assert target is not None and target.name == "mcp_sharedos_files.read"


def test_portable_form_is_tried_first() -> None:
    target = resolve_tool("files.read", ARGS, flat("mcp__sharedos__files.read", "mcp__sharedos__files_read"))
    assert target is not None and target.name == "mcp__sharedos__files_read"


def test_not_offered() -> None:
    assert resolve_tool("admin.grant.issue", {}, flat("mcp__sharedos__files_read")) is None
    assert resolve_tool("files.read", ARGS, []) is None
    # a namespace of another server does not count
    assert resolve_tool("files.read", ARGS, [ExposedTool("files_read", "mcp__other")]) is None
    # a bare name is not one of our schemes
    assert resolve_tool("files.read", ARGS, flat("files_read")) is None


def test_server_name_is_a_parameter() -> None:
    target = resolve_tool("files.read", ARGS, flat("mcp__lab__files_read"), server="lab")
    assert target is not None and target.name == "mcp__lab__files_read"
    assert resolve_tool("files.read", ARGS, flat("mcp__lab__files_read")) is None
    pi = resolve_tool("files.read", ARGS, flat("mcp"), server="lab")
    assert pi is not None and pi.arguments["tool"] == "lab_files_read"


def test_arguments_are_copied_not_shared() -> None:
    target = resolve_tool("files.read", ARGS, flat("mcp__sharedos__files_read"))
    assert target is not None and target.arguments == ARGS and target.arguments is not ARGS


def test_candidate_order() -> None:
    schemes = ["claude", "codex", "server-prefix", "gemini", "copilot", "cline"]
    assert [c[0] for c in direct_candidates("files.read", "s")] == schemes + schemes
    assert len(direct_candidates("echo", "s")) == 6  # no dot: one form only (and no `s_` prefix to deduplicate)
    assert direct_candidates("s.escalate", "s")[6] == ("server-prefix-deduplicated", "s_escalate", None)


def test_copilot_dashes_every_separator() -> None:
    """Copilot CLI 1.0.102 exposes ``<server>-<tool>`` with ``_`` (and ``.``) as ``-`` (measured)."""
    exposed = flat("bash", "sharedos-files-snapshot-create", "sharedos-sharedos-escalate")
    snapshot = resolve_tool("files.snapshot.create", {}, exposed)
    escalate = resolve_tool("sharedos.escalate", {"reason": "r"}, exposed)
    assert snapshot is not None and (snapshot.scheme, snapshot.name) == ("copilot", "sharedos-files-snapshot-create")
    assert escalate is not None and escalate.name == "sharedos-sharedos-escalate"
    assert carries_server_tools(flat("sharedos-files-read")) and not carries_server_tools(flat("view", "bash"))


def test_cline_names_carry_a_hash() -> None:
    """Cline 3.0.65 exposes ``<server>__<tool>_<8 hex>`` (measured)."""
    exposed = flat("read_files", "sharedos__files_read_5f40265d", "sharedos__sharedos_escalate_9381461a")
    read = resolve_tool("files.read", ARGS, exposed)
    escalate = resolve_tool("sharedos.escalate", {}, exposed)
    assert read is not None and (read.scheme, read.name) == ("cline+hash", "sharedos__files_read_5f40265d")
    assert escalate is not None and escalate.name == "sharedos__sharedos_escalate_9381461a"
    assert resolve_tool("admin.grant.issue", {}, exposed) is None


@pytest.mark.parametrize(
    ("exposed", "expected"),
    [
        ([], False),
        (flat("read_file", "write_file"), False),  # a memory agent
        (flat("mcp__sharedos__files_read"), True),
        ([ExposedTool("x", "mcp__sharedos")], True),
        ([ExposedTool("x", "multi_agent_v1")], False),
        (flat("sharedos_files_read"), True),
        (flat("mcp_sharedos_files_read"), True),
        (flat("mcp"), True),
        (flat("codemode"), True),
        (flat("tool_call"), True),
        (flat("mcp__other__files_read"), False),
        (flat("ToolSearch"), False),  # only Droid's naming defers its tools behind ToolSearch
        (flat("ToolSearch", "sharedos___files_read"), True),
    ],
)
def test_carries_server_tools(exposed: list[ExposedTool], expected: bool) -> None:
    assert carries_server_tools(exposed) is expected


def test_a_hash_suffix_added_by_normalisation_is_matched_exactly_once() -> None:
    from runner.model.names import ExposedTool, resolve_tool

    exposed = [ExposedTool("mcp__sharedos__files_read_1rtbejb"), ExposedTool("mcp__sharedos__files_read_list_0aaaaaa"),
               ExposedTool("mcp__sharedos__sharedos_escalate_0h1rjq7"), ExposedTool("tool_call")]
    target = resolve_tool("files.read", {"path": ["x"]}, exposed)
    assert target is not None and (target.name, target.scheme) == ("mcp__sharedos__files_read_1rtbejb", "claude+hash")
    escalate = resolve_tool("sharedos.escalate", {}, exposed)
    assert escalate is not None and escalate.name == "mcp__sharedos__sharedos_escalate_0h1rjq7"
    assert resolve_tool("files.stat", {}, exposed) is None  # not offered: no proxy fallback either


def test_dsh_twelve_hex_digit_suffixes_are_matched() -> None:
    from runner.model.names import ExposedTool, resolve_tool

    # measured on dsh 0.1.0-rc.8 (the MCP server still sees files.read and sharedos.escalate)
    exposed = [ExposedTool("bash"), ExposedTool("mcp__sharedos__files_read_369b5d85e292"),
               ExposedTool("mcp__sharedos__files_snapshot_create_24a5259bece4"),
               ExposedTool("mcp__sharedos__sharedos_escalate_72e183f8c537")]
    target = resolve_tool("files.read", {}, exposed)
    assert target is not None and (target.name, target.scheme) == ("mcp__sharedos__files_read_369b5d85e292",
                                                                   "claude+hash")
    escalate = resolve_tool("sharedos.escalate", {"reason": "r"}, exposed)
    assert escalate is not None and escalate.name == "mcp__sharedos__sharedos_escalate_72e183f8c537"
    assert resolve_tool("files.snapshot", {}, exposed) is None  # `_create_24a5…` is not a hash suffix
    assert resolve_tool("files.read", {}, [ExposedTool("mcp__sharedos__files_read_369b5d85e29z")]) is None


def test_a_server_prefix_already_in_the_tool_name_is_not_repeated() -> None:
    from runner.model.names import ExposedTool, resolve_tool

    exposed = [ExposedTool("mcp"), ExposedTool("sharedos_files_read"), ExposedTool("sharedos_escalate")]
    target = resolve_tool("sharedos.escalate", {"reason": "r"}, exposed)
    assert target is not None and (target.name, target.proxy) == ("sharedos_escalate", False)


def test_droid_defers_the_server_tools_behind_tool_search() -> None:
    """Droid's naming (its harness's record, ``runner/harnesses/droid/naming.py``), not the model's."""
    assert DROID.deferred is not None and BUILT_IN.deferred is None
    defers = DROID.deferred.defers
    assert defers(flat("ToolSearch"), "sharedos")
    assert defers(flat("ToolSearch", "sharedos___files_read", "sharedos___sharedos_escalate"), "sharedos")
    # Claude Code's names next to a tool called ToolSearch are not Droid's exposure
    assert not defers(flat("ToolSearch", "mcp__sharedos__files_read"), "sharedos")
    assert not defers(flat("sharedos___files_read"), "sharedos")
    assert carries_server_tools(flat("ToolSearch"), naming=DROID)
    target = resolve_tool("files.read", ARGS, flat("ToolSearch", "sharedos___files_read"), naming=DROID)
    assert target is not None and (target.scheme, target.name) == ("droid", "sharedos___files_read")
    search = DROID.deferred.load(["files.read", "sharedos.escalate", "files.read"], "sharedos")
    assert (search.name, search.arguments) == (
        "ToolSearch", {"query": "select:sharedos___files_read,sharedos___sharedos_escalate"})


def test_a_harness_naming_resolves_only_its_own_schemes() -> None:
    """The scripted model calls a tool by the harness's own naming: Codex's names are not Claude Code's."""
    codex, claude = PACKAGES["codex"].tool_naming, PACKAGES["claude_code"].tool_naming
    namespaced = [ExposedTool("files_read", "mcp__sharedos")]
    target = resolve_tool("files.read", ARGS, namespaced, naming=codex)
    assert target is not None and (target.scheme, target.namespace) == ("codex", "mcp__sharedos")
    assert resolve_tool("files.read", ARGS, namespaced, naming=claude) is None
    assert not carries_server_tools(namespaced, naming=claude) and carries_server_tools(namespaced, naming=codex)
    # a hash suffix only where the CLI adds one (Qwen, dsh, Cline)
    hashed = flat("mcp__sharedos__files_read_1rtbejb")
    assert resolve_tool("files.read", ARGS, hashed, naming=claude) is None
    assert resolve_tool("files.read", ARGS, hashed, naming=PACKAGES["qwen"].tool_naming) is not None


def test_vibe_3_reaches_the_tools_through_a_typescript_main_for_run_typescript() -> None:
    """Mistral Vibe 3.0.2's unified harness (measured): ``run_typescript`` runs ``main()``, and the MCP tools are
    ``tools.mcp_<server>.<portable>``; the request never declares them."""
    vibe = PACKAGES["vibe"].tool_naming
    exposed = flat("search_tool_functions", "run_typescript", "wait", "read_file", "write_file", "edit", "bash",
                   "skill", "todo", "unified_harness_scratchpad")
    assert carries_server_tools(exposed, naming=vibe)
    target = resolve_tool("sharedos.escalate", {"reason": "need a human"}, exposed, naming=vibe)
    assert target is not None
    assert (target.scheme, target.name, target.proxy) == ("vibe-codemode", "run_typescript", True)
    assert target.arguments == {"code": (
        'async function main() {\n  return await tools.mcp_sharedos.sharedos_escalate({"reason": "need a human"});\n}'
    )}
    other = resolve_tool("files.snapshot.create", {}, exposed, server="my-os", naming=vibe)
    assert other is not None and "tools.mcp_my_os.files_snapshot_create({})" in str(other.arguments["code"])


def test_cn_and_nanocoder_call_an_mcp_tool_by_its_own_dotted_name_and_only_a_dotted_one() -> None:
    """cn 1.5.47 and Nanocoder 1.30.0 offer an MCP tool under its own name (measured: ``files.read``,
    ``sharedos.escalate`` beside ``Read``/``read_file``); a name without a dot is never taken as the server's."""
    for package in ("cn", "nanocoder"):
        naming = PACKAGES[package].tool_naming
        exposed = flat("Read", "Bash", "read_file", "files.read", "sharedos.escalate")
        read = resolve_tool("files.read", ARGS, exposed, naming=naming)
        assert read is not None and (read.scheme, read.name, read.proxy) == ("bare", "files.read", False)
        assert resolve_tool("admin.grant.issue", {}, exposed, naming=naming) is None  # not offered
        assert resolve_tool("echo", {}, flat("echo", "files.read"), naming=naming) is None
        assert resolve_tool("files.read", ARGS, flat("files_read", "Read"), naming=naming) is None
        assert carries_server_tools(exposed, naming=naming)
        assert not carries_server_tools(flat("Read", "Bash", "echo", "files_read"), naming=naming)
