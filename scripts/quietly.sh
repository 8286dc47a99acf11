# Sourced by the scripts here: `quietly LOG LABEL CMD...` runs CMD with all its output in LOG
# and shows progress instead (elapsed time, crates compiled or the build's percentage); on
# failure it prints the log's last lines and its path, and returns CMD's status.
quietly() {
  local log=$1 label=$2
  shift 2
  mkdir -p "$(dirname "$log")"
  "$@" >"$log" 2>&1 &
  local pid=$! start=$SECONDS status=0 last=-30 step
  while kill -0 "$pid" 2>/dev/null; do
    step=$(grep -c '^ *Compiling ' "$log" 2>/dev/null || true)
    if [ "${step:-0}" -gt 0 ]; then
      step="$step crates compiled"
    else
      step=$(grep -o '^\[ *[0-9]*%\]' "$log" 2>/dev/null | tail -1 | tr -d '[] ' || true)
    fi
    if [ -t 2 ]; then
      printf '\r    %s: %ds %s   ' "$label" $((SECONDS - start)) "$step" >&2
    elif [ $((SECONDS - last)) -ge 30 ]; then
      printf '    %s: %ds %s\n' "$label" $((SECONDS - start)) "$step" >&2
      last=$SECONDS
    fi
    sleep 1
  done
  wait "$pid" || status=$?
  [ -t 2 ] && printf '\n' >&2
  if [ "$status" -ne 0 ]; then
    tail -n 20 "$log" >&2
    echo "error: $label failed (exit $status); the whole log: $log" >&2
    return "$status"
  fi
  echo "    $label: done in $((SECONDS - start))s (log: $log)" >&2
}
