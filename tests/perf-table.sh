#!/bin/sh
# bench/perf-table: shmpool-perf lines, fixed and random, with and without
# DPDK's columns, to the exact Markdown rows.
set -eu
src="${top_srcdir:-.}"
out=$(mktemp)
trap 'rm -f "$out"' EXIT

printf '%s\n' \
	'shmpool_perf cache=512 cores=1 n_get_bulk=32 n_put_bulk=32 n_keep=128 constant_n=0 rate_persec=2627627099 dpdk_rate=2312108547 ratio=1.14' \
	'shmpool-perf: a message' \
	'shmpool_perf cache=0 cores=4 n_max_bulk=32 random=1 n_keep=128 constant_n=0 rate_persec=85200415 dpdk_rate=234935 ratio=362.65' \
	'shmpool_perf cache=0 cores=4 n_get_bulk=1 n_put_bulk=1 n_keep=512 constant_n=1 rate_persec=11249876 dpdk_rate=0 ratio=inf' |
	"$src/bench/perf-table" >"$out"
cat "$out"
[ "$(cat "$out")" = "$(printf '%s\n' \
	'| cache | workers | get | put | keep | constant_n | shmpool M/s | DPDK M/s | ratio |' \
	'| --- | --- | --- | --- | --- | --- | --- | --- | --- |' \
	'| 512 | 1 | 32 | 32 | 128 | 0 | 2628 | 2312 | 1.14 |' \
	'| 0 | 4 | rand 1..32 | rand 1..32 | 128 | 0 | 85 | 0.2 | 362.65 |' \
	'| 0 | 4 | 1 | 1 | 512 | 1 | 11 | 0.0 | inf |')" ]

echo 'shmpool_perf cache=claimed512 cores=2 n_get_bulk=4 n_put_bulk=8 n_keep=32 constant_n=1 rate_persec=9876543' |
	"$src/bench/perf-table" >"$out"
[ "$(cat "$out")" = "$(printf '%s\n' \
	'| cache | workers | get | put | keep | constant_n | shmpool M/s |' \
	'| --- | --- | --- | --- | --- | --- | --- |' \
	'| claimed512 | 2 | 4 | 8 | 32 | 1 | 9.9 |')" ]
# A line of the other kind than the one before starts a new table.
printf '%s\n' \
	'shmpool_perf cache=0 cores=1 n_get_bulk=1 n_put_bulk=1 n_keep=32 constant_n=0 rate_persec=130000000' \
	'shmpool_perf cache=0 cores=1 n_get_bulk=4 n_put_bulk=4 n_keep=32 constant_n=0 rate_persec=400000000 dpdk_rate=200000000 ratio=2.00' \
	'shmpool_perf cache=0 cores=1 n_get_bulk=8 n_put_bulk=8 n_keep=32 constant_n=0 rate_persec=500000000 dpdk_rate=250000000 ratio=2.00' \
	'shmpool_perf cache=0 cores=1 n_get_bulk=32 n_put_bulk=32 n_keep=32 constant_n=0 rate_persec=900000000' |
	"$src/bench/perf-table" >"$out"
[ "$(cat "$out")" = "$(printf '%s\n' \
	'| cache | workers | get | put | keep | constant_n | shmpool M/s |' \
	'| --- | --- | --- | --- | --- | --- | --- |' \
	'| 0 | 1 | 1 | 1 | 32 | 0 | 130 |' \
	'' \
	'| cache | workers | get | put | keep | constant_n | shmpool M/s | DPDK M/s | ratio |' \
	'| --- | --- | --- | --- | --- | --- | --- | --- | --- |' \
	'| 0 | 1 | 4 | 4 | 32 | 0 | 400 | 200 | 2.00 |' \
	'| 0 | 1 | 8 | 8 | 32 | 0 | 500 | 250 | 2.00 |' \
	'' \
	'| cache | workers | get | put | keep | constant_n | shmpool M/s |' \
	'| --- | --- | --- | --- | --- | --- | --- |' \
	'| 0 | 1 | 32 | 32 | 32 | 0 | 900 |')" ]
# From a file named on the command line, as from standard input.
echo 'shmpool_perf cache=0 cores=1 n_get_bulk=1 n_put_bulk=1 n_keep=32 constant_n=0 rate_persec=130000000' >"$out"
[ "$("$src/bench/perf-table" "$out" | sed -n 3p)" = '| 0 | 1 | 1 | 1 | 32 | 0 | 130 |' ]

# --help to standard output, 0; an unknown option, 2 and nothing out.
"$src/bench/perf-table" --help >"$out"
[ "$(sed -n 4p "$out")" = '  bench/perf-table [FILE...]' ]
status=0
"$src/bench/perf-table" --rows >"$out" 2>/dev/null || status=$?
[ $status -eq 2 ] && [ ! -s "$out" ] ||
	{ echo "--rows: exit $status, not 2, or output"; exit 1; }
echo "perf-table: ok"
