#!/usr/bin/env bash
# Provision rootless Podman for runner on a Debian machine, as root, and print the DOCKER_HOST that reaches it.
#
#   ensure-podman.sh            # then: export DOCKER_HOST=... (the line it prints), as that user or as root
#
# - Installs Debian's podman, uidmap, slirp4netns, catatonit and fuse-overlayfs when podman is missing.
# - Makes the non-root user $RUNNER_PODMAN_USER (default runner-podman) with subordinate ids, and its runtime
#   directory /run/user/<uid>.
# - Starts that user's `podman system service` through `RUNNER_ENGINE=podman ensure-docker.sh` (the same
#   path a non-root user takes by hand), and prints its `export DOCKER_HOST=unix://…` line on stdout.
# What rootless Podman cannot keep on this kind of host is in docs/engines.md; runner's probe names
# it before any turn. make test uses this (tests/integration/test_podman.py) when RUNNER_TEST_PODMAN_HOST is unset.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

USER_NAME=${RUNNER_PODMAN_USER:-runner-podman}
say() { printf 'ensure-podman: %s\n' "$*" >&2; }

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  say "this script provisions Podman only on Debian as root; as a non-root user with podman installed, run"
  say "runner setup engine --engine podman (RUNNER_ENGINE=podman ensure-docker.sh) instead"
  exit 1
fi
if ! command -v podman >/dev/null 2>&1; then
  say "installing podman uidmap slirp4netns catatonit fuse-overlayfs"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    podman uidmap slirp4netns catatonit fuse-overlayfs >/dev/null
fi
if ! id -u "$USER_NAME" >/dev/null 2>&1; then
  say "adding the user $USER_NAME"
  useradd --create-home --shell /bin/sh "$USER_NAME"
fi
if ! grep -q "^$USER_NAME:" /etc/subuid 2>/dev/null; then
  usermod --add-subuids 300000-365535 --add-subgids 300000-365535 "$USER_NAME"
fi
uid=$(id -u "$USER_NAME")
runtime=/run/user/$uid
install -d -m 0700 -o "$USER_NAME" -g "$USER_NAME" "$runtime"
home=$(getent passwd "$USER_NAME" | cut -d: -f6)
# As the user, from its home: podman re-enters its working directory, and a checkout under a directory only root
# may enter (mktemp -d makes one) would stop it ("cannot chdir ... Permission denied"). The script is read by root.
cd "$home"
runuser -u "$USER_NAME" -- env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$home" XDG_RUNTIME_DIR="$runtime" \
  RUNNER_ENGINE=podman bash -s <"$here/ensure-docker.sh"
