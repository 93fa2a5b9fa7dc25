#!/usr/bin/env bash
# Runs the command lines read on standard input one after another, and
# before each writes a progress line on stderr: `[i/n] COMMAND (elapsed,
# about T left)`, the estimate at the mean pace of the commands so far; at
# the end, the time taken and the commands that failed.
# Used by `make bench` (stops at the first failing command, exit 1) and
# `make synth-report` (--keep-going: a failing command, e.g. a design that
# does not fit, is listed at the end and is no failure of the whole).
set -u
keep_going=0
[ "${1:-}" = --keep-going ] && keep_going=1
mapfile -t cmds
n=${#cmds[@]}
t() { local s=$1; if [ "$s" -ge 3600 ]; then printf '%dh %02dm' $((s / 3600)) $((s % 3600 / 60));
      elif [ "$s" -ge 60 ]; then printf '%dm %02ds' $((s / 60)) $((s % 60)); else printf '%ds' "$s"; fi; }
start=$SECONDS
failed=()
for ((i = 0; i < n; i++)); do
  el=$((SECONDS - start))
  left=""
  [ "$i" -gt 0 ] && left=", about $(t $((el * (n - i) / i))) left"
  echo "[$((i + 1))/$n] ${cmds[i]} ($(t "$el") elapsed$left)" >&2
  if ! bash -c "${cmds[i]}" </dev/null; then
    failed+=("${cmds[i]}")
    [ "$keep_going" = 1 ] || { echo "failed: ${cmds[i]}" >&2; exit 1; }
  fi
done
echo "done: $n commands in $(t $((SECONDS - start)))${failed[*]:+, ${#failed[@]} failed:}" >&2
for c in "${failed[@]}"; do echo "  failed: $c" >&2; done
[ "$keep_going" = 1 ] || [ ${#failed[@]} -eq 0 ]
