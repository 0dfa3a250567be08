# The two commands of the README are the contract:
#   make run    set everything up on a fresh machine (venv, Docker Engine, the Codex image) and run one turn:
#               the real Codex CLI, in its pinned image, against the scripted model
#   make test   every test layer: lint and types, unit, integration (real engine, real MCP SDK),
#               end to end (each real vendor CLI against the scripted model)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
RUNNER := $(BIN)/runner
# what a host needs to carry a turn (an engine, gVisor, the tools a step needs): shipped in the package, so the
# installed tool runs the same scripts (`runner setup engine`, `runner setup tools`)
HOST   := runner/engine/host
PYTEST := $(BIN)/pytest

.PHONY: run test setup venv lock engine runsc base-tools test-tools images lint unit integration e2e bench gc clean soak

run: venv engine base-tools
	$(RUNNER) images build --harness codex
	$(RUNNER) exec --harness codex --case escalation

# everything, every image included (each image is otherwise built the first time a turn needs it)
setup: venv engine images

# runner's Python dependencies come from a committed lock with hashes (requirements/*.lock), the same files every CI
# job installs from: EXTRAS=dev (the default) is requirements/dev.lock, runner's and the tests' tools; `make venv
# EXTRAS=` is requirements/runtime.lock, what runner itself needs only (a CI column job runs runner, never the
# linters). Nothing is resolved or downloaded unhashed: the lock is installed with --require-hashes, then runner
# itself, editable, with no dependency of its own and no build isolation (setuptools is in the lock). The venv is
# made again when pyproject.toml or a lock changes.
EXTRAS ?= dev
LOCK = requirements/$(if $(EXTRAS),$(EXTRAS),runtime).lock
venv: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml requirements/runtime.lock requirements/dev.lock
	@test -f $(LOCK) || { echo "make venv: no $(LOCK): EXTRAS is dev or empty" >&2; exit 2; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --require-hashes -r $(LOCK)
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

# the locks, written by pip-tools' pip-compile (in the dev lock) from pyproject.toml, hashes included, against the
# package index alone (the machine's pip configuration, local wheels and extra indexes, is left out: a lock holds
# only what CI can download). Pins already in a lock are kept; `make lock UPGRADE=1` moves every pin to the newest
# release. The dev lock is constrained by the runtime one, so a package both need has one version.
UPGRADE ?=
PIP_COMPILE = env -u PIP_FIND_LINKS -u PIP_INDEX_URL -u PIP_EXTRA_INDEX_URL -u PIP_CONSTRAINT PIP_CONFIG_FILE=/dev/null \
	$(BIN)/pip-compile --quiet --generate-hashes --allow-unsafe --build-deps-for editable --no-emit-index-url \
	--no-emit-find-links --strip-extras $(if $(UPGRADE),--upgrade)
lock: venv
	$(PIP_COMPILE) --output-file=requirements/runtime.lock pyproject.toml
	$(PIP_COMPILE) --extra=dev --constraint=requirements/runtime.lock --output-file=requirements/dev.lock pyproject.toml

# an engine that answers, and nothing else: a CI job whose image comes from its cache needs no more.
# RUNTIME=runsc also installs gVisor and registers it with the engine (as root; the installed tool: runner setup engine --runtime runsc)
RUNTIME ?=
engine:
	$(HOST)/ensure-docker.sh
	$(if $(RUNTIME),$(HOST)/ensure-runtime.sh $(RUNTIME))

# mmdebstrap, needed only when a Debian base must be bootstrapped: installed where it can be (root on Debian),
# otherwise runner names it, with the command that installs it, at the moment it is needed
base-tools:
	$(HOST)/ensure-tools.sh --if-possible --for "bootstrapping the Debian bases" mmdebstrap

# what the integration tests need on the host: socat (the reference client's relay), sudo (the workflow's jobs
# run as GitHub's non-root user), chromium and chromedriver (the HTML report is tested in a headless browser:
# Debian's Chromium and its driver, never one downloaded at run time)
test-tools:
	$(HOST)/ensure-tools.sh --for "the integration tests" socat sudo chromium chromedriver

images: venv engine base-tools
	$(RUNNER) images build --all

test: venv engine lint unit integration e2e

lint: venv
	$(BIN)/ruff check runner tests
	$(BIN)/mypy

unit: venv
	$(PYTEST) tests/unit -q

# the tests that run turns under gVisor (tests/integration/test_runtime.py, tests/e2e/test_runsc.py) need it
# registered: a fresh machine's `make test` installs and registers it (ensure-runtime.sh, as root)
runsc:
	$(MAKE) engine RUNTIME=runsc

integration: venv engine base-tools test-tools runsc
	$(PYTEST) tests/integration -q -p no:cacheprovider

e2e: venv engine base-tools runsc
	$(PYTEST) tests/e2e -q -p no:cacheprovider

# before a change lands (not CI's): the integration and e2e layers N times in a random order, both cores kept busy by
# a bounded busy loop; each round prints its seed, SEED=... replays it; a failing round stops the soak (tests/soak.py).
# It needs what those layers need (their host tools, gVisor registered), as `make integration e2e` does
N ?= 2
SEED ?=
SOAK_TESTS ?= tests/integration tests/e2e
soak: venv engine base-tools test-tools runsc
	$(BIN)/python -m tests.soak --rounds $(N) $(if $(SEED),--seed $(SEED)) $(SOAK_TESTS)

bench: setup
	$(BIN)/python -m runner.bench

gc: venv
	$(RUNNER) gc

clean:
	rm -rf $(VENV) runs .pytest_cache .mypy_cache .ruff_cache .hypothesis
