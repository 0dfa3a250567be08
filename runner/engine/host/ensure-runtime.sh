#!/usr/bin/env bash
# Make sure the Docker Engine that answers has a container runtime registered: `make engine RUNTIME=runsc` runs
# it after ensure-docker.sh.
#
#   ensure-runtime.sh runsc
#
# runsc (gVisor) is the only runtime it registers (runc, the engine's default, needs nothing). An engine whose `docker info` already lists runsc with the flags
# runner needs is used as it is: nothing is installed. Otherwise, as root on Debian:
# - install Debian's runsc package (when no runsc is on PATH);
# - register it in the engine's configuration ($RUNNER_DOCKERD_CONFIG, default /etc/docker/daemon.json) with
#   `runsc install`, which merges the entry into the file and keeps every other setting, with the flags:
#     --network=none   gVisor's sandbox owns the network namespace; runner's containers have no network anyway
#     --host-uds=open  a turn's MCP and model sockets are unix sockets bind-mounted from the host: the CLI must
#                      be able to connect to them (open: connect only; it cannot create a host socket)
# - reload the engine's configuration with SIGHUP to dockerd (its pid file), which reloads `runtimes` without
#   restarting the engine: running containers are not disturbed; then wait (bounded) until `docker info` lists it.
# Anywhere else it stops with a message that says what is missing and the command that fixes it.
set -euo pipefail

CONFIG=${RUNNER_DOCKERD_CONFIG:-/etc/docker/daemon.json}
PIDFILE=${RUNNER_DOCKERD_PIDFILE:-/var/run/docker.pid}
WAIT_SECONDS=${RUNNER_DOCKERD_WAIT:-30}
FLAGS=(--network=none --host-uds=open)
say() { printf 'ensure-runtime: %s\n' "$*" >&2; }

[ $# -eq 1 ] || { say "usage: $0 runsc"; exit 2; }
[ "$1" != runc ] || { say "runc is the engine's default runtime: nothing to register."; exit 0; }
[ "$1" = runsc ] || { say "unknown runtime '$1' (known: runc, runsc)"; exit 2; }
name=$1

# the runtime's entry in `docker info`, as JSON (empty when the engine does not have it)
registered() { docker info --format "{{json (index .Runtimes \"$name\")}}" 2>/dev/null | grep -v '^null$' || true; }
flags_ok() {
  local entry=$1 flag
  for flag in "${FLAGS[@]}"; do
    case "$entry" in *"\"$flag\""*) ;; *) return 1 ;; esac
  done
}

entry=$(registered)
if [ -n "$entry" ] && flags_ok "$entry"; then
  say "the engine has the $name runtime ($entry)."
  exit 0
fi

if [ -n "${DOCKER_HOST:-}" ]; then
  say "the engine at DOCKER_HOST=$DOCKER_HOST has no $name runtime with ${FLAGS[*]}; register it on that engine's"
  say "host (there: sudo runner setup engine --runtime $name), or run runner with --runtime runc."
  exit 1
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  say "the engine has no $name runtime with ${FLAGS[*]}; only root on Debian sets it up here. Run:"
  say "  sudo runner setup engine --runtime $name   # (a checkout: sudo make engine RUNTIME=$name) installs Debian's runsc and registers it"
  exit 1
fi

if ! command -v runsc >/dev/null 2>&1; then
  say "installing runsc (gVisor) from Debian"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends runsc >/dev/null
fi
say "registering $(command -v runsc) as the engine's $name runtime in $CONFIG (${FLAGS[*]})"
mkdir -p "$(dirname "$CONFIG")"
runsc install --config_file "$CONFIG" --runtime "$name" -- "${FLAGS[@]}" 2>&1 | sed 's/^/ensure-runtime: runsc install: /' >&2

if [ ! -s "$PIDFILE" ] || ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
  say "no dockerd runs from $PIDFILE to reload; restart the engine so that it reads $CONFIG"
  say "  (sudo systemctl reload docker, or set RUNNER_DOCKERD_PIDFILE to its pid file), then rerun."
  exit 1
fi
say "reloading the engine's configuration (SIGHUP to dockerd $(cat "$PIDFILE")): running containers are left alone"
kill -HUP "$(cat "$PIDFILE")"
for _ in $(seq 1 "$WAIT_SECONDS"); do
  entry=$(registered)
  if [ -n "$entry" ] && flags_ok "$entry"; then
    say "the engine has the $name runtime ($entry)."
    exit 0
  fi
  sleep 1
done
say "the engine did not list the $name runtime within ${WAIT_SECONDS}s of the reload; its configuration: $CONFIG"
say "(dockerd logs why it refused it, e.g. /var/log/runner-dockerd.log)"
exit 1
