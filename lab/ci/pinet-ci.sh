#!/bin/sh
# The steps of a hardware lab's nightly with pytest-pinet, the same under GitLab CI
# (gitlab-ci.yml) and Jenkins (Jenkinsfile).  Copy this file to ci/pinet-ci.sh in the lab's
# repository, beside lab/rpi-lab.yaml (the env file) and its known_hosts.
#
#   sh ci/pinet-ci.sh setup                      pytest-pinet in .venv, the Allure 3 CLI in .allure
#   sh ci/pinet-ci.sh nightly ENV [pytest args]  check the env, run the suite, build the report
#   sh ci/pinet-ci.sh nightly DIR [pytest args]  the same through a labgrid coordinator: DIR holds
#                                                one env file per place (PLACE.yaml); set
#                                                PINET_COORDINATOR=HOST:PORT and PINET_PLACE_TAGS
#                                                (k=v,...); one worker per place file
#   sh ci/pinet-ci.sh publish DIR                the report as static pages in DIR (Pages: public)
#
# A fresh runner needs python3 (with venv), Node.js 20 or later and npm; setup stops with the
# reason when one is missing, before anything is measured.  The nightly exits with the tests'
# status, or 6 when every test passed but the report could not be built (--require-report):
# a night without its report is never green.  PINET_DB names the lab's shared store (a masked
# CI variable); the Allure history of each lab is kept in that store, so every runner adds to
# one history. PINET_SSH_KEY names a file holding the lab's private key (a GitLab File
# variable, a file the workflow writes from a secret): the night runs with an ssh-agent holding
# it, and the env file then names no identity. Under Jenkins, the sshagent step does the same.
set -eu

# What a night needs: the lab extra (labgrid, allure-pytest), the shared store's driver and the
# charts. pytest-pinet is on no package index: build its wheel from the repository
# (python3 -m pip wheel --no-deps -w dist /path/to/pytest-pinet) and name it with the extras:
#   PINET_SPEC="/srv/wheels/pytest_pinet-0.1.0-py3-none-any.whl[lab,postgres,charts]"
PINET_SPEC="${PINET_SPEC:-pytest-pinet[lab,postgres,charts]}"
ALLURE_VERSION=3.18.0  # as scripts/setup.sh installs it
RESULTS="${PINET_RESULTS_DIR:-results}"
PINET="${PINET:-.venv/bin/pinet}"

die() {
  echo "pinet-ci: $*" >&2
  exit 1
}

setup() {
  # Node first: without it there is no report, and that is known before an hour of measuring.
  command -v node >/dev/null 2>&1 ||
    die "Node.js is missing: the Allure 3 CLI needs Node.js 20 or later and npm (NodeSource packages, or a runner image with node 20)"
  major=$(node -p 'process.versions.node.split(".")[0]')
  [ "$major" -ge 20 ] || die "Node.js $(node --version) is too old for the Allure 3 CLI: 20 or later"
  command -v npm >/dev/null 2>&1 || die "npm is missing (it comes with Node.js; apt-get install npm)"
  command -v python3 >/dev/null 2>&1 || die "python3 is missing"
  # A spec that names its extras without lab is known wrong before anything is installed.
  case "$PINET_SPEC" in
  *\[*\])
    extras=${PINET_SPEC##*[}
    case ",${extras%]}," in
    *,lab,*) ;;
    *) die "$PINET_SPEC has no lab extra (labgrid, allure-pytest): a night cannot reach the lab; name it with [lab,postgres,charts]" ;;
    esac
    ;;
  esac
  python3 -m venv .venv || die "python3 cannot make a venv (apt-get install python3-venv)"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q "$PINET_SPEC"
  mkdir -p .allure
  (cd .allure && npm install --silent --no-audit --no-fund "allure@$ALLURE_VERSION") ||
    die "npm could not install allure@$ALLURE_VERSION"
  [ -f .allure/node_modules/allure/cli.js ] || die "no Allure 3 CLI in .allure after npm install"
  # A pinet that does not start (a broken install) stops the night here, and so does one
  # without the lab extra: its first step, pinet lab check, could not reach the lab.
  version=$("$PINET" --version) || die "$PINET --version failed: the install of $PINET_SPEC is broken"
  [ -n "$version" ] || die "$PINET --version printed nothing: the install of $PINET_SPEC is broken"
  .venv/bin/python -c "import labgrid, allure" 2>/dev/null ||
    die "$PINET_SPEC has no lab extra (labgrid, allure-pytest): a night cannot reach the lab; name it with [lab,postgres,charts]"
  echo "pinet-ci: $version, Node.js $(node --version), allure $ALLURE_VERSION"
}

nightly() {
  [ $# -ge 1 ] || die "nightly needs the lab's env file: sh ci/pinet-ci.sh nightly lab/rpi-lab.yaml"
  env_file=$1
  shift
  with_key
  if [ -d "$env_file" ]; then
    places "$env_file" "$@"
  fi
  [ -f "$env_file" ] || die "no env file $env_file"
  "$PINET" lab check "$env_file"
  night "$PINET" run --require-report --results "$RESULTS" ${PINET_SUITE:+--suite "$PINET_SUITE"} \
    -- --lg-env "$env_file" --junitxml "$RESULTS/junit.xml" "$@"
}

# The lab's key for the night: an ssh-agent of this job holds it (from a copy only this user
# can read: ssh-add refuses a key file others can read), and stops with the night.
with_key() {
  [ -n "${PINET_SSH_KEY:-}" ] || return 0
  [ -f "$PINET_SSH_KEY" ] || die "PINET_SSH_KEY names no file: $PINET_SSH_KEY"
  command -v ssh-agent >/dev/null 2>&1 || die "ssh-agent is missing (apt-get install openssh-client)"
  eval "$(ssh-agent -s)" >/dev/null
  agent=$SSH_AGENT_PID
  copy=$(mktemp)
  install -m 600 "$PINET_SSH_KEY" "$copy"
  if ! ssh-add -q "$copy" 2>/dev/null; then
    rm -f "$copy"
    ssh-agent -k >/dev/null 2>&1
    die "ssh-add refused the key in PINET_SSH_KEY (a private key without a passphrase, please)"
  fi
  rm -f "$copy"
  echo "pinet-ci: the lab's key is in this night's ssh-agent (pid $agent, $(ssh-add -l | cut -d' ' -f2))"
}

# Run the night; stop this job's ssh-agent after it, with the night's exit status.
night() {
  status=0
  "$@" || status=$?
  [ -z "${agent:-}" ] || SSH_AGENT_PID=$agent ssh-agent -k >/dev/null 2>&1
  exit "$status"
}

# The night through a labgrid coordinator: each worker reserves a place by the tags (waiting
# while a developer holds one), acquires it and releases it at its end (docs/hardware-lab.md).
# Every worker runs every test (--dist each) on the board of its place: each place is a board
# of its own, measured whole, not a share of one suite spread over the boards.
places() {
  dir=$1
  shift
  [ -n "${PINET_COORDINATOR:-}" ] ||
    die "$dir is a directory of place files: set PINET_COORDINATOR=HOST:PORT (the labgrid coordinator) and PINET_PLACE_TAGS"
  count=0
  for place in "$dir"/*.yaml; do
    [ -f "$place" ] || die "no place files (PLACE.yaml) in $dir"
    "$PINET" lab check --coordinator "$PINET_COORDINATOR" "$place"
    count=$((count + 1))
  done
  night "$PINET" run --require-report --results "$RESULTS" ${PINET_SUITE:+--suite "$PINET_SUITE"} \
    -- --pinet-coordinator "$PINET_COORDINATOR" ${PINET_PLACE_TAGS:+--pinet-place-tags "$PINET_PLACE_TAGS"} \
    --pinet-lab "$dir" -n "$count" --dist each --junitxml "$RESULTS/junit.xml" "$@"
}

publish() {
  dir=${1:-public}
  [ -f "$RESULTS/report/index.html" ] ||
    die "no report in $RESULTS/report to publish: the night did not build one (its log says why)"
  rm -rf "$dir"
  cp -R "$RESULTS/report" "$dir"
  echo "pinet-ci: report published in $dir/"
}

phase=${1:-}
[ $# -gt 0 ] && shift
case "$phase" in
  setup) setup ;;
  nightly) nightly "$@" ;;
  publish) publish "$@" ;;
  *) die "usage: pinet-ci.sh setup | nightly ENV|DIR [pytest args] | publish DIR" ;;
esac
