#!/usr/bin/env bash
# The Action's run step. Its inputs come as environment variables (never spliced into the
# script): CODEX_VERSIONS, SCENARIOS, ONLY_FILES, USES_FILE, RECORDINGS, CLIENT_COMMAND,
# CLIENT_MUTATIONS, CLIENT_MUST_SURVIVE, EXTRA_ARGS, REPORT. In order:
#   1. with USES_FILE: `surface check` between the first and the last codex (REPORT/surface.txt);
#   2. `run` on every codex, with the scenario files (REPORT/run/);
#   3. with CLIENT_COMMAND: `client-check` of it against each recording (REPORT/client-check/NAME/).
# Every step runs even when an earlier one failed; the exit status is the worst of them
# (2 before 1 before 0). The report directory goes to $GITHUB_OUTPUT (report-dir), the
# reports to $GITHUB_STEP_SUMMARY. CODEX_PARITY (default: codex-parity on PATH) is the binary.
set -uo pipefail

cp=${CODEX_PARITY:-codex-parity}
report=${REPORT:-codex-parity-report}
summary=${GITHUB_STEP_SUMMARY:-/dev/null}
worst=0

note() { printf '\n== %s\n' "$*"; }
section() { # a heading and a file as a code block, in the step summary
  { echo "### $1"; echo '```'; cat "$2"; echo '```'; } >> "$summary"
}
fail() { echo "::error::$*"; echo "codex-parity action: $*" >&2; exit 2; }
record() { # the exit status of a step: 2 outranks 1, which outranks 0
  local code=$1
  if [ "$code" -ne 0 ] && { [ "$worst" -eq 0 ] || [ "$code" -eq 2 ]; }; then worst=$code; fi
}

mkdir -p "$report" || fail "cannot create the report directory $report"
echo "report-dir=$report" >> "${GITHUB_OUTPUT:-/dev/null}"

# The codex versions, as `run` flags, and the explicit ones (for surface check).
read -r -a versions <<< "${CODEX_VERSIONS:-}"
version_flags=()
explicit=()
for v in "${versions[@]}"; do
  case "$v" in
    compare) version_flags+=(--compare) ;;
    sample) version_flags+=(--sample) ;;
    *) version_flags+=(--codex-version "$v"); explicit+=("$v") ;;
  esac
done

for dir in "${SCENARIOS:-}" "${RECORDINGS:-}"; do
  [ -z "$dir" ] || [ -d "$dir" ] || fail "no such folder: $dir (scenarios / recordings)"
done
[ -z "${USES_FILE:-}" ] || [ -f "$USES_FILE" ] || fail "uses-file: no such file: $USES_FILE"
if [ -n "${CLIENT_COMMAND:-}" ] && [ -z "${RECORDINGS:-}" ]; then
  fail "client-command needs recordings: a folder of sessions recorded with codex-parity" \
    "record, to serve it"
fi

if [ -n "${USES_FILE:-}" ]; then
  if [ "${#explicit[@]}" -ge 2 ]; then
    from=${explicit[0]}; to=${explicit[${#explicit[@]}-1]}
  elif [ "${#explicit[@]}" -eq 0 ] && [[ " ${versions[*]} " == *" compare "* ]]; then
    # The comparison set's oldest and newest: `install --compare` lists it in order.
    listed=$("$cp" install --compare | awk '{print $2}') \
      || fail "installing the comparison set failed"
    from=$(head -n1 <<< "$listed"); to=$(tail -n1 <<< "$listed")
  else
    fail "uses-file needs two codex versions to compare: give codex-versions two or more" \
      "versions, or compare"
  fi
  note "surface check --uses $USES_FILE $from $to"
  "$cp" surface check --uses "$USES_FILE" "$from" "$to" | tee "$report/surface.txt"
  code=${PIPESTATUS[0]}
  record "$code"
  section "codex-parity surface check ($from → $to)" "$report/surface.txt"
fi

run_args=(run "${version_flags[@]}" --report "$report/run")
[ -z "${SCENARIOS:-}" ] || run_args+=(--scenarios "$SCENARIOS")
[ -z "${RECORDINGS:-}" ] || run_args+=(--scenarios "$RECORDINGS")
[ "${ONLY_FILES:-false}" != true ] || run_args+=(--only-files)
read -r -a extra <<< "${EXTRA_ARGS:-}"
run_args+=("${extra[@]}")
note "codex-parity ${run_args[*]}"
"$cp" "${run_args[@]}"
record $?
if [ -f "$report/run/report.md" ]; then
  { echo "### codex-parity run"; cat "$report/run/report.md"; } >> "$summary"
fi

if [ -n "${CLIENT_COMMAND:-}" ]; then
  check_args=()
  [ -z "${CLIENT_MUTATIONS:-}" ] || check_args+=(--mutations "$CLIENT_MUTATIONS")
  [ -z "${CLIENT_MUST_SURVIVE:-}" ] || check_args+=(--must-survive "$CLIENT_MUST_SURVIVE")
  [ "${#explicit[@]}" -eq 0 ] || check_args+=(--codex-version "${explicit[0]}")
  mkdir -p "$report/client-check"
  shopt -s nullglob
  sources=("$RECORDINGS"/*.toml)
  [ "${#sources[@]}" -gt 0 ] \
    || fail "recordings: no *.toml in $RECORDINGS for client-check to serve"
  for source in "${sources[@]}"; do
    name=$(basename "$source" .toml)
    note "client-check --from $source -- sh -c \"\$CLIENT_COMMAND\""
    "$cp" client-check --from "$source" "${check_args[@]}" --report "$report/client-check/$name" \
      -- sh -c "$CLIENT_COMMAND" | tee "$report/client-check/$name.txt"
    record "${PIPESTATUS[0]}"
    section "codex-parity client-check: $name" "$report/client-check/$name.txt"
  done
fi

note "codex-parity action: exit status $worst (reports in $report)"
exit "$worst"
