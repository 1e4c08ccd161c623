/*
 * proto.h - the control protocol between shmpoold and its clients
 * (libshmpool's attach, shmpoolctl).  Described in shmpool-protocol(7).
 *
 * One request per SOCK_SEQPACKET packet, one reply per packet:
 *
 *	shmpool/1 VERB key=value ...
 *	shmpool/1 ok key=value ...
 *	shmpool/1 error CODE [field=KEY value=VALUE] msg=TEXT
 *
 * Internal: not installed, not exported from libshmpool.so.
 */
#ifndef SHMPOOL_PROTO_H
#define SHMPOOL_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#define PROTO_VERSION		1
/* PROTO_VERSION as its text. */
#define PROTO_STR_(x)		#x
#define PROTO_STR(x)		PROTO_STR_(x)
#define PROTO_REQ_MAX		4096		/* bytes in a request */
#define PROTO_REPLY_MAX		65536		/* bytes in a reply */
#define PROTO_KEYS_MAX		32		/* key=value pairs in a message */
#define PROTO_SOCKET_DEFAULT	"/run/shmpool/shmpoold.sock"
#define PROTO_SOCKET_ENV	"SHMPOOL_SOCKET"

struct proto_kv {
	const char *key;
	const char *value;
};

/* A parsed message; the strings point into the caller's buffer. */
struct proto_msg {
	const char *version;		/* the number, as the peer wrote it */
	const char *verb;		/* request verb, or "ok" / "error" */
	const char *code;		/* error replies: the errno name */
	const char *text;		/* error replies: msg=, to end of line */
	const char *rest;		/* lines after the first, or NULL */
	unsigned int nkv;
	struct proto_kv kv[PROTO_KEYS_MAX];
};

/*
 * Parse the first line of buf (len bytes and room for one more, modified
 * in place: separators become NULs).  Returns 0, or a negative errno:
 * -EPROTO for malformed text (err, of errsz bytes, says what is wrong,
 * for the caller to say of a request or a reply); -EPROTONOSUPPORT for
 * another version (msg->version names it; err is not written); -EINVAL
 * for a key given twice in a line that is otherwise well formed (err
 * names it, and *bad_key points at its first occurrence, whose value
 * proto_get() returns; NULL on any other return).
 */
int proto_parse(char *buf, size_t len, struct proto_msg *msg,
		char *err, size_t errsz, const char **bad_key);

/* The value of key, or NULL. */
const char *proto_get(const struct proto_msg *msg, const char *key);

/* Whether s can be a value of the protocol's (KCHAR in
 * shmpool-protocol(7)): one or more bytes of printable ASCII, no space,
 * no '='. */
int proto_value_ok(const char *s);

/* Parse a decimal unsigned number in [min, max]; 0 or -EINVAL. */
int proto_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* An errno's name ("EINVAL") and back; unknown names give EIO. */
const char *proto_errname(int err);
int proto_errnum(const char *name);

/* The socket path: $SHMPOOL_SOCKET or the default. */
const char *proto_socket_path(void);

/*
 * Client side: connect to the daemon at path (NULL: proto_socket_path()).
 * Returns a socket or -errno (-ECONNREFUSED when nothing serves there, the
 * detail in shmpool_last_error()).
 */
int proto_connect(const char *path);

/* Room for the one descriptor (SCM_RIGHTS) a message carries. */
union proto_cbuf {
	struct cmsghdr h;
	char buf[CMSG_SPACE(sizeof(int))];
};

/*
 * mh over the one buffer buf of len bytes (through iov), with cbuf for a
 * descriptor to receive, or to send with proto_msg_put_fd(); cbuf NULL
 * for none.
 */
void proto_msg_init(struct msghdr *mh, struct iovec *iov, void *buf,
		size_t len, union proto_cbuf *cbuf);
/* fd in mh's descriptor room (proto_msg_init() given a cbuf). */
void proto_msg_put_fd(struct msghdr *mh, int fd);

/*
 * The first descriptor that came with a received message (SCM_RIGHTS),
 * or -1; any others are closed.
 */
int proto_take_fd(struct msghdr *mh);

/*
 * Send req (a NUL-terminated line without the version) and receive the
 * reply into buf (bufsz bytes, NUL-terminated), parsed into msg.  When fdp
 * is not NULL, a descriptor that came with the reply is stored there (or
 * -1).  Returns 0 for an "ok" reply, the negative errno of an "error"
 * reply (its text in shmpool_last_error()), or for a transport failure
 * -ETIMEDOUT (no reply within the socket's receive timeout) or
 * -ECONNREFUSED.
 */
int proto_call(int sock, const char *req, char *buf, size_t bufsz,
		struct proto_msg *msg, int *fdp);

#endif /* SHMPOOL_PROTO_H */
