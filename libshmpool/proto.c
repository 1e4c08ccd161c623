/*
 * proto.c - parse and exchange control-protocol messages.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto.h"
#include "segment-internal.h"

#define PROTO_MAGIC	"shmpool/"

static int
is_sep(char c)
{
	return c == ' ' || c == '\t';
}

int
proto_parse(char *buf, size_t len, struct proto_msg *msg,
		char *err, size_t errsz, const char **bad_key)
{
	char *p, *end, *tok, *eol, *ver;
	const char *dup = NULL;
	unsigned int npairs = 0;
	size_t i;

	memset(msg, 0, sizeof(*msg));
	*bad_key = NULL;
	if (len == 0) {
		snprintf(err, errsz, "empty message");
		return -EPROTO;
	}
	eol = memchr(buf, '\n', len);
	end = eol != NULL ? eol : buf + len;
	for (i = 0; buf + i < end; i++) {
		unsigned char c = (unsigned char)buf[i];

		if (!is_sep((char)c) && (c < 0x21 || c > 0x7e)) {
			snprintf(err, errsz, "byte 0x%02x "
				"at offset %zu is not printable ASCII", c, i);
			return -EPROTO;
		}
	}
	/* The caller's buffer has room for a terminator. */
	buf[len] = '\0';
	if (eol != NULL) {
		*eol = '\0';
		msg->rest = eol + 1 < buf + len ? eol + 1 : NULL;
	}

	p = buf;
	while (is_sep(*p))
		p++;
	tok = p;
	while (*p != '\0' && !is_sep(*p))
		p++;
	if (*p != '\0')
		*p++ = '\0';
	ver = tok + strlen(PROTO_MAGIC);
	if (strncmp(tok, PROTO_MAGIC, strlen(PROTO_MAGIC)) != 0 ||
	    *ver == '\0' || strspn(ver, "0123456789") != strlen(ver)) {
		snprintf(err, errsz, "it does not start "
			"with '" PROTO_MAGIC "%d'", PROTO_VERSION);
		return -EPROTO;
	}
	/* Any other number is another version, however it is written or
	 * large: the text as the peer wrote it says which. */
	msg->version = ver;
	if (strcmp(ver, PROTO_STR(PROTO_VERSION)) != 0) {
		return -EPROTONOSUPPORT;
	}

	while (is_sep(*p))
		p++;
	if (*p == '\0') {
		snprintf(err, errsz, "no verb");
		return -EPROTO;
	}
	msg->verb = p;
	while (*p != '\0' && !is_sep(*p))
		p++;
	if (*p != '\0')
		*p++ = '\0';
	/* A reply's status and its code (an errno name, never key=value:
	 * a request whose verb reads "error" keeps its keys, and is
	 * refused for its verb). */
	if (strcmp(msg->verb, "error") == 0) {
		char *code;

		while (is_sep(*p))
			p++;
		code = p;
		while (*p != '\0' && !is_sep(*p) && *p != '=')
			p++;
		if (*p != '=') {
			msg->code = code;
			if (*p != '\0')
				*p++ = '\0';
		} else {
			p = code;
		}
	}

	for (;;) {
		char *eq;
		unsigned int k;

		while (is_sep(*p))
			p++;
		if (*p == '\0')
			break;
		if (strncmp(p, "msg=", 4) == 0) {
			msg->text = p + 4;
			break;
		}
		tok = p;
		while (*p != '\0' && !is_sep(*p))
			p++;
		if (*p != '\0')
			*p++ = '\0';
		eq = strchr(tok, '=');
		if (eq == NULL || eq == tok || !proto_value_ok(eq + 1)) {
			snprintf(err, errsz, "'%.64s' is not key=value", tok);
			return -EPROTO;
		}
		*eq = '\0';
		if (++npairs > PROTO_KEYS_MAX) {
			snprintf(err, errsz, "more than %d keys",
				PROTO_KEYS_MAX);
			return -EPROTO;
		}
		for (k = 0; k < msg->nkv; k++)
			if (strcmp(msg->kv[k].key, tok) == 0)
				break;
		/* A key given twice is named once the whole line has
		 * parsed: a malformed one is that first. */
		if (k < msg->nkv) {
			if (dup == NULL)
				dup = msg->kv[k].key;
			continue;
		}
		msg->kv[msg->nkv].key = tok;
		msg->kv[msg->nkv].value = eq + 1;
		msg->nkv++;
	}
	if (dup != NULL) {
		snprintf(err, errsz, "key '%.64s' is given twice", dup);
		*bad_key = dup;
		return -EINVAL;
	}
	return 0;
}

int
proto_value_ok(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x21 || (unsigned char)*s > 0x7e ||
		    *s == '=')
			return 0;
	return 1;
}

const char *
proto_get(const struct proto_msg *msg, const char *key)
{
	unsigned int i;

	for (i = 0; i < msg->nkv; i++)
		if (strcmp(msg->kv[i].key, key) == 0)
			return msg->kv[i].value;
	return NULL;
}

int
proto_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (s == NULL || *s == '\0' || strlen(s) > 20)
		return -EINVAL;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static const struct {
	int num;
	const char *name;
} errnames[] = {
	{ EPERM, "EPERM" },
	{ ENOENT, "ENOENT" },
	{ EIO, "EIO" },
	{ ENOMEM, "ENOMEM" },
	{ EACCES, "EACCES" },
	{ EBUSY, "EBUSY" },
	{ EEXIST, "EEXIST" },
	{ EINVAL, "EINVAL" },
	{ ENOSPC, "ENOSPC" },
	{ ENAMETOOLONG, "ENAMETOOLONG" },
	{ EPROTO, "EPROTO" },
	{ EBADMSG, "EBADMSG" },
	{ EMSGSIZE, "EMSGSIZE" },
	{ EPROTONOSUPPORT, "EPROTONOSUPPORT" },
	{ ECONNREFUSED, "ECONNREFUSED" },
	{ EMFILE, "EMFILE" },
	{ ENFILE, "ENFILE" },
	{ ESRCH, "ESRCH" },
	{ EISDIR, "EISDIR" },
	{ ENOTDIR, "ENOTDIR" },
};

const char *
proto_errname(int err)
{
	size_t i;

	if (err < 0)
		err = -err;
	for (i = 0; i < sizeof(errnames) / sizeof(errnames[0]); i++)
		if (errnames[i].num == err)
			return errnames[i].name;
	return "EIO";
}

int
proto_errnum(const char *name)
{
	size_t i;

	for (i = 0; name != NULL && i < sizeof(errnames) / sizeof(errnames[0]);
			i++)
		if (strcmp(errnames[i].name, name) == 0)
			return errnames[i].num;
	return EIO;
}

const char *
proto_socket_path(void)
{
	const char *p = getenv(PROTO_SOCKET_ENV);

	return p != NULL && *p != '\0' ? p : PROTO_SOCKET_DEFAULT;
}

int
proto_connect(const char *path)
{
	struct sockaddr_un sun;
	struct timeval tv = { .tv_sec = 5 };
	int fd, err;

	if (path == NULL)
		path = proto_socket_path();
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path))
		return seterr(-ECONNREFUSED, "cannot reach shmpoold at '%s': "
			"the path is longer than %zu bytes", path,
			sizeof(sun.sun_path) - 1);
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return seterr(-errno, "socket: %s", strerror(errno));
	/* A daemon that stops answering must not hang its clients. */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		err = errno;
		close(fd);
		return seterr(-ECONNREFUSED, "cannot reach shmpoold at '%s': "
			"%s (is it running? set " PROTO_SOCKET_ENV " to use "
			"another socket)", path, strerror(err));
	}
	return fd;
}

void
proto_msg_init(struct msghdr *mh, struct iovec *iov, void *buf, size_t len,
		union proto_cbuf *cbuf)
{
	memset(mh, 0, sizeof(*mh));
	iov->iov_base = buf;
	iov->iov_len = len;
	mh->msg_iov = iov;
	mh->msg_iovlen = 1;
	if (cbuf != NULL) {
		mh->msg_control = cbuf->buf;
		mh->msg_controllen = sizeof(cbuf->buf);
	}
}

void
proto_msg_put_fd(struct msghdr *mh, int fd)
{
	struct cmsghdr *cm = CMSG_FIRSTHDR(mh);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
}

int
proto_take_fd(struct msghdr *mh)
{
	struct cmsghdr *c;
	int first = -1;

	for (c = CMSG_FIRSTHDR(mh); c != NULL; c = CMSG_NXTHDR(mh, c)) {
		size_t i, nfd;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < nfd; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (first < 0)
				first = fd;
			else
				close(fd);
		}
	}
	return first;
}

int
proto_call(int sock, const char *req, char *buf, size_t bufsz,
		struct proto_msg *msg, int *fdp)
{
	char line[PROTO_REQ_MAX + 1], err[256];
	union proto_cbuf cbuf;
	struct iovec iov;
	struct msghdr mh;
	const char *bad;
	ssize_t len;
	int n, ret, fd;

	if (fdp != NULL)
		*fdp = -1;
	n = snprintf(line, sizeof(line), PROTO_MAGIC "%d %s", PROTO_VERSION,
		req);
	if (n < 0 || n > PROTO_REQ_MAX)
		return seterr(-EMSGSIZE, "request longer than %d bytes",
			PROTO_REQ_MAX);
	if (send(sock, line, (size_t)n, MSG_NOSIGNAL) != n)
		return seterr(-ECONNREFUSED, "shmpoold: send: %s",
			strerror(errno));

	proto_msg_init(&mh, &iov, buf, bufsz - 1, &cbuf);
	do
		len = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (len < 0 && errno == EINTR);
	if (len < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return seterr(-ETIMEDOUT, "shmpoold: no reply: timed out");
	if (len < 0)
		return seterr(-ECONNREFUSED, "shmpoold: no reply: %s",
			strerror(errno));
	fd = proto_take_fd(&mh);
	if (fdp != NULL)
		*fdp = fd;
	else if (fd >= 0)
		close(fd);
	if (len == 0)
		ret = seterr(-ECONNREFUSED, "shmpoold closed the connection");
	else if (mh.msg_flags & MSG_TRUNC)
		ret = seterr(-EPROTO, "shmpoold's reply was truncated");
	/* The descriptor the reply carried did not fit this process's
	 * table (the kernel drops it and says so thus). */
	else if (mh.msg_flags & MSG_CTRUNC)
		ret = seterr(-EMFILE, "no file descriptor free for the one "
			"shmpoold sent: %s", strerror(EMFILE));
	else if ((ret = proto_parse(buf, (size_t)len, msg, err, sizeof(err),
			&bad)) == -EPROTONOSUPPORT)
		ret = seterr(ret, "incompatible versions: shmpoold speaks "
			PROTO_MAGIC "%s, this library speaks " PROTO_MAGIC "%d",
			msg->version, PROTO_VERSION);
	/* A key given twice (-EINVAL) makes a reply malformed too. */
	else if (ret < 0)
		ret = seterr(-EPROTO, "shmpoold's reply is malformed: %s", err);
	else if (strcmp(msg->verb, "ok") == 0)
		return 0;
	else if (strcmp(msg->verb, "error") == 0 && msg->code == NULL)
		ret = seterr(-EPROTO, "shmpoold's reply: an error without "
			"its code");
	else if (strcmp(msg->verb, "error") == 0)
		ret = seterr(-proto_errnum(msg->code), "%s",
			msg->text != NULL ? msg->text : msg->code);
	else
		ret = seterr(-EPROTO, "shmpoold's reply: unknown status '%s'",
			msg->verb);
	if (fdp != NULL && *fdp >= 0) {
		close(*fdp);
		*fdp = -1;
	}
	return ret;
}
