#!/usr/bin/env bash
# run.sh AGENT_CMD...: run the vendored ACP TCK (v1) against a stdio ACP agent. Installs nothing: the
# interpreter is $ACPTCK_PYTHON, else /usr/bin/python3, else python3 on PATH, the first that imports
# pytest and jsonschema (exit 3 if none does). Extra TCK options come from $ACPTCK_ARGS (word-split);
# the JSON report goes to $ACPTCK_REPORT (default: a temp file). Prints the TCK's output, then last:
#   ACP TCK: N/M MANDATORY pass, K/L CAPABILITY pass, verdict CONFORMANT|NOT_CONFORMANT
# Exit status: the TCK's (0 iff CONFORMANT, 1 otherwise, 2 usage), 3 without a usable python.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ $# -gt 0 ] || { echo "usage: run.sh AGENT_CMD [ARGS...]" >&2; exit 2; }
PY=""
for c in "${ACPTCK_PYTHON:-}" /usr/bin/python3 "$(command -v python3 || true)"; do
  if [ -n "$c" ] && [ -x "$c" ] && "$c" -c 'import pytest, jsonschema' >/dev/null 2>&1; then PY=$c; break; fi
done
[ -n "$PY" ] || { echo "acptck: no python3 with pytest and jsonschema (apt-get install python3-pytest python3-jsonschema)" >&2; exit 3; }
REPORT=${ACPTCK_REPORT:-$(mktemp "${TMPDIR:-/tmp}/acptck-report.XXXXXX.json")}
echo "acptck: report -> $REPORT" >&2
export PYTHONDONTWRITEBYTECODE=1
# shellcheck disable=SC2086
PYTHONPATH="$HERE/src/src" "$PY" -m tck ${ACPTCK_ARGS:-} --report-json "$REPORT" -- "$@"
rc=$?
"$PY" - "$REPORT" <<'PYEOF' || echo "ACP TCK: no report written (exit $rc), verdict NOT_CONFORMANT"
import json, sys
r = json.load(open(sys.argv[1]))
c = r["verdict"]["tier_counts"]
m, k = c["MANDATORY"], c["CAPABILITY"]
print(f"ACP TCK: {m['PASS']}/{sum(m.values())} MANDATORY pass, {k['PASS']}/{k['PASS'] + k['FAIL']} CAPABILITY pass, "
      f"verdict {'CONFORMANT' if r['verdict']['conformant'] else 'NOT_CONFORMANT'}")
PYEOF
exit $rc
