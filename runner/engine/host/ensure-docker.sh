#!/usr/bin/env bash
# Make sure a Docker Engine answers, provisioning one on a fresh Debian machine. The engine, and nothing else:
# what a step needs besides (mmdebstrap to bootstrap a base, socat for the tests) is asked for by that step
# (ensure-tools.sh, or runner's own error when it must bootstrap a base), so a CI job whose image comes from
# a cache needs no more than an engine that answers.
#
# - An engine that already answers (DOCKER_HOST included) is simply used, whoever you are: nothing is installed.
# - Otherwise, on Debian as root: install Debian's docker.io, start dockerd in the background logging to
#   $RUNNER_DOCKERD_LOG, and wait (bounded) until `docker info` answers.
# - Anywhere else: stop with a message that says what is wrong and the command that fixes it.
# - RUNNER_ENGINE=podman: use rootless Podman's Docker-compatible socket instead (run as the non-root user): unless
#   its API already answers on $XDG_RUNTIME_DIR/podman/podman.sock, start `podman system service` there (its log:
#   service.log beside the socket), wait (bounded) until the API answers, and print the DOCKER_HOST to export.
#   Debian packages: podman uidmap slirp4netns catatonit. What Podman 4.3 on this kind of host cannot keep is in
#   docs/engines.md (the probe names it before any turn).
set -euo pipefail

LOG=${RUNNER_DOCKERD_LOG:-/var/log/runner-dockerd.log}
WAIT_SECONDS=${RUNNER_DOCKERD_WAIT:-60}
say() { printf 'ensure-docker: %s\n' "$*" >&2; }

engine_answers() { timeout 10 docker info >/dev/null 2>&1; }

if [ "${RUNNER_ENGINE:-docker}" = podman ]; then
  command -v podman >/dev/null 2>&1 || { say "RUNNER_ENGINE=podman: install podman uidmap slirp4netns catatonit"; exit 1; }
  runtime=${XDG_RUNTIME_DIR:-/run/user/$(id -u)}
  sock=$runtime/podman/podman.sock
  service_log=$runtime/podman/service.log
  # Answering is the API's _ping, not the socket file: a socket left by a service that is gone (a reboot keeps
  # /run on some hosts) refuses connections, and a new service binds a moment after it starts.
  podman_answers() { timeout 10 podman --remote --url "unix://$sock" version >/dev/null 2>&1; }
  if ! podman_answers; then
    mkdir -p "$runtime/podman"
    rm -f "$sock"
    say "starting podman system service on $sock (log: $service_log)"
    XDG_RUNTIME_DIR=$runtime setsid podman system service --time=0 "unix://$sock" </dev/null >"$service_log" 2>&1 &
    service=$!
    answered=no
    for _ in $(seq "$WAIT_SECONDS"); do
      podman_answers && { answered=yes; break; }
      kill -0 "$service" 2>/dev/null || break
      sleep 1
    done
    if [ "$answered" != yes ]; then
      say "podman system service did not answer on $sock; last lines of $service_log:"
      tail -n 20 "$service_log" >&2 || true
      exit 1
    fi
  fi
  say "Podman answers; use it with:"
  echo "export DOCKER_HOST=unix://$sock"
  exit 0
fi

# Cold set-up durations for `make bench` (runner/sandbox/timings.py reads them): one file per step.
TIMINGS=${RUNNER_CACHE_DIR:-$HOME/.cache/runner}/cold-timings
now() { date +%s.%N; }
record_timing() {  # step started-at
  mkdir -p "$TIMINGS" 2>/dev/null || return 0
  awk -v a="$2" -v b="$(now)" -v at="$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    'BEGIN { printf "{\"seconds\": %.2f, \"at\": \"%s\"}\n", b - a, at }' >"$TIMINGS/$1.json" 2>/dev/null || true
}

if engine_answers; then
  say "Docker Engine answers (${DOCKER_HOST:-default socket})."
  exit 0
fi

if [ -n "${DOCKER_HOST:-}" ]; then
  say "DOCKER_HOST=$DOCKER_HOST is set but no engine answers there; not starting a local one."
  exit 1
fi

# Why not: a socket that exists but refuses this user is a group membership, not a missing engine.
socket=/var/run/docker.sock
if [ -z "${DOCKER_HOST:-}" ] && [ -S "$socket" ] && [ ! -w "$socket" ] && [ "$(id -u)" != 0 ]; then
  say "the Docker Engine at $socket refuses $(id -un) (not in its group $(stat -c %G "$socket")); fix it with:"
  say "  sudo usermod -aG $(stat -c %G "$socket") $(id -un)   # then log in again (or: newgrp $(stat -c %G "$socket"))"
  exit 1
fi

if ! command -v dockerd >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    say "no Docker Engine answers and none is installed here. Install one (Debian and Ubuntu:"
    say "  sudo apt-get install docker.io && sudo usermod -aG docker $(id -un)"
    say "then log in again), start it, or set DOCKER_HOST to an engine that answers; then rerun."
    exit 1
  fi
  say "installing docker.io from Debian"
  install_started=$(now)
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # docker.io pulls containerd and runc; the default (non-buildx) client comes with it.
  apt-get install -y -qq --no-install-recommends docker.io iptables ca-certificates >/dev/null
  record_timing engine.install "$install_started"
  if engine_answers; then  # a package that starts its own service
    say "Docker Engine answers."
    exit 0
  fi
fi

if [ "$(id -u)" != 0 ]; then
  say "no Docker Engine answers; dockerd is installed but only root starts it here. Start it with:"
  say "  sudo systemctl start docker   # or: sudo runner setup engine"
  exit 1
fi

say "starting dockerd in the background (log: $LOG)"
mkdir -p "$(dirname "$LOG")"
start_started=$(now)
nohup dockerd >>"$LOG" 2>&1 </dev/null &
for _ in $(seq 1 "$WAIT_SECONDS"); do
  if engine_answers; then
    record_timing engine.start "$start_started"
    say "Docker Engine answers: $(docker version --format '{{.Server.Version}} (API {{.Server.APIVersion}})')"
    exit 0
  fi
  sleep 1
done
say "dockerd did not answer within ${WAIT_SECONDS}s; last lines of $LOG:"
tail -n 20 "$LOG" >&2 || true
exit 1
