#!/bin/sh
# bench/instr-cost's parsing and arithmetic, with stand-ins for valgrind,
# callgrind_annotate and shmpool-perf: the count the stand-in profile
# gives over the objects the stand-in case moved must be exactly the
# figure printed.  (A real count runs shmpool-perf under valgrind: a
# measurement, not a test.)
set -eu
src="${top_srcdir:-.}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/bin" "$dir/build/bench"

# valgrind: writes a profile where --callgrind-out-file says, then runs
# the program after its own options.
cat >"$dir/bin/valgrind" <<'SCRIPT'
#!/bin/sh
for a; do case $a in --callgrind-out-file=*) f=${a#*=} ;; esac; done
while [ $# -gt 0 ]; do case $1 in -*) shift ;; *) break ;; esac; done
echo profile >"$(echo "$f" | sed 's/%p/4242/')"
exec "$@"
SCRIPT
# callgrind_annotate: the worker loop's inclusive count, as it prints it.
cat >"$dir/bin/callgrind_annotate" <<'SCRIPT'
#!/bin/sh
echo "9,999,999,999 (100.0%)  ???:main [/x/shmpool-perf]"
echo "5,000,000,000 (50.00%)  ???:sp_default_p0_c1 [/x/shmpool-perf]"
SCRIPT
# shmpool-perf: one case at 2e9 objects/s, two with --get-bulk 1,4; its
# worker's count on stderr (--verbose): 1.25 s' worth when asked for 1
# (the clock is read every 65536 objects), half a second's for 0.5.
cat >"$dir/build/bench/shmpool-perf" <<'SCRIPT'
#!/bin/sh
echo "$*" >"$(dirname "$0")/args"
# Options that pick no case: shmpool-perf's usage error.
case "$*" in *"--get-bulk 3 "*) echo "shmpool-perf: no case" >&2; exit 2 ;; esac
# A run that fails.
case "$*" in *"--get-bulk 5 "*) echo "shmpool-perf: failed" >&2; exit 1 ;; esac
echo "shmpool-perf: pool /dev/shm/x: 1024 objects of 2048 bytes" >&2
case "$*" in
*"--seconds 0.5 "*) echo "  worker 0: 1000000000 objects in 500000000 ns on CPU 0" >&2 ;;
*) echo "  worker 0: 2500000000 objects in 1250000000 ns on CPU 1" >&2 ;;
esac
echo "shmpool_perf cache=512 cores=1 n_get_bulk=1 n_put_bulk=1 n_keep=128 constant_n=1 rate_persec=2000000000"
case "$*" in *1,4*)
echo "shmpool_perf cache=512 cores=1 n_get_bulk=4 n_put_bulk=4 n_keep=128 constant_n=1 rate_persec=1" ;;
esac
SCRIPT
chmod +x "$dir/bin/"* "$dir/build/bench/shmpool-perf"
PATH=$dir/bin:$PATH
export PATH

# 5e9 instructions over the 2.5e9 objects the worker counted, not the
# 2e9 of rate_persec times one second; over 1e9 in half a second.
out=$("$src/bench/instr-cost" --build "$dir/build" --cache 512 --get-bulk 1)
want="shmpool_perf cache=512 cores=1 n_get_bulk=1 n_put_bulk=1 n_keep=128 constant_n=1 rate_persec=2000000000 instr_per_obj=2.00"
[ "$out" = "$want" ] || { echo "got '$out', not '$want'"; exit 1; }
args="--cache 512 --get-bulk 1 --workers 1 --repeat 1 --seconds 1 --verbose"
[ "$(cat "$dir/build/bench/args")" = "$args" ] ||
	{ echo "shmpool-perf ran with '$(cat "$dir/build/bench/args")'"; exit 1; }
out=$("$src/bench/instr-cost" --build "$dir/build" --seconds 0.5 --cache 512)
case $out in *" instr_per_obj=5.00") ;; *) echo "--seconds 0.5: '$out'"; exit 1 ;; esac

# Options that pick more than one case or none (shmpool-perf's status
# 2), and a bad --seconds, are usage errors; a run that fails is 1.
for bad in "--get-bulk 1,4" "--get-bulk 3" "--seconds x"; do
	rc=0
	# shellcheck disable=SC2086
	"$src/bench/instr-cost" --build "$dir/build" $bad >/dev/null 2>&1 || rc=$?
	[ "$rc" -eq 2 ] || { echo "$bad: exit $rc, not 2"; exit 1; }
done
rc=0
"$src/bench/instr-cost" --build "$dir/build" --get-bulk 5 >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 1 ] || { echo "a failed run: exit $rc, not 1"; exit 1; }
# And a bad --seconds says the usage.
"$src/bench/instr-cost" --seconds x 2>&1 >/dev/null |
	grep -qxF "usage: bench/instr-cost [--build DIR] [--seconds S] [shmpool-perf options]" ||
	{ echo "--seconds x: no usage line"; exit 1; }
echo "instr-cost: ok"
