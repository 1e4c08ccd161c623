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
# 4 KiB with --repeat 5, their tables to the middle of each fifth, runs
# the next copy of the timed loops, 16 bytes further on, the fifth the
# first again, and keeps its one worker to the next CPU of those it may
# use (see bench/perf.h, perf_stack_shift(), perf_tab_shift(),
# perf_code_place() and perf_cpu()).  The CPUs: this shell's, which the
# tool inherits.
cpus=$(awk '/^Cpus_allowed_list:/ { n = split($2, r, ",");
	for (i = 1; i <= n; i++) { split(r[i], b, "-"); if (b[2] == "") b[2] = b[1];
		for (c = b[1] + 0; c <= b[2] + 0; c++) printf "%d ", c } }' /proc/self/status)
ncpu=$(echo $cpus | wc -w)
[ "$ncpu" -ge 1 ] || { echo "no CPU in /proc/self/status"; exit 1; }
cpu_of() {	# the CPU of worker $1 in run $2 (from 0) of a case
	echo $cpus | awk -v k=$(( ($1 + $2) % ncpu + 1 )) '{ print $k }'
}
out_v=$(mktemp)
trap 'rm -f "$out" "$out_v"' EXIT
# shmpool-perf ARGS, its stderr in $out_v; shown, and the test failed,
# when it fails.
perf_v() {
	"$perf" "$@" 2>"$out_v" >/dev/null ||
		{ cat "$out_v"; echo "shmpool-perf $*: failed"; exit 1; }
}
perf_v --cache 0 --workers 1 --get-bulk 1 --keep 32 --constant-n 0 \
	--random none --seconds 0.05 --repeat 5 -v
runs=$(sed -n 's/^  run \([0-9]*\) (stacks \([0-9]*\) bytes down, tables at \([0-9]*\), code at +\([0-9]*\), CPUs \([0-9]*\)): shmpool [1-9][0-9]*$/\1:\2:\3:\4:\5/p' \
	"$out_v" | tr '\n' ' ')
want="1:0:384:0:$(cpu_of 0 0) 2:816:1216:16:$(cpu_of 0 1) 3:1632:2048:32:$(cpu_of 0 2) 4:2448:2816:48:$(cpu_of 0 3) 5:3264:3648:0:$(cpu_of 0 4) "
[ "$runs" = "$want" ] ||
	{ echo "runs, stack shifts, tables, code, CPUs: '$runs', not '$want'"; exit 1; }
# And the worker ran there (sched_getcpu() as it stopped).
ran=$(sed -n 's/^  worker 0: [1-9][0-9]* objects in [1-9][0-9]* ns on CPU \([0-9]*\)$/\1/p' \
	"$out_v" | tr '\n' ' ')
want="$(cpu_of 0 0) $(cpu_of 0 1) $(cpu_of 0 2) $(cpu_of 0 3) $(cpu_of 0 4) "
[ "$ran" = "$want" ] ||
	{ echo "the worker's CPUs: '$ran', not '$want'"; exit 1; }
echo "perf stack, table, code and CPU places: ok"

# With as many workers as CPUs, worker i of run r on the CPU (i + r) mod
# N of the list; with one more, none kept anywhere.  (Cases of up to 8
# workers: on a larger machine these are left out.)
if [ "$ncpu" -le 8 ]; then
	perf_v --cache 512 --workers "$ncpu" --get-bulk 1 --keep 32 \
		--constant-n 0 --random none --seconds 0.05 --repeat 2 -v
	lists=$(sed -n 's/^  run [0-9]* (.*, CPUs \([0-9,]*\)): shmpool [1-9][0-9]*$/\1/p' \
		"$out_v" | tr '\n' ' ')
	want=
	for r in 0 1; do
		l=
		i=0
		while [ $i -lt "$ncpu" ]; do
			l="$l${l:+,}$(cpu_of $i $r)"
			i=$((i + 1))
		done
		want="$want$l "
	done
	[ "$lists" = "$want" ] ||
		{ echo "$ncpu workers' CPUs: '$lists', not '$want'"; exit 1; }
	echo "perf CPUs of $ncpu workers: ok"
	perf_v --cache 512 --workers $((ncpu + 1)) --get-bulk 1 --keep 32 \
		--constant-n 0 --random none --seconds 0.05 --repeat 2 -v
	n=$(grep -c '^  run [12] (.*, CPUs any): shmpool [1-9][0-9]*$' "$out_v" || true)
	[ "$n" -eq 2 ] ||
		{ echo "$((ncpu + 1)) workers: 'CPUs any' in $n runs, not 2"; exit 1; }
	echo "perf CPUs of $((ncpu + 1)) workers: any: ok"
fi

# The man page names the options that --help names, no more, no fewer:
# the long ones of the usage, against those of the page's SYNOPSIS.
page="${top_srcdir:-.}/man/shmpool-perf.1"
from_help=$("$perf" --help | sed '/^$/q' | grep -o -- '--[a-z][a-z-]*' | sort -u | tr '\n' ' ')
from_page=$(sed -n '/^\.SH SYNOPSIS/,/^\.SH /p' "$page" | sed 's/\\-/-/g' |
	grep -o -- '--[a-z][a-z-]*' | sort -u | tr '\n' ' ')
[ -n "$from_help" ] && [ "$from_help" = "$from_page" ] ||
	{ echo "options: --help '$from_help', shmpool-perf(1) '$from_page'"; exit 1; }
echo "perf options in shmpool-perf(1): ok"

# What a run leaves behind once it has ended: nothing, neither its
# segment nor, with --vs-dpdk, the EAL's runtime folder.
left_check() {	# pid what
	for f in "/dev/shm/shmpool.perf-$1" /dev/shm/.shmpool-new.perf-"$1".* \
			"/var/run/dpdk/shmpool-perf-$1" \
			"${XDG_RUNTIME_DIR:-/tmp}/dpdk/shmpool-perf-$1"; do
		[ ! -e "$f" ] || { echo "$2: $f was left behind"; exit 1; }
	done
}
have_dpdk=0
grep -q '^#define HAVE_DPDK 1' "$b/config.h" && have_dpdk=1
tmp=$(mktemp -d)
trap 'rm -f "$out" "$out_v"; rm -rf "$tmp"' EXIT

# A reader that goes (| head -n 1): the run stops at its next line, as
# on SIGINT, removes what it made and exits 128 + SIGPIPE.  Six cases of
# a tenth of a second: half a second after the first line for head to
# have gone, on a machine as loaded as make check's runs make it.
pipe_run() {
	rm -f "$tmp/pid" "$tmp/rc"
	{ rc=0; sh -c 'echo $$ >"$0"; exec "$@"' "$tmp/pid" "$perf" \
		--smoke --cache 0,512,claimed --workers 1,2 --seconds 0.1 \
		--repeat 1 "$@" \
		2>"$tmp/err" || rc=$?; echo $rc >"$tmp/rc"; } |
		head -n 1 >/dev/null
	rc=$(cat "$tmp/rc")
	[ "$rc" -eq 141 ] ||
		{ cat "$tmp/err"; echo "| head $*: exit $rc, not 141"; exit 1; }
	grep -qx 'shmpool-perf: interrupted' "$tmp/err" ||
		{ cat "$tmp/err"; echo "| head $*: not 'interrupted'"; exit 1; }
	left_check "$(cat "$tmp/pid")" "| head $*"
}
pipe_run
[ $have_dpdk -eq 0 ] || pipe_run --vs-dpdk
echo "perf SIGPIPE: ok"

# Lines that cannot be written (a full disk) fail the run, --list and
# --help alike: exit 1, and stderr says why.
for args in "--smoke --seconds 0.05 --repeat 1" "--smoke --list" "--help"; do
	rc=0
	"$perf" $args >/dev/full 2>"$tmp/err" || rc=$?
	[ "$rc" -eq 1 ] ||
		{ cat "$tmp/err"; echo "$args >/dev/full: exit $rc, not 1"; exit 1; }
	tail -n 1 "$tmp/err" |
		grep -qx 'shmpool-perf: standard output: No space left on device' ||
		{ cat "$tmp/err"; echo "$args >/dev/full: not said"; exit 1; }
done
echo "perf write errors: ok"

# A case whose worker dies (SIGKILL, mid-run, objects in hand) fails
# alone: the next case runs on a pool made anew, and prints its line.
# The worker is killed once it has run 50 ms of CPU time, its timed
# loop well begun.
"$perf" --cache 512 --workers 1 --get-bulk 8,32 --keep 128 --constant-n 0 \
	--random none --seconds 1 --repeat 1 >"$tmp/out" 2>"$tmp/err" &
pid=$!
kid=
deadline=$(($(date +%s) + 10))
while [ -z "$kid" ]; do
	[ "$(date +%s)" -lt "$deadline" ] ||
		{ kill $pid; echo "no worker of $pid ran 50 ms"; exit 1; }
	for k in $(pgrep -P $pid); do
		# utime + stime, in ticks, after the command's name
		t=$(sed 's/^.*) //' "/proc/$k/stat" 2>/dev/null |
			awk '{ print $12 + $13 }')
		[ "${t:-0}" -ge 5 ] && kid=$k
	done
	[ -n "$kid" ] || sleep 0.01
done
kill -KILL "$kid"
rc=0
wait $pid || rc=$?
[ "$rc" -eq 1 ] ||
	{ cat "$tmp/err"; echo "killed worker: exit $rc, not 1"; exit 1; }
n=$(grep -c '^shmpool_perf cache=512 cores=1 n_get_bulk=32 n_put_bulk=32 n_keep=128 constant_n=0 rate_persec=[1-9][0-9]*$' \
	"$tmp/out" || true)
[ "$n" -eq 1 ] && [ "$(wc -l <"$tmp/out")" -eq 1 ] ||
	{ cat "$tmp/out" "$tmp/err"; echo "killed worker: not the next line alone"; exit 1; }
cat >"$tmp/want" <<'WANT'
shmpool-perf: shmpool_perf cache=512 cores=1 n_get_bulk=8 n_put_bulk=8 n_keep=128 constant_n=0: the shmpool run failed
shmpool-perf: 1 case(s) of 2 failed
WANT
diff "$tmp/want" "$tmp/err" || { echo "killed worker: stderr"; exit 1; }
left_check $pid "killed worker"
echo "perf case after a killed worker: ok"

# --vs-dpdk with a cache DPDK cannot have is a usage error before
# anything else: with --list, and in a build without DPDK alike.
for args in "--cache 1024 --list" "--cache claimed1024 --list" \
		"--cache 0,1024 --smoke --seconds 0.05 --repeat 1"; do
	rc=0
	"$perf" --vs-dpdk $args >/dev/null 2>"$tmp/err" || rc=$?
	[ "$rc" -eq 2 ] ||
		{ cat "$tmp/err"; echo "--vs-dpdk $args: exit $rc, not 2"; exit 1; }
	echo "shmpool-perf: --vs-dpdk: DPDK's caches hold at most 512 objects, not 1024" |
		diff - "$tmp/err" || { echo "--vs-dpdk $args: stderr"; exit 1; }
done
echo "perf --vs-dpdk cache usage error: ok"

# DPDK's side makes a pool per default cache size and one without a
# cache: as many as --cache takes values (32), each case on its own.
if [ $have_dpdk -eq 1 ]; then
	caches=$(seq -s, 1 31),0
	rc=0
	"$perf" --vs-dpdk --smoke --cache "$caches" --seconds 0.01 --repeat 1 \
		>"$tmp/out" 2>"$tmp/err" || rc=$?
	[ "$rc" -eq 0 ] ||
		{ cat "$tmp/err"; echo "--vs-dpdk, 32 pools: exit $rc, not 0"; exit 1; }
	n=$(grep -c ' dpdk_rate=[0-9]* ratio=' "$tmp/out" || true)
	[ "$n" -eq 32 ] ||
		{ cat "$tmp/err"; echo "--vs-dpdk, 32 pools: $n lines, not 32"; exit 1; }
	echo "perf --vs-dpdk with 32 pools: ok"
fi

# A random case ignores --put-bulk: with --random-only, no get size need
# equal a put size.
rc=0
"$perf" --get-bulk 4 --put-bulk 8 --random-only --cache 0 --workers 1 \
	--keep 32 --list >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" -eq 0 ] ||
	{ cat "$tmp/err"; echo "--random-only --put-bulk: exit $rc, not 0"; exit 1; }
echo "shmpool_perf cache=0 cores=1 n_max_bulk=4 random=1 n_keep=32 constant_n=0" |
	diff - "$tmp/out" || { echo "--random-only --put-bulk: cases"; exit 1; }
echo "perf --random-only with other put sizes: ok"

# --random-only replaces --smoke's "no random case": its one case, in
# random form.
rc=0
"$perf" --smoke --random-only --list >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" -eq 0 ] ||
	{ cat "$tmp/err"; echo "--smoke --random-only: exit $rc, not 0"; exit 1; }
echo "shmpool_perf cache=512 cores=1 n_max_bulk=32 random=1 n_keep=128 constant_n=0" |
	diff - "$tmp/out" || { echo "--smoke --random-only: cases"; exit 1; }
echo "perf --smoke --random-only: ok"

# --help's default workers are those a run uses: 1, 2 and twice the
# CPUs, at most 256, once each (1 and 2 on one CPU).
help_workers() {	# the list --help prints, run as "$@" "$perf"
	"$@" "$perf" --help | sed -n 's/^ *CPUs, at most 256: \([0-9,]*\))$/\1/p'
}
list_workers() {	# the workers of the default list, run as "$@" "$perf"
	"$@" "$perf" --list --cache 0 --get-bulk 1 --keep 32 --constant-n 0 \
		--random none 2>/dev/null | sed 's/^.* cores=\([0-9]*\) .*$/\1/' |
		tr '\n' ',' | sed 's/,$//'
}
workers_check() {	# what, wanted list, command prefix
	what=$1 want=$2
	shift 2
	h=$(help_workers "$@")
	l=$(list_workers "$@")
	[ "$h" = "$want" ] && [ "$l" = "$want" ] ||
		{ echo "$what: --help '$h', --list '$l', not '$want'"; exit 1; }
}
want=1,2
[ "$ncpu" -gt 1 ] && want=1,2,$((2 * ncpu > 256 ? 256 : 2 * ncpu))
workers_check "default workers" "$want"
if command -v taskset >/dev/null 2>&1; then
	workers_check "workers on one CPU" 1,2 \
		taskset -c "$(echo $cpus | awk '{ print $1 }')"
fi
echo "perf default workers in --help: ok"

# Options that leave no case say why: the keep, or --constant-n 1's
# sizes.
nocase_check() {	# message, options
	want=$1
	shift
	rc=0
	"$perf" "$@" --random none --list >/dev/null 2>"$tmp/err" || rc=$?
	[ "$rc" -eq 2 ] ||
		{ cat "$tmp/err"; echo "$*: exit $rc, not 2"; exit 1; }
	echo "shmpool-perf: no case: $want" | diff - "$tmp/err" ||
		{ echo "$*: stderr"; exit 1; }
}
nocase_check "--constant-n 1 has loops only for equal get and put sizes of 1, 4, 8, 32, 64 or 128" \
	--get-bulk 16 --keep 32 --constant-n 1
nocase_check "no keep is a multiple of both bulk sizes" --get-bulk 3 --keep 32
echo "perf no-case messages: ok"

# An empty item of --cache is a usage error, as one of --workers is.
for c in "512," "0,,512" ",512"; do
	rc=0
	"$perf" --cache "$c" --smoke --list >/dev/null 2>"$tmp/err" || rc=$?
	[ "$rc" -eq 2 ] ||
		{ cat "$tmp/err"; echo "--cache '$c': exit $rc, not 2"; exit 1; }
	head -n 1 "$tmp/err" | grep -qxF "shmpool-perf: --cache '$c': expected sizes in 0..4096, claimed or claimedC (C in 1..4096)" ||
		{ cat "$tmp/err"; echo "--cache '$c': stderr"; exit 1; }
done
echo "perf --cache with an empty item: ok"

# -v prints the pool with --list too: the one a run makes, not made.
rc=0
"$perf" --list -v --smoke --workers 3 >/dev/null 2>"$tmp/err" || rc=$?
[ "$rc" -eq 0 ] || { cat "$tmp/err"; echo "--list -v: exit $rc, not 0"; exit 1; }
listed=$(sed -n 's/^shmpool-perf: pool: \(.*\)$/\1/p' "$tmp/err")
perf_v --smoke --workers 3 --seconds 0.05 --repeat 1 -v
made=$(sed -n 's/^shmpool-perf: pool [^ ]*: \(.* slots\);.*$/\1/p' "$out_v")
[ "$listed" = "3072 objects of 2048 bytes, 7 slots" ] && [ "$made" = "$listed" ] ||
	{ echo "pool: --list -v '$listed', a run's '$made'"; exit 1; }
echo "perf --list -v prints the pool: ok"
