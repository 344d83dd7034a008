# Shell helpers for scripts/setup and scripts/provision-python (sourced; each
# defines log). A step that has a fallback should not fill the screen with
# errors before the fallback works: its output is held back, and when it
# fails one line says why and what happens next.

# attempt NEXT COMMAND...: run COMMAND, its output held back. On success show
# the output and return 0; on failure log one line (COMMAND failed, its gist,
# then NEXT) and return COMMAND's status.
attempt() {
    local next=$1 out status=0
    shift
    out=$(mktemp)
    "$@" >"$out" 2>&1 || status=$?
    if [ "$status" = 0 ]; then
        cat "$out" >&2
    else
        log "${1##*/} ${*:2} failed ($(gist "$out")); $next"
    fi
    rm -f "$out"
    return "$status"
}

# gist FILE: the first error line of a command's output and its last cause
# (uv lists the causes of an error on "cause:" lines), else its last line.
gist() {
    local error cause
    error=$(grep -m 1 -E '^(error|ERROR)\b' "$1" || true)
    cause=$(sed -n 's/^[[:space:]]*cause: //p' "$1" | tail -n 1)
    if [ -z "$error" ]; then
        error=$(grep -v '^[[:space:]]*$' "$1" | tail -n 1 || true)
    fi
    echo "${error:-no output}${cause:+: $cause}" | cut -c 1-240
}
