/*
 * The outer stream: TLS 1.3 over a non-blocking socket (OpenSSL 3), or
 * plain TCP behind the same interface (outer_new without a context: the
 * socks5 and direct outbounds).  Contexts are made in outer_ctx.c.
 *
 * I/O goes through our own small BIO rather than OpenSSL's socket BIO, for
 * one reason: OpenSSL writes with write(2), which raises SIGPIPE when the
 * peer is gone; ours uses send(MSG_NOSIGNAL), so a dead peer is an EPIPE
 * and never a signal, whatever the process's SIGPIPE disposition.
 *
 * Each operation (handshake, read, write, shutdown) remembers which fd
 * event it is blocked on; outer_events() is their union, so a flow with a
 * blocked read and a blocked write waits for both.
 */
#include "config.h"

#include "tls/outer.h"

#include <sys/socket.h>
#include <sys/epoll.h>
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <sodium.h>

#include "core/log.h"
#include "core/sock.h"
#include "tls/outer_int.h"

/*
 * Write batching: OpenSSL writes each record with a system call of its
 * own (partial writes return after one record), and a 16 KiB send costs
 * about what a 64 KiB one does in the kernel (the TCP pass, the
 * receiver's wakeup).  An outer_write of more than a record encrypts up
 * to OUTER_WQ_RECS records into one queue and sends them at once.
 */
#define OUTER_REC_PLAIN	16384			/* TLS plaintext record */
#define OUTER_REC_WIRE	(OUTER_REC_PLAIN + 256 + 5)	/* RFC 8446 5.2 */
#define OUTER_WQ_RECS	4
#define OUTER_WQ_CAP	(OUTER_WQ_RECS * OUTER_REC_WIRE)

static void outer_wq_free(struct outer *);
static int outer_wq_flush(struct outer *);
static int outer_bio_seal(BIO *, struct outer *, const char *, int);
static size_t outer_pad_len(struct outer *, int, size_t);

/* OpenSSL 3.0's internal BIO controls of kernel TLS (bio.h lists them
 * in a comment; BIO_CTRL_GET_KTLS_SEND is public): outer_seal.c. */
#define OUTER_BIO_SET_KTLS		72
#define OUTER_BIO_SET_KTLS_CTRL_MSG	74
#define OUTER_BIO_CLEAR_KTLS_CTRL_MSG	75

static pthread_once_t	 outer_once = PTHREAD_ONCE_INIT;
static BIO_METHOD	*outer_bio_meth;
static bool		 outer_free_buffers_ok;

/* ---- BIO -------------------------------------------------------------- */

static bool
outer_errno_retry(int e)
{
	return e == EAGAIN || e == EWOULDBLOCK || e == EINTR;
}

static int
outer_bio_write(BIO *b, const char *buf, int len)
{
	struct outer	*o = BIO_get_data(b);
	ssize_t		 n;

	BIO_clear_retry_flags(b);
	if (o->seal != NULL)
		return outer_bio_seal(b, o, buf, len);
	/* Records of a batch, and anything OpenSSL writes while one is
	 * still queued (it must not overtake it), go to the queue. */
	if (o->wq_batch || o->wq_len > 0) {
		if (!o->wq_batch || (size_t)len > OUTER_WQ_CAP - o->wq_len) {
			BIO_set_retry_write(b);
			return -1;
		}
		memcpy(o->wq + o->wq_len, buf, (size_t)len);
		o->wq_len += (size_t)len;
		return len;
	}
	n = send(o->fd, buf, (size_t)len, MSG_NOSIGNAL);
	if (n < 0 && outer_errno_retry(errno))
		BIO_set_retry_write(b);
	return (int)n;
}

static int
outer_bio_read(BIO *b, char *buf, int len)
{
	struct outer	*o = BIO_get_data(b);
	ssize_t		 n;

	BIO_clear_retry_flags(b);
	n = recv(o->fd, buf, (size_t)len, 0);
	if (n < 0 && outer_errno_retry(errno))
		BIO_set_retry_read(b);
	if (n == 0)
		o->eof = true;
	return (int)n;
}

static long
outer_bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	struct outer	*o = BIO_get_data(b);

	switch (cmd) {
	case BIO_CTRL_FLUSH:
		return 1;
	case BIO_CTRL_EOF:
		return o->eof;
	case BIO_C_GET_FD:
		if (ptr != NULL)
			*(int *)ptr = o->fd;
		return o->fd;
	case OUTER_BIO_SET_KTLS:	/* num: the write side's (non-zero) */
		return num != 0 && o->seal_want ? outer_seal_start(o, ptr) : 0;
	case BIO_CTRL_GET_KTLS_SEND:
		return o->seal != NULL;
	case OUTER_BIO_SET_KTLS_CTRL_MSG:	/* the next record's type */
		outer_seal_type(o, (uint8_t)num);
		return 0;
	case OUTER_BIO_CLEAR_KTLS_CTRL_MSG:
		outer_seal_type(o, 0);
		return 0;
	default:
		return 0;
	}
}

/*
 * SSL_free_buffers() could free a buffer still holding a partial record
 * before CVE-2024-4741 was fixed (3.0.14, 3.1.6, 3.2.2, 3.3.1).  Older
 * libraries only lose the idle-memory saving.
 */
static bool
outer_free_buffers_safe(void)
{
	unsigned long	v = OpenSSL_version_num();
	unsigned long	major = v >> 28, minor = (v >> 20) & 0xff;
	unsigned long	patch = (v >> 4) & 0xff;

	if (major != 3)
		return major > 3;
	switch (minor) {
	case 0:
		return patch >= 14;
	case 1:
		return patch >= 6;
	case 2:
		return patch >= 2;
	case 3:
		return patch >= 1;
	default:
		return true;
	}
}

static void
outer_init_once(void)
{
	BIO_METHOD	*m;

	outer_bio_type = BIO_get_new_index() | BIO_TYPE_SOURCE_SINK |
	    BIO_TYPE_DESCRIPTOR;
	m = BIO_meth_new(outer_bio_type, "tunsplit socket");
	if (m == NULL || BIO_meth_set_write(m, outer_bio_write) != 1 ||
	    BIO_meth_set_read(m, outer_bio_read) != 1 ||
	    BIO_meth_set_ctrl(m, outer_bio_ctrl) != 1) {
		BIO_meth_free(m);
		return;
	}
	outer_bio_meth = m;
	outer_free_buffers_ok = outer_free_buffers_safe();
}

static int
outer_init(void)
{
	pthread_once(&outer_once, outer_init_once);
	if (outer_bio_meth == NULL) {
		log_ssl_errors("outer: initialisation");
		return -1;
	}
	return outer_ctx_init();
}

/*
 * TLS 1.3 record padding (inside the encryption, stripped by any peer's TLS
 * layer: no protocol change).  The first records of a flow carry the app's
 * own handshake -- an inner TLS ClientHello, ServerHello, certificates,
 * the short Finished and the first request -- whose sizes would show
 * through one-to-one; random padding of 1..max bytes on the first
 * `records` application records hides them.  A record shorter than max/2
 * (len counts the content type byte) is first filled up to max/2, as
 * Xray's Vision pads short handshake packets long: its padded length is
 * then max/2 + 1..max whatever it held, so a 70-byte inner Finished looks
 * like a 500-byte request.  OpenSSL caps the padding at the record limit.
 */
static size_t
outer_pad_len(struct outer *o, int type, size_t len)
{
	size_t		 floor = o->pad_max / 2;

	if (type != SSL3_RT_APPLICATION_DATA || o->pad_left == 0)
		return 0;
	o->pad_left--;
	return (len < floor ? floor - len : 0) + 1 +
	    randombytes_uniform(o->pad_max);
}

static size_t
outer_on_pad(SSL *ssl, int type, size_t len, void *arg)
{
	(void)ssl;
	return outer_pad_len(arg, type, len);
}

/* ---- streams ---------------------------------------------------------- */

static bool
outer_is_ip(const char *s)
{
	struct in6_addr	a;

	return inet_pton(AF_INET, s, &a) == 1 ||
	    inet_pton(AF_INET6, s, &a) == 1;
}

static int
outer_client_setup(struct outer *o, SSL_CTX *ctx)
{
	SSL_SESSION	*sess;
	bool		 verify;

	verify = SSL_CTX_get_verify_mode(ctx) != SSL_VERIFY_NONE;
	if (o->sni == NULL) {
		if (verify) {
			log_warnx("outer: no server name to verify");
			return -1;
		}
		return 0;
	}
	if (outer_is_ip(o->sni)) {
		/* No SNI for addresses (RFC 6066); check the IP SAN. */
		if (verify && X509_VERIFY_PARAM_set1_ip_asc(
		    SSL_get0_param(o->ssl), o->sni) != 1)
			return -1;
	} else {
		if (SSL_set_tlsext_host_name(o->ssl, o->sni) != 1)
			return -1;
		if (verify) {
			SSL_set_hostflags(o->ssl,
			    X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
			if (SSL_set1_host(o->ssl, o->sni) != 1)
				return -1;
		}
	}
	if ((sess = outer_cache_take(ctx, o->sni)) != NULL) {
		if (SSL_set_session(o->ssl, sess) != 1) {
			SSL_SESSION_free(sess);
			return -1;
		}
		SSL_SESSION_free(sess);	/* the SSL holds its own */
	}
	return 0;
}

/* ---- plain TCP ----------------------------------------------------------
 *
 * The same contract without TLS: no handshake, reads and writes are
 * recv() and send(), the half-close is shutdown(SHUT_WR) and the abort an
 * RST.  A FIN is the end of the stream (there is no close_notify to tell a
 * truncation from an end).
 */

static struct outer *
outer_plain_new(int fd, bool client)
{
	struct outer	*o;

	if ((o = calloc(1, sizeof(*o))) == NULL) {
		log_warn("outer: new plain stream on fd %d", fd);
		close(fd);
		return NULL;
	}
	o->fd = fd;
	o->client = client;
	o->hs_done = true;
	o->born_ms = outer_now_ms();
	return o;
}

static ssize_t
outer_plain_read(struct outer *o, void *buf, size_t len)
{
	ssize_t	n;

	do
		n = recv(o->fd, buf, len, 0);
	while (n < 0 && errno == EINTR);
	o->want_rd = 0;
	if (n > 0)
		return n;
	if (n == 0) {
		o->eof = true;
		return 0;
	}
	if (errno == EAGAIN || errno == EWOULDBLOCK) {
		o->want_rd = EPOLLIN;
		errno = EAGAIN;
	} else
		errno = ECONNRESET;
	return -1;
}

static ssize_t
outer_plain_write(struct outer *o, const void *buf, size_t len)
{
	ssize_t	n;

	do
		n = send(o->fd, buf, len, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	o->want_wr = 0;
	if (n >= 0)
		return n;
	if (errno == EAGAIN || errno == EWOULDBLOCK) {
		o->want_wr = EPOLLOUT;
		errno = EAGAIN;
	} else if (errno != EPIPE)
		errno = ECONNRESET;
	return -1;
}

/* ---- TLS ---------------------------------------------------------------- */

struct outer *
outer_new(SSL_CTX *ctx, int fd, bool client, const char *sni)
{
	struct outer	*o = NULL;
	const struct outer_pad *pad;
	BIO		*bio;

	if (fd < 0) {
		errno = EINVAL;
		goto fail;
	}
	if (ctx == NULL)
		return outer_plain_new(fd, client);
	if (outer_init() == -1)
		goto fail;
	if ((o = calloc(1, sizeof(*o))) == NULL)
		goto fail;
	o->fd = fd;
	o->client = client;
	o->born_ms = outer_now_ms();
	if (client && sni != NULL && *sni != '\0' &&
	    (o->sni = strdup(sni)) == NULL)
		goto fail;
	ERR_clear_error();
	if ((o->ssl = SSL_new(ctx)) == NULL)
		goto fail;
	if ((bio = BIO_new(outer_bio_meth)) == NULL)
		goto fail;
	/* The BIO's data is how callbacks find the stream (outer_of_ssl):
	 * the SSL's own app data would cost every stream an ex-data
	 * stack, two allocations. */
	BIO_set_data(bio, o);
	BIO_set_init(bio, 1);
	SSL_set_bio(o->ssl, bio, bio);		/* the SSL owns it now */
	if ((pad = outer_ctx_get_pad(ctx)) != NULL) {
		/* A server stream pads only once its peer is trusted: until
		 * then it may be a cover site's answer, and nginx never
		 * pads. */
		o->pad_records = pad->records;
		o->pad_left = client ? pad->records : 0;
		o->pad_max = pad->max;
	}
	/* A server stream seals its records itself (outer_seal.c) where
	 * OpenSSL hands it the key, which it does not with a padding
	 * callback set: a stream left without pads in outer_trust(). */
	if (!client && outer_seal_supported()) {
		SSL_set_options(o->ssl, SSL_OP_ENABLE_KTLS);
		o->seal_want = true;
	} else if (pad != NULL) {
		SSL_set_record_padding_callback(o->ssl, outer_on_pad);
		SSL_set_record_padding_callback_arg(o->ssl, o);
	}
	if (client) {
		SSL_set_connect_state(o->ssl);
		if (outer_client_setup(o, ctx) == -1)
			goto fail;
	} else {
		SSL_set_accept_state(o->ssl);
		/* Until outer_trust(): a FIN without close_notify is an end of
		 * stream, answered with nothing, as nginx (which sets this
		 * option) does; OpenSSL's default answers decode_error. */
		SSL_set_options(o->ssl, SSL_OP_IGNORE_UNEXPECTED_EOF);
	}
	return o;

fail:
	log_ssl_errors("outer: new %s stream on fd %d",
	    client ? "client" : "server", fd);
	if (o != NULL) {
		SSL_free(o->ssl);
		free(o->sni);
		free(o);
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

int
outer_fd(const struct outer *o)
{
	return o->fd;
}

/* Peers cause these failures, so they are logged only when debugging. */
static void
outer_log_failure(const struct outer *o, const char *what)
{
	if (log_get_level() >= LOG_LVL_DEBUG)
		log_ssl_errors("outer fd %d: %s", o->fd, what);
	else
		ERR_clear_error();
}

/*
 * Maps a failed SSL call (ret <= 0) to our contract: 0 for end of stream,
 * -1 with errno EAGAIN (and *want set), or -1 with ECONNRESET, EPIPE or
 * EPROTO.
 */
static int
outer_error(struct outer *o, int ret, uint32_t *want, const char *what)
{
	int	saved = errno;

	*want = 0;
	switch (SSL_get_error(o->ssl, ret)) {
	case SSL_ERROR_WANT_READ:
		*want = EPOLLIN;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_WANT_WRITE:
		*want = EPOLLOUT;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_ZERO_RETURN:
		return 0;
	case SSL_ERROR_SYSCALL:
		outer_log_failure(o, what);
		errno = saved == EPIPE ? EPIPE : ECONNRESET;
		return -1;
	default:
		outer_log_failure(o, what);
		errno = EPROTO;
		return -1;
	}
}

/*
 * The name the certificate was checked against is done with once the
 * handshake is over (TLS 1.3 never verifies the server again): its copy
 * in the verification parameters, a stack and a string, goes for the
 * rest of the stream's life.  Nothing reads it after the handshake
 * (SSL_get0_peername is not used); SNI and the ticket cache have their
 * own copies.
 */
static void
outer_drop_peer_name(struct outer *o)
{
	X509_VERIFY_PARAM	*vp = SSL_get0_param(o->ssl);

	(void)X509_VERIFY_PARAM_set1_host(vp, NULL, 0);
	(void)X509_VERIFY_PARAM_set1_ip(vp, NULL, 0);
}

int
outer_handshake(struct outer *o)
{
	long	 v;
	int	 r, saved;

	if (o->hs_done)
		return 1;
	ERR_clear_error();
	if ((r = SSL_do_handshake(o->ssl)) == 1) {
		/* The client offers older versions to look like curl; it
		 * speaks only TLS 1.3, and fails before sending a byte. */
		if (o->client && SSL_version(o->ssl) != TLS1_3_VERSION &&
		    outer_ctx_needs_tls13(SSL_get_SSL_CTX(o->ssl))) {
			log_debug("outer fd %d: server chose %s, not TLS 1.3",
			    o->fd, SSL_get_version(o->ssl));
			o->want_hs = 0;
			errno = EPROTO;
			return -1;
		}
		o->hs_done = true;
		o->want_hs = 0;
		if (o->client)
			outer_drop_peer_name(o);
		return 1;
	}
	if (outer_error(o, r, &o->want_hs, "handshake") == 0) {
		errno = ECONNRESET;		/* closed mid-handshake */
		return -1;
	}
	if (errno == EAGAIN)
		return 0;
	if (o->client && (v = SSL_get_verify_result(o->ssl)) != X509_V_OK) {
		/* Our own server failing verification is worth a warning:
		 * a wrong configuration or someone in the middle. */
		saved = errno;
		log_warnx("outer: certificate of %s not accepted: %s",
		    o->sni != NULL ? o->sni : "server",
		    X509_verify_cert_error_string(v));
		errno = saved;
	}
	return -1;
}

int
outer_untls(struct outer *o)
{
	if (o == NULL || o->ssl == NULL || o->client || o->hs_done) {
		errno = EINVAL;
		return -1;
	}
	SSL_free(o->ssl);	/* our BIO leaves the fd open */
	o->ssl = NULL;
	o->hs_done = true;
	o->want_hs = 0;
	o->pad_left = 0;
	return 0;
}

void
outer_trust(struct outer *o)
{
	if (o == NULL || o->ssl == NULL || o->client)
		return;
	o->pad_left = o->pad_records;
	if (o->seal_want && o->seal == NULL && o->pad_max > 0) {
		/* Not sealed by us (a cipher we do not seal): OpenSSL pads. */
		SSL_set_record_padding_callback(o->ssl, outer_on_pad);
		SSL_set_record_padding_callback_arg(o->ssl, o);
	}
	SSL_clear_options(o->ssl, SSL_OP_IGNORE_UNEXPECTED_EOF);
	/* OpenSSL sends two tickets after a full handshake but one after a
	 * resumed one, and the client uses each once: resumptions alone
	 * never refill its cache, so of a stream of dials with any overlap
	 * some third found it empty and did a full handshake -- more CPU on
	 * both sides, and on the client a parsed copy of the certificate
	 * (~5 KiB) for that connection's whole life.  A second ticket for
	 * our own clients only: before they authenticate, a resumption looks
	 * as nginx's would. */
	if (!o->ticket_more && SSL_session_reused(o->ssl) == 1) {
		o->ticket_more = true;
		(void)SSL_new_session_ticket(o->ssl);	/* with the next write */
	}
}

bool
outer_handshake_done(const struct outer *o)
{
	return o->hs_done;
}

bool
outer_session_reused(const struct outer *o)
{
	return o->ssl != NULL && SSL_session_reused(o->ssl) == 1;
}

bool
outer_tls13(const struct outer *o)
{
	return o != NULL && o->ssl != NULL && SSL_is_init_finished(o->ssl) &&
	    SSL_version(o->ssl) == TLS1_3_VERSION;
}

int
outer_export(const struct outer *o, const char *label, uint8_t *out,
    size_t len)
{
	if (o == NULL || o->ssl == NULL || !SSL_is_init_finished(o->ssl) ||
	    label == NULL ||
	    SSL_export_keying_material(o->ssl, out, len, label,
	    strlen(label), NULL, 0, 0) != 1) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

ssize_t
outer_read(struct outer *o, void *buf, size_t len)
{
	if (o->fr != NULL)
		return outer_frame_read(o, buf, len);
	return outer_io_read(o, buf, len);
}

ssize_t
outer_io_read(struct outer *o, void *buf, size_t len)
{
	size_t	n;
	int	r, rc;

	if (len == 0) {
		errno = EINVAL;
		return -1;
	}
	if (o->ssl == NULL)
		return outer_plain_read(o, buf, len);
	ERR_clear_error();
	r = SSL_read_ex(o->ssl, buf, len, &n);
	if (!o->hs_done && SSL_is_init_finished(o->ssl)) {
		o->hs_done = true;
		o->want_hs = 0;
	}
	if (r == 1) {
		o->want_rd = 0;
		return (ssize_t)n;
	}
	if ((rc = outer_error(o, r, &o->want_rd, "read")) == -1 &&
	    errno == EAGAIN && o->want_rd == EPOLLIN && o->hs_done &&
	    outer_free_buffers_ok) {
		/* Idle: drop the 17 KiB read buffer.  RELEASE_BUFFERS alone
		 * keeps it after a read that ends in EAGAIN (and after
		 * post-handshake messages); SSL_free_buffers() refuses while
		 * a partial record is buffered. */
		(void)SSL_free_buffers(o->ssl);
		outer_wq_free(o);
		outer_seal_idle(o);
		errno = EAGAIN;
	}
	return rc;
}

ssize_t
outer_write(struct outer *o, const void *buf, size_t len)
{
	if (o->fr != NULL)
		return outer_frame_write(o, buf, len, false);
	return outer_io_write(o, buf, len);
}

ssize_t
outer_write_last(struct outer *o, const void *buf, size_t len)
{
	if (o->fr != NULL)
		return outer_frame_write(o, buf, len, true);
	return outer_io_write(o, buf, len);
}

ssize_t
outer_write_inplace(struct outer *o, void *buf, size_t len, bool last)
{
	if (o->fr != NULL)
		return outer_frame_write_inplace(o, buf, len, last);
	return outer_io_write(o, buf, len);
}

/* Sends what the batch queue holds.  0 when all left, -1 with errno
 * EAGAIN (and want_wr set), EPIPE or ECONNRESET. */
static int
outer_wq_flush(struct outer *o)
{
	ssize_t	n;

	while (o->wq_off < o->wq_len) {
		n = send(o->fd, o->wq + o->wq_off, o->wq_len - o->wq_off,
		    MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (outer_errno_retry(errno)) {
				o->want_wr = EPOLLOUT;
				errno = EAGAIN;
			} else if (errno != EPIPE)
				errno = ECONNRESET;
			return -1;
		}
		o->wq_off += (size_t)n;
	}
	o->wq_len = o->wq_off = 0;
	o->wq_ctl = false;
	o->want_wr = 0;
	if (o->wq_cap < OUTER_WQ_CAP) {	/* a sealed record's, alone */
		free(o->wq);
		o->wq = NULL;
		o->wq_cap = 0;
	}
	return 0;
}

static void
outer_wq_free(struct outer *o)
{
	if (o->wq_len > 0)
		return;
	free(o->wq);
	o->wq = NULL;
	o->wq_cap = 0;
}

/* Room for need more bytes in the queue (a sealed record, which may be
 * longer than OUTER_REC_WIRE with a ticket in front of it). */
static int
outer_wq_room(struct outer *o, size_t need)
{
	uint8_t	*p;

	if (o->wq_cap - o->wq_len >= need)
		return 0;
	if ((p = realloc(o->wq, o->wq_len + need)) == NULL)
		return -1;
	o->wq = p;
	o->wq_cap = o->wq_len + need;
	return 0;
}

/*
 * A record OpenSSL hands over on a sealed stream: len bytes of its
 * plaintext (the caller's own for application data), sealed into the
 * queue -- all of it or, on failure, none (never a retry of
 * application data: OpenSSL would repeat it from the caller's buffer,
 * which may have moved since).  A batch's records stay queued for its
 * end; any other (OpenSSL's tickets and alerts, a write of a record)
 * is sent at once, its rest queued for the next write (wq_ctl).
 */
static int
outer_bio_seal(BIO *b, struct outer *o, const char *buf, int len)
{
	size_t	 pad = 0, n = (size_t)len, off = 0, k;
	ssize_t	 w;
	uint8_t	 type;

	if (!o->wq_batch && o->wq_len > 0) {
		BIO_set_retry_write(b);	/* OpenSSL's own, after the queue */
		return -1;
	}
	type = outer_seal_next(o);
	do {	/* a record each (OpenSSL 3.0 hands over one at a time) */
		k = n - off < OUTER_REC_PLAIN ? n - off : OUTER_REC_PLAIN;
		pad = 0;
		if (type == SSL3_RT_APPLICATION_DATA && k < OUTER_REC_PLAIN) {
			pad = outer_pad_len(o, type, k + 1);
			if (pad > OUTER_REC_PLAIN - k)
				pad = OUTER_REC_PLAIN - k;
		}
		if (outer_wq_room(o, outer_seal_size(k, pad)) == -1 ||
		    (w = outer_seal_record(o, type, buf + off, k, pad,
		    o->wq + o->wq_len)) < 0)
			return -1;
		o->wq_len += (size_t)w;
		off += k;
	} while (off < n);
	if (o->wq_batch)
		return len;
	o->wq_ctl = true;
	if (outer_wq_flush(o) == -1 && errno != EAGAIN)
		return -1;
	return len;
}

int
outer_batch_begin(struct outer *o, size_t len)
{
	size_t	cap = OUTER_WQ_CAP;

	/* Sealed: a queue for the records len makes, freed once sent if
	 * that is fewer than a full batch (a short answer's). */
	if (o->seal != NULL && len < OUTER_WQ_RECS * OUTER_REC_PLAIN)
		cap = (len / OUTER_REC_PLAIN + 1) * OUTER_REC_WIRE;
	if (o->wq == NULL) {
		if ((o->wq = malloc(cap)) == NULL)
			return -1;
		o->wq_cap = cap;
	}
	o->wq_batch = true;
	o->wq_ctl = false;	/* the caller's bytes from here on */
	o->wq_ret = 1;
	/* RELEASE_BUFFERS frees OpenSSL's write buffer after each record
	 * and allocates it again for the next (17 KiB): the batch's records
	 * share one, freed at its end.  Sealed, OpenSSL has none. */
	o->wq_release = o->seal == NULL && outer_free_buffers_ok &&
	    (SSL_get_mode(o->ssl) & SSL_MODE_RELEASE_BUFFERS) != 0;
	if (o->wq_release)
		SSL_clear_mode(o->ssl, SSL_MODE_RELEASE_BUFFERS);
	ERR_clear_error();	/* a record written leaves the queue empty */
	return 0;
}

ssize_t
outer_batch_rec(struct outer *o, const void *p, size_t len)
{
	size_t	n;

	if (o->wq_len + OUTER_REC_WIRE > OUTER_WQ_CAP)
		return 0;
	if ((o->wq_ret = SSL_write_ex(o->ssl, p, len, &n)) != 1)
		return -1;
	return (ssize_t)n;
}

ssize_t
outer_batch_end(struct outer *o, size_t plain)
{
	o->wq_batch = false;
	if (o->wq_release) {
		SSL_set_mode(o->ssl, SSL_MODE_RELEASE_BUFFERS);
		/* Refuses while a record is half read or half written: then
		 * the mode frees it once that is done. */
		(void)SSL_free_buffers(o->ssl);
		o->wq_release = false;
	}
	if (plain == 0) {
		if (outer_error(o, o->wq_ret, &o->want_wr, "write") == 0)
			errno = EPIPE;
		return -1;
	}
	/* A failure after some records: the next call reports it. */
	o->wq_plain = plain;
	if (outer_wq_flush(o) == -1)
		return -1;
	return (ssize_t)plain;
}

/*
 * Up to OUTER_WQ_RECS records of buf, encrypted into the queue and sent
 * with one call.  Their bytes count as written once all of it left; a
 * queue that did not leave makes the call EAGAIN, and its repeat (the
 * same bytes, outer.h) sends the rest and returns their count.
 */
static ssize_t
outer_write_batch(struct outer *o, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	size_t	done = 0;
	ssize_t	n;

	if (outer_batch_begin(o, len) == -1)
		return -2;
	while (done < len && (n = outer_batch_rec(o, p + done,
	    len - done)) > 0)
		done += (size_t)n;
	return outer_batch_end(o, done);
}

ssize_t
outer_io_write(struct outer *o, const void *buf, size_t len)
{
	size_t	n;
	ssize_t	w;
	int	r;

	if (o->wq_len > 0) {		/* the repeat of a blocked batch */
		bool ctl = o->wq_ctl;	/* or a record of OpenSSL's */

		if (outer_wq_flush(o) == -1)
			return -1;
		if (!ctl)
			return (ssize_t)o->wq_plain;
	}
	if (o->shut_sent) {
		errno = EPIPE;
		return -1;
	}
	if (len == 0)
		return 0;
	if (o->ssl == NULL)
		return outer_plain_write(o, buf, len);
	/* Sealed, every write is a batch: a record we sealed is sent or
	 * queued as the caller's (repeated on EAGAIN), never left behind
	 * a write that returned. */
	if ((o->seal != NULL || (len > OUTER_REC_PLAIN && o->hs_done)) &&
	    (w = outer_write_batch(o, buf, len)) != -2)
		return w;
	if (o->seal != NULL) {
		errno = ENOMEM;
		return -1;
	}
	ERR_clear_error();
	r = SSL_write_ex(o->ssl, buf, len, &n);
	if (!o->hs_done && SSL_is_init_finished(o->ssl)) {
		o->hs_done = true;
		o->want_hs = 0;
	}
	if (r == 1) {
		o->want_wr = 0;
		return (ssize_t)n;
	}
	if (outer_error(o, r, &o->want_wr, "write") == 0) {
		errno = EPIPE;
		return -1;
	}
	return -1;
}

/*
 * Before authentication a stranger may hold the connection for the whole
 * handshake deadline: no read-ahead and the smallest read buffer OpenSSL
 * takes (one record, ~17 KiB instead of the 64 KiB read-ahead buffer of
 * the context) while lean.  Back to the context's settings (read-ahead
 * on, OUTER_READ_BUF_ACTIVE) when not; the buffer of the new size comes
 * with the next allocation, after the idle release in outer_read().
 */
#define OUTER_READ_BUF_ACTIVE	(64 * 1024)	/* = outer_ctx.c's */

void
outer_set_lean(struct outer *o, bool lean)
{
	if (o == NULL || o->ssl == NULL)
		return;
	SSL_set_read_ahead(o->ssl, lean ? 0 : 1);
	SSL_set_default_read_buffer_len(o->ssl, lean ? 0 :
	    OUTER_READ_BUF_ACTIVE);
}

size_t
outer_pending(const struct outer *o)
{
	int	n = o->ssl != NULL ? SSL_pending(o->ssl) : 0;

	if (o->fr != NULL)
		return outer_frame_pending(o) + (n > 0 ? (size_t)n : 0);
	return n > 0 ? (size_t)n : 0;
}

/*
 * SSL_shutdown() is called until it has written close_notify (it returns
 * 0 or 1) and never again: a further call would wait for, and consume up
 * to, the peer's close_notify, eating application data on the way.  Any
 * outer_write() that returned EAGAIN must have been completed first.
 */
int
outer_shutdown_write(struct outer *o)
{
	int	r;

	if (o->fr != NULL)
		return outer_frame_shutdown(o);
	if (o->wr_closed)
		return 0;
	if (!o->hs_done) {
		if ((r = outer_handshake(o)) == 0)
			errno = EAGAIN;
		if (r != 1)
			return -1;
	}
	if (o->wq_len > 0 && outer_wq_flush(o) == -1) {
		o->want_shut = o->want_wr;
		return -1;
	}
	if (!o->shut_sent && o->ssl != NULL) {
		ERR_clear_error();
		if ((r = SSL_shutdown(o->ssl)) < 0) {
			if (outer_error(o, r, &o->want_shut, "shutdown") == 0)
				errno = EPIPE;
			return -1;
		}
		o->shut_sent = true;
		o->want_shut = 0;
	}
	if (o->wq_len > 0 && outer_wq_flush(o) == -1) {	/* sealed */
		o->want_shut = o->want_wr;
		return -1;
	}
	if (shutdown(o->fd, SHUT_WR) == -1 && errno != ENOTCONN)
		return -1;
	o->wr_closed = true;
	return 0;
}

uint32_t
outer_events(const struct outer *o)
{
	return o->want_hs | o->want_rd | o->want_wr | o->want_shut;
}

static void
outer_release(struct outer *o, bool rst)
{
	/* Marked as shut down so that SSL_free() does not flag the session
	 * (and the tickets it came with) as unresumable: closing a flow is
	 * not a TLS failure. */
	if (o->ssl != NULL)
		SSL_set_shutdown(o->ssl, SSL_SENT_SHUTDOWN |
		    SSL_RECEIVED_SHUTDOWN);
	if (o->ssl != NULL && o->client)
		outer_cache_settle(SSL_get_SSL_CTX(o->ssl));
	SSL_free(o->ssl);
	free(o->wq);
	outer_seal_free(o);
	outer_frame_free(o);
	if (rst)
		sock_close_rst(o->fd);	/* the peer sees an RST, not a FIN */
	else
		close(o->fd);
	free(o->sni);
	free(o);
}

void
outer_abort(struct outer *o)
{
	if (o == NULL)
		return;
	outer_release(o, true);
}

void
outer_free(struct outer *o)
{
	if (o == NULL)
		return;
	outer_release(o, false);
}
