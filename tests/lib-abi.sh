#!/bin/sh
# The shared library as a program links it: its soname is libshmpool.so.0
# (configure.ac: 0:0:0 until the first release), and it exports the
# functions libshmpool(3) documents, the out-of-line entries that the
# inline get/put of <shmpool/cache.h> call, and nothing else (the version
# script, libshmpool/libshmpool.sym); and a program calls those entries
# through the GOT (below).
set -eu
b="${top_builddir:-.}"
s="${top_srcdir:-.}"
lib="$b/libshmpool/.libs/libshmpool.so"
[ -e "$lib" ] || { echo "$lib is not built"; exit 1; }
command -v readelf >/dev/null 2>&1 ||
	{ echo "readelf is missing (Debian: binutils)"; exit 1; }

soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]$/\1/p')
[ "$soname" = libshmpool.so.0 ] ||
	{ echo "soname is '$soname', not libshmpool.so.0"; exit 1; }

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Defined global symbols, without their version; the version
# node itself (SHMPOOL_0) is an absolute symbol, left out.
readelf --dyn-syms -W "$lib" |
	awk '$5 == "GLOBAL" && $7 != "UND" && $7 != "ABS" { sub(/@.*/, "", $8); print $8 }' |
	sort -u >"$out/exported"
# The functions of the man page: each "shmpool_x(" in its SYNOPSIS (the
# structures, named without a parenthesis, left out).
sed -n '/^\.SH SYNOPSIS/,/^\.SH /p' "$s/man/libshmpool.3" |
	grep -o 'shmpool_[a-z_]*(' | tr -d '(' >"$out/expected"
[ "$(wc -l <"$out/expected")" -ge 20 ] ||
	{ echo "found only $(wc -l <"$out/expected") functions in libshmpool(3)'s SYNOPSIS"; exit 1; }
printf '%s\n' shmpool_generic_get_slow_ shmpool_generic_put_slow_ \
	shmpool_cache_fold_ \
	>>"$out/expected"
# The hit's long copies can be a call on x86-64 with glibc
# (<shmpool/cache.h>, SHMPOOL_COPY_CALL_: without AVX2).
if [ "$(uname -m)" = x86_64 ] && getconf GNU_LIBC_VERSION >/dev/null 2>&1
then
	printf '%s\n' shmpool_copy_add_ shmpool_copy_sub_ >>"$out/expected"
fi
sort -u -o "$out/expected" "$out/expected"
if ! cmp -s "$out/expected" "$out/exported"; then
	echo "exported symbols differ from those expected (-expected +exported):"
	diff "$out/expected" "$out/exported" | grep '^[<>]' |
		sed 's/^</-/; s/^>/+/'
	exit 1
fi

# A program built with <shmpool.h> calls the two slow entries through
# their GOT entries, not through PLT stubs (SHMPOOL_NOPLT_ in
# <shmpool/cache.h>), where the compiler knows the noplt attribute
# (gcc on x86): check_cache, which gets and puts through
# shmpool_generic_get() and shmpool_generic_put().  The calls through the
# default cache (shmpool_get_bulk() and the others) call neither: they
# go through the pool's own pointers (struct shmpool), as in the demo.
got=skipped
if [ "$(uname -m)" = x86_64 ] && [ -n "${CC:-}" ] &&
	printf '#if !defined(__has_attribute) || !__has_attribute(noplt)\n#error\n#endif\n' |
	$CC -E -x c - >/dev/null 2>&1
then
	command -v objdump >/dev/null 2>&1 ||
		{ echo "objdump is missing (Debian: binutils)"; exit 1; }
	prog="$b/tests/.libs/check_cache"
	[ -e "$prog" ] || prog="$b/tests/check_cache"
	demo="$b/examples/.libs/shmpool-demo"
	[ -e "$demo" ] || demo="$b/examples/shmpool-demo"
	objdump -d "$prog" >"$out/prog.s"
	objdump -d "$demo" >"$out/demo.s"
	for f in shmpool_generic_get_slow_ shmpool_generic_put_slow_; do
		if grep -q "<$f@plt>" "$out/prog.s"; then
			echo "check_cache calls $f through the PLT"
			exit 1
		fi
		grep -q "callq\{0,1\}  *\*0x[0-9a-f]*(%rip) .*<$f@" "$out/prog.s" ||
			{ echo "check_cache has no call of $f through the GOT"; exit 1; }
		if grep -q "<$f@" "$out/demo.s"; then
			echo "the demo, with the default cache only, refers to $f"
			exit 1
		fi
	done
	got=ok
fi
echo "lib-abi: ok ($(wc -l <"$out/exported") symbols, soname $soname; calls through the GOT: $got)"
