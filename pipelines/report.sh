#!/usr/bin/env bash
# report.sh OUT [REFERENCE]: counts, acceptance rates and seconds per stage of a pipelines/ run. REFERENCE is the
# contamination reference the filter used (default OUT/reference.jsonl, the pipeline's own import).
set -uo pipefail
out=${1:?usage: report.sh OUT [REFERENCE]}
reference=${2:-$out/reference.jsonl}
lines() { [ -f "$1" ] && wc -l <"$1" || echo 0; }
secs() { [ -f "$out/$1.seconds" ] && printf '%.1f' "$(cat "$out/$1.seconds")" || echo -; }
ops=$(lines "$out/ops.jsonl"); ref=$(grep -c '"kind": *"task"' "$reference" 2>/dev/null); ref=${ref:-0}
tasks=$(lines "$out/tasks.jsonl"); kept=$(lines "$out/kept.jsonl"); rejected=$(lines "$out/rejects.jsonl")
rate() { [ "$2" -gt 0 ] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f%%", 100 * a / b }' || echo -; }
printf '%-10s %8s %10s %10s\n' stage records accepted seconds
printf '%-10s %8s %10s %10s\n' crawl "$ops" "usable ops" "$(secs crawl)"
printf '%-10s %8s %10s %10s\n' reference "$ref" "tasks" "$(secs reference)"
printf '%-10s %8s %10s %10s\n' synth "$tasks" "$(grep -o 'accepted ([0-9.]*%)' "$out/synth.log" | tr -d '()' | cut -d' ' -f2) nodes" "$(secs synth)"
printf '%-10s %8s %10s %10s\n' filter "$kept" "$(rate "$kept" "$tasks")" "$(secs filter)"
# The rate a user plans with: kept tasks per hour of the stages that make them (synth and filter; the crawl and the
# reference are made once per dataset).
made=$(awk -v a="$(secs synth)" -v b="$(secs filter)" 'BEGIN { if (a != "-" && b != "-") print a + b }')
[ -n "$made" ] && awk -v kept="$kept" -v s="$made" 'BEGIN { if (s > 0) printf "kept per hour of synth + filter: %.0f (%d in %.0f s)\n", 3600 * kept / s, kept, s }'
echo
echo "synth:  $(grep 'note:' "$out/synth.log" | tail -1 | sed 's/^ca-synth: note: //')"
echo "filter: $(grep 'note: kept' "$out/filter.log" | tail -1 | sed 's/^ca-filter: note: //')"
echo "rejected by reason:"
grep -o '"reject":{"reason":"[a-z-]*"' "$out/rejects.jsonl" 2>/dev/null | cut -d'"' -f6 | sort | uniq -c | sort -rn |
  awk -v total="$tasks" '{ printf "  %-22s %5d  %5.1f%%\n", $2, $1, 100 * $1 / total }'
