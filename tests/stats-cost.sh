#!/bin/sh
# bench/stats-cost's arithmetic: two stand-in build folders whose
# shmpool-perf print known rates, run in turns; the medians and the cost
# printed must be exactly those computed by hand.  (The real comparison
# takes minutes and two builds: it is a benchmark, not a test.)
set -eu
src="${top_srcdir:-.}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# A stand-in: each run prints the next rate of its list for two cases,
# the second with a field after its rate (taken by its name).
fake() {	# folder stats rates-of-case-1 rates-of-case-2
	mkdir -p "$1/bench" "$1/libshmpool/shmpool"
	echo "#define SHMPOOL_STATS $2" >"$1/libshmpool/shmpool/config.h"
	cat >"$1/bench/shmpool-perf" <<SCRIPT
#!/bin/sh
n=\$(cat "$1/count" 2>/dev/null || echo 0)
n=\$((n + 1))
echo \$n >"$1/count"
[ "\$*" = "--cache 512 --workers 1 --get-bulk 1,32" ] || { echo "args: \$*" >&2; exit 1; }
a=\$(echo "$3" | cut -d' ' -f\$n)
b=\$(echo "$4" | cut -d' ' -f\$n)
echo "shmpool_perf cache=512 cores=1 n_get_bulk=1 n_put_bulk=1 n_keep=128 constant_n=0 rate_persec=\$a"
echo "shmpool_perf cache=512 cores=1 n_get_bulk=32 n_put_bulk=32 n_keep=128 constant_n=0 rate_persec=\$b x=1"
SCRIPT
	chmod +x "$1/bench/shmpool-perf"
}
fake "$dir/on" 1 "90 100 97" "1000 990 1010"
fake "$dir/off" 0 "100 110 95" "1000 1000 1000"

"$src/bench/stats-cost" --repeat 3 --on "$dir/on" --off "$dir/off" \
	--cache 512 --workers 1 --get-bulk 1,32 >"$dir/out"
cat "$dir/out"
cat >"$dir/want" <<'WANT'
shmpool_perf cache=512 cores=1 n_get_bulk=1 n_put_bulk=1 n_keep=128 constant_n=0 rate_persec=97 stats_off_rate=100 stats_cost=3.0%
shmpool_perf cache=512 cores=1 n_get_bulk=32 n_put_bulk=32 n_keep=128 constant_n=0 rate_persec=1000 stats_off_rate=1000 stats_cost=0.0%
WANT
diff "$dir/want" "$dir/out"
[ "$(cat "$dir/on/count")" -eq 3 ] && [ "$(cat "$dir/off/count")" -eq 3 ] ||
	{ echo "runs: $(cat "$dir/on/count") and $(cat "$dir/off/count"), not 3 and 3"; exit 1; }

# A folder built the other way round is refused.
if "$src/bench/stats-cost" --repeat 1 --on "$dir/off" --off "$dir/on" \
		--cache 512 --workers 1 --get-bulk 1,32 2>"$dir/err"; then
	echo "swapped folders accepted"; exit 1
fi
grep -q "is not built with stats" "$dir/err"
# A bad repeat count is a usage error, and says the usage.
for r in x 0; do
	rc=0
	"$src/bench/stats-cost" --repeat $r 2>"$dir/err" || rc=$?
	[ "$rc" -eq 2 ] || { echo "--repeat $r: exit $rc, not 2"; exit 1; }
	echo "usage: bench/stats-cost [--repeat R] [--on DIR] [--off DIR] [shmpool-perf options]" |
		diff - "$dir/err" || { echo "--repeat $r: stderr"; exit 1; }
done

# A run that fails ends it all with its status, no line printed, its
# message said once: on either side.
broken() {	# folder stats status
	mkdir -p "$1/bench" "$1/libshmpool/shmpool"
	echo "#define SHMPOOL_STATS $2" >"$1/libshmpool/shmpool/config.h"
	printf '#!/bin/sh\necho "shmpool-perf: a usage error" >&2\nexit %d\n' \
		"$3" >"$1/bench/shmpool-perf"
	chmod +x "$1/bench/shmpool-perf"
}
broken "$dir/bad-on" 1 2
broken "$dir/bad-off" 0 1
fails() {	# status, stats-cost arguments
	want=$1
	shift
	rc=0
	"$src/bench/stats-cost" --repeat 2 "$@" --cache 512 --workers 1 \
		--get-bulk 1,32 >"$dir/out" 2>"$dir/err" || rc=$?
	[ "$rc" -eq "$want" ] ||
		{ cat "$dir/err"; echo "$*: exit $rc, not $want"; exit 1; }
	[ ! -s "$dir/out" ] || { cat "$dir/out"; echo "$*: lines printed"; exit 1; }
}
fails 2 --on "$dir/bad-on" --off "$dir/off"
printf '%s\n' "shmpool-perf: a usage error" \
	"stats-cost: $dir/bad-on/bench/shmpool-perf: exit 2" | diff - "$dir/err"
rm -f "$dir/on/count"
fails 1 --on "$dir/on" --off "$dir/bad-off"
printf '%s\n' "shmpool-perf: a usage error" \
	"stats-cost: $dir/bad-off/bench/shmpool-perf: exit 1" | diff - "$dir/err"
[ "$(cat "$dir/on/count")" -eq 1 ]

# --vs-dpdk, or a start of it, is a usage error: nothing runs.
for v in --vs-dpdk --vs; do
	rm -f "$dir/on/count" "$dir/off/count"
	fails 2 --on "$dir/on" --off "$dir/off" $v
	printf '%s\n' "stats-cost: --vs-dpdk: the build without stats is made without DPDK, and DPDK's rate owes nothing to shmpool's counters" \
		"usage: bench/stats-cost [--repeat R] [--on DIR] [--off DIR] [shmpool-perf options]" |
		diff - "$dir/err"
	[ ! -e "$dir/on/count" ] && [ ! -e "$dir/off/count" ] ||
		{ echo "$v: a build ran"; exit 1; }
done
echo "stats-cost: ok"
