#!/bin/sh
# shmpool-perf --smoke: one short case (cache 512, one worker, bulk 32,
# keep 128) that must run, count and print its one line, and leave no
# segment behind.  A smoke, not a timed test: the rate is not judged.
set -eu
b="${top_builddir:-.}"
perf="$b/bench/shmpool-perf"
[ -x "$perf" ] || { echo "$perf is not built"; exit 1; }

out=$(mktemp)
trap 'rm -f "$out"' EXIT
set +e
"$perf" --smoke >"$out" &
pid=$!
wait $pid
rc=$?
set -e
cat "$out"
[ $rc -eq 0 ] || { echo "shmpool-perf --smoke: exit $rc, not 0"; exit 1; }
n=$(grep -c '^shmpool_perf cache=512 cores=1 n_get_bulk=32 n_put_bulk=32 n_keep=128 constant_n=0 rate_persec=[1-9][0-9]*$' "$out" || true)
[ "$n" -eq 1 ] || { echo "expected one case line, got $n"; exit 1; }
# Its segment (and the temporary file it is built in) is gone.
for f in "/dev/shm/shmpool.perf-$pid" /dev/shm/.shmpool-new.perf-"$pid".*; do
	[ ! -e "$f" ] || { echo "$f was left behind"; exit 1; }
done
echo "perf smoke: ok"

# Each run of a case moves the workers' stacks down by another fifth of
# 4 KiB with --repeat 5, their tables to the middle of each fifth, and
# runs the next copy of the timed loops, 16 bytes further on, the fifth
# the first again (see bench/perf.h, perf_stack_shift(), perf_tab_shift()
# and perf_code_place()).
runs=$("$perf" --cache 0 --workers 1 --get-bulk 1 --keep 32 --constant-n 0 \
	--random none --seconds 0.05 --repeat 5 -v 2>&1 >/dev/null |
	sed -n 's/^  run \([0-9]*\) (stacks \([0-9]*\) bytes down, tables at \([0-9]*\), code at +\([0-9]*\)): shmpool [1-9][0-9]*$/\1:\2:\3:\4/p' |
	tr '\n' ' ')
want="1:0:384:0 2:816:1216:16 3:1632:2048:32 4:2448:2816:48 5:3264:3648:0 "
[ "$runs" = "$want" ] ||
	{ echo "runs, stack shifts, tables, code: '$runs', not '$want'"; exit 1; }
echo "perf stack, table and code places: ok"
