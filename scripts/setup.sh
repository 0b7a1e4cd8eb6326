#!/usr/bin/env bash
# Set up what pytest-pinet needs on a fresh Debian/Ubuntu machine, as root: the lab tools
# from apt, and the plugin with its Python dependencies in ./.venv.
#   bash scripts/setup.sh           the main job (pinet run): lab tools, QEMU, labgrid, charts
#   bash scripts/setup.sh --tests   also what the repository's tests need: PostgreSQL,
#                                   Chromium, ser2net, snmpd, qemu-user and an arm64 libc, the test
#                                   and lint extras (a fresh machine's main job is spared
#                                   their 260 MB of packages: apt took 15 s instead of 44-58)
# Safe to run again; it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

TESTS=0
case "${1:-}" in
  "") ;;
  --tests) TESTS=1 ;;
  *) echo "setup: unknown argument '$1' (usage: bash scripts/setup.sh [--tests])" >&2; exit 2 ;;
esac

if [ "$(id -u)" != 0 ]; then
  echo "setup: run as root (apt-get and network namespaces need it): sudo bash scripts/setup.sh" >&2
  exit 2
fi

APT_PACKAGES=(iperf3 gcc libc6-dev e2fsprogs dosfstools openssh-server openssh-client sudo iproute2 ethtool procps iputils-ping irtt util-linux usbutils
              mmdebstrap qemu-system-x86 bmap-tools
              python3 python3-venv python3-pip ca-certificates)
EXTRAS=lab,charts
if [ "$TESTS" = 1 ]; then
  # the virtual rack's console server, the twin's PoE switch's SNMP agent, the cross-built
  # generator's runtime, the store's PostgreSQL tests, the report read in a browser, the
  # peers' firewall of hardware-lab.md
  APT_PACKAGES+=(ser2net snmpd qemu-user libc6-arm64-cross postgresql chromium nftables)
  EXTRAS=lab,charts,test,dev
fi
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The system sshd is not needed: every lab host runs its own.
mkdir -p -m 0755 /run/sshd

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
# uv installs what pip would, in parallel: 3.7 s for a fresh clone here against pip's 15 s
# (11 s against some 25 with nothing cached).  pip does it where uv cannot be had.  Both
# compile the bytecode as they install (pip does by default, uv when asked): a machine whose
# environment sets PYTHONDONTWRITEBYTECODE never writes it later, and each Python process of
# a night or of the tests then compiled labgrid, hypothesis and the rest from source again.
if ! { .venv/bin/python -m pip install -q --disable-pip-version-check uv >/dev/null 2>&1 \
       && .venv/bin/uv pip install -q --compile-bytecode --python .venv/bin/python -e ".[$EXTRAS]"; }; then
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -e ".[$EXTRAS]"
fi
# The same for pinet's own sources (an editable install is not compiled), and pytest's
# assertion-rewritten form of its plugins: pytest rewrites the whole of every plugin's package
# (labgrid, hypothesis, pinet) and keeps the result only where bytecode may be written.  One
# collection of the suite writes both: 3.8 s for an empty pytest run became 1.2 s here.
.venv/bin/python -m compileall -q pytest_pinet >/dev/null
PYTHONDONTWRITEBYTECODE='' .venv/bin/python -m pytest -q --collect-only -p no:cacheprovider pytest_pinet/suite >/dev/null
# The Allure 3 CLI builds the report offline (Node.js and npm come with the machine; when
# they are missing, the suite still runs and `pinet report` says what to install).  It is
# installed once per machine and version, and each clone links to it (6 s saved per clone).
ALLURE_VERSION=3.18.0
ALLURE_HOME="${XDG_CACHE_HOME:-$HOME/.cache}/pinet/allure-$ALLURE_VERSION"
if command -v npm >/dev/null 2>&1 && [ ! -f .allure/node_modules/allure/cli.js ]; then
  if [ ! -f "$ALLURE_HOME/node_modules/allure/cli.js" ]; then
    mkdir -p "$ALLURE_HOME"
    (cd "$ALLURE_HOME" && npm install --silent --no-audit --no-fund "allure@$ALLURE_VERSION" >/dev/null 2>&1) \
      || echo "setup: could not install the Allure 3 CLI with npm; reports will be skipped"
  fi
  if [ -f "$ALLURE_HOME/node_modules/allure/cli.js" ] && [ ! -e .allure ]; then
    ln -s "$ALLURE_HOME" .allure
  fi
fi
echo "setup: ready ($(.venv/bin/python -c 'import pytest_pinet; print("pytest-pinet", pytest_pinet.__version__)'), $(iperf3 --version | head -1))"
