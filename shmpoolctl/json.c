/*
 * json.c - write compact JSON documents.
 *
 * Strings are escaped for JSON and made valid UTF-8: names and paths are
 * bytes, and a process may call itself anything (/proc/PID/comm), so a
 * byte that does not start a well-formed UTF-8 sequence is written as
 * U+FFFD.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "shmpoolctl.h"

/* The length of the well-formed UTF-8 sequence at s, or 0. */
static size_t
utf8_seq_len(const unsigned char *s, size_t avail)
{
	unsigned char c = s[0];
	size_t n, i;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (avail < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* No overlong forms, no surrogates, nothing past U+10FFFF. */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
}

void
json_write_string(FILE *f, const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, n;

	fputc('"', f);
	while (i < len) {
		unsigned char c = s[i];

		switch (c) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\b':
			fputs("\\b", f);
			break;
		case '\f':
			fputs("\\f", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			if (c < 0x20 || c == 0x7f) {
				fprintf(f, "\\u%04x", c);
				break;
			}
			n = utf8_seq_len(s + i, len - i);
			if (n == 0) {
				fputs("\\ufffd", f);
				break;
			}
			fwrite(s + i, 1, n, f);
			i += n;
			continue;
		}
		i++;
	}
	fputc('"', f);
}

void
jw_init(struct jw *w, FILE *f)
{
	memset(w, 0, sizeof(*w));
	w->f = f;
}

/* Before a value: a comma after its elder sibling, and its key. */
static void
jw_value(struct jw *w, const char *key)
{
	if (w->nonempty[w->depth])
		fputc(',', w->f);
	w->nonempty[w->depth] = 1;
	if (key != NULL) {
		json_write_string(w->f, key, strlen(key));
		fputc(':', w->f);
	}
}

static void
jw_open(struct jw *w, const char *key, int ch)
{
	jw_value(w, key);
	fputc(ch, w->f);
	if (w->depth + 1 < JW_DEPTH_MAX)
		w->depth++;
	w->nonempty[w->depth] = 0;
}

static void
jw_close(struct jw *w, int ch)
{
	fputc(ch, w->f);
	if (w->depth > 0)
		w->depth--;
}

void
jw_obj_open(struct jw *w, const char *key)
{
	jw_open(w, key, '{');
}

void
jw_obj_close(struct jw *w)
{
	jw_close(w, '}');
}

void
jw_arr_open(struct jw *w, const char *key)
{
	jw_open(w, key, '[');
}

void
jw_arr_close(struct jw *w)
{
	jw_close(w, ']');
}

void
jw_strn(struct jw *w, const char *key, const char *s, size_t len)
{
	jw_value(w, key);
	json_write_string(w->f, s, len);
}

void
jw_str(struct jw *w, const char *key, const char *s)
{
	if (s == NULL)
		jw_null(w, key);
	else
		jw_strn(w, key, s, strlen(s));
}

void
jw_u64(struct jw *w, const char *key, uint64_t v)
{
	jw_value(w, key);
	fprintf(w->f, "%" PRIu64, v);
}

void
jw_i64(struct jw *w, const char *key, int64_t v)
{
	jw_value(w, key);
	fprintf(w->f, "%" PRId64, v);
}

void
jw_bool(struct jw *w, const char *key, int v)
{
	jw_value(w, key);
	fputs(v ? "true" : "false", w->f);
}

void
jw_null(struct jw *w, const char *key)
{
	jw_value(w, key);
	fputs("null", w->f);
}

/* A number with a fixed count of decimals; JSON has no NaN. */
void
jw_fixed(struct jw *w, const char *key, double v, int decimals)
{
	jw_value(w, key);
	if (v != v || v > 1e300 || v < -1e300)
		fputs("null", w->f);
	else
		fprintf(w->f, "%.*f", decimals, v);
}

void
jw_raw(struct jw *w, const char *key, const char *text, size_t len)
{
	jw_value(w, key);
	fwrite(text, 1, len, w->f);
}

void
jw_end(struct jw *w)
{
	fputc('\n', w->f);
	w->depth = 0;
	w->nonempty[0] = 0;
}
