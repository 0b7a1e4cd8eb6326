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
# reason when one is missing, before anything is measured.  Every step exits with a status of
# pinet's one table (docs/nightly.md#exit-codes): 9 a regression, 10 below threshold, 7 a lab
# fault, 8 nothing measured, 4 a bad setting, 11 a missing prerequisite, 6 no report (a night
# without its report is never green); PINET_NOTIFY_BOARDS and PINET_NOTIFY_LAB, commands the lab
# sets, tell the boards' owner of the first two and the lab's owner of the rest.  PINET_DB names the lab's shared store (a masked
# CI variable); the Allure history of each lab is kept in that store, so every runner adds to
# one history. PINET_SSH_KEY names a file holding the lab's private key (a GitLab File
# variable, a file the workflow writes from a secret): the night runs with an ssh-agent holding
# it, and the env file then names no identity. Under Jenkins, the sshagent step does the same.
#
# Where pytest-pinet comes from: only what the lab names, exactly one of
#   PINET_WHEEL=/srv/wheels/pytest_pinet-0.1.0-py3-none-any.whl   the wheel itself
#   PINET_WHEELHOUSE=/srv/wheels     a directory the lab builds its wheels into (the newest
#                                    pytest_pinet-*.whl in it; dependencies found there first)
#   PINET_INDEX_URL=URL              the lab's own package index (a devpi or a mirror holding
#                                    pytest-pinet and what it needs), as pip's --index-url
# pytest-pinet is on no public index, and a name on a public index is anyone's to publish:
# setup never asks one for it (no --extra-index-url, nor the runner's own extra indexes or
# find-links for the lab's index), and with nothing named it stops with the reason.
# PINET_EXTRAS: the extras a night needs (default lab,postgres,charts; lab is required).
set -eu

PINET_EXTRAS="${PINET_EXTRAS:-lab,postgres,charts}"
ALLURE_VERSION=3.18.0  # as scripts/setup.sh installs it
RESULTS="${PINET_RESULTS_DIR:-results}"
PINET="${PINET:-.venv/bin/pinet}"

# The exit statuses of the one table (docs/nightly.md#exit-codes, pytest_pinet/exit_codes.py;
# a test holds the two equal): a pager tells the lab's failures from the boards' by them.
EXIT_BAD_CONFIG=4
EXIT_NO_REPORT=6
EXIT_LAB_FAULT=7
EXIT_NOTHING_MEASURED=8
EXIT_REGRESSION=9
EXIT_BELOW_THRESHOLD=10
EXIT_MISSING_PREREQUISITE=11

# Stop with a status of the table and the reason, which the lab's owner hears of.
die() {
  code=$1
  shift
  echo "pinet-ci: $*" >&2
  tell_owner "$code" "$*"
  exit "$code"
}

# Whose morning a red status is: a regression or a figure below its floor goes to
# PINET_NOTIFY_BOARDS, a lab fault, a night that measured nothing, a bad setting, a missing
# prerequisite or a missing report to PINET_NOTIFY_LAB.  Each is a command the lab sets (mail
# to a local alias, a chat hook's client), run with one line on stdin: the status, what it
# means and where to read on.  Unset: the job's own red status and log say it.
tell_owner() {
  case "$1" in
    "$EXIT_REGRESSION" | "$EXIT_BELOW_THRESHOLD") who=boards variable=PINET_NOTIFY_BOARDS ;;
    0) return 0 ;;
    "$EXIT_LAB_FAULT" | "$EXIT_NOTHING_MEASURED" | "$EXIT_BAD_CONFIG" | "$EXIT_MISSING_PREREQUISITE" | "$EXIT_NO_REPORT")
      who=lab variable=PINET_NOTIFY_LAB ;;
    *) who=lab variable=PINET_NOTIFY_LAB ;;  # a broken test or run: the lab runs the suite
  esac
  eval "notify=\${$variable:-}"
  echo "pinet-ci: exit $1 is for the $who owner${notify:+: told through $variable}"
  [ -n "$notify" ] || return 0
  printf 'pytest-pinet on %s: exit %s: %s\n' "$(hostname 2>/dev/null || echo this runner)" "$1" "$2" |
    sh -c "$notify" ||
    echo "pinet-ci: $variable failed: the status stays $1" >&2
}

# The one place pytest-pinet is installed from (see the header): anything else named, or
# nothing, stops setup with the reason before a venv is made.
pick_source() {
  named=""
  for var in PINET_WHEEL PINET_WHEELHOUSE PINET_INDEX_URL; do
    eval "value=\${$var:-}"
    [ -z "$value" ] || named="$named $var"
  done
  [ -z "${PINET_SPEC:-}" ] ||
    die ${EXIT_BAD_CONFIG} "PINET_SPEC is no longer read: name the lab's own source, PINET_WHEEL, PINET_WHEELHOUSE or PINET_INDEX_URL (docs/nightly.md, Getting the package)"
  case "$named" in
  "") die ${EXIT_BAD_CONFIG} "no source for pytest-pinet named: set PINET_WHEEL (a wheel), PINET_WHEELHOUSE (the directory the lab builds wheels into) or PINET_INDEX_URL (the lab's own index); it is on no public index, and a name there is anyone's (docs/nightly.md, Getting the package)" ;;
  " "*" "*) die ${EXIT_BAD_CONFIG} "name one source for pytest-pinet, not several:$named" ;;
  esac
  case ",$PINET_EXTRAS," in
  *,lab,*) ;;
  *) die ${EXIT_BAD_CONFIG} "PINET_EXTRAS=$PINET_EXTRAS has no lab extra (labgrid, allure-pytest): a night cannot reach the lab; name it with lab,postgres,charts" ;;
  esac
  if [ -n "${PINET_WHEEL:-}" ]; then
    case "$PINET_WHEEL" in *.whl) ;; *) die ${EXIT_BAD_CONFIG} "PINET_WHEEL is not a wheel (*.whl): $PINET_WHEEL" ;; esac
    [ -f "$PINET_WHEEL" ] || die ${EXIT_BAD_CONFIG} "PINET_WHEEL names no file: $PINET_WHEEL"
    source="$PINET_WHEEL"
  elif [ -n "${PINET_WHEELHOUSE:-}" ]; then
    [ -d "$PINET_WHEELHOUSE" ] || die ${EXIT_BAD_CONFIG} "PINET_WHEELHOUSE names no directory: $PINET_WHEELHOUSE"
    wheel=$(ls "$PINET_WHEELHOUSE"/pytest_pinet-*.whl 2>/dev/null | sort -V | tail -n 1)
    [ -n "$wheel" ] || die ${EXIT_BAD_CONFIG} "no pytest_pinet-*.whl in PINET_WHEELHOUSE=$PINET_WHEELHOUSE (python3 -m pip wheel --no-deps -w $PINET_WHEELHOUSE ./pytest-pinet)"
    source="$wheel"
  else
    source="the lab's index"
  fi
}

# pip into .venv, confined to the lab's index when one is named: the runner's own extra
# indexes and find-links stay out of it (with the lab's index, everything comes from it).
lab_pip() {
  if [ -n "${PINET_INDEX_URL:-}" ]; then
    PIP_EXTRA_INDEX_URL="" PIP_FIND_LINKS="" .venv/bin/python -m pip install -q --index-url "$PINET_INDEX_URL" "$@"
  else
    .venv/bin/python -m pip install -q "$@"
  fi
}

# pytest-pinet with its extras from the source named.
install_pinet() {
  if [ -n "${PINET_WHEEL:-}" ]; then
    lab_pip "$PINET_WHEEL[$PINET_EXTRAS]"
  elif [ -n "${PINET_WHEELHOUSE:-}" ]; then
    lab_pip --find-links "$PINET_WHEELHOUSE" "$wheel[$PINET_EXTRAS]"
  else
    lab_pip "pytest-pinet[$PINET_EXTRAS]"
  fi
}

setup() {
  # Node first: without it there is no report, and that is known before an hour of measuring.
  command -v node >/dev/null 2>&1 ||
    die ${EXIT_MISSING_PREREQUISITE} "Node.js is missing: the Allure 3 CLI needs Node.js 20 or later and npm (NodeSource packages, or a runner image with node 20)"
  major=$(node -p 'process.versions.node.split(".")[0]')
  [ "$major" -ge 20 ] || die ${EXIT_MISSING_PREREQUISITE} "Node.js $(node --version) is too old for the Allure 3 CLI: 20 or later"
  command -v npm >/dev/null 2>&1 || die ${EXIT_MISSING_PREREQUISITE} "npm is missing (it comes with Node.js; apt-get install npm)"
  command -v python3 >/dev/null 2>&1 || die ${EXIT_MISSING_PREREQUISITE} "python3 is missing"
  pick_source
  python3 -m venv .venv || die ${EXIT_MISSING_PREREQUISITE} "python3 cannot make a venv (apt-get install python3-venv)"
  lab_pip --upgrade pip || die ${EXIT_MISSING_PREREQUISITE} "pip could not upgrade itself (from the lab's index when one is named)"
  install_pinet || die ${EXIT_MISSING_PREREQUISITE} "pip could not install pytest-pinet[$PINET_EXTRAS] from $source"
  mkdir -p .allure
  (cd .allure && npm install --silent --no-audit --no-fund "allure@$ALLURE_VERSION") ||
    die ${EXIT_MISSING_PREREQUISITE} "npm could not install allure@$ALLURE_VERSION"
  [ -f .allure/node_modules/allure/cli.js ] || die ${EXIT_MISSING_PREREQUISITE} "no Allure 3 CLI in .allure after npm install"
  # A pinet that does not start (a broken install) stops the night here, and so does one
  # without the lab extra: its first step, pinet lab check, could not reach the lab.
  version=$("$PINET" --version) || die ${EXIT_MISSING_PREREQUISITE} "$PINET --version failed: the install from $source is broken"
  [ -n "$version" ] || die ${EXIT_MISSING_PREREQUISITE} "$PINET --version printed nothing: the install from $source is broken"
  .venv/bin/python -c "import labgrid, allure" 2>/dev/null ||
    die ${EXIT_MISSING_PREREQUISITE} "the install from $source has no lab extra (labgrid, allure-pytest): a night cannot reach the lab"
  echo "pinet-ci: $version from $source, Node.js $(node --version), allure $ALLURE_VERSION"
}

# A night keeps its figures and baselines in the store PINET_DB names.  Without one they would
# go to this runner's home, which an ephemeral runner loses with it: every night would then
# start without a baseline and could never be red for a regression.  Saying so is the lab's
# choice, not a default.
store_named() {
  [ -n "${PINET_DB:-}" ] || [ "${PINET_LOCAL_STORE:-}" = yes ] ||
    die ${EXIT_BAD_CONFIG} "PINET_DB names no store: the night's baselines would stay in this runner's home (~/.local/share/pinet), lost with an ephemeral runner; name the lab's shared store, or set PINET_LOCAL_STORE=yes on a runner that keeps its home"
}

nightly() {
  [ $# -ge 1 ] || die ${EXIT_BAD_CONFIG} "nightly needs the lab's env file: sh ci/pinet-ci.sh nightly lab/rpi-lab.yaml"
  env_file=$1
  shift
  store_named
  with_key
  if [ -d "$env_file" ]; then
    places "$env_file" "$@"
  fi
  [ -f "$env_file" ] || die ${EXIT_BAD_CONFIG} "no env file $env_file"
  checked=0
  "$PINET" lab check "$env_file" || checked=$?
  [ "$checked" = 0 ] || die "$checked" "pinet lab check $env_file failed (exit $checked, see above)"
  night "$PINET" run --require-report --results "$RESULTS" ${PINET_SUITE:+--suite "$PINET_SUITE"} \
    -- --lg-env "$env_file" --junitxml "$RESULTS/junit.xml" "$@"
}

# The lab's key for the night: an ssh-agent of this job holds it (from a copy only this user
# can read: ssh-add refuses a key file others can read).  The agent and the copy are removed
# on every way out of this script (an exit trap): a refused key, a missing env file, a
# failing lab check, the night's own end, an interrupt.
with_key() {
  [ -n "${PINET_SSH_KEY:-}" ] || return 0
  [ -f "$PINET_SSH_KEY" ] || die ${EXIT_BAD_CONFIG} "PINET_SSH_KEY names no file: $PINET_SSH_KEY"
  command -v ssh-agent >/dev/null 2>&1 || die ${EXIT_MISSING_PREREQUISITE} "ssh-agent is missing (apt-get install openssh-client)"
  trap cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM HUP
  copy=$(mktemp)
  install -m 600 "$PINET_SSH_KEY" "$copy"
  eval "$(ssh-agent -s)" >/dev/null
  agent=$SSH_AGENT_PID
  ssh-add -q "$copy" 2>/dev/null ||
    die ${EXIT_BAD_CONFIG} "ssh-add refused the key in PINET_SSH_KEY (a private key without a passphrase, please)"
  rm -f "$copy"
  echo "pinet-ci: the lab's key is in this night's ssh-agent (pid $agent, $(ssh-add -l | cut -d' ' -f2))"
}

# The exit trap: this job's agent stopped and the key's copy removed; the exit status stays.
cleanup() {
  [ -z "${copy:-}" ] || rm -f "$copy"
  [ -z "${agent:-}" ] || SSH_AGENT_PID=$agent ssh-agent -k >/dev/null 2>&1 || true
}

# Run the night, with its exit status; a red one's owner is told (the exit trap stops the agent).
night() {
  status=0
  "$@" || status=$?
  tell_owner "$status" "the night's summary is at the end of the job's log; its report in $RESULTS/report"
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
    die ${EXIT_BAD_CONFIG} "$dir is a directory of place files: set PINET_COORDINATOR=HOST:PORT (the labgrid coordinator) and PINET_PLACE_TAGS"
  count=0
  for place in "$dir"/*.yaml; do
    [ -f "$place" ] || die ${EXIT_BAD_CONFIG} "no place files (PLACE.yaml) in $dir"
    checked=0
    "$PINET" lab check --coordinator "$PINET_COORDINATOR" "$place" || checked=$?
    [ "$checked" = 0 ] || die "$checked" "pinet lab check of place $place failed (exit $checked, see above)"
    count=$((count + 1))
  done
  night "$PINET" run --require-report --results "$RESULTS" ${PINET_SUITE:+--suite "$PINET_SUITE"} \
    -- --pinet-coordinator "$PINET_COORDINATOR" ${PINET_PLACE_TAGS:+--pinet-place-tags "$PINET_PLACE_TAGS"} \
    --pinet-lab "$dir" -n "$count" --dist each --junitxml "$RESULTS/junit.xml" "$@"
}

publish() {
  dir=${1:-public}
  [ -f "$RESULTS/report/index.html" ] ||
    die ${EXIT_NO_REPORT} "no report in $RESULTS/report to publish: the night did not build one (its log says why)"
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
  *) die ${EXIT_BAD_CONFIG} "usage: pinet-ci.sh setup | nightly ENV|DIR [pytest args] | publish DIR" ;;
esac
