#!/bin/sh
# bench/lib-turns's turns and arithmetic, with a stand-in for
# shmpool-perf that reads its rate from the library folder first in
# LD_LIBRARY_PATH: the order of the runs, the options passed on and the
# figures printed must be exactly those the stand-in's rates give.  (A
# real run times two libraries: a measurement, not a test.)
set -eu
src="${top_srcdir:-.}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/build/bench" "$dir/a" "$dir/b" "$dir/none"
: >"$dir/a/libshmpool.so.0"
: >"$dir/b/libshmpool.so.0"

# shmpool-perf: the next rate of the folder's list, in one case's line
# (two with --get-bulk 1,4); the folder's name and the options, in a log.
cat >"$dir/build/bench/shmpool-perf" <<'SCRIPT'
#!/bin/sh
# Options that pick no case: shmpool-perf's usage error.
case "$*" in *"--get-bulk 3"*) echo "shmpool-perf: no case" >&2; exit 2 ;; esac
lib=${LD_LIBRARY_PATH%%:*}
n=$(($(cat "$lib/used" 2>/dev/null || echo 0) + 1))
echo $n >"$lib/used"
echo "$(basename "$lib") $*" >>"$(dirname "$0")/log"
echo "shmpool_perf cache=0 cores=1 n_get_bulk=4 n_put_bulk=4 n_keep=128 constant_n=0 rate_persec=$(sed -n ${n}p "$lib/rates")"
case "$*" in *1,4*)
echo "shmpool_perf cache=0 cores=1 n_get_bulk=1 n_put_bulk=1 n_keep=128 constant_n=0 rate_persec=1" ;;
esac
SCRIPT
chmod +x "$dir/build/bench/shmpool-perf"
printf '%s\n' 100000000 100000000 100000000 100000000 >"$dir/a/rates"
printf '%s\n' 110000000 90000000 120000000 108000000 >"$dir/b/rates"

# Ratios 1.10, 0.90, 1.20, 1.08: sorted, the 2nd is the median and the
# first quartile, the 3rd the third; means 100 and 107 M/s.
out=$("$src/bench/lib-turns" --build "$dir/build" --turns 4 "$dir/a" "$dir/b" \
	--cache 0 --get-bulk 4)
want="turns=4 median=1.080 q1=1.080 q3=1.100 mean_a=100.0 mean_b=107.0"
[ "$out" = "$want" ] || { echo "got '$out', not '$want'"; exit 1; }
want=$(printf '%s --cache 0 --get-bulk 4\n' a b a b a b a b)
[ "$(cat "$dir/build/bench/log")" = "$want" ] ||
	{ echo "runs: $(cat "$dir/build/bench/log")"; exit 1; }

# One turn: every figure is its one ratio.
rm -f "$dir/a/used" "$dir/b/used"
out=$("$src/bench/lib-turns" --build "$dir/build" --turns 1 "$dir/a" "$dir/b")
want="turns=1 median=1.100 q1=1.100 q3=1.100 mean_a=100.0 mean_b=110.0"
[ "$out" = "$want" ] || { echo "one turn: got '$out', not '$want'"; exit 1; }

# Usage errors (2): a bad --turns, a missing library folder, options
# that pick more than one case or none; a folder without the library
# is 1.
for bad in "--turns 0 $dir/a $dir/b" "--turns x $dir/a $dir/b" \
		"--turns 04 $dir/a $dir/b" "$dir/a" \
		"--turns 1 $dir/a $dir/b --get-bulk 1,4" \
		"--turns 1 $dir/a $dir/b --get-bulk 3"; do
	rc=0
	# shellcheck disable=SC2086
	"$src/bench/lib-turns" --build "$dir/build" $bad >/dev/null 2>&1 || rc=$?
	[ $rc -eq 2 ] || { echo "'$bad' exited $rc, not 2"; exit 1; }
done
rc=0
"$src/bench/lib-turns" --build "$dir/build" "$dir/a" "$dir/none" \
	>/dev/null 2>"$dir/err" || rc=$?
[ $rc -eq 1 ] && grep -qxF "lib-turns: no libshmpool.so.0 in $dir/none" "$dir/err" ||
	{ echo "a folder without the library: exit $rc, '$(cat "$dir/err")'"; exit 1; }
# A run that counted nothing (rate 0) ends the comparison: status 1,
# no line.
rm -f "$dir/a/used" "$dir/b/used"
printf '%s\n' 100000000 0 >"$dir/z"
cp "$dir/z" "$dir/b/rates"
rc=0
out=$("$src/bench/lib-turns" --build "$dir/build" --turns 2 "$dir/a" "$dir/b" \
	2>"$dir/err") || rc=$?
[ $rc -eq 1 ] && [ -z "$out" ] &&
	grep -qxF "lib-turns: a run with $dir/b counted no object" "$dir/err" ||
	{ echo "a rate of 0: exit $rc, '$out', '$(cat "$dir/err")'"; exit 1; }
"$src/bench/lib-turns" 2>&1 >/dev/null |
	grep -qxF "usage: bench/lib-turns [--build DIR] [--turns N] LIB_A LIB_B [shmpool-perf options]" ||
	{ echo "no usage line"; exit 1; }
echo "lib-turns: ok"
