#!/usr/bin/env bash
# Make sure the host tools a step needs are on PATH, asked for by that step and by nobody else.
#
#   ensure-tools.sh [--if-possible] [--for WHAT] TOOL...
#
# A tool that is on PATH is used as it is. A missing one is installed from Debian when this runs as root with
# apt-get (a fresh machine of the kind `make run` sets up); otherwise the script names each missing tool and the
# command that installs it on this system, and exits 1. With --if-possible it installs what it can and is silent
# about what it cannot: for a tool only some runs need (mmdebstrap is needed only when a Debian base must be
# bootstrapped, and runner names it with the same command at that moment).
#
# Known tools (tool: Debian packages):
#   mmdebstrap   mmdebstrap debian-archive-keyring uidmap   (bootstraps the offline Debian bases; unshare mode as
#                                                             a non-root user needs the keyring and newuidmap)
#   socat        socat                                      (the host end of the reference client's tests)
#   sudo         sudo                                       (the tests run the workflow's jobs as GitHub's user)
#   chromium     chromium                                   (the HTML report's browser test: headless Chromium)
#   chromedriver chromium-driver                            (its WebDriver, Debian's build of the same version)
set -euo pipefail

say() { printf 'ensure-tools: %s\n' "$*" >&2; }

packages_of() {
  case "$1" in
    mmdebstrap) echo "mmdebstrap debian-archive-keyring uidmap" ;;
    socat | sudo | chromium) echo "$1" ;;
    chromedriver) echo "chromium-driver" ;;
    *) say "unknown tool '$1' (known: mmdebstrap socat sudo chromium chromedriver)"; exit 2 ;;
  esac
}

if_possible=no
purpose=""
while [ $# -gt 0 ]; do
  case "$1" in
    --if-possible) if_possible=yes; shift ;;
    --for) purpose=" (for $2)"; shift 2 ;;
    --help | -h) sed -n '2,/^set /{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) say "unknown option $1"; exit 2 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { say "name at least one tool"; exit 2; }

missing=()
packages=()
for tool in "$@"; do
  # shellcheck disable=SC2207  # the package lists are plain words
  wanted=($(packages_of "$tool"))
  if ! command -v "$tool" >/dev/null 2>&1; then
    missing+=("$tool")
    packages+=("${wanted[@]}")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  say "installing ${packages[*]} from Debian${purpose}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
  exit 0
fi

[ "$if_possible" = yes ] && exit 0

if command -v apt-get >/dev/null 2>&1; then
  how="sudo apt-get install -y ${packages[*]}"
else
  how="your system's package manager (Debian's packages: ${packages[*]})"
fi
say "missing: ${missing[*]}${purpose}. Install with: $how"
exit 1
