/*
 * error.c - words for errors.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "segment-internal.h"

static __thread char last_error[512];

int
seterr(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return err;
}

void
clearerr_shmpool(void)
{
	last_error[0] = '\0';
}

const char *
shmpool_last_error(void)
{
	return last_error;
}

const char *
shmpool_strerror(int err)
{
	const char *s;

	if (err < 0)
		err = -err;
	switch (err) {
	case 0:
		return "success";
	case EBADMSG:
		return "not a shmpool segment, or a corrupt one";
	case EPROTO:
		return "shmpool segment of an unsupported ABI version, or a "
			"reply from shmpoold this library cannot read";
	case EBUSY:
		return "every cache slot of the pool is taken";
	}
	s = strerrordesc_np(err);
	return s != NULL ? s : "unknown error";
}
