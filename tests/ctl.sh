#!/bin/sh
# shellcheck disable=SC2016,SC2086  # jq programs in single quotes; counters split on purpose
# shmpoolctl against a shmpoold of our own (its own socket and folder):
#   a. dump's numbers, exact, from workers with known scripts (text, --json,
#      --per-cache, --prometheus);
#   b. dump with the daemon stopped, and killed, prints what it printed
#      with the daemon running;
#   g. flush: the request, and the owner honouring it at its next get;
#   h. watch, in text and JSON;
#   c. batch mode (-f FILE, -f -, --keep-going, --json);
#   d. usage errors of every verb: exit 2, a usage line, nothing changed;
#   e. exit codes 1, 3 and 4;
#   f. --json: exactly one document from every verb, errors included;
# then the workers go and their slots are reclaimed.
# Stops at the first failure; CTL_KEEP_GOING=1 reports every failure.
set -eu
b="${top_builddir:-.}"
ctl="$b/shmpoolctl/shmpoolctl"
worker="$b/tests/ctl-worker"
shmpoold="$b/shmpoold/shmpoold"

# Skipped (77) without jq, which reads the JSON documents.
command -v jq >/dev/null 2>&1 || { echo "SKIP: jq is missing (scripts/deps installs it)"; exit 77; }
for f in "$ctl" "$worker" "$shmpoold"; do
	[ -x "$f" ] || { echo "$f is not built"; exit 1; }
done

dir=$(mktemp -d /dev/shm/shmpool-ctl.XXXXXX)
daemon=
pids=
cleanup() {
	rc=$?
	for p in $pids $daemon; do
		kill -KILL "$p" 2>/dev/null || :
	done
	rm -rf "$dir"
	exit $rc
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM
export SHMPOOL_SOCKET="$dir/sock"
# Pools of 4 rings, whatever the CPUs: dump prints the count.
export SHMPOOL_RINGS=4
out="$dir/out"
err="$dir/err"
failures=0

fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
	[ -n "${CTL_KEEP_GOING:-}" ] || exit 1
}

# run RC CMD...: CMD's stdout in $out, its stderr in $err; it must exit RC.
run() {
	want=$1
	shift
	set +e
	"$@" >"$out" 2>"$err"
	rc=$?
	set -e
	[ "$rc" = "$want" ] && return 0
	fail "'$*' exited $rc, not $want; stdout: $(head -c 600 "$out"); stderr: $(head -c 600 "$err")"
}

# same DESC ACTUAL EXPECTED
same() {
	[ "$2" = "$3" ] || fail "$1: got '$2', expected '$3'"
}

# same_file DESC FILE EXPECTED-FILE
same_file() {
	cmp -s "$2" "$3" || fail "$1: differs (- expected, + got):
$(diff -u "$3" "$2" || :)"
}

# jcheck DESC FILTER [JQ-ARGS...]: FILTER is true of the document in $out.
jcheck() {
	desc=$1
	filter=$2
	shift 2
	# jq -e reads no document in an empty file, and calls that true.
	if ! [ -s "$out" ]; then
		fail "$desc: no document (stdout is empty)"
		return 0
	fi
	jq -e "$@" "$filter" "$out" >/dev/null 2>&1 ||
		fail "$desc: jq '$filter' is not true of: $(head -c 1500 "$out")"
}

# json_one DESC: $out is exactly one JSON document.
json_one() {
	n=$(jq -s length "$out" 2>/dev/null) || n="not JSON"
	if [ "$n" != 1 ] || ! jq -e . "$out" >/dev/null 2>&1; then
		fail "$1: stdout is not exactly one JSON document ($n): $(head -c 600 "$out")"
	fi
}

# json_error DESC EXIT CODE: $out is {"error":{"exit":EXIT,"code":CODE,...}}
# and the message went to stderr too.
json_error() {
	json_one "$1"
	jcheck "$1" '.error.exit == $x and .error.code == $c and (.error.message | type == "string")' \
		--argjson x "$2" --arg c "$3"
	grep -q '^shmpoolctl: ' "$err" || fail "$1: no 'shmpoolctl: ...' message on stderr: $(cat "$err")"
}

usage_line() {
	grep -q '^usage:' "$err" || fail "$1: no line starting with 'usage:' on stderr: $(cat "$err")"
}

# poll SECONDS DESC CMD...: until CMD succeeds, for at most SECONDS.
poll() {
	limit=$(($1 * 20))
	desc=$2
	shift 2
	i=0
	until "$@" >/dev/null 2>&1; do
		i=$((i + 1))
		if [ $i -ge $limit ]; then
			fail "$desc: not within $((limit / 20)) s"
			return 0
		fi
		sleep 0.05
	done
}

# Is process $1 there and not a zombie?
alive() {
	[ -r "/proc/$1/stat" ] && ! sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | grep -q '^Z'
}
# gone PID: the child PID has ended (a zombie until waited for).
gone() {
	! alive "$1"
}
# reap DESC PID: the child PID ends within 5 s (else it fails, and is
# killed); its exit status in $rc.
reap() {
	poll 5 "$1: its end" gone "$2"
	gone "$2" || kill -KILL "$2"
	rc=0
	wait "$2" || rc=$?
}
# term_ends DESC PID: SIGTERM ends the child PID within 5 s (else it is
# killed), and it dies of it (status 143).
term_ends() {
	kill -TERM "$2"
	reap "$1, SIGTERM" "$2"
	same "$1, SIGTERM: the exit status" "$rc" 143
}

start_daemon() {
	"$shmpoold" -f --socket "$dir/sock" --shm-dir "$dir" --hugetlbfs none \
		2>>"$dir/log" &
	daemon=$!
	i=0
	until "$ctl" ping >/dev/null 2>&1; do
		i=$((i + 1))
		if ! alive "$daemon" || [ $i -ge 100 ]; then
			echo "shmpoold did not answer within 5 s:"
			cat "$dir/log"
			exit 1
		fi
		sleep 0.05
	done
}

# stop_daemon SIGNAL EXIT: send SIGNAL, wait (5 s at most) for it to exit.
stop_daemon() {
	kill "-$1" "$daemon"
	reap "shmpoold after SIG$1" "$daemon"
	daemon=
	same "shmpoold's exit status after SIG$1" "$rc" "$2"
}

# start_worker TAG POOL [--cache N] OP...: a ctl-worker in the background,
# its pid in $wpid, its output in $dir/TAG.out and .err.  Its stdin is a
# fifo it holds open itself (<>), so that it never ends: lines written to
# $dir/TAG.in release its waits, and only a signal ends its hold.
start_worker() {
	tag=$1
	shift
	mkfifo "$dir/$tag.in"
	"$worker" "$@" <>"$dir/$tag.in" >"$dir/$tag.out" 2>"$dir/$tag.err" &
	wpid=$!
	pids="$pids $wpid"
}

# wait_worker TAG PID WORD: until the worker printed WORD (5 s at most).
wait_worker() {
	i=0
	until grep -qx "$3" "$dir/$1.out"; do
		i=$((i + 1))
		if ! alive "$2"; then
			fail "worker $1 ($2) died before printing '$3': $(cat "$dir/$1.err")"
			return 0
		fi
		if [ $i -ge 100 ]; then
			fail "worker $1 ($2) did not print '$3' within 5 s: $(cat "$dir/$1.err")"
			return 0
		fi
		sleep 0.05
	done
}

# The ten counters, in the order of struct shmpool_stats.
keys="put_bulk put_objs put_common_pool_bulk put_common_pool_objs get_common_pool_bulk get_common_pool_objs get_success_bulk get_success_objs get_fail_bulk get_fail_objs"

# Built with --disable-stats, every counter stays 0.
stats_on=1
grep -q '^#define SHMPOOL_STATS 0' "$b/libshmpool/shmpool/config.h" &&
	stats_on=0

# vadd V1 V2: the sum of two vectors of ten counters (all 0 without stats).
vadd() {
	echo "$1 $2" | awk -v on="$stats_on" '{
		for (i = 1; i <= 10; i++)
			printf "%s%d", (i > 1 ? " " : ""), on ? $i + $(i + 10) : 0
		print ""
	}'
}

# stats_text V: the counters as dump's text lists them.
stats_text() {
	set -- $1
	for _k in $keys; do
		printf '    %s=%s\n' "$_k" "$1"
		shift
	done
}

# stats_json V: the counters as a JSON object.
stats_json() {
	set -- $1
	_s=
	for _k in $keys; do
		_s="$_s${_s:+,}\"$_k\":$1"
		shift
	done
	echo "{$_s}"
}

# dump_has POOL LINE: "dump POOL" prints LINE.
dump_has() {
	"$ctl" dump "$1" >"$dir/poll.out" 2>/dev/null &&
		grep -qxF "$2" "$dir/poll.out"
}

# The text of dump, one "key value" per line: name, path, the pool's
# keys, cache.K.pid and cache.K.len, stats.KEY and retired.KEY.
dump_flat() {
	awk '
	/^pool / {
		s = substr($0, 6); i = index(s, "@")
		print "name " substr(s, 1, i - 1); print "path " substr(s, i + 1)
		next
	}
	/^  stats:$/ { sec = "stats."; next }
	/^  retired:$/ { sec = "retired."; next }
	/^    [a-z_]+=/ {
		sub(/^ +/, ""); i = index($0, "=")
		print sec substr($0, 1, i - 1) " " substr($0, i + 1)
		next
	}
	/^  cache\[[0-9]+\]: pid=[0-9]+ len=[0-9]+$/ {
		k = $1; gsub(/[^0-9]/, "", k); sub(/^pid=/, "", $2); sub(/^len=/, "", $3)
		print "cache." k ".pid " $2; print "cache." k ".len " $3
		next
	}
	/^  [a-z_]+=/ {
		sub(/^ +/, ""); i = index($0, "=")
		print substr($0, 1, i - 1) " " substr($0, i + 1)
		next
	}
	{ print "unparsed: " $0 }
	' "$1" | LC_ALL=C sort
}

# The same from dump --json (its only pool).
dump_json_flat() {
	jq -r '.pools[0] |
		(to_entries[] | select(.value | type != "array" and type != "object") |
			"\(.key) \(.value)"),
		(.caches[] | "cache.\(.slot).pid \(.pid)", "cache.\(.slot).len \(.len)"),
		(.stats | to_entries[] | "stats.\(.key) \(.value)"),
		(.retired | to_entries[] | "retired.\(.key) \(.value)")' "$1" |
		LC_ALL=C sort
}

# prom_value FILE SERIES: the value of the sample SERIES (name{labels}),
# which must appear once.
prom_value() {
	awk -v m="$2" '$1 == m { n++; v = $2 } END { if (n == 1) print v + 0; else print "missing-or-repeated(" n + 0 ")" }' "$1"
}

# prom_sum FILE NAME POOL: the sum of NAME's samples of POOL, every slot.
prom_sum() {
	awk -v m="$2{pool=\"$3\",slot=" 'index($1, m) == 1 { s += $2 } END { printf "%d\n", s }' "$1"
}

# sfx OPTION: the suffix of the file kept for dump OPTION.
sfx() {
	case $1 in
	"") echo txt ;;
	*) echo "${1#--}" ;;
	esac
}

# Pools, as list --json sees them: nothing else may change them.
snapshot() {
	"$ctl" list --json >"$dir/snap.$1" 2>&1 ||
		fail "list --json: exit $?: $(cat "$dir/snap.$1")"
}

exists() {
	run 0 "$ctl" info "$1"
}

absent() {
	run 4 "$ctl" info "$1"
}

start_daemon
run 0 "$ctl" --version
version=$(awk '{ print $NF }' "$out")
[ "$(cat "$out")" = "shmpoolctl (shmpool) $version" ] ||
	fail "--version: $(cat "$out")"
# With --json, -V and -h print one document too.
run 0 "$ctl" --json -V
[ "$(cat "$out")" = "{\"version\":\"$version\"}" ] ||
	fail "--json -V: $(cat "$out")"
run 0 "$ctl" -h --json
jcheck "-h --json" '(keys == ["help", "usage"]) and (.usage | startswith("usage: shmpoolctl")) and (.help | contains("Exit status"))'

###########################################################################
# a. dump's numbers.  Pool p: 1024 objects of 64 bytes, cache 32, so a
# cache refills to 32 + n and flushes over 48 (cache.c).
#
# W1 --cache 32 get:10 put:10 get:20 put:20 detach
#   get:10  miss (len 0): ring -> 32 + 10 = 42, takes 10, len 32
#   put:10  hit (9 < 48 - 32), len 42
#   get:20  hit (19 < 42), len 22
#   put:20  hit (19 < 48 - 22), len 42
#   detach  the 42 back to the ring (not counted), counters retired
# W2 --cache 32 get:40 put:40 hold
#   get:40  40 > size 32: straight from the ring, len 0
#   put:40  hit (39 < 48 - 0), len 40; it stays so
# W3 --cache 0 get:5 put:5 get:7 getfail:1024 hold, then kill -9
#   size 0: every get is from the ring, every put to the ring;
#   getfail:1024: the ring has 1024 - 40 - 7 and the cache none: fails;
#   the 7 it got stay in use forever, its slot is reclaimed.
# Counters: put_bulk put_objs put_common_pool_bulk put_common_pool_objs
# get_common_pool_bulk get_common_pool_objs get_success_bulk
# get_success_objs get_fail_bulk get_fail_objs.
zero_st="0 0 0 0 0 0 0 0 0 0"
w1_st=$(vadd "2 30 0 0 1 42 2 30 0 0" "$zero_st")
w2_st=$(vadd "1 40 0 0 1 40 1 40 0 0" "$zero_st")
w3_st=$(vadd "1 5 1 5 2 12 2 12 1 1024" "$zero_st")
retired_st=$(vadd "$w1_st" "$w3_st")
total_st=$(vadd "$retired_st" "$w2_st")
w2_len=40
###########################################################################
run 0 "$ctl" create p --objects 1024 --object-size 64 --cache 32
same "create's text" "$(cat "$out")" "created p (memory=shm page-size=4096 path=$dir/shmpool.p)"

run 0 "$worker" p --cache 32 get:10 put:10 get:20 put:20 detach
start_worker w2 p --cache 32 get:40 put:40 hold
w2=$wpid
wait_worker w2 "$w2" ready
start_worker w3 p --cache 0 get:5 put:5 get:7 getfail:1024 hold
w3=$wpid
wait_worker w3 "$w3" ready
kill -KILL "$w3"
{ wait "$w3"; } 2>/dev/null || :
poll 5 "dump p shows W3's slot reclaimed (caches_in_use=1)" \
	dump_has p "  caches_in_use=1"

run 0 "$ctl" info p
seg_size=$(sed -n 's/^segment-size: //p' "$out")
[ -n "$seg_size" ] || fail "info p has no segment-size: $(cat "$out")"

run 0 "$ctl" dump p
cp "$out" "$dir/dump-p.txt"
k=$(sed -n "s/^  cache\[\([0-9]*\)\]: pid=$w2 len=.*/\1/p" "$out")
[ -n "$k" ] || { k=0; fail "dump p has no 'cache[K]: pid=$w2 ...' line for W2"; }
{
	echo "pool p@$dir/shmpool.p"
	echo "  memory=shm"
	echo "  page_size=4096"
	echo "  segment_size=$seg_size"
	echo "  size=1024"
	echo "  populated_size=1024"
	echo "  object_size=64"
	echo "  header_size=0"
	echo "  trailer_size=0"
	echo "  total_obj_size=64"
	echo "  cache_size=32"
	echo "  flushthresh=48"
	echo "  slots=64"
	echo "  rings=4"
	echo "  common_pool_count=$((1024 - 7 - w2_len))"
	echo "  avail_count=$((1024 - 7))"
	echo "  in_use_count=7"
	echo "  caches_in_use=1"
	echo "  cache[$k]: pid=$w2 len=$w2_len"
	echo "  total_cache_count=$w2_len"
	echo "  stats:"
	stats_text "$total_st"
	echo "  retired:"
	stats_text "$retired_st"
} >"$dir/dump-p.want"
same_file "dump p (W1 detached, W2 holding, W3 killed)" "$dir/dump-p.txt" "$dir/dump-p.want"

# --json: the same numbers, every one.
run 0 "$ctl" dump p --json
json_one "dump p --json"
jcheck "dump p --json: one pool" '.pools | length == 1'
dump_flat "$dir/dump-p.txt" >"$dir/flat.text"
dump_json_flat "$out" >"$dir/flat.json" || fail "dump p --json: not the documented shape: $(cat "$out")"
same_file "dump p --json against dump p (key value)" "$dir/flat.json" "$dir/flat.text"
jcheck "dump p --json: W2's cache" \
	'[.pools[0].caches[]] == [{"slot": $k, "pid": $pid, "process": "ctl-worker", "len": $len, "stats": $st}]' \
	--argjson k "$k" --argjson pid "$w2" --argjson len "$w2_len" --argjson st "$(stats_json "$w2_st")"
jcheck "dump p --json: stats" '.pools[0].stats == $st' --argjson st "$(stats_json "$total_st")"
jcheck "dump p --json: retired" '.pools[0].retired == $st' --argjson st "$(stats_json "$retired_st")"
# --json also among the verb's options, or before the verb.
cp "$out" "$dir/dump-p.json"
run 0 "$ctl" --json dump p
same_file "--json dump p against dump p --json" "$out" "$dir/dump-p.json"

# --per-cache: a table after total_cache_count, one row for W2.
run 0 "$ctl" dump p --per-cache
awk '/^  total_cache_count=/ { t = 1; next } /^  stats:$/ { t = 0 } t' "$out" >"$dir/table"
same "dump p --per-cache: the table's heading" \
	"$(sed -n 1p "$dir/table" | awk '{ $1 = $1; print }')" "slot pid process len $keys"
same "dump p --per-cache: the table's rows" \
	"$(sed 1d "$dir/table" | awk '{ $1 = $1; print }')" "$k $w2 ctl-worker $w2_len $w2_st"
awk '/^  total_cache_count=/ { print; t = 1; next } /^  stats:$/ { t = 0 } !t' "$out" >"$dir/untabled"
same_file "dump p --per-cache without its table against dump p" "$dir/untabled" "$dir/dump-p.txt"

# --prometheus: every line a comment or a sample; the slots sum to the
# aggregate.
run 0 "$ctl" dump p --prometheus
cp "$out" "$dir/prom"
bad=$(grep -v -E '^#|^[a-zA-Z_:][a-zA-Z0-9_:]*\{[^}]*\} [0-9.e+-]+$' "$dir/prom" || :)
[ -z "$bad" ] || fail "dump --prometheus: lines that are neither '# ...' nor 'name{labels} value':
$bad"
col=0
for key in $keys; do
	col=$((col + 1))
	want_total=$(echo "$total_st" | cut -d' ' -f$col)
	want_retired=$(echo "$retired_st" | cut -d' ' -f$col)
	want_w2=$(echo "$w2_st" | cut -d' ' -f$col)
	grep -qx "# TYPE shmpool_$key counter" "$dir/prom" ||
		fail "dump --prometheus: no '# TYPE shmpool_$key counter'"
	grep -q "^# HELP shmpool_$key " "$dir/prom" ||
		fail "dump --prometheus: no '# HELP shmpool_$key ...'"
	same "dump --prometheus: shmpool_$key summed over the slots of p" \
		"$(prom_sum "$dir/prom" "shmpool_$key" p)" "$want_total"
	same "dump --prometheus: shmpool_$key of p, slot retired" \
		"$(prom_value "$dir/prom" "shmpool_$key{pool=\"p\",slot=\"retired\"}")" "$want_retired"
	same "dump --prometheus: shmpool_$key of p, slot $k (W2)" \
		"$(prom_value "$dir/prom" "shmpool_$key{pool=\"p\",slot=\"$k\"}")" "$want_w2"
done
same "dump --prometheus: shmpool_get_success_objs summed against the text" \
	"$(prom_sum "$dir/prom" shmpool_get_success_objs p)" \
	"$(sed -n 's/^    get_success_objs=//p' "$dir/dump-p.txt" | head -n 1)"
for g in "shmpool_size{pool=\"p\"} 1024" "shmpool_avail{pool=\"p\"} 1017" \
		"shmpool_in_use{pool=\"p\"} 7" \
		"shmpool_common_pool_count{pool=\"p\"} $((1017 - w2_len))" \
		"shmpool_caches_in_use{pool=\"p\"} 1" \
		"shmpool_cache_len{pool=\"p\",slot=\"$k\"} $w2_len"; do
	same "dump --prometheus: ${g% *}" "$(prom_value "$dir/prom" "${g% *}")" "${g##* }"
done
# Each gauge's help is the line shmpoolctl(8) gives it.
for g in size avail in_use common_pool_count caches_in_use cache_len; do
	help=$(awk -v g="$g" 'index($0, ".BI shmpool_" g "{") == 1 { getline; print; exit }' \
		"${top_srcdir:-.}/man/shmpoolctl.8")
	[ -n "$help" ] || fail "shmpoolctl(8) has no line for the gauge shmpool_$g"
	grep -qxF "# HELP shmpool_$g $help" "$dir/prom" ||
		fail "dump --prometheus: shmpool_$g's help is not '$help': $(grep "^# HELP shmpool_$g " "$dir/prom")"
done
echo "a. dump numbers: done"

###########################################################################
# b. dump reads the segments, not the daemon: the same text with shmpoold
# stopped (it leaves SOCKET.pools), and killed (a dead socket).
###########################################################################
run 0 "$ctl" dump
cp "$out" "$dir/dump-all.txt"
same_file "dump (every pool) against dump p, p being the only pool" "$dir/dump-all.txt" "$dir/dump-p.txt"
run 0 "$ctl" dump --json
cp "$out" "$dir/dump-all.json"
run 0 "$ctl" dump --prometheus
cp "$out" "$dir/dump-all.prometheus"

stop_daemon TERM 0
for v in "" --json --prometheus; do
	run 0 "$ctl" dump $v
	same_file "dump $v with shmpoold stopped" "$out" "$dir/dump-all.$(sfx "$v")"
done
run 0 "$ctl" dump p
same_file "dump p with shmpoold stopped" "$out" "$dir/dump-p.txt"

start_daemon
stop_daemon KILL 137
[ -S "$dir/sock" ] || fail "the socket of a killed shmpoold is gone: dump's fallback is not exercised"
for v in "" --json --prometheus; do
	run 0 "$ctl" dump $v
	same_file "dump $v with shmpoold killed" "$out" "$dir/dump-all.$(sfx "$v")"
done
start_daemon
run 0 "$ctl" dump
same_file "dump with shmpoold restarted" "$out" "$dir/dump-all.txt"

# A worker stopped in the middle of a change (its record written, its seq
# odd): dump reads the record, says so on stderr, and takes no longer
# than a wait for it.
run 0 "$ctl" create st --objects 64 --object-size 64 --cache 8
start_worker stall st get:2 put:2 stall hold
wstall=$wpid
wait_worker stall "$wstall" ready
run 0 "$ctl" dump st
if [ "$stats_on" = 1 ]; then
	grep -qxF "shmpoolctl: pool 'st': 1 slot(s) in the middle of a change that did not end (an owner stopped or killed there, not yet reclaimed by shmpoold): their counts are read as their records say" "$err" ||
		fail "dump of a worker stalled in a change: no warning on stderr: $(cat "$err")"
else
	[ ! -s "$err" ] || fail "dump without stats, a worker 'stalled': stderr: $(cat "$err")"
fi
grep -qx "    get_success_objs=$((stats_on * 2))" "$out" ||
	fail "dump of a worker stalled in a change: get_success_objs is not $((stats_on * 2)): $(cat "$out")"
kill -KILL "$wstall"
wait "$wstall" 2>/dev/null || :
# (info's own status too: jq -e calls no document true.)
st_free() {
	"$ctl" --json info st >"$dir/st.json" &&
		jq -e '.slots_in_use == 0' "$dir/st.json" >/dev/null
}
poll 5 "the stalled worker's slot reclaimed" st_free

# A ring whose heads no ring can have: dump warns, and no longer once
# they are put back.
start_worker ring st breakring wait fixring hold
wring=$wpid
wait_worker ring "$wring" waiting
run 0 "$ctl" dump st
grep -qxF "shmpoolctl: pool 'st': 1 ring(s) whose heads no ring can have (a corrupt segment): their objects counted as 0 to the ring's size" "$err" ||
	fail "dump of a ring with its heads crossed: no warning on stderr: $(cat "$err")"
echo >"$dir/ring.in"
wait_worker ring "$wring" ready
run 0 "$ctl" dump st
[ ! -s "$err" ] || fail "dump of a ring put back: stderr: $(cat "$err")"
kill -KILL "$wring"
wait "$wring" 2>/dev/null || :
poll 5 "the ring worker's slot reclaimed" st_free
run 0 "$ctl" destroy st
echo "b. dump without the daemon: done"

###########################################################################
# g. flush.  W4 --cache 32 get:40 put:40 wait get:1 put:1 hold
#   get:40  straight from the ring; put:40: len 40
#   (flush requested: flush_req set, the cache keeps its 40)
#   get:1   flush_req makes it a miss: the 40 go back to the ring (not
#           counted), then a refill of 32 + 1 = 33, takes 1: len 32
#   put:1   hit (0 < 48 - 32): len 33
# Without the flush, get:1 and put:1 would be hits and leave len 40.
###########################################################################
w4_st=$(vadd "2 41 0 0 2 73 2 41 0 0" "$zero_st")
start_worker w4 p --cache 32 get:40 put:40 wait get:1 put:1 hold
w4=$wpid
wait_worker w4 "$w4" waiting
run 0 "$ctl" dump p
k4=$(sed -n "s/^  cache\[\([0-9]*\)\]: pid=$w4 len=40\$/\1/p" "$out")
[ -n "$k4" ] || { k4=1; fail "dump p has no 'cache[K]: pid=$w4 len=40' line for W4: $(cat "$out")"; }
run 0 "$ctl" flush p --slot "$k4"
same "flush p --slot $k4" "$(cat "$out")" \
	"pool p slot $k4: flush requested (40 objects cached); its owner empties it at its next get or put"
run 0 "$ctl" flush p --slot "$k4" --json
json_one "flush --json"
jcheck "flush p --slot $k4 --json" '. == {"name": "p", "slot": $k, "state": "requested", "cached": 40}' \
	--argjson k "$k4"
# Only the owner writes its cache: nothing moves until it acts.
run 0 "$ctl" dump p
grep -qxF "  cache[$k4]: pid=$w4 len=40" "$out" ||
	fail "W4's cache changed before W4 acted on the flush request: $(cat "$out")"
echo go >"$dir/w4.in"
wait_worker w4 "$w4" ready
run 0 "$ctl" dump p --json
jcheck "dump p --json: W4's cache after the flush and get:1 put:1" \
	'[.pools[0].caches[] | select(.pid == $pid)] == [{"slot": $k, "pid": $pid, "process": "ctl-worker", "len": 33, "stats": $st}]' \
	--argjson k "$k4" --argjson pid "$w4" --argjson st "$(stats_json "$w4_st")"
jcheck "dump p --json: the pool after W4" \
	'.pools[0] | .avail_count == 1017 and .in_use_count == 7 and .caches_in_use == 2 and .total_cache_count == $c and .common_pool_count == 1017 - $c' \
	--argjson c $((w2_len + 33))
jcheck "dump p --json: stats after W4" '.pools[0].stats == $st' \
	--argjson st "$(stats_json "$(vadd "$total_st" "$w4_st")")"
# A free slot has nothing to flush.
run 1 "$ctl" flush p --slot 63
echo "g. flush: done"

###########################################################################
# h. watch: one table per sample without a terminal; JSON, of --count
# samples or one.
# The pool is at rest: every rate is 0.
###########################################################################
t0=$(date +%s%N)
run 0 "$ctl" watch p --interval 0.2 --count 2
t1=$(date +%s%N)
same "watch p --count 2: rows for p (one per table)" "$(awk '$1 == "p"' "$out" | wc -l)" 2
if grep -q "$(printf '\033')" "$out"; then
	fail "watch to a file used screen control"
fi
[ $(((t1 - t0) / 1000000)) -ge 350 ] ||
	fail "watch --interval 0.2 --count 2 took $(((t1 - t0) / 1000000)) ms: not an interval per sample"
run 0 "$ctl" watch --interval 0.2 --count 1
awk '$1 == "p"' "$out" | grep -q . || fail "watch (every pool) has no row for p: $(cat "$out")"
run 0 "$ctl" --json watch p --interval 0.2 --count 2
json_one "watch --json"
jcheck "watch p --json --count 2" '.interval == 0.2 and (.samples | length) == 2 and
	all(.samples[]; .pools == [{"name": "p", "size": 1024, "avail": 1017, "in_use": 7,
		"caches_in_use": 2, "gets_per_sec": 0, "puts_per_sec": 0, "fails_per_sec": 0,
		"ring_gets_per_sec": 0, "ring_puts_per_sec": 0}])'
run 0 "$ctl" --json watch p --interval 0.2
json_one "watch --json (no --count)"
jcheck "watch p --json: one sample" '.interval == 0.2 and (.samples | length) == 1 and
	.samples[0].pools[0].name == "p" and .samples[0].pools[0].in_use == 7'
# Ended by a signal, --json prints the document of the samples so far,
# then dies of the signal.
"$ctl" --json watch p --interval 0.05 --count 100000 >"$dir/watch-sig.out" 2>"$dir/watch-sig.err" &
wpid_watch=$!
pids="$pids $wpid_watch"
# Once it catches SIGTERM (bit 15 of SigCgt), not before; shmpoolctl's
# own (comm), not the shell's child before its exec, which holds the
# script's trap of SIGTERM.
catches_term() {
	[ "$(cat "/proc/$1/comm" 2>/dev/null)" = shmpoolctl ] || return 1
	cgt=$(sed -n 's/^SigCgt:[[:space:]]*//p' "/proc/$1/status" 2>/dev/null)
	[ -n "$cgt" ] && [ $((0x$cgt & 0x4000)) -ne 0 ]
}
poll 5 "watch --json: catching SIGTERM" catches_term "$wpid_watch"
# Started with &, it was started ignoring SIGINT (and SIGQUIT): it
# leaves them so.
same "watch --json, started with &: SIGINT and SIGQUIT still ignored" \
	$(($(printf '0x%s' "$(sed -n 's/^SigIgn:[[:space:]]*//p' "/proc/$wpid_watch/status")") & 0x6)) 6
term_ends "watch --json" "$wpid_watch"
cp "$dir/watch-sig.out" "$out"
json_one "watch --json, SIGTERM"
jcheck "watch --json, SIGTERM: the samples so far" '.interval == 0.05 and
	all(.samples[]; .pools[0].name == "p" and .pools[0].in_use == 7)'
# On a terminal (script(1)'s): q quits; it catches SIGINT, but not when
# started ignoring it (nohup, a shell's background job), and gives the
# terminal back when a signal ends it, then dies of that signal.
# tty_watch ENV-OPTION: watch p on a terminal, env(1) giving SIGINT
# ENV-OPTION; $tpid is script's, $wpid_tty shmpoolctl's, once it catches
# SIGTERM.
tty_watch() {
	rm -f "$dir/tty.in"
	mkfifo "$dir/tty.in"
	exec 7<>"$dir/tty.in"
	script -qec "exec env $1=INT '$ctl' watch p --interval 0.05" /dev/null \
		<"$dir/tty.in" >"$dir/tty.out" 2>&1 &
	tpid=$!
	pids="$pids $tpid"
	wpid_tty=
	tty_child() {
		wpid_tty=$(awk '{ print $1 }' "/proc/$tpid/task/$tpid/children") &&
			catches_term "$wpid_tty"
	}
	poll 5 "watch on a terminal ($1=INT): catching SIGTERM" tty_child
	wpid_tty=$(awk '{ print $1 }' "/proc/$tpid/task/$tpid/children" 2>/dev/null || :)
}
# sig_bit SIGNUM FIELD: 1 when /proc/$wpid_tty/status's FIELD has SIGNUM.
sig_bit() {
	v=$(sed -n "s/^$2:[[:space:]]*//p" "/proc/$wpid_tty/status")
	echo $(((0x$v >> ($1 - 1)) & 1))
}
if command -v script >/dev/null 2>&1; then
	tty_watch --default-signal
	same "watch on a terminal: SIGINT caught" "$(sig_bit 2 SigCgt)" 1
	# Keys once the terminal is raw (its setting flushes what came
	# before): after the first screen.
	tty_screen() { grep -q '^NAME' "$dir/tty.out"; }
	poll 5 "watch on a terminal: the first screen" tty_screen
	printf q >&7
	reap "watch on a terminal, q" "$tpid"
	same "watch on a terminal, q: its exit status" "$rc" 0
	grep -q "$(printf '\033\\[2J')" "$dir/tty.out" ||
		fail "watch on a terminal: no screen control: $(head -c 300 "$dir/tty.out")"
	tty_watch --ignore-signal
	same "watch on a terminal, started ignoring SIGINT: still ignored" \
		"$(sig_bit 2 SigIgn) $(sig_bit 2 SigCgt)" "1 0"
	# SIGINT, ignored, then SIGTERM: it dies of SIGTERM (pending
	# together, SIGINT would be taken first).
	kill -INT "$wpid_tty"
	kill -TERM "$wpid_tty"
	reap "watch on a terminal, SIGINT ignored, then SIGTERM" "$tpid"
	same "watch on a terminal, SIGINT ignored, then SIGTERM: its exit status" "$rc" 143
	exec 7>&-
	rm -f "$dir/tty.in"
else
	echo "watch on a terminal: not checked (no script(1); util-linux's bsdutils has it)"
fi
run 4 "$ctl" watch nosuch --count 1
# A pool made anew under the same name, within the same second as the
# one before it, is a new pool: '-' for its rates in the next table.  The
# first pool is made at the start of a second, and made again once the
# first table is out, half a second on.  A try counts when both were made
# in one second, the second before the second table: up to 5 tries.
watch_tables() { [ "$(grep -c '^NAME' "$dir/watch.out")" -ge "$1" ]; }
try=0
while :; do
	try=$((try + 1))
	i=0
	while [ "$(date +%N | sed 's/^0*//; s/^$/0/')" -gt 100000000 ] && [ $i -lt 40 ]; do
		sleep 0.025
		i=$((i + 1))
	done
	s1=$(date +%s)
	run 0 "$ctl" create w1 --objects 64 --object-size 64
	"$ctl" watch w1 --interval 0.5 --count 2 >"$dir/watch.out" 2>"$dir/watch.err" &
	wpid_watch=$!
	pids="$pids $wpid_watch"
	poll 5 "watch w1: the first table" watch_tables 1
	run 0 "$ctl" destroy w1
	run 0 "$ctl" create w1 --objects 64 --object-size 64
	s2=$(date +%s)
	tables=$(grep -c '^NAME' "$dir/watch.out" || :)
	reap "watch w1 (made anew)" "$wpid_watch"
	[ "$rc" -eq 0 ] || fail "watch w1 (made anew): exit $rc: $(cat "$dir/watch.err")"
	[ "$s1" = "$s2" ] && [ "$tables" = 1 ] && break
	run 0 "$ctl" destroy w1
	[ $try -lt 5 ] || { fail "watch w1: the pool not made twice within a second, before the second table, in 5 tries"; break; }
done
same "watch w1, made anew: its row in the second table" \
	"$(awk '$1 == "w1"' "$dir/watch.out" | sed -n 2p | awk '{ print $6, $7, $8, $9, $10 }')" "- - - - -"
run 0 "$ctl" destroy w1
echo "h. watch: done"

###########################################################################
# c. batch mode.
###########################################################################
# mkbatch FILE PREFIX: two good creates, a bad one (usage), a good one.
mkbatch() {
	cat >"$1" <<EOF
create ${2}1 --objects 64 --object-size 64
create ${2}2 --objects 64 --object-size 64
create ${2}3 --objects 0 --object-size 64
create ${2}4 --objects 64 --object-size 64
EOF
}
mkbatch "$dir/batch-b" b
run 2 "$ctl" -f "$dir/batch-b"
grep -qF "shmpoolctl: $dir/batch-b:3:" "$err" ||
	fail "-f: no 'shmpoolctl: $dir/batch-b:3: ...' on stderr: $(cat "$err")"
exists b1
exists b2
absent b3
absent b4

mkbatch "$dir/batch-k" k
run 2 "$ctl" -f "$dir/batch-k" --keep-going
grep -qF "shmpoolctl: $dir/batch-k:3:" "$err" ||
	fail "-f --keep-going: no 'shmpoolctl: $dir/batch-k:3: ...' on stderr: $(cat "$err")"
exists k1
exists k2
absent k3
exists k4

printf 'ping\ndestroy nosuch\ncreate n3 --objects 64 --object-size 64\n' >"$dir/batch-n"
run 4 "$ctl" -f "$dir/batch-n"
grep -qF "shmpoolctl: $dir/batch-n:2:" "$err" ||
	fail "-f: no 'shmpoolctl: $dir/batch-n:2: ...' on stderr: $(cat "$err")"
absent n3

# Blank lines and comments are skipped, but lines keep their numbers.
printf '# pools\n\n   \t\ncreate c1 --objects 64 --object-size 64\n  # done\ninfo nosuch\n' >"$dir/batch-c"
run 4 "$ctl" -f "$dir/batch-c"
grep -qF "shmpoolctl: $dir/batch-c:6:" "$err" ||
	fail "-f with comments: no 'shmpoolctl: $dir/batch-c:6: ...' on stderr: $(cat "$err")"
exists c1

# -f inside a batch is a usage error of that line.
printf 'ping\n-f %s\n' "$dir/batch-c" >"$dir/batch-f"
run 2 "$ctl" -f "$dir/batch-f"
grep -qF "shmpoolctl: $dir/batch-f:2:" "$err" ||
	fail "-f in a batch line: no 'shmpoolctl: $dir/batch-f:2: ...' on stderr: $(cat "$err")"

# So is a NUL byte, which would otherwise end the line unseen.
printf 'ping\nping\000create z1 --objects 64 --object-size 64\nping\n' >"$dir/batch-z"
run 2 "$ctl" -f "$dir/batch-z"
grep -qxF "shmpoolctl: $dir/batch-z:2: a NUL byte in the line" "$err" ||
	fail "-f, a NUL in line 2: no 'shmpoolctl: $dir/batch-z:2: a NUL byte in the line' on stderr: $(cat "$err")"
absent z1
run 2 "$ctl" --json -f "$dir/batch-z"
json_one "--json -f, a NUL in line 2"
jcheck "--json -f, a NUL in line 2" '[.results[].exit] == [0, 2] and .results[1].result.error.code == "usage" and .exit == 2'

# A file that opens but cannot be read: exit 1, and with --json the
# batch's document says why.
run 1 "$ctl" -f "$dir"
grep -qxF "shmpoolctl: cannot read '$dir': Is a directory" "$err" ||
	fail "-f DIR: no \"cannot read '$dir': Is a directory\" on stderr: $(cat "$err")"
run 1 "$ctl" --json -f "$dir"
json_one "--json -f DIR"
jcheck "--json -f DIR" '.results == [] and .error.code == "EISDIR" and .error.exit == 1 and .exit == 1'
# So does one that does not open.
run 1 "$ctl" -f "$dir/nosuch.batch"
grep -qxF "shmpoolctl: cannot open '$dir/nosuch.batch': No such file or directory" "$err" ||
	fail "-f NOSUCH: no \"cannot open '$dir/nosuch.batch': No such file or directory\" on stderr: $(cat "$err")"
run 1 "$ctl" --json -f "$dir/nosuch.batch"
json_one "--json -f NOSUCH"
jcheck "--json -f NOSUCH" '.results == [] and .error.code == "ENOENT" and .error.exit == 1 and
	.error.message == "cannot open '\''\($f)'\'': No such file or directory" and .exit == 1' --arg f "$dir/nosuch.batch"

# Global options apply to every line.
printf 'ping\n' >"$dir/batch-p"
run 3 "$ctl" --socket "$dir/none" -f "$dir/batch-p"
grep -qF "shmpoolctl: $dir/batch-p:1:" "$err" ||
	fail "--socket NONE -f: no 'shmpoolctl: $dir/batch-p:1: ...' on stderr: $(cat "$err")"

# From stdin.
printf 'create s1 --objects 64 --object-size 64\ninfo s1\n' >"$dir/batch-s"
run 0 "$ctl" -f - <"$dir/batch-s"
grep -qx "created s1 (memory=shm page-size=4096 path=$dir/shmpool.s1)" "$out" ||
	fail "-f -: no 'created s1 (...)': $(cat "$out")"
grep -qx "name: s1" "$out" || fail "-f -: info s1 printed no 'name: s1': $(cat "$out")"
exists s1
printf 'ping\ninfo nosuch\n' >"$dir/batch-s2"
run 4 "$ctl" -f - <"$dir/batch-s2"
grep -qF "shmpoolctl: -:2:" "$err" || fail "-f -: no 'shmpoolctl: -:2: ...' on stderr: $(cat "$err")"

# --json: one document for the whole batch.
mkbatch "$dir/batch-j" j
run 2 "$ctl" --json -f "$dir/batch-j"
json_one "--json -f"
jcheck "--json -f: lines and exits" '[.results[].line] == [1, 2, 3] and [.results[].exit] == [0, 0, 2] and .exit == 2'
jcheck "--json -f: verbs" '[.results[].verb] == ["create", "create", "create"]'
jcheck "--json -f: line 1's result" '.results[0].result.name == "j1" and .results[0].result.created == true'
jcheck "--json -f: line 3's error" '.results[2].result.error.exit == 2 and .results[2].result.error.code == "usage"'
absent j4
mkbatch "$dir/batch-jk" jk
run 2 "$ctl" --json -f "$dir/batch-jk" --keep-going
json_one "--json -f --keep-going"
jcheck "--json -f --keep-going: lines and exits" '[.results[].line] == [1, 2, 3, 4] and [.results[].exit] == [0, 0, 2, 0] and .exit == 2'
exists jk4
run 4 "$ctl" --json -f - <"$dir/batch-s2"
json_one "--json -f - (line 2 fails)"
jcheck "--json -f - (line 2 fails)" '[.results[].line] == [1, 2] and [.results[].exit] == [0, 4] and .exit == 4 and
	.results[0].result.pid == $pid and .results[1].result.error.code == "ENOENT"' --argjson pid "$daemon"

# A signal that ends a watch line ends the batch, --keep-going or not:
# with --json, the batch's document, with that line's samples so far and
# 128 plus the signal's number as its exit and the batch's, then the
# batch dies of the signal; the lines after it do not run.
printf 'ping\nwatch p --interval 0.05 --count 100000\ncreate ws1 --objects 64 --object-size 64\n' >"$dir/batch-w"
"$ctl" --json -f "$dir/batch-w" --keep-going >"$dir/batch-w.out" 2>"$dir/batch-w.err" &
wpid=$!
pids="$pids $wpid"
poll 5 "--json -f, a watch line: catching SIGTERM" catches_term "$wpid"
term_ends "--json -f, a watch line" "$wpid"
cp "$dir/batch-w.out" "$out"
json_one "--json -f, a watch line, SIGTERM"
jcheck "--json -f, a watch line, SIGTERM: the lines that ran" '[.results[].line] == [1, 2] and
	[.results[].verb] == ["ping", "watch"] and [.results[].exit] == [0, 143] and .exit == 143'
jcheck "--json -f, a watch line, SIGTERM: its samples so far" '.results[1].result.interval == 0.05 and
	(.results[1].result.samples | type) == "array" and
	all(.results[1].result.samples[]; .pools[0].name == "p")'
absent ws1
# A --json watch line that ends on its own gives the signals it caught
# back as they were (SIGTERM's default action here; a job started with &
# ignores SIGINT): SIGTERM ends the line after it (a watch to a file,
# which catches none), and the batch with it.
printf 'watch p --json --interval 0.05 --count 1\nwatch p --interval 0.05 --count 100000\n' >"$dir/batch-wi"
"$ctl" -f "$dir/batch-wi" >"$dir/batch-wi.out" 2>"$dir/batch-wi.err" &
wpid=$!
pids="$pids $wpid"
wi_table() { [ "$(grep -c '^NAME' "$dir/batch-wi.out")" -ge 1 ]; }
poll 5 "-f, a watch after a --json watch: its first table" wi_table
# As any other child of this shell has them (sed's own).
same "-f, a watch after a --json watch: the signals blocked" \
	"$(sed -n 's/^SigBlk:[[:space:]]*//p' "/proc/$wpid/status")" \
	"$(sed -n 's/^SigBlk:[[:space:]]*//p' /proc/self/status)"
term_ends "-f, a watch after a --json watch" "$wpid"
head -n 1 "$dir/batch-wi.out" >"$out"
json_one "-f, a --json watch line"
jcheck "-f, a --json watch line: one sample" '.interval == 0.05 and (.samples | length) == 1 and
	.samples[0].pools[0].name == "p"'
echo "c. batch: done"

###########################################################################
# d. usage errors: exit 2, a usage line, nothing changed.
###########################################################################
snapshot before
while IFS= read -r args; do
	# shellcheck disable=SC2086  # split on purpose
	run 2 "$ctl" $args </dev/null
	usage_line "shmpoolctl $args"
	snapshot after
	cmp -s "$dir/snap.before" "$dir/snap.after" ||
		fail "shmpoolctl $args changed the pools: $(diff "$dir/snap.before" "$dir/snap.after")"
done <<EOF
create
create x
create x --objects 10
create x --object-size 64
create x --objects 10 --object-size 64 --huge sometimes
create x --objects 10 --object-size 64 --mode 999
create x --objects ten --object-size 64
create .x --objects 10 --object-size 64
create x y --objects 10 --object-size 64
create x --objects 10 --object-size 64 --bogus
create x --objects 1073741824 --object-size 1048576
create x --objects 4194305 --object-size 65536
create x --objects 10 --object-size 64 --owner -1
create x --objects 10 --object-size 64 --owner 4294967295
create x --objects 10 --object-size 64 --owner 000000000000000000001
create x --objects 10 --object-size 64 --group -2
create x --objects 10 --object-size 64 --group 99999999999
create x --objects 10 --object-size 64 --owner a:b
create x --objects 10 --object-size 64 --group a/b
destroy
destroy a b
destroy --bogus p
info
info a b
info .a
list extra
ping extra
dump a b
dump --bogus
dump p --json --prometheus
watch --interval 0
watch --interval x
watch --count x
flush p
flush p --slot x
flush --slot 0
flush p q --slot 0
frobnicate
--bogus list
EOF
run 2 "$ctl"
usage_line "shmpoolctl (no verb)"
run 2 "$ctl" --json
usage_line "shmpoolctl --json (no verb)"
# A uid or gid with leading zeros is the number, as shmpoold reads it
# (up to 20 digits): ours, which the daemon (ours too) lets anyone give.
zuid=$(printf '%011d' "$(id -u)")
zgid=$(printf '%019d' "$(id -g)")
run 0 "$ctl" create zo --objects 64 --object-size 64 --owner "$zuid" --group "$zgid"
same "--owner $zuid --group $zgid: the segment's owner" \
	"$(stat -c %u:%g "$dir/shmpool.zo")" "$(id -u):$(id -g)"
run 0 "$ctl" destroy zo
echo "d. usage errors: done"

###########################################################################
# e. exit codes.
###########################################################################
for args in ping list "info p" "create z --objects 64 --object-size 64" \
		"destroy p" "flush p --slot 0"; do
	run 3 "$ctl" --socket "$dir/none" $args
done
for args in "info nosuch" "destroy nosuch" "dump nosuch" \
		"flush nosuch --slot 0"; do
	run 4 "$ctl" $args
done
run 1 "$ctl" create p --objects 1024 --object-size 64
run 0 "$ctl" create p --objects 1024 --object-size 64 --if-not-exists
same "create --if-not-exists of an existing pool" "$(cat "$out")" "pool p exists"
# --if-not-exists while another create of the name is still building its
# segment (1 GiB): it waits until the pool is there.
"$ctl" create big --objects 1024 --object-size 1048576 --cache 0 \
	>"$dir/big.out" 2>&1 &
bigpid=$!
i=0
until ls "$dir"/.shmpool-new.big.* >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -lt 2000 ] || { fail "the create of big never started"; break; }
	sleep 0.005
done
run 0 "$ctl" create big --objects 8 --object-size 64 --if-not-exists
same "create --if-not-exists of a pool being created" "$(cat "$out")" "pool big exists"
run 0 "$ctl" info big
grep -q '^objects: 1024$' "$out" || fail "info big: $(cat "$out")"
reap "the create of big" "$bigpid"
[ "$rc" -eq 0 ] || fail "the create of big: exit $rc: $(cat "$dir/big.out")"
grep -q '^created big ' "$dir/big.out" || fail "create big: $(cat "$dir/big.out")"
run 0 "$ctl" destroy big
# A file of the name in the daemon's folder that it does not serve: in
# the way, for create and for create --if-not-exists alike (exit 1 at
# once: no pool will come of it to wait for).
printf 'not a segment' >"$dir/shmpool.stray"
run 1 timeout 10 "$ctl" create stray --objects 64 --object-size 64 --if-not-exists
grep -q "shmpool.stray is in the way" "$err" ||
	fail "create --if-not-exists with a stray file: $(cat "$err")"
run 1 timeout 10 "$ctl" --json create stray --objects 64 --object-size 64
json_error "create with a stray file" 1 EEXIST
jcheck "create with a stray file: the field" '.error.field == "path"'
rm -f "$dir/shmpool.stray"
run 0 "$ctl" create stray --objects 64 --object-size 64 --if-not-exists
run 0 "$ctl" destroy stray
run 1 "$ctl" flush p --slot 63
run 1 "$ctl" flush p --slot 64
grep -q "0\.\.63" "$err" || fail "flush p --slot 64: no range in: $(cat "$err")"
# However far out of the pool's range (no pool has slot 5000).
run 1 "$ctl" flush p --slot 5000
run 1 "$ctl" flush p --slot 18446744073709551615
# Attached processes keep a pool from being destroyed.
run 1 "$ctl" destroy p
exists p
echo "e. exit codes: done"

###########################################################################
# f. --json: one document from every verb, errors included.
###########################################################################
run 0 "$ctl" --json ping
json_one "--json ping"
jcheck "--json ping" '. == {"protocol": 1, "version": $v, "pid": $pid}' \
	--arg v "$version" --argjson pid "$daemon"
run 0 "$ctl" ping --json
json_one "ping --json"
jcheck "ping --json" '.pid == $pid' --argjson pid "$daemon"

run 0 "$ctl" --json create js --objects 64 --object-size 64
json_one "--json create"
jcheck "--json create" '. == {"name": "js", "created": true, "path": $path, "memory": "shm", "page_size": 4096}' \
	--arg path "$dir/shmpool.js"
run 0 "$ctl" create js --objects 64 --object-size 64 --if-not-exists --json
json_one "create --if-not-exists --json"
jcheck "create --if-not-exists --json" '. == {"name": "js", "created": false}'
run 1 "$ctl" --json create js --objects 64 --object-size 64
json_error "--json create (exists)" 1 EEXIST

run 0 "$ctl" info js
cp "$out" "$dir/info.txt"
run 0 "$ctl" --json info js
json_one "--json info"
jcheck "--json info js" '.name == "js" and .path == $path and .memory == "shm" and
	.page_size == 4096 and .objects == 64 and .object_size == 64 and
	.slots_in_use == 0 and .avail == 64 and .mode == "0660" and .huge_policy == "prefer"' \
	--arg path "$dir/shmpool.js"
# Every key of the text, '-' turned '_'; numbers as numbers but mode.
while IFS= read -r line; do
	key=${line%%: *}
	value=${line#*: }
	jkey=$(echo "$key" | tr - _)
	if [ "$key" != mode ] && echo "$value" | grep -qx '[0-9][0-9]*'; then
		jcheck "--json info: $jkey" '.[$k] == ($v | tonumber)' --arg k "$jkey" --arg v "$value"
	else
		jcheck "--json info: $jkey" '.[$k] == $v' --arg k "$jkey" --arg v "$value"
	fi
done <"$dir/info.txt"
run 4 "$ctl" --json info nosuch
json_error "--json info (no such pool)" 4 ENOENT

run 0 "$ctl" --json list
json_one "--json list"
jcheck "--json list: js" '[.pools[] | select(.name == "js")] == [{"name": "js", "memory": "shm", "objects": 64,
	"object_size": 64, "slots_in_use": 0, "avail": 64, "path": $path}]' --arg path "$dir/shmpool.js"
jcheck "--json list: p" '[.pools[] | select(.name == "p")] == [{"name": "p", "memory": "shm", "objects": 1024,
	"object_size": 64, "slots_in_use": 2, "avail": 1017, "path": $path}]' --arg path "$dir/shmpool.p"

run 0 "$ctl" --json destroy js
json_one "--json destroy"
jcheck "--json destroy" '. == {"name": "js", "destroyed": true}'
run 4 "$ctl" destroy js --json
json_error "destroy --json (no such pool)" 4 ENOENT
run 1 "$ctl" --json destroy p
json_error "--json destroy (busy)" 1 EBUSY
jcheck "--json destroy (busy): the message" '.error.message == "pool '"'p'"' is in use: 2 cache slots attached; destroying it anyway takes force=1 (shmpoolctl destroy --force)"'

run 1 "$ctl" --json flush p --slot 63
json_error "--json flush (free slot)" 1 ENOENT
run 4 "$ctl" --json flush nosuch --slot 0
json_error "--json flush (no such pool)" 4 ENOENT

run 0 "$ctl" --json dump
json_one "--json dump"
run 4 "$ctl" --json dump nosuch
json_error "--json dump (no such pool)" 4 ENOENT
run 0 "$ctl" --json watch --interval 0.1 --count 1
json_one "--json watch"
run 4 "$ctl" --json watch nosuch --interval 0.1 --count 1
json_error "--json watch (no such pool)" 4 ENOENT

run 3 "$ctl" --json --socket "$dir/none" ping
json_error "--json ping (no daemon)" 3 unreachable
run 3 "$ctl" --socket "$dir/none" info p --json
json_error "info --json (no daemon)" 3 unreachable

run 2 "$ctl" --json frobnicate
json_error "--json frobnicate" 2 usage
usage_line "--json frobnicate"
run 2 "$ctl" --json create x --objects 10 --object-size 64 --huge sometimes
json_error "--json create (bad --huge)" 2 usage
usage_line "--json create (bad --huge)"
run 2 "$ctl" --json
json_error "--json (no verb)" 2 usage
# --json as the value of an option is that value, not --json: text.
run 3 "$ctl" -s --json ping
same "-s --json ping: stdout" "$(cat "$out")" ""
grep -qF "shmpoolctl: cannot reach shmpoold at '--json'" "$err" ||
	fail "-s --json ping: no \"cannot reach shmpoold at '--json'\" on stderr: $(cat "$err")"
run 2 "$ctl" create x --objects 10 --object-size 64 --own --json
same "create ... --own --json: stdout" "$(cat "$out")" ""
grep -qxF "shmpoolctl: --owner: '--json' is not a user name or number" "$err" ||
	fail "create ... --own --json: no \"--owner: '--json' is not a user name or number\" on stderr: $(cat "$err")"
usage_line "create ... --own --json"
# As getopt_long() reads them: an ambiguous start of two names (--obj:
# --objects, --object-size) or one of a name that takes no value (--h,
# --help, before the verb) takes no value, and --json after it counts.
run 2 "$ctl" create x --obj --json
json_error "create x --obj --json" 2 usage
run 0 "$ctl" --h --json
json_one "--h --json"
jcheck "--h --json" '.usage | startswith("usage: shmpoolctl")'
# A start of --json that names it alone (--js) counts as it does, after
# an error too, before the verb or after it.
run 2 "$ctl" info --bogus --js
json_error "info --bogus --js" 2 usage
run 2 "$ctl" --bogus --js ping
json_error "--bogus --js ping" 2 usage
# A verb's --help wherever it stands, whatever else is wrong: its usage.
run 0 "$ctl" create x --objects bad --help
same "create x --objects bad --help: the usage" "$(head -n 1 "$out")" \
	"usage: shmpoolctl [-s PATH] create NAME --objects N --object-size S"
run 0 "$ctl" create --bogus --he --json
json_one "create --bogus --he --json"
jcheck "create --bogus --he --json" '.usage | startswith("usage: shmpoolctl [-s PATH] create ")'
run 0 "$ctl" ping -xh
same "ping -xh: the usage" "$(cat "$out")" "usage: shmpoolctl [-s PATH] ping [--json]"
# After a word that is no verb too.
run 2 "$ctl" nosuchverb --json
json_error "nosuchverb --json" 2 usage
echo "f. json: done"

###########################################################################
# The workers go: shmpoold reclaims their slots; every counter is then in
# the retired totals, and only W3's 7 objects are still in use.
###########################################################################
kill -KILL "$w2" "$w4"
{ wait "$w2"; wait "$w4"; } 2>/dev/null || :
poll 5 "dump p shows every slot reclaimed (caches_in_use=0)" \
	dump_has p "  caches_in_use=0"
run 0 "$ctl" dump p --json
jcheck "dump p --json after the workers" \
	'.pools[0] | .stats == .retired and .stats == $st and .avail_count == 1017 and .in_use_count == 7 and .caches == []' \
	--argjson st "$(stats_json "$(vadd "$total_st" "$w4_st")")"

###########################################################################
# i. A hostile index (no daemon on its socket): a FIFO in a segment's
# place, a missing file and garbage must not hang or crash dump.
###########################################################################
mkdir "$dir/fake"
mkfifo "$dir/fake/shmpool.fifo"
printf '%s\n' "# not shmpoold's" "fifo $dir/fake/shmpool.fifo" \
	"gone $dir/fake/shmpool.gone" "bad name with spaces" '../x /etc/passwd' \
	>"$dir/fake/sock.pools"
run 1 timeout 10 "$ctl" --socket "$dir/fake/sock" dump
grep -q "not a regular file" "$err" ||
	fail "dump of a FIFO: no 'not a regular file' in: $(cat "$err")"
run 4 timeout 10 "$ctl" --socket "$dir/fake/sock" dump gone
run 1 timeout 10 "$ctl" --socket "$dir/fake/sock" dump fifo

# An error code no errno has, from a stand-in for shmpoold: a client
# takes a name it does not know for EIO (shmpool-protocol(7)), ETIMEDOUT
# among them (not a reply that did not come); a known one is passed on
# as it is.
for pair in "EWEIRD:EIO" "EBUSY:EBUSY" "ETIMEDOUT:EIO"; do
	sent=${pair%%:*}
	expect=${pair#*:}
	start_worker "serve-$sent" --serve "$dir/fake/serve.sock" \
		"shmpool/1 error $sent field=name value=rx msg=stand-in"
	srv=$wpid
	wait_worker "serve-$sent" "$srv" ready
	run 1 "$ctl" --socket "$dir/fake/serve.sock" --json destroy rx
	jcheck "a stand-in's $sent" \
		'.error.code == $c and .error.exit == 1 and .error.message == "stand-in" and .error.field == "name"' \
		--arg c "$expect"
	reap "the stand-in for $sent" "$srv"
	[ "$rc" -eq 0 ] || fail "the stand-in for $sent exited $rc"
done

###########################################################################
# j. shmpoold's paths: a daemon that forks (and works in / from then on)
# started with a relative --config reads that path again on SIGHUP; a
# relative SHMPOOL_SOCKET is refused (exit 1), as a relative --socket is
# (exit 2).
###########################################################################
mkdir "$dir/rel"
abs_shmpoold=$(cd "$(dirname "$shmpoold")" && pwd)/$(basename "$shmpoold")
# d.conf a link, moved to another file before SIGHUP: the link is what
# is read again, not the file it named at the start.
printf '%s\n' "[pool r1]" "objects = 64" "object-size = 64" >"$dir/rel/v1.conf"
ln -s v1.conf "$dir/rel/d.conf"
(cd "$dir/rel" && SHMPOOL_SOCKET="$dir/rel/sock" "$abs_shmpoold" -c d.conf \
	--shm-dir "$dir/rel" --hugetlbfs none) >"$out" 2>"$err" && rc=0 || rc=$?
# Killed at the end whatever happened to its parent.
rdaemon=$(cat "$dir/rel/shmpoold.pid" 2>/dev/null || :)
pids="$pids $rdaemon"
same "shmpoold -c d.conf (relative), its exit status; stderr: $(cat "$err")" "$rc" 0
[ -n "$rdaemon" ] || fail "no $dir/rel/shmpoold.pid"
rinfo() { "$ctl" --socket "$dir/rel/sock" info "$1"; }
poll 5 "pool r1 of the relative config" rinfo r1
{ cat "$dir/rel/v1.conf"; printf '%s\n' "[pool r2]" "objects = 64" "object-size = 64"; } \
	>"$dir/rel/v2.conf"
ln -sf v2.conf "$dir/rel/d.conf"
kill -HUP "$rdaemon"
poll 5 "pool r2, added to the relative config before SIGHUP" rinfo r2
kill -TERM "$rdaemon"
poll 5 "shmpoold -c d.conf: its end after SIGTERM" gone "$rdaemon"
(cd "$dir/rel" && SHMPOOL_SOCKET=rel.sock timeout 10 "$abs_shmpoold" -f --shm-dir "$dir/rel" \
	--hugetlbfs none) >"$out" 2>"$err" && rc=0 || rc=$?
same "shmpoold with SHMPOOL_SOCKET=rel.sock: exit status" "$rc" 1
grep -q "socket path 'rel.sock' (SHMPOOL_SOCKET) is not an absolute path" "$err" ||
	fail "SHMPOOL_SOCKET=rel.sock: no message saying so: $(cat "$err")"
[ ! -e "$dir/rel/rel.sock" ] || fail "SHMPOOL_SOCKET=rel.sock: a socket was made"

if [ "$failures" -ne 0 ]; then
	echo "ctl tests: $failures failures"
	exit 1
fi
echo "ctl tests: ok"
