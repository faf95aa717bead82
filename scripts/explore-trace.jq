# explore-trace.jq: read by scripts/bench-explore.sh from a Chromium trace
# (categories toplevel and blink.user_timing) of explore.html with
# scripts/explore-bench.js: the main-thread CPU time (thread time, tdur) of
# the page's renderer up to its first frame painted (the explore-painted
# mark), and per drag step (between drag-start marks): figures that depend
# little on the load of the machine, unlike wall time.
.traceEvents as $e
| ($e | map(select(.cat == "blink.user_timing" and .name == "explore-painted")) | first) as $p
| ($e | map(select(.ph == "M" and .name == "thread_name" and .pid == $p.pid and .args.name == "CrRendererMain")) | first | .tid) as $tid
| ($e | map(select(.pid == $p.pid and .tid == $tid and .ph == "X" and .name == "ThreadControllerImpl::RunTask" and .tdur != null))) as $tasks
| ($e | map(select(.cat == "blink.user_timing" and .name == "drag-start" and .pid == $p.pid) | .ts) | sort) as $drags
| [range(0; $drags | length) as $k
   | ($drags[$k]) as $a | (if $k + 1 < ($drags | length) then $drags[$k + 1] else 1e300 end) as $b
   | [$tasks[] | select(.ts >= $a and .ts < $b) | .tdur] | add // 0] as $steps
| {firstRenderCpuMs: ([$tasks[] | select(.ts < $p.ts) | .tdur] | add / 1000 | . * 10 | round / 10),
   dragCpuMedianMs: ($steps | sort | .[(length - 1) / 2 | floor] / 1000 | . * 10 | round / 10),
   dragCpuMaxMs: ($steps | max / 1000 | . * 10 | round / 10), dragSteps: ($steps | length)}
