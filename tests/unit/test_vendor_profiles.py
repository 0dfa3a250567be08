"""Every shipped harness profile loads, renders with a full placeholder set, and carries the measured
traps of its CLI (shared/reference/vendor-clis.md) -- so removing one is a failing test, not a
silent regression found in a container."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from runner.harnesses.interpreters import INTERPRETERS, PACKAGES
from runner.harnesses.profile import PLACEHOLDERS, Profile, load_profile, shipped_profile, shipped_profiles
from runner.images.tree import INSTALLED_ROOT, image_dir, image_dirs

# the vendor CLIs: every shipped profile read by an interpreter a harness package provides (not runner's own
# jsonl, nor exit-code, which reads nothing a CLI prints)
VENDORS = [p.stem for p in shipped_profiles()
           if load_profile(p).interpreter in {name for package in PACKAGES.values() for name in package.interpreters}]
PROMPT = 'Call `files.read` with arguments: {"path": "a b"}; it costs $5 and is "quoted" \\ done.'
VALUES = {
    "prompt": PROMPT,
    "prompt_json": json.dumps(PROMPT),
    "turn_dir": "/run/runner",
    "mcp_socket": "/run/runner/mcp.sock",
    "script": "/run/runner/script.json",
    "home": "/run/runner/home",
    "model_url": "http://127.0.0.1:8787",
    "model_port": "8787",
    "api_key": "sk-runner-placeholder-not-a-key",
    "model": "runner-scripted",
    "model_dialect": "openai-chat",
}
SOCAT = ["STDIO", "UNIX-CONNECT:/run/runner/mcp.sock"]
# the images that carry node 22's module compile cache (their Dockerfile sets it)
COMPILE_CACHED = [name for name, d in image_dirs(INSTALLED_ROOT).items()
                  if (d / "Dockerfile").exists() and "ENV NODE_COMPILE_CACHE" in (d / "Dockerfile").read_text()]


def profile(name: str) -> Profile:
    return load_profile(shipped_profile(name))


def parsed(name: str, path: str) -> Any:
    text = profile(name).render_config_files(VALUES)[path]
    if path.endswith(".toml"):
        return tomllib.loads(text)
    if path.endswith((".yml", ".yaml")):
        return yaml.safe_load(text)
    return json.loads(text)


def test_the_placeholder_set_here_is_the_full_one() -> None:
    assert set(VALUES) == PLACEHOLDERS


@pytest.mark.parametrize("path", shipped_profiles(), ids=lambda p: p.stem)
def test_every_shipped_profile_loads_renders_and_its_config_files_parse(path: Path) -> None:
    loaded = load_profile(path)
    assert loaded.interpreter in INTERPRETERS
    argv = loaded.render_argv(VALUES)
    assert all("${" not in item for item in argv)
    assert all("${" not in value for value in loaded.render_env(VALUES).values())
    for relative, text in loaded.render_config_files(VALUES).items():
        assert "${" not in text, relative
        if relative.endswith(".toml"):
            tomllib.loads(text)
        elif relative.endswith(".json"):
            json.loads(text)
        elif relative.endswith((".yml", ".yaml")):
            yaml.safe_load(text)


@pytest.mark.parametrize("name", VENDORS)
def test_vendor_profiles_share_the_turn_contract(name: str) -> None:
    loaded = profile(name)
    argv = loaded.render_argv(VALUES)
    assert argv[0] == "/usr/local/bin/runner-entry"
    assert loaded.home == "turn"
    assert loaded.model is not None and loaded.model.live is not None
    assert loaded.credentials and set(loaded.credentials) <= set(loaded.model.live.credentials)
    assert loaded.session_transcript and not loaded.session_transcript.startswith("/")
    env = loaded.render_env(VALUES)
    assert not {"HOME", "PWD", "RUNNER_CD", "RUNNER_MODEL_PORT"} & set(env)  # the runtime sets those
    # the prompt reaches the CLI exactly once, verbatim, and nothing is handed to a shell
    if loaded.prompt.via == "argv":
        assert argv.count(PROMPT) == 1
    else:
        assert PROMPT not in argv
    # no real credential ever enters the container: only the placeholder key
    for variable in loaded.model.live.credentials:
        assert env.get(variable) in (None, VALUES["api_key"])


def test_no_vendor_column_is_unavailable() -> None:
    # deepseek was, until dsh 0.1.0-rc.8 was measured to run a turn here (issue 11); vibe, until its image had a
    # Python >= 3.12 of its own (trixie's 3.13, issue 19)
    assert [name for name in VENDORS if profile(name).unavailable] == []


def test_codex_traps() -> None:
    loaded = profile("codex")
    config = parsed("codex", ".codex/config.toml")
    server = config["mcp_servers"]["sharedos"]
    assert (server["command"], server["args"]) == ("socat", SOCAT)
    assert server["required"] is True and server["default_tools_approval_mode"] == "approve"
    provider = config["model_providers"][config["model_provider"]]
    assert provider["wire_api"] == "responses" and provider["base_url"] == "http://127.0.0.1:8787/v1"
    assert (provider["request_max_retries"], provider["stream_max_retries"]) == (0, 0)
    assert loaded.render_env(VALUES)[provider["env_key"]] == VALUES["api_key"]
    assert config["model"] == "runner-scripted" and loaded.model is not None
    assert loaded.model.scripted_model == "runner-scripted" and loaded.model.dialect == "openai-responses"
    assert config["features"]["plugins"] is False and config["analytics"]["enabled"] is False
    assert config["otel"]["metrics_exporter"] == "none" and config["approval_policy"] == "never"
    argv = loaded.render_argv(VALUES)
    assert argv[argv.index("--disable") + 1] == "unbounded_connection_retries"
    assert argv[-1] == PROMPT and loaded.prompt.via == "argv" and not loaded.prompt.keep_stdin_open
    assert loaded.render_env(VALUES)["CODEX_HOME"] == "/run/runner/home/.codex"
    assert loaded.session_transcript == ".codex/sessions"


def test_claude_traps() -> None:
    loaded = profile("claude-code")
    argv = loaded.render_argv(VALUES)
    env = loaded.render_env(VALUES)
    assert env["ENABLE_TOOL_SEARCH"] == "false" and env["CLAUDE_CODE_MAX_RETRIES"] == "1"
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:8787"  # no /v1
    assert argv[argv.index("--allowedTools") + 1] == "mcp__sharedos"
    assert argv[argv.index("--permission-mode") + 1] == "dontAsk"
    assert argv[argv.index("--output-format") + 1] == "stream-json" and "--verbose" in argv
    assert argv[argv.index("--tools") + 1] == "" and "--strict-mcp-config" in argv
    mcp_path = argv[argv.index("--mcp-config") + 1]
    assert mcp_path.startswith(VALUES["home"] + "/")
    mcp = parsed("claude-code", mcp_path.removeprefix(VALUES["home"] + "/"))
    assert mcp["mcpServers"]["sharedos"] == {"type": "stdio", "command": "socat", "args": SOCAT}
    assert loaded.mcp_startup_required and loaded.model is not None
    assert loaded.model.dialect == "anthropic-messages"


def test_pi_profiles_differ_only_in_exposure() -> None:
    codemode, direct = profile("pi"), profile("pi-direct")
    assert codemode.image == direct.image == "pi" and codemode.interpreter == direct.interpreter == "pi"
    assert codemode.render_argv(VALUES) == direct.render_argv(VALUES)
    argv = codemode.render_argv(VALUES)
    assert argv[argv.index("--mode") + 1] == "json" and argv[-1] == PROMPT
    # --no-extensions drops the built-in extensions too: the built-in MCP and codemode come back with -e
    loaded = [argv[i + 1] for i, a in enumerate(argv) if a == "-e"]
    assert loaded == ["builtin:mcp", "builtin:codemode"]
    assert "--no-extensions" in argv and "--no-builtin-tools" in argv
    codemode_server = parsed("pi", ".pi/agent/mcp.json")["mcpServers"]["sharedos"]
    direct_server = parsed("pi-direct", ".pi/agent/mcp.json")["mcpServers"]["sharedos"]
    assert "exposure" not in codemode_server and direct_server.pop("exposure") == "direct"
    assert codemode_server == direct_server
    assert (codemode_server["command"], codemode_server["args"]) == ("socat", SOCAT)
    for harness in ("pi", "pi-direct"):
        provider = parsed(harness, ".pi/agent/models.json")["providers"]["runner"]
        assert provider["baseUrl"] == "http://127.0.0.1:8787/v1" and provider["api"] == "openai-completions"
        assert parsed(harness, ".pi/agent/settings.json")["retry"]["enabled"] is False


def test_pi_adapter_loads_the_adapter_and_its_proxy() -> None:
    adapter = profile("pi-adapter")
    assert adapter.image == "pi-adapter" and adapter.interpreter == "pi"
    argv = adapter.render_argv(VALUES)
    assert argv[argv.index("--mode") + 1] == "json" and argv[-1] == PROMPT
    assert argv[argv.index("-e") + 1] == "/usr/local/lib/node_modules/pi-mcp-adapter"
    assert "--no-extensions" in argv and "--no-builtin-tools" in argv
    server = parsed("pi-adapter", ".pi/agent/mcp.json")["mcpServers"]["sharedos"]
    assert "directTools" not in server
    assert (server["command"], server["args"], server["lifecycle"]) == ("socat", SOCAT, "eager")
    provider = parsed("pi-adapter", ".pi/agent/models.json")["providers"]["runner"]
    assert provider["baseUrl"] == "http://127.0.0.1:8787/v1" and provider["api"] == "openai-completions"
    assert parsed("pi-adapter", ".pi/agent/settings.json")["retry"]["enabled"] is False


def test_pi_adapter_starts_from_the_images_transpile_cache() -> None:
    # jiti transpiles the adapter's TypeScript on every start unless $TMPDIR/jiti holds it (2.5 CPU-seconds of the
    # start, runner/harnesses/pi/README.md); the turn's /tmp is empty, so the image's cache is copied there before pi
    # runs, with the prompt a positional parameter of the shell, never part of its script
    argv = profile("pi-adapter").render_argv(VALUES)
    assert argv[1:5] == ["sh", "-c", 'cp -R /opt/pi-jiti/jiti /tmp/ && exec pi "$@"', "pi"]
    dockerfile = (image_dir("pi-adapter", INSTALLED_ROOT) / "Dockerfile").read_text()
    assert "TMPDIR=/opt/pi-jiti" in dockerfile and 'test -n "$(ls -A /opt/pi-jiti/jiti)"' in dockerfile


def test_some_images_carry_a_compile_cache() -> None:
    assert COMPILE_CACHED, "no image's Dockerfile sets NODE_COMPILE_CACHE: the test below checks nothing"


@pytest.mark.parametrize("image", COMPILE_CACHED)
def test_node22_images_carry_a_compile_cache_built_as_the_turns_uid(image: str) -> None:
    # Node 22's compile cache keys its entries by uid: built as 1000 (the turn's uid), else never read
    dockerfile = (image_dir(image, INSTALLED_ROOT) / "Dockerfile").read_text()
    assert "ENV NODE_COMPILE_CACHE=/opt/node-compile-cache" in dockerfile
    warm = dockerfile.index("ENV NODE_COMPILE_CACHE")
    assert dockerfile.rindex("USER 1000:1000", 0, warm) > dockerfile.rindex("USER root", 0, warm)
    # the build fails when warming it filled nothing
    assert ('test -n "$(ls -A /opt/node-compile-cache)"' in dockerfile
            or 'test "$(find /opt/node-compile-cache -type f | wc -l)" -gt' in dockerfile)
    # node writes its entries 0600: owned by root, they must be made readable or the turn never reads them
    assert "chmod -R a+rX /opt/node-compile-cache" in dockerfile


def test_gemini_traps() -> None:
    loaded = profile("gemini")
    env = loaded.render_env(VALUES)
    assert env["GEMINI_CLI_NO_RELAUNCH"] == "true" and env["GOOGLE_GEMINI_BASE_URL"] == VALUES["model_url"]
    assert env["GEMINI_API_KEY"] == VALUES["api_key"]
    settings = parsed("gemini", ".gemini/settings.json")
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
    server = settings["mcpServers"]["sharedos"]
    assert (server["command"], server["args"], server["trust"]) == ("socat", SOCAT, True)
    argv = loaded.render_argv(VALUES)
    assert argv[argv.index("-o") + 1] == "stream-json" and argv[argv.index("--approval-mode") + 1] == "yolo"
    assert loaded.model is not None and loaded.model.dialect == "gemini"


def test_qwen_traps() -> None:
    loaded = profile("qwen")
    settings = parsed("qwen", ".qwen/settings.json")
    server = settings["mcpServers"]["sharedos"]
    assert (server["command"], server["args"], server["alwaysLoadTools"]) == ("socat", SOCAT, True)
    assert settings["memory"]["enableManagedAutoMemory"] is False
    assert settings["security"]["auth"]["selectedType"] == "openai"
    argv = loaded.render_argv(VALUES)
    assert argv[argv.index("--approval-mode") + 1] == "yolo" and argv[argv.index("-o") + 1] == "stream-json"
    assert loaded.render_env(VALUES)["OPENAI_BASE_URL"] == "http://127.0.0.1:8787/v1"
    assert loaded.mcp_startup_required


def test_opencode_traps() -> None:
    loaded = profile("opencode")
    assert loaded.prompt.via == "stdin-file" and PROMPT not in loaded.render_argv(VALUES)
    env = loaded.render_env(VALUES)
    assert env["OPENCODE_DISABLE_MODELS_FETCH"] == "1" and env["OPENCODE_DISABLE_AUTOUPDATE"] == "1"
    config = parsed("opencode", ".config/opencode/opencode.json")
    assert config["mcp"]["sharedos"] == {"type": "local", "command": ["socat", *SOCAT], "enabled": True}
    assert config["provider"]["runner"]["options"]["baseURL"] == "http://127.0.0.1:8787/v1"
    assert config["model"] == config["small_model"] == "runner/runner-scripted"
    argv = loaded.render_argv(VALUES)
    assert argv[argv.index("-m") + 1] == "runner/runner-scripted"


def test_deepseek_patch_inserts_the_mcp_client() -> None:
    loaded = profile("deepseek")
    argv = loaded.render_argv(VALUES)
    assert argv[1:4] == ["dsh", "--profile", "headless"] and argv[-1] == PROMPT
    patch_path = argv[argv.index("--patch") + 1].removeprefix(VALUES["home"] + "/")
    (layer,) = parsed("deepseek", patch_path)
    (entry,) = layer["insert"]
    assert entry["id"] == "mcp-sharedos" and entry["name"] == "@deepseek-ai/dsh-mcp-client"
    config = entry["config"]
    assert (config["transport"], config["command"], config["args"]) == ("stdio", "socat", SOCAT)
    assert config["failOnStartupError"] is True and config["serverName"] == "sharedos"
    # measured traps: the native-addon cache would dlopen from the noexec /tmp; only DEEPSEEK_API_KEY is read;
    # the outcome is read from the session log under $DSH_HOME (~/.dsh)
    env = loaded.render_env(VALUES)
    assert env["NARB_DISABLE_NATIVE_CACHE"] == "1" and env["DEEPSEEK_API_KEY"] == VALUES["api_key"]
    assert env["DEEPSEEK_BASE_URL"] == "http://127.0.0.1:8787/v1" and "DSH_HOME" not in env
    assert loaded.interpreter == "deepseek" and loaded.session_transcript == ".dsh"
    assert loaded.credentials == ["DEEPSEEK_API_KEY"] and loaded.model is not None
    assert loaded.model.dialect == "openai-chat" and loaded.unavailable is None
