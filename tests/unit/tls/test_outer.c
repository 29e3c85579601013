/*
 * outer: TLS 1.3 streams over socketpairs and loopback TCP, with a CA and
 * certificates generated at test time in a temporary directory.
 *
 * SIGPIPE keeps its default disposition on purpose: outer writes with
 * MSG_NOSIGNAL, and a write to a dead peer must not kill the process.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/epoll.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "core/log.h"
#include "tls/outer.h"
#include "tls/outer_int.h"

#define SNI		"tunsplit.test"
#define BULK		(4u << 20)
#define DEADLINE_MS	20000

static char	 tmpdir[64];
static char	 ca_pem[128], ca2_pem[128], cert_pem[128], key_pem[128];
static char	 empty_pem[128];

/* ---- live OpenSSL heap, to measure per-connection memory --------------- */

static size_t	 heap_live;

struct heap_hdr {
	size_t	 n;
	size_t	 pad;		/* keeps 16-byte alignment */
};

static void *
heap_malloc(size_t n, const char *file, int line)
{
	struct heap_hdr	*h;

	(void)file;
	(void)line;
	if ((h = malloc(sizeof(*h) + n)) == NULL)
		return NULL;
	h->n = n;
	heap_live += n;
	return h + 1;
}

static void
heap_free(void *p, const char *file, int line)
{
	struct heap_hdr	*h;

	(void)file;
	(void)line;
	if (p == NULL)
		return;
	h = (struct heap_hdr *)p - 1;
	heap_live -= h->n;
	free(h);
}

static void *
heap_realloc(void *p, size_t n, const char *file, int line)
{
	struct heap_hdr	*h;
	size_t		 old;

	if (p == NULL)
		return heap_malloc(n, file, line);
	h = (struct heap_hdr *)p - 1;
	old = h->n;
	if ((h = realloc(h, sizeof(*h) + n)) == NULL)
		return NULL;
	h->n = n;
	heap_live = heap_live - old + n;
	return h + 1;
}

/* ---- certificates ----------------------------------------------------- */

static void
add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX	 v3;
	X509_EXTENSION	*ext;

	X509V3_set_ctx(&v3, issuer, cert, NULL, NULL, 0);
	ext = X509V3_EXT_nconf_nid(NULL, &v3, nid, value);
	assert_non_null(ext);
	assert_int_equal(X509_add_ext(cert, ext, -1), 1);
	X509_EXTENSION_free(ext);
}

/* issuer/ikey NULL: self-signed CA. */
static X509 *
make_cert(const char *cn, EVP_PKEY *key, X509 *issuer, EVP_PKEY *ikey,
    long serial)
{
	X509	*x;

	assert_non_null(x = X509_new());
	assert_int_equal(X509_set_version(x, 2), 1);
	assert_int_equal(ASN1_INTEGER_set(X509_get_serialNumber(x), serial), 1);
	assert_non_null(X509_gmtime_adj(X509_getm_notBefore(x), -3600));
	assert_non_null(X509_gmtime_adj(X509_getm_notAfter(x), 86400));
	assert_int_equal(X509_NAME_add_entry_by_txt(X509_get_subject_name(x),
	    "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0), 1);
	assert_int_equal(X509_set_issuer_name(x, issuer != NULL ?
	    X509_get_subject_name(issuer) : X509_get_subject_name(x)), 1);
	assert_int_equal(X509_set_pubkey(x, key), 1);
	if (issuer == NULL) {
		add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE");
		add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign");
		add_ext(x, x, NID_subject_key_identifier, "hash");
	} else {
		add_ext(x, issuer, NID_basic_constraints, "critical,CA:FALSE");
		add_ext(x, issuer, NID_key_usage,
		    "critical,digitalSignature");
		add_ext(x, issuer, NID_ext_key_usage, "serverAuth");
		add_ext(x, issuer, NID_subject_alt_name,
		    "DNS:" SNI ",IP:127.0.0.1");
		add_ext(x, issuer, NID_authority_key_identifier, "keyid");
	}
	assert_true(X509_sign(x, ikey != NULL ? ikey : key, EVP_sha256()) > 0);
	return x;
}

static void
write_pem(const char *path, X509 *cert, EVP_PKEY *key)
{
	FILE	*fp;

	assert_non_null(fp = fopen(path, "w"));
	if (cert != NULL)
		assert_int_equal(PEM_write_X509(fp, cert), 1);
	if (key != NULL)
		assert_int_equal(PEM_write_PrivateKey(fp, key, NULL, NULL, 0,
		    NULL, NULL), 1);
	assert_int_equal(fclose(fp), 0);
}

static int
setup_certs(void **state)
{
	EVP_PKEY	*cakey, *ca2key, *key;
	X509		*ca, *ca2, *cert;

	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_outer.XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	snprintf(ca_pem, sizeof(ca_pem), "%s/ca.pem", tmpdir);
	snprintf(ca2_pem, sizeof(ca2_pem), "%s/ca2.pem", tmpdir);
	snprintf(cert_pem, sizeof(cert_pem), "%s/cert.pem", tmpdir);
	snprintf(key_pem, sizeof(key_pem), "%s/key.pem", tmpdir);
	snprintf(empty_pem, sizeof(empty_pem), "%s/empty.pem", tmpdir);

	assert_non_null(cakey = EVP_EC_gen("P-256"));
	assert_non_null(ca2key = EVP_EC_gen("P-256"));
	assert_non_null(key = EVP_EC_gen("P-256"));
	ca = make_cert("tunsplit test CA", cakey, NULL, NULL, 1);
	ca2 = make_cert("tunsplit other CA", ca2key, NULL, NULL, 1);
	cert = make_cert(SNI, key, ca, cakey, 2);
	write_pem(ca_pem, ca, NULL);
	write_pem(ca2_pem, ca2, NULL);
	write_pem(cert_pem, cert, NULL);
	write_pem(key_pem, NULL, key);
	write_pem(empty_pem, NULL, NULL);
	X509_free(ca);
	X509_free(ca2);
	X509_free(cert);
	EVP_PKEY_free(cakey);
	EVP_PKEY_free(ca2key);
	EVP_PKEY_free(key);
	return 0;
}

static int
teardown_certs(void **state)
{
	const char *const files[] = { ca_pem, ca2_pem, cert_pem, key_pem,
	    empty_pem };
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		unlink(files[i]);
	rmdir(tmpdir);
	return 0;
}

/* ---- plumbing ----------------------------------------------------------*/

static long long
now_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
nonblock(int fd)
{
	int	fl = fcntl(fd, F_GETFL);

	assert_true(fl >= 0);
	assert_int_equal(fcntl(fd, F_SETFL, fl | O_NONBLOCK), 0);
}

/* Connected loopback TCP pair (RST needs TCP; AF_UNIX has none). */
static void
tcp_pair(int fds[2])
{
	struct sockaddr_in	sin;
	socklen_t		slen = sizeof(sin);
	int			l;

	assert_true((l = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(l, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&sin, &slen), 0);
	assert_true((fds[0] = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	assert_int_equal(connect(fds[0], (struct sockaddr *)&sin,
	    sizeof(sin)), 0);
	assert_true((fds[1] = accept(l, NULL, NULL)) >= 0);
	close(l);
}

struct pair {
	struct outer	*c, *s;
};

static void
pair_new(struct pair *p, SSL_CTX *cctx, SSL_CTX *sctx, const char *sni,
    bool tcp)
{
	int	fds[2];

	if (tcp)
		tcp_pair(fds);
	else
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
	nonblock(fds[0]);
	nonblock(fds[1]);
	p->c = outer_new(cctx, fds[0], true, sni);
	p->s = outer_new(sctx, fds[1], false, NULL);
	assert_non_null(p->c);
	assert_non_null(p->s);
	assert_int_equal(outer_fd(p->c), fds[0]);
}

static void
pair_free(struct pair *p)
{
	outer_free(p->c);
	outer_free(p->s);
	p->c = p->s = NULL;
}

static short
poll_events(uint32_t ev)
{
	short	pe = 0;

	if (ev & EPOLLIN)
		pe |= POLLIN;
	if (ev & EPOLLOUT)
		pe |= POLLOUT;
	return pe;
}

/* Waits (bounded) for what the two streams said they are blocked on. */
static void
pair_wait(struct pair *p)
{
	struct pollfd	pfd[2];

	pfd[0].fd = outer_fd(p->c);
	pfd[0].events = poll_events(outer_events(p->c));
	pfd[1].fd = outer_fd(p->s);
	pfd[1].events = poll_events(outer_events(p->s));
	assert_true(poll(pfd, 2, 1000) >= 0);
}

/* Drives both handshakes; returns client and server results. */
static void
pair_handshake(struct pair *p, int *crc, int *src)
{
	long long	deadline = now_ms() + DEADLINE_MS;

	*crc = *src = 0;
	while (*crc == 0 || *src == 0) {
		assert_true(now_ms() < deadline);
		if (*crc == 0) {
			errno = 0;
			*crc = outer_handshake(p->c);
			if (*crc == 0)
				assert_int_equal(errno, EAGAIN);
		}
		if (*src == 0)
			*src = outer_handshake(p->s);
		/* One side failed: the other learns it from the alert or
		 * the close, or never needs to. */
		if (*crc == -1 || *src == -1)
			break;
		if (*crc == 0 || *src == 0)
			pair_wait(p);
	}
}

static void
pair_connect(struct pair *p, SSL_CTX *cctx, SSL_CTX *sctx, bool tcp)
{
	int	crc, src;

	pair_new(p, cctx, sctx, SNI, tcp);
	pair_handshake(p, &crc, &src);
	assert_int_equal(crc, 1);
	assert_int_equal(src, 1);
	assert_true(outer_handshake_done(p->c));
	assert_true(outer_handshake_done(p->s));
	assert_int_equal(outer_handshake(p->c), 1);
}

/* One direction of a transfer. */
struct xfer {
	const uint8_t	*src;
	size_t		 len, sent;
	uint8_t		*dst;
	size_t		 got;
	bool		 eof;
};

static void
xfer_step(struct outer *w, struct outer *r, struct xfer *x, bool shut)
{
	ssize_t	n;
	size_t	chunk;

	while (x->sent < x->len) {
		chunk = x->len - x->sent;
		if (chunk > 100000)
			chunk = 100000;
		if ((n = outer_write(w, x->src + x->sent, chunk)) < 0) {
			assert_int_equal(errno, EAGAIN);
			break;
		}
		assert_true(n > 0 && (size_t)n <= chunk);
		x->sent += (size_t)n;
	}
	if (shut && x->sent == x->len && !x->eof) {
		if (outer_shutdown_write(w) == -1)
			assert_int_equal(errno, EAGAIN);
	}
	while (!x->eof) {
		n = outer_read(r, x->dst + x->got, x->len + 1 - x->got);
		if (n < 0) {
			assert_int_equal(errno, EAGAIN);
			assert_int_equal(outer_pending(r), 0);
			break;
		}
		if (n == 0) {
			x->eof = true;
			break;
		}
		x->got += (size_t)n;
		assert_true(x->got <= x->len);
	}
}

static void
fill(uint8_t *b, size_t n, uint32_t seed)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		seed ^= seed << 13;
		seed ^= seed >> 17;
		seed ^= seed << 5;
		b[i] = (uint8_t)seed;
	}
}

/*
 * Moves a->len bytes client->server and b->len server->client at the same
 * time; with shut, each side half-closes after its last byte and the
 * transfer ends when both saw end of stream.
 */
static void
pair_transfer(struct pair *p, struct xfer *a, struct xfer *b, bool shut)
{
	long long	deadline = now_ms() + DEADLINE_MS;

	for (;;) {
		assert_true(now_ms() < deadline);
		xfer_step(p->c, p->s, a, shut);
		xfer_step(p->s, p->c, b, shut);
		if (shut ? a->eof && b->eof :
		    a->got == a->len && b->got == b->len)
			break;
		pair_wait(p);
	}
	assert_int_equal(a->got, a->len);
	assert_int_equal(b->got, b->len);
	assert_memory_equal(a->src, a->dst, a->len);
	assert_memory_equal(b->src, b->dst, b->len);
}

static void
xfer_init(struct xfer *x, size_t len, uint32_t seed)
{
	uint8_t	*src;

	memset(x, 0, sizeof(*x));
	assert_non_null(src = malloc(len ? len : 1));
	fill(src, len, seed);
	x->src = src;
	x->len = len;
	assert_non_null(x->dst = malloc(len + 1));
}

static void
xfer_free(struct xfer *x)
{
	free((void *)(uintptr_t)x->src);
	free(x->dst);
}

/* Reads until data, EOF or error (bounded); returns outer_read's result. */
static ssize_t
read_wait(struct outer *o, void *buf, size_t len)
{
	long long	 deadline = now_ms() + DEADLINE_MS;
	struct pollfd	 pfd;
	ssize_t		 n;

	for (;;) {
		if ((n = outer_read(o, buf, len)) >= 0 || errno != EAGAIN)
			return n;
		assert_true(now_ms() < deadline);
		pfd.fd = outer_fd(o);
		pfd.events = poll_events(outer_events(o));
		assert_true(pfd.events != 0);
		assert_true(poll(&pfd, 1, 1000) >= 0);
	}
}

static void
write_all(struct outer *o, const void *buf, size_t len)
{
	long long	 deadline = now_ms() + DEADLINE_MS;
	struct pollfd	 pfd;
	size_t		 off = 0;
	ssize_t		 n;

	while (off < len) {
		n = outer_write(o, (const char *)buf + off, len - off);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		assert_int_equal(n, -1);
		assert_int_equal(errno, EAGAIN);
		assert_true(now_ms() < deadline);
		pfd.fd = outer_fd(o);
		pfd.events = poll_events(outer_events(o));
		assert_true(poll(&pfd, 1, 1000) >= 0);
	}
}

/* ---- tests -------------------------------------------------------------*/

struct ctxs {
	SSL_CTX	*c, *s;
};

static int
setup_ctxs(void **state)
{
	struct ctxs	*x;

	assert_non_null(x = calloc(1, sizeof(*x)));
	assert_non_null(x->c = outer_ctx_client(ca_pem, false));
	assert_non_null(x->s = outer_ctx_server(cert_pem, key_pem));
	*state = x;
	return 0;
}

static int
teardown_ctxs(void **state)
{
	struct ctxs	*x = *state;

	outer_ctx_free(x->c);
	outer_ctx_free(x->s);
	free(x);
	return 0;
}

static void
test_bulk_both_ways(void **state)
{
	struct ctxs	*x = *state;
	struct pair	 p;
	struct xfer	 a, b;

	pair_connect(&p, x->c, x->s, false);
	assert_false(outer_session_reused(p.c));
	xfer_init(&a, BULK, 1);
	xfer_init(&b, BULK, 2);
	pair_transfer(&p, &a, &b, false);
	/* and once more with half-closes at the end of each direction */
	xfer_free(&a);
	xfer_free(&b);
	xfer_init(&a, BULK / 4, 3);
	xfer_init(&b, BULK / 2, 4);
	pair_transfer(&p, &a, &b, true);
	xfer_free(&a);
	xfer_free(&b);
	pair_free(&p);
}

/* One side half-closes; the other still writes, then closes too. */
static void
half_close(struct outer *first, struct outer *second)
{
	char	buf[64 * 1024];
	struct xfer back;
	ssize_t	n;
	long long deadline;

	write_all(first, "hello", 5);
	while (outer_shutdown_write(first) == -1) {
		struct pollfd pfd = { .fd = outer_fd(first),
		    .events = poll_events(outer_events(first)) };

		assert_int_equal(errno, EAGAIN);
		assert_true(poll(&pfd, 1, 1000) >= 0);
	}
	assert_int_equal(outer_shutdown_write(first), 0);	/* idempotent */
	errno = 0;
	assert_int_equal(outer_write(first, "x", 1), -1);
	assert_int_equal(errno, EPIPE);

	assert_int_equal(read_wait(second, buf, sizeof(buf)), 5);
	assert_memory_equal(buf, "hello", 5);
	assert_int_equal(read_wait(second, buf, sizeof(buf)), 0);
	assert_int_equal(read_wait(second, buf, sizeof(buf)), 0);

	/* The other direction keeps working: a large reply, then EOF. */
	xfer_init(&back, 1 << 20, 9);
	deadline = now_ms() + DEADLINE_MS;
	while (!back.eof) {
		assert_true(now_ms() < deadline);
		xfer_step(second, first, &back, true);
		if (!back.eof) {
			struct pollfd pfd[2] = {
				{ .fd = outer_fd(second), .events =
				    poll_events(outer_events(second)) },
				{ .fd = outer_fd(first), .events =
				    poll_events(outer_events(first)) },
			};
			assert_true(poll(pfd, 2, 1000) >= 0);
		}
	}
	assert_int_equal(back.got, back.len);
	assert_memory_equal(back.src, back.dst, back.len);
	xfer_free(&back);
	n = outer_read(first, buf, sizeof(buf));
	assert_int_equal(n, 0);
}

static void
test_half_close(void **state)
{
	struct ctxs	*x = *state;
	struct pair	 p;

	pair_connect(&p, x->c, x->s, false);
	half_close(p.c, p.s);
	pair_free(&p);

	pair_connect(&p, x->c, x->s, true);
	half_close(p.s, p.c);
	pair_free(&p);
}

/* Closing without close_notify reads as end of stream, not an error. */
static void
test_eof_without_close_notify(void **state)
{
	struct ctxs	*x = *state;
	struct pair	 p;
	char		 buf[16];

	pair_connect(&p, x->c, x->s, false);
	write_all(p.s, "bye", 3);
	outer_free(p.s);
	/* The data before the FIN arrives; the FIN itself, without
	 * close_notify, is a truncation (a killed peer), never a clean end. */
	assert_int_equal(read_wait(p.c, buf, sizeof(buf)), 3);
	errno = 0;
	assert_int_equal(read_wait(p.c, buf, sizeof(buf)), -1);
	assert_true(errno == EPROTO || errno == ECONNRESET);
	outer_free(p.c);
}

/* Length field of the next TLS record waiting on o's socket. */
static size_t
peek_record_len(struct outer *o)
{
	long long	 deadline = now_ms() + DEADLINE_MS;
	uint8_t		 h[5];
	ssize_t		 n;

	while ((n = recv(outer_fd(o), h, sizeof(h), MSG_PEEK | MSG_DONTWAIT)) <
	    (ssize_t)sizeof(h)) {
		assert_true(now_ms() < deadline);
		usleep(1000);
	}
	assert_int_equal(h[0], 23);		/* application_data */
	return (size_t)(h[3] << 8 | h[4]);
}

/* n bytes (<= 100) -> one record; its length on the wire; the bytes
 * arrive. */
static size_t
send_record_n(struct pair *p, size_t n)
{
	char	 out[100], in[100];
	size_t	 len;

	memset(out, 'p', n);
	write_all(p->c, out, n);
	len = peek_record_len(p->s);
	assert_int_equal(read_wait(p->s, in, n), n);
	assert_memory_equal(in, out, n);
	return len;
}

static size_t
send_record(struct pair *p)
{
	return send_record_n(p, 100);
}

static void
test_record_padding(void **state)
{
	struct ctxs	*x = *state;
	struct pair	 p;
	size_t		 plain = 100 + 1 + 16;	/* + content type + GCM tag */
	size_t		 len;
	int		 i, padded = 0;

	/* Off: the record length gives the app's write size away. */
	pair_connect(&p, x->c, x->s, false);
	for (i = 0; i < 3; i++)
		assert_int_equal(send_record(&p), plain);
	outer_free(p.c);
	outer_free(p.s);

	/* On for 4 records: those carry 1..200 bytes of padding, then the
	 * records are exact again; the data is intact throughout. */
	assert_int_equal(outer_ctx_padding(x->c, 4, 200), 0);
	pair_connect(&p, x->c, x->s, false);
	for (i = 0; i < 4; i++) {
		len = send_record(&p);
		assert_true(len > plain && len <= plain + 200);
		padded++;
	}
	assert_int_equal(send_record(&p), plain);
	assert_int_equal(padded, 4);
	outer_free(p.c);
	outer_free(p.s);

	/* A short record is filled up to max/2 (100) first: 10 bytes and
	 * 90 bytes both come out 100 + 1..200 long (+ the tag), whatever
	 * they held; unpadded, each is exact. */
	assert_int_equal(outer_ctx_padding(x->c, 16, 200), 0);
	pair_connect(&p, x->c, x->s, false);
	for (i = 0; i < 16; i++) {
		len = send_record_n(&p, i % 2 == 0 ? 10 : 90);
		assert_true(len >= 100 + 1 + 16 && len <= 100 + 200 + 16);
	}
	assert_int_equal(send_record_n(&p, 10), 10 + 1 + 16);
	outer_free(p.c);
	outer_free(p.s);
}

/* n bytes (<= 100) from the server -> one record; its length. */
static size_t
send_back_n(struct pair *p, size_t n)
{
	char	 out[100], in[100];
	size_t	 len;

	memset(out, 'q', n);
	write_all(p->s, out, n);
	len = peek_record_len(p->c);
	assert_int_equal(read_wait(p->c, in, n), n);
	assert_memory_equal(in, out, n);
	return len;
}

/*
 * A server stream is nginx's until outer_trust(): no record padding, and a
 * FIN without close_notify is a clean end (no alert); trusted, it pads and
 * reports such a FIN as a truncation.  outer_untls() turns a server stream
 * whose peer does not speak TLS into plain TCP.
 */
static void
test_server_trust(void **state)
{
	struct ctxs	*x = *state;
	struct pair	 p;
	SSL_CTX		*s;
	struct outer	*o;
	size_t		 plain = 100 + 1 + 16, len;
	char		 buf[16];
	int		 i, fds[2];

	assert_non_null(s = outer_ctx_server(cert_pem, key_pem));
	assert_int_equal(outer_ctx_padding(s, 4, 200), 0);
	pair_connect(&p, x->c, s, false);
	/* The client's first read takes the session tickets in too. */
	write_all(p.s, "w", 1);
	assert_int_equal(read_wait(p.c, buf, 1), 1);
	for (i = 0; i < 3; i++)
		assert_int_equal(send_back_n(&p, 100), plain);
	outer_trust(p.s);
	for (i = 0; i < 4; i++) {
		len = send_back_n(&p, 100);
		assert_true(len > plain && len <= plain + 200);
	}
	assert_int_equal(send_back_n(&p, 100), plain);
	pair_free(&p);

	/* Untrusted: the peer's FIN is the end of the stream.  (The client
	 * reads its tickets first: a socket closed with unread bytes would
	 * reset the stream.) */
	pair_connect(&p, x->c, s, false);
	write_all(p.s, "w", 1);
	assert_int_equal(read_wait(p.c, buf, 1), 1);
	write_all(p.c, "bye", 3);
	outer_free(p.c);
	p.c = NULL;
	assert_int_equal(read_wait(p.s, buf, sizeof(buf)), 3);
	assert_int_equal(read_wait(p.s, buf, sizeof(buf)), 0);
	outer_free(p.s);

	/* Trusted: the same FIN is a truncation. */
	pair_connect(&p, x->c, s, false);
	outer_trust(p.s);
	write_all(p.s, "w", 1);
	assert_int_equal(read_wait(p.c, buf, 1), 1);
	write_all(p.c, "bye", 3);
	outer_free(p.c);
	assert_int_equal(read_wait(p.s, buf, sizeof(buf)), 3);
	errno = 0;
	assert_int_equal(read_wait(p.s, buf, sizeof(buf)), -1);
	assert_true(errno == EPROTO || errno == ECONNRESET);
	outer_free(p.s);

	/* Not TLS: plain bytes both ways on the same socket. */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
	nonblock(fds[1]);
	assert_non_null(o = outer_new(s, fds[1], false, NULL));
	assert_int_equal(outer_untls(o), 0);
	assert_true(outer_handshake_done(o));
	assert_int_equal(write(fds[0], "GET /", 5), 5);
	assert_int_equal(read_wait(o, buf, sizeof(buf)), 5);
	assert_memory_equal(buf, "GET /", 5);
	write_all(o, "400", 3);
	assert_int_equal(read(fds[0], buf, sizeof(buf)), 3);
	errno = 0;
	assert_int_equal(outer_untls(o), -1);	/* once only */
	assert_int_equal(errno, EINVAL);
	outer_free(o);
	close(fds[0]);
	assert_int_equal(outer_untls(NULL), -1);
	outer_ctx_free(s);
}

static void
test_abort_is_reset(void **state)
{
	struct ctxs	*x = *state;
	struct pair	 p;
	char		 buf[16];
	int		 i;

	for (i = 0; i < 2; i++) {
		pair_connect(&p, x->c, x->s, true);
		write_all(p.c, "ping", 4);
		assert_int_equal(read_wait(p.s, buf, sizeof(buf)), 4);
		if (i == 0) {
			outer_abort(p.c);
			errno = 0;
			assert_int_equal(read_wait(p.s, buf, sizeof(buf)), -1);
			assert_int_equal(errno, ECONNRESET);
			/* writing into a reset connection: an error, no
			 * SIGPIPE */
			errno = 0;
			assert_int_equal(outer_write(p.s, "x", 1), -1);
			assert_true(errno == EPIPE || errno == ECONNRESET);
			outer_free(p.s);
		} else {
			outer_abort(p.s);
			errno = 0;
			assert_int_equal(read_wait(p.c, buf, sizeof(buf)), -1);
			assert_int_equal(errno, ECONNRESET);
			outer_free(p.c);
		}
	}
	outer_abort(NULL);
	outer_free(NULL);
}

/* Writes into a socket whose peer is gone: EPIPE, and the process lives. */
static void
test_no_sigpipe(void **state)
{
	struct ctxs	*x = *state;
	struct pair	 p;
	char		 big[16384];
	ssize_t		 n;
	int		 i;

	pair_connect(&p, x->c, x->s, false);
	outer_free(p.s);
	memset(big, 'z', sizeof(big));
	for (i = 0; i < 100; i++)
		if ((n = outer_write(p.c, big, sizeof(big))) < 0)
			break;
	assert_int_equal(n, -1);
	assert_true(errno == EPIPE || errno == ECONNRESET);
	outer_free(p.c);
}

static void
test_resumption(void **state)
{
	struct ctxs	*x = *state;
	struct pair	 p;
	SSL_CTX		*fresh;
	char		 buf[16];
	int		 i;

	assert_non_null(fresh = outer_ctx_client(ca_pem, false));
	/* TLS 1.3 tickets come after the handshake: the client only gets
	 * them by reading. */
	for (i = 0; i < 4; i++) {
		pair_connect(&p, fresh, x->s, false);
		if (i == 0)
			assert_false(outer_session_reused(p.c));
		else
			assert_true(outer_session_reused(p.c));
		assert_int_equal(outer_session_reused(p.s),
		    outer_session_reused(p.c));
		write_all(p.s, "hi", 2);
		assert_int_equal(read_wait(p.c, buf, sizeof(buf)), 2);
		pair_free(&p);
	}
	/* Tickets are per server name. */
	pair_new(&p, fresh, x->s, "127.0.0.1", false);
	{
		int crc, src;

		pair_handshake(&p, &crc, &src);
		assert_int_equal(crc, 1);
		assert_false(outer_session_reused(p.c));
	}
	pair_free(&p);
	/* A context whose cache is empty does a full handshake. */
	pair_connect(&p, x->c, x->s, false);
	pair_free(&p);
	outer_ctx_free(fresh);
}

/* Connections from cctx at once (none reads its tickets yet): how many
 * resumed; then each takes in what its server sent, trusted or not. */
static int
resume_at_once(SSL_CTX *cctx, SSL_CTX *sctx, int n, bool trust)
{
	struct pair	 p[4];
	char		 buf[4];
	int		 i, reused = 0;

	for (i = 0; i < n; i++) {
		pair_connect(&p[i], cctx, sctx, false);
		reused += outer_session_reused(p[i].c);
	}
	for (i = 0; i < n; i++) {
		if (trust)
			outer_trust(p[i].s);
		write_all(p[i].s, "t", 1);
		assert_int_equal(read_wait(p[i].c, buf, sizeof(buf)), 1);
		pair_free(&p[i]);
	}
	return reused;
}

/* OpenSSL's server sends two tickets after a full handshake, one after a
 * resumed one; the client uses each once.  Once a resumed peer has
 * authenticated (outer_trust) it gets a second, so that resumptions
 * refill the client's cache; before that, or never trusted (a prober),
 * it gets one, as from nginx. */
static void
test_resumed_ticket_refill(void **state)
{
	struct ctxs	*x = *state;
	SSL_CTX		*c;

	assert_non_null(c = outer_ctx_client(ca_pem, false));
	assert_int_equal(resume_at_once(c, x->s, 1, true), 0);	/* 2 */
	assert_int_equal(resume_at_once(c, x->s, 2, false), 2);	/* 1 + 1 */
	assert_int_equal(resume_at_once(c, x->s, 2, true), 2);	/* 2 + 2 */
	/* Four tickets: four at once resume. */
	assert_int_equal(resume_at_once(c, x->s, 4, false), 4);	/* 4 x 1 */
	/* Untrusted ones brought one each: four again, no more. */
	assert_int_equal(resume_at_once(c, x->s, 4, false), 4);
	outer_ctx_free(c);
	assert_non_null(c = outer_ctx_client(ca_pem, false));
	assert_int_equal(resume_at_once(c, x->s, 1, false), 0);	/* 2 */
	assert_int_equal(resume_at_once(c, x->s, 2, false), 2);	/* 1 + 1 */
	assert_int_equal(resume_at_once(c, x->s, 2, false), 2);	/* 1 + 1 */
	/* Untrusted: two tickets, so of three at once one is full. */
	assert_int_equal(resume_at_once(c, x->s, 3, false), 2);
	outer_ctx_free(c);
}

static void
expect_fail(SSL_CTX *cctx, SSL_CTX *sctx, const char *sni)
{
	struct pair	p;
	int		crc, src;

	pair_new(&p, cctx, sctx, sni, false);
	pair_handshake(&p, &crc, &src);
	assert_int_equal(crc, -1);
	assert_int_equal(errno, EPROTO);
	pair_free(&p);
}

static void
expect_ok(SSL_CTX *cctx, SSL_CTX *sctx, const char *sni)
{
	struct pair	p;
	int		crc, src;

	pair_new(&p, cctx, sctx, sni, false);
	pair_handshake(&p, &crc, &src);
	assert_int_equal(crc, 1);
	assert_int_equal(src, 1);
	pair_free(&p);
}

static void
test_verification(void **state)
{
	struct ctxs	*x = *state;
	SSL_CTX		*other, *insecure, *sys;

	assert_non_null(other = outer_ctx_client(ca2_pem, false));
	assert_non_null(insecure = outer_ctx_client(ca2_pem, true));
	assert_non_null(sys = outer_ctx_client(NULL, false));

	expect_fail(other, x->s, SNI);			/* wrong CA */
	expect_fail(sys, x->s, SNI);		/* no system CA for it */
	expect_fail(x->c, x->s, "other.test");		/* wrong name */
	expect_fail(x->c, x->s, "sub." SNI);
	expect_fail(x->c, x->s, "127.0.0.2");		/* wrong IP */
	expect_ok(x->c, x->s, "127.0.0.1");		/* IP SAN */
	expect_ok(x->c, x->s, "TUNSPLIT.test");		/* case-insensitive */
	expect_ok(insecure, x->s, "anything.example");	/* no verification */

	/* Verifying without a name to verify is refused up front. */
	{
		int	fds[2];

		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
		assert_null(outer_new(x->c, fds[0], true, NULL));
		/* the fd was taken even on failure */
		assert_int_equal(fcntl(fds[0], F_GETFD), -1);
		close(fds[1]);
	}
	outer_ctx_free(other);
	outer_ctx_free(insecure);
	outer_ctx_free(sys);
}

/* A reloaded server context keeps accepting the old context's tickets
 * only when it was given its ticket keys. */
static void
test_share_tickets(void **state)
{
	struct ctxs	*x = *state;
	SSL_CTX		*cctx, *fresh, *shared;
	struct pair	 p;
	char		 buf[8];

	assert_non_null(cctx = outer_ctx_client(ca_pem, false));
	assert_non_null(fresh = outer_ctx_server(cert_pem, key_pem));
	assert_non_null(shared = outer_ctx_server(cert_pem, key_pem));
	assert_int_equal(outer_ctx_share_tickets(shared, x->s), 0);
	assert_int_equal(outer_ctx_share_tickets(NULL, x->s), -1);
	assert_int_equal(outer_ctx_share_tickets(shared, NULL), -1);

	/* A ticket from x->s, then one connection to each new context. */
	pair_connect(&p, cctx, x->s, false);
	write_all(p.s, "hi", 2);
	assert_int_equal(read_wait(p.c, buf, sizeof(buf)), 2);
	pair_free(&p);
	pair_connect(&p, cctx, shared, false);
	assert_true(outer_session_reused(p.c));
	write_all(p.s, "hi", 2);
	assert_int_equal(read_wait(p.c, buf, sizeof(buf)), 2);
	pair_free(&p);
	/* That brought a ticket from shared, which x->s also reads... */
	pair_connect(&p, cctx, x->s, false);
	assert_true(outer_session_reused(p.c));
	write_all(p.s, "hi", 2);
	assert_int_equal(read_wait(p.c, buf, sizeof(buf)), 2);
	pair_free(&p);
	/* ...and one that a context with keys of its own does not. */
	pair_connect(&p, cctx, fresh, false);
	assert_false(outer_session_reused(p.c));
	pair_free(&p);

	outer_ctx_free(cctx);
	outer_ctx_free(fresh);
	outer_ctx_free(shared);
}

/* Public-key pinning, with and without chain verification. */
static void
test_pinning(void **state)
{
	struct ctxs	*x = *state;
	SSL_CTX		*pinned, *bad, *ins_pinned, *ins_bad, *other_ca;
	uint8_t		 pin[32], wrong[32];
	struct pair	 p;
	char		 buf[8];
	int		 i;

	assert_int_equal(outer_pin_from_file(cert_pem, pin), 0);
	memcpy(wrong, pin, sizeof(wrong));
	wrong[31] ^= 1;
	assert_int_equal(outer_pin_from_file(empty_pem, wrong + 0), -1);
	assert_int_equal(outer_pin_from_file("/nonexistent/cert.pem", wrong),
	    -1);
	assert_int_equal(wrong[31], pin[31] ^ 1);	/* untouched */

	assert_non_null(pinned = outer_ctx_client(ca_pem, false));
	assert_non_null(bad = outer_ctx_client(ca_pem, false));
	assert_non_null(ins_pinned = outer_ctx_client(NULL, true));
	assert_non_null(ins_bad = outer_ctx_client(NULL, true));
	assert_non_null(other_ca = outer_ctx_client(ca2_pem, false));
	assert_int_equal(outer_ctx_pin(pinned, pin), 0);
	assert_int_equal(outer_ctx_pin(pinned, pin), -1);	/* once */
	assert_int_equal(outer_ctx_pin(bad, wrong), 0);
	assert_int_equal(outer_ctx_pin(ins_pinned, pin), 0);
	assert_int_equal(outer_ctx_pin(ins_bad, wrong), 0);
	assert_int_equal(outer_ctx_pin(other_ca, pin), 0);
	assert_int_equal(outer_ctx_pin(NULL, pin), -1);

	expect_ok(pinned, x->s, SNI);
	expect_fail(pinned, x->s, "other.test");	/* name still checked */
	expect_fail(bad, x->s, SNI);
	expect_fail(other_ca, x->s, SNI);		/* chain still checked */
	/* Insecure: the pin alone authenticates the server. */
	expect_ok(ins_pinned, x->s, "anything.example");
	expect_fail(ins_bad, x->s, SNI);

	/* Resumed sessions (no certificate sent) come from pinned ones. */
	for (i = 0; i < 3; i++) {
		pair_connect(&p, pinned, x->s, false);
		assert_int_equal(outer_session_reused(p.c), i > 0);
		write_all(p.s, "hi", 2);
		assert_int_equal(read_wait(p.c, buf, sizeof(buf)), 2);
		pair_free(&p);
	}

	outer_ctx_free(pinned);
	outer_ctx_free(bad);
	outer_ctx_free(ins_pinned);
	outer_ctx_free(ins_bad);
	outer_ctx_free(other_ca);
}

/* The server answers non-TLS bytes with a clean protocol error. */
static void
test_garbage_peer(void **state)
{
	struct ctxs	*x = *state;
	static const char req[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	struct outer	*s;
	int		 fds[2], rc;
	long long	 deadline = now_ms() + DEADLINE_MS;
	struct pollfd	 pfd;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
	nonblock(fds[1]);
	assert_non_null(s = outer_new(x->s, fds[1], false, NULL));
	assert_int_equal(send(fds[0], req, sizeof(req) - 1, MSG_NOSIGNAL),
	    (ssize_t)sizeof(req) - 1);
	while ((rc = outer_handshake(s)) == 0) {
		assert_true(now_ms() < deadline);
		pfd.fd = fds[1];
		pfd.events = poll_events(outer_events(s));
		assert_true(poll(&pfd, 1, 1000) >= 0);
	}
	assert_int_equal(rc, -1);
	assert_int_equal(errno, EPROTO);
	outer_free(s);

	/* Peer closes mid-handshake. */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
	nonblock(fds[1]);
	assert_non_null(s = outer_new(x->s, fds[1], false, NULL));
	assert_int_equal(outer_handshake(s), 0);
	assert_int_equal(outer_events(s), EPOLLIN);
	close(fds[0]);
	assert_int_equal(outer_handshake(s), -1);
	assert_true(errno == ECONNRESET || errno == EPROTO);
	outer_free(s);
}

static void
test_bad_contexts(void **state)
{
	char	missing[160];

	(void)state;
	snprintf(missing, sizeof(missing), "%s/missing.pem", tmpdir);
	assert_null(outer_ctx_client(missing, false));
	assert_null(outer_ctx_client(empty_pem, false));
	assert_null(outer_ctx_server(missing, key_pem));
	assert_null(outer_ctx_server(cert_pem, missing));
	assert_null(outer_ctx_server(cert_pem, cert_pem));	/* no key */
	assert_null(outer_ctx_server(ca_pem, key_pem));		/* mismatch */
	assert_null(outer_ctx_server(NULL, key_pem));
	assert_null(outer_new(NULL, -1, true, SNI));
	outer_ctx_free(NULL);
}

/* ALPN as seen by a plain OpenSSL client offering various lists. */
static const char *
alpn_with(SSL_CTX *sctx, const unsigned char *protos, unsigned len,
    char *out, size_t outlen)
{
	SSL_CTX			*cctx;
	SSL			*ssl;
	struct outer		*s;
	const unsigned char	*sel;
	unsigned		 sellen;
	int			 fds[2], rc = 0, src = 0, e;
	long long		 deadline = now_ms() + DEADLINE_MS;

	assert_non_null(cctx = SSL_CTX_new(TLS_client_method()));
	SSL_CTX_set_verify(cctx, SSL_VERIFY_NONE, NULL);
	if (len > 0)
		assert_int_equal(SSL_CTX_set_alpn_protos(cctx, protos, len), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
	nonblock(fds[0]);
	nonblock(fds[1]);
	assert_non_null(ssl = SSL_new(cctx));
	SSL_set_fd(ssl, fds[0]);
	SSL_set_connect_state(ssl);
	assert_non_null(s = outer_new(sctx, fds[1], false, NULL));
	while (rc != 1 || src != 1) {
		assert_true(now_ms() < deadline);
		if (rc != 1) {
			rc = SSL_do_handshake(ssl);
			e = SSL_get_error(ssl, rc);
			assert_true(rc == 1 || e == SSL_ERROR_WANT_READ ||
			    e == SSL_ERROR_WANT_WRITE);
		}
		if (src != 1 && (src = outer_handshake(s)) == -1)
			break;
	}
	if (src == -1) {
		/* The server refused: the client must see alert 120. */
		while ((rc = SSL_do_handshake(ssl)) != 1 &&
		    SSL_get_error(ssl, rc) == SSL_ERROR_WANT_READ)
			assert_true(now_ms() < deadline);
		assert_int_equal(ERR_GET_REASON(ERR_peek_last_error()),
		    SSL_R_TLSV1_ALERT_NO_APPLICATION_PROTOCOL);
		ERR_clear_error();
		snprintf(out, outlen, "alert");
	} else {
		SSL_get0_alpn_selected(ssl, &sel, &sellen);
		snprintf(out, outlen, "%.*s", (int)sellen, sel != NULL ?
		    (const char *)sel : "");
	}
	SSL_free(ssl);
	SSL_CTX_free(cctx);
	close(fds[0]);
	outer_free(s);
	return out;
}

static void
test_alpn(void **state)
{
	struct ctxs	*x = *state;
	char		 buf[32];

	assert_string_equal(alpn_with(x->s,
	    (const unsigned char *)"\x02h2\x08http/1.1", 12, buf, sizeof(buf)),
	    "http/1.1");
	/* nginx without http2: h2 alone, or a protocol it does not know,
	 * is refused with alert 120; http/1.0 is taken. */
	assert_string_equal(alpn_with(x->s, (const unsigned char *)"\x02h2",
	    3, buf, sizeof(buf)), "alert");
	assert_string_equal(alpn_with(x->s,
	    (const unsigned char *)"\x03" "foo", 4, buf, sizeof(buf)), "alert");
	assert_string_equal(alpn_with(x->s,
	    (const unsigned char *)"\x02h2\x08http/1.0", 12, buf, sizeof(buf)),
	    "http/1.0");
	assert_string_equal(alpn_with(x->s, NULL, 0, buf, sizeof(buf)), "");
}

/* A client context's ALPN list can be replaced (the cover-site bridge
 * offers http/1.1 only); an offer the server does not know is refused,
 * as nginx refuses it. */
static void
test_alpn_client(void **state)
{
	struct ctxs	*x = *state;
	struct pair	 p;
	SSL_CTX		*c;
	char		 long_name[300];
	int		 crc, src;

	assert_non_null(c = outer_ctx_client(ca_pem, false));
	assert_int_equal(outer_ctx_alpn(c, ""), -1);
	assert_int_equal(outer_ctx_alpn(c, ","), -1);
	assert_int_equal(outer_ctx_alpn(c, "h2,,http/1.1"), -1);
	assert_int_equal(outer_ctx_alpn(c, "h2,"), -1);
	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	assert_int_equal(outer_ctx_alpn(c, long_name), -1);
	assert_int_equal(outer_ctx_alpn(NULL, "h2"), -1);
	assert_int_equal(outer_ctx_alpn(c, NULL), -1);
	assert_int_equal(outer_ctx_alpn(c, "http/1.1"), 0);
	expect_ok(c, x->s, SNI);
	assert_int_equal(outer_ctx_alpn(c, "h2,http/1.1"), 0);
	expect_ok(c, x->s, SNI);
	assert_int_equal(outer_ctx_alpn(c, "foo"), 0);
	pair_new(&p, c, x->s, SNI, false);
	pair_handshake(&p, &crc, &src);
	assert_int_equal(src, -1);
	pair_free(&p);
	/* Still TLS 1.3 with our server when 1.2 is allowed. */
	assert_int_equal(outer_ctx_alpn(c, "http/1.1"), 0);
	assert_int_equal(outer_ctx_allow_tls12(c), 0);
	expect_ok(c, x->s, SNI);
	assert_int_equal(outer_ctx_allow_tls12(NULL), -1);
	outer_ctx_free(c);
}

/*
 * The client offers TLS 1.0 to 1.3 (curl's ClientHello) or 1.2 and 1.3
 * (browser) for looks, but its outer streams speak TLS 1.3 only: against
 * a server that stops at TLS 1.2 the handshake fails before the client
 * has written anything of its own.  Only a context relaxed for a cover
 * site (outer_ctx_allow_tls12) completes it.
 */
static void
test_tls12_refused(void **state)
{
	struct ctxs	*x = *state;
	SSL_CTX		*s12, *browser, *lax;

	assert_non_null(s12 = outer_ctx_server(cert_pem, key_pem));
	assert_int_equal(SSL_CTX_set_min_proto_version(s12, TLS1_2_VERSION), 1);
	assert_int_equal(SSL_CTX_set_max_proto_version(s12, TLS1_2_VERSION), 1);
	assert_non_null(browser = outer_ctx_client(ca_pem, false));
	assert_int_equal(outer_ctx_fingerprint(browser, OUTER_FP_BROWSER), 0);
	assert_non_null(lax = outer_ctx_client(ca_pem, false));
	assert_int_equal(outer_ctx_allow_tls12(lax), 0);

	expect_fail(x->c, s12, SNI);
	expect_fail(browser, s12, SNI);
	expect_ok(lax, s12, SNI);
	/* With a TLS 1.3 server both profiles work, resumption included. */
	expect_ok(x->c, x->s, SNI);
	expect_ok(browser, x->s, SNI);
	expect_ok(browser, x->s, SNI);
	assert_int_equal(outer_ctx_fingerprint(x->c, OUTER_FP_CURL), 0);
	expect_ok(x->c, x->s, SNI);
	assert_int_equal(outer_ctx_fingerprint(NULL, OUTER_FP_CURL), -1);
	outer_ctx_free(lax);
	outer_ctx_free(browser);
	outer_ctx_free(s12);
}

/*
 * Memory per idle stream, counted through OpenSSL's allocator hooks (the
 * socket and struct outer excluded): after the handshake, some I/O and a
 * read that found nothing -- the state every idle flow sits in.  The
 * figures are printed for the record; the bound catches a regression to
 * unreleased 17 KiB record buffers.
 */
static void
test_idle_memory(void **state)
{
	struct ctxs	*x = *state;
	enum { N = 32 };
	struct pair	 p[N];
	SSL_CTX		*cctx, *sctx;
	size_t		 base, before, after_hs, idle, cli;
	char		 buf[4096];
	int		 i;

	memset(buf, 'm', sizeof(buf));
	/* warm-up: OpenSSL's lazily initialised global state */
	pair_connect(&p[0], x->c, x->s, false);
	write_all(p[0].s, "t", 1);
	assert_int_equal(read_wait(p[0].c, buf, sizeof(buf)), 1);
	pair_free(&p[0]);

	base = heap_live;
	assert_non_null(cctx = outer_ctx_client(ca_pem, false));
	assert_non_null(sctx = outer_ctx_server(cert_pem, key_pem));
	pair_connect(&p[0], cctx, sctx, false);
	pair_free(&p[0]);
	before = heap_live;
	for (i = 0; i < N; i++)
		pair_connect(&p[i], cctx, sctx, false);
	after_hs = heap_live;
	for (i = 0; i < N; i++) {
		write_all(p[i].c, buf, sizeof(buf));
		assert_true(read_wait(p[i].s, buf, sizeof(buf)) > 0);
		write_all(p[i].s, buf, 100);
		assert_true(read_wait(p[i].c, buf, sizeof(buf)) > 0);
		assert_int_equal(outer_read(p[i].c, buf, sizeof(buf)), -1);
		assert_int_equal(errno, EAGAIN);
		assert_int_equal(outer_read(p[i].s, buf, sizeof(buf)), -1);
		assert_int_equal(errno, EAGAIN);
	}
	idle = heap_live;
	for (i = 0; i < N; i++) {
		outer_free(p[i].c);
		p[i].c = NULL;
	}
	cli = idle - heap_live;
	for (i = 0; i < N; i++)
		pair_free(&p[i]);
	print_message("memory per stream: after handshake %zu bytes per "
	    "pair; idle after I/O: client %zu, server %zu bytes; "
	    "client ticket cache %zu bytes\n",
	    (after_hs - before) / N, cli / N, (idle - before - cli) / N,
	    heap_live - before);
	/* 32.1 KiB a pair, what freeing the client's stream gives back
	 * 12.1 KiB (2026-12-02, OpenSSL 3.0; requested sizes, so a
	 * sanitizer's allocator counts the same): margins a library update
	 * stays within and unreleased record buffers (17 KiB) do not. */
	assert_true((idle - before) / N < 34 * 1024);
	assert_true(cli / N < 13 * 1024);
	/* Only the bounded ticket cache outlives the streams (64 tickets,
	 * ~3.3 KiB each here: every one came from a full handshake and
	 * holds its own parsed certificate)... */
	assert_true(heap_live - before < 64 * 4096);
	/* ...and it goes with its context: nothing leaks. */
	outer_ctx_free(cctx);
	outer_ctx_free(sctx);
	assert_int_equal(heap_live, base);
}

/*
 * A server stream seals its records itself where OpenSSL 3.0/3.1 hands
 * it the write key (outer_seal.c): the client reads them as it would
 * OpenSSL's -- bulk both ways, half-closes with close_notify, small
 * writes -- and a KeyUpdate the client asks for fails the server's next
 * write rather than letting it write with a key the client lacks.
 */
static void
test_sealed_server(void **state)
{
	struct ctxs	*x = *state;
	struct pair	 p;
	struct xfer	 a, b;
	char		 buf[64];
	int		 i, k, crc, src;

	if (!outer_seal_supported())
		skip();
	pair_connect(&p, x->c, x->s, false);
	assert_non_null(p.s->seal);
	assert_null(p.c->seal);
	for (i = 0; i < 3; i++) {
		write_all(p.s, "small", 5);
		assert_int_equal(read_wait(p.c, buf, sizeof(buf)), 5);
		assert_memory_equal(buf, "small", 5);
	}
	xfer_init(&a, BULK / 4, 7);
	xfer_init(&b, BULK, 8);
	pair_transfer(&p, &a, &b, true);
	xfer_free(&a);
	xfer_free(&b);
	pair_free(&p);

	/* KeyUpdates: the client's, asking for ours (twice: the second
	 * key derives from the first), then one of our own; each time the
	 * client reads what follows with the key it expects, and so do
	 * bulk transfers after them.  With AES-256-GCM (the server's
	 * choice) and AES-128-GCM (a client offering only that). */
	for (i = 0; i < 2; i++) {
		pair_new(&p, x->c, x->s, SNI, false);
		if (i == 1)
			assert_int_equal(SSL_set_ciphersuites(p.c->ssl,
			    "TLS_AES_128_GCM_SHA256"), 1);
		pair_handshake(&p, &crc, &src);
		assert_int_equal(crc, 1);
		assert_int_equal(src, 1);
		assert_string_equal(SSL_get_cipher_name(p.s->ssl), i == 0 ?
		    "TLS_AES_256_GCM_SHA384" : "TLS_AES_128_GCM_SHA256");
		assert_non_null(p.s->seal);
		assert_true(outer_seal_follows(p.s));
		write_all(p.s, "before", 6);
		assert_int_equal(read_wait(p.c, buf, sizeof(buf)), 6);
		for (k = 0; k < 3; k++) {
			if (k < 2)
				assert_int_equal(SSL_key_update(p.c->ssl,
				    SSL_KEY_UPDATE_REQUESTED), 1);
			else
				assert_int_equal(SSL_key_update(p.s->ssl,
				    SSL_KEY_UPDATE_NOT_REQUESTED), 1);
			write_all(p.c, "ku", 2);
			assert_int_equal(read_wait(p.s, buf, sizeof(buf)), 2);
			assert_memory_equal(buf, "ku", 2);
			write_all(p.s, "after", 5);
			assert_int_equal(read_wait(p.c, buf, sizeof(buf)), 5);
			assert_memory_equal(buf, "after", 5);
		}
		xfer_init(&a, BULK / 8, 9);
		xfer_init(&b, BULK / 2, 10);
		pair_transfer(&p, &a, &b, false);
		xfer_free(&a);
		xfer_free(&b);
		pair_free(&p);
	}
}

/*
 * No context: plain TCP behind the same interface (the socks5 and direct
 * outbounds).  Bulk both ways with and without half-closes, the
 * half-close contract, a FIN as the end of the stream, abort as RST,
 * EAGAIN with the event to wait for, nothing ever pending.
 */
static void
test_plain(void **state)
{
	struct pair	 p;
	struct xfer	 a, b;
	char		 buf[16];

	(void)state;
	pair_new(&p, NULL, NULL, NULL, true);
	assert_int_equal(outer_handshake(p.c), 1);
	assert_true(outer_handshake_done(p.s));
	assert_false(outer_session_reused(p.c));
	errno = 0;
	assert_int_equal(outer_read(p.c, buf, sizeof(buf)), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(outer_events(p.c), EPOLLIN);
	assert_int_equal(outer_pending(p.c), 0);
	xfer_init(&a, BULK, 5);
	xfer_init(&b, BULK, 6);
	pair_transfer(&p, &a, &b, false);
	assert_int_equal(outer_events(p.c) & EPOLLOUT, 0);
	xfer_free(&a);
	xfer_free(&b);
	xfer_init(&a, BULK / 2, 7);
	xfer_init(&b, BULK / 4, 8);
	pair_transfer(&p, &a, &b, true);
	xfer_free(&a);
	xfer_free(&b);
	pair_free(&p);

	pair_new(&p, NULL, NULL, NULL, true);
	half_close(p.s, p.c);
	pair_free(&p);

	/* A FIN is the end of a plain stream (there is no close_notify). */
	pair_new(&p, NULL, NULL, NULL, true);
	write_all(p.s, "bye", 3);
	outer_free(p.s);
	assert_int_equal(read_wait(p.c, buf, sizeof(buf)), 3);
	assert_int_equal(read_wait(p.c, buf, sizeof(buf)), 0);
	outer_free(p.c);

	pair_new(&p, NULL, NULL, NULL, true);
	write_all(p.c, "ping", 4);
	assert_int_equal(read_wait(p.s, buf, sizeof(buf)), 4);
	outer_abort(p.c);
	errno = 0;
	assert_int_equal(read_wait(p.s, buf, sizeof(buf)), -1);
	assert_int_equal(errno, ECONNRESET);
	errno = 0;
	assert_int_equal(outer_write(p.s, "x", 1), -1);
	assert_true(errno == EPIPE || errno == ECONNRESET);
	outer_free(p.s);

	/* No fd: refused, as with a context. */
	assert_null(outer_new(NULL, -1, true, NULL));
}

/* ---- flow framing (outer_frame_*) ------------------------------------- */

/*
 * Two flows on one TLS connection, as the native protocol's version 3
 * runs them: the client's header and the server's status pass raw, the
 * rest is framed; each side's half-close is the end marker, after which
 * reads return 0 without consuming; the server's offer crosses between
 * the flows.  The exporter with the flow's index as context is the same
 * on both ends and differs per index and from the one without context.
 */
static void
test_frame_tls(void **state)
{
	struct ctxs	*x = *state;
	struct pair	 p;
	struct xfer	 a, b;
	uint8_t		 e0c[32], e0s[32], e1c[32], e1s[32], e[32];
	uint8_t		 buf[64], ctx0[4] = { 0, 0, 0, 0 }, ctx1[4] = { 0, 0, 0, 1 };
	ssize_t		 n;
	size_t		 got;
	int		 flow;

	pair_connect(&p, x->c, x->s, false);
	assert_int_equal(outer_export_ctx(p.c, "EXPORTER-t", ctx0, 4, e0c, 32), 0);
	assert_int_equal(outer_export_ctx(p.s, "EXPORTER-t", ctx0, 4, e0s, 32), 0);
	assert_int_equal(outer_export_ctx(p.c, "EXPORTER-t", ctx1, 4, e1c, 32), 0);
	assert_int_equal(outer_export_ctx(p.s, "EXPORTER-t", ctx1, 4, e1s, 32), 0);
	assert_int_equal(outer_export(p.c, "EXPORTER-t", e, 32), 0);
	assert_memory_equal(e0c, e0s, 32);
	assert_memory_equal(e1c, e1s, 32);
	assert_memory_not_equal(e0c, e1c, 32);
	assert_memory_not_equal(e0c, e, 32);

	for (flow = 1; flow <= 2; flow++) {
		assert_false(outer_framed(p.c));
		assert_int_equal(outer_frame_begin(p.c, 3, 1, NULL, 0), 0);
		assert_int_equal(outer_flows(p.c), (unsigned)flow);
		write_all(p.c, "HDRearly", 8);
		/* The server reads the header raw, with what followed it. */
		got = 0;
		while (got < 3 + 2 + 5) {
			n = read_wait(p.s, buf + got, sizeof(buf) - got);
			assert_true(n > 0);
			got += (size_t)n;
		}
		assert_int_equal(got, 10);
		assert_memory_equal(buf, "HDR\x00\x05" "early", 10);
		assert_int_equal(outer_frame_begin(p.s, 1, 0, buf + 3, 7), 0);
		assert_true(outer_pending(p.s) >= 7);
		assert_int_equal(read_wait(p.s, buf, sizeof(buf)), 5);
		assert_memory_equal(buf, "early", 5);
		write_all(p.s, "Sok", 3);		/* status, then a chunk */
		assert_int_equal(read_wait(p.c, buf, 1), 1);
		assert_int_equal(buf[0], 'S');
		assert_int_equal(read_wait(p.c, buf, sizeof(buf)), 2);
		assert_memory_equal(buf, "ok", 2);
		xfer_init(&a, BULK / 8, 20 + (uint32_t)flow);
		xfer_init(&b, BULK / 4, 30 + (uint32_t)flow);
		pair_transfer(&p, &a, &b, true);
		xfer_free(&a);
		xfer_free(&b);
		assert_true(outer_frame_idle(p.c));
		assert_true(outer_frame_idle(p.s));
		assert_int_equal(outer_read(p.c, buf, sizeof(buf)), 0);
		assert_int_equal(outer_read(p.s, buf, sizeof(buf)), 0);
		errno = 0;
		assert_int_equal(outer_write(p.c, "x", 1), -1);
		assert_int_equal(errno, EPIPE);
		outer_frame_end(p.c);
		outer_frame_end(p.s);
		write_all(p.s, "\xff\xff", 2);		/* the offer */
		assert_int_equal(read_wait(p.c, buf, sizeof(buf)), 2);
		assert_memory_equal(buf, "\xff\xff", 2);
	}
	pair_free(&p);
}

static void
plain_pair(struct pair *p)
{
	pair_new(p, NULL, NULL, NULL, false);
}

/* Reads raw (framing off) until n bytes came. */
static void
read_exact(struct outer *o, uint8_t *buf, size_t n)
{
	size_t	got = 0;
	ssize_t	r;

	while (got < n) {
		r = read_wait(o, buf + got, n - got);
		assert_true(r > 0);
		got += (size_t)r;
	}
}

/* A stream whose framed bytes (early, then sent by the peer, which
 * then closes) read as first bytes of data (0: none), then EPROTO. */
static void
frame_eproto(const void *early, size_t en, const void *sent, size_t sn,
    ssize_t first)
{
	struct pair	 p;
	uint8_t		 buf[64];

	plain_pair(&p);
	assert_int_equal(outer_frame_begin(p.s, 0, 0, early, en), 0);
	if (sn > 0)
		write_all(p.c, sent, sn);
	outer_free(p.c);
	if (first > 0)
		assert_int_equal(read_wait(p.s, buf, sizeof(buf)), first);
	errno = 0;
	assert_int_equal(read_wait(p.s, buf, sizeof(buf)), -1);
	assert_int_equal(errno, EPROTO);
	outer_free(p.s);
}

/*
 * The reader's errors: a stream that ends inside a chunk, before the end
 * marker, or with a chunk length over OUTER_CHUNK_MAX is EPROTO; bytes
 * after the end marker stay unread until framing is off.  The writer: a
 * raw prefix and a chunk leave in one write; a write that blocked
 * returns, when repeated, the count of what it had staged.
 */
static void
test_frame_errors(void **state)
{
	struct pair	 p;
	uint8_t		 buf[70000], big[20000];
	ssize_t		 n, k;
	size_t		 drained;
	int		 sz = 4096;

	(void)state;
	frame_eproto(NULL, 0, "\x00\x05" "ab", 4, 2);	/* inside a chunk */
	/* at a boundary with no end marker; half a length; over the limit */
	frame_eproto("\x00\x01z", 3, NULL, 0, 1);
	frame_eproto("\x00\x01z\x00", 4, NULL, 0, 1);
	frame_eproto(NULL, 0, "\x3f\xff", 2, 0);

	/* after the end marker */
	plain_pair(&p);
	assert_int_equal(outer_frame_begin(p.s, 0, 0, NULL, 0), 0);
	write_all(p.c, "\x00\x02hi\x00\x00more", 10);
	assert_int_equal(read_wait(p.s, buf, sizeof(buf)), 2);
	assert_int_equal(outer_read(p.s, buf, sizeof(buf)), 0);
	assert_int_equal(outer_read(p.s, buf, sizeof(buf)), 0);
	assert_true(outer_frame_idle(p.s) == false);	/* nothing sent */
	assert_int_equal(outer_shutdown_write(p.s), 0);
	assert_true(outer_frame_idle(p.s));
	read_exact(p.c, buf, 2);
	assert_memory_equal(buf, "\x00\x00", 2);
	outer_frame_end(p.s);
	read_exact(p.s, buf, 4);
	assert_memory_equal(buf, "more", 4);
	outer_free(p.c);
	outer_free(p.s);

	/* raw prefix and chunk in one write; a blocked write repeated */
	plain_pair(&p);
	assert_int_equal(setsockopt(outer_fd(p.c), SOL_SOCKET, SO_SNDBUF, &sz,
	    sizeof(sz)), 0);
	assert_int_equal(outer_frame_begin(p.c, 3, 0, NULL, 0), 0);
	assert_int_equal(outer_write(p.c, "HDRxyz", 6), 6);
	read_exact(p.s, buf, 8);
	assert_memory_equal(buf, "HDR\x00\x03xyz", 8);
	memset(big, 'b', sizeof(big));
	while ((n = outer_write(p.c, big, sizeof(big))) > 0)
		assert_true(n <= OUTER_WRITE_CHUNKS * OUTER_CHUNK_MAX);
	assert_int_equal(errno, EAGAIN);
	assert_true(outer_events(p.c) & EPOLLOUT);
	drained = 0;
	do {	/* the repeats finish what was staged, then say how much */
		while ((k = outer_read(p.s, buf, sizeof(buf))) > 0)
			drained += (size_t)k;
		n = outer_write(p.c, big, sizeof(big));
		assert_true(n > 0 || errno == EAGAIN);
	} while (n < 0);
	assert_true(drained > 0);
	assert_true(n > 0 && n <= OUTER_WRITE_CHUNKS * OUTER_CHUNK_MAX);
	assert_int_equal(outer_shutdown_write(p.c), 0);
	outer_free(p.c);
	outer_free(p.s);
}

/* Framing off on both: nothing but a byte written now is left from w to
 * r (nothing else was sent); the pair is freed. */
static void
nothing_else(struct pair *p, struct outer *w, struct outer *r)
{
	uint8_t	 b;

	write_all(w, "Z", 1);
	read_exact(r, &b, 1);
	assert_int_equal(b, 'Z');
	outer_free(p->c);
	outer_free(p->s);
}

/*
 * outer_write_last(): the end marker leaves with the last chunk when all
 * of it fits (in its record, no 2-byte marker record of its own), and
 * outer_shutdown_write() then sends nothing; bytes that take more than
 * one write, or whose last chunk fills its record, go without it, and
 * the shutdown sends the marker.
 */
#define BIG_CHUNKS	(OUTER_WRITE_CHUNKS * OUTER_CHUNK_MAX)
static ssize_t
write_last_all(struct outer *o, const void *buf, size_t len)
{
	ssize_t	n;

	while ((n = outer_write_last(o, buf, len)) < 0) {
		struct pollfd pfd = { .fd = outer_fd(o),
		    .events = poll_events(outer_events(o)) };

		assert_int_equal(errno, EAGAIN);
		assert_true(poll(&pfd, 1, 1000) >= 0);
	}
	return n;
}

static void
test_frame_write_last(void **state)
{
	struct pair	 p;
	static uint8_t	 big[BIG_CHUNKS + 10];
	uint8_t		 buf[16];
	ssize_t		 n;
	size_t		 i;

	(void)state;
	plain_pair(&p);
	assert_int_equal(outer_frame_begin(p.c, 1, 0, NULL, 0), 0);
	assert_int_equal(outer_write_last(p.c, "Sabc", 4), 4);
	assert_int_equal(outer_shutdown_write(p.c), 0);
	errno = 0;
	assert_int_equal(outer_write(p.c, "x", 1), -1);
	assert_int_equal(errno, EPIPE);
	read_exact(p.s, buf, 8);
	assert_memory_equal(buf, "S\x00\x03" "abc\x00\x00", 8);
	outer_frame_end(p.c);
	nothing_else(&p, p.c, p.s);

	/* more than one write's chunks: the marker comes with the rest */
	plain_pair(&p);
	assert_int_equal(outer_frame_begin(p.c, 0, 0, NULL, 0), 0);
	memset(big, 'b', sizeof(big));
	n = write_last_all(p.c, big, sizeof(big));
	assert_int_equal(n, BIG_CHUNKS);
	assert_int_equal(outer_write_last(p.c, big, 10), 10);
	assert_int_equal(outer_shutdown_write(p.c), 0);
	for (i = 0; i < OUTER_WRITE_CHUNKS; i++) {
		read_exact(p.s, big, 2 + OUTER_CHUNK_MAX);
		assert_int_equal(big[0] << 8 | big[1], OUTER_CHUNK_MAX);
	}
	read_exact(p.s, buf, 14);
	assert_memory_equal(buf, "\x00\x0a" "bbbbbbbbbb\x00\x00", 14);
	outer_free(p.c);
	outer_free(p.s);

	/* a last chunk that fills its record: the marker goes on its own */
	plain_pair(&p);
	assert_int_equal(outer_frame_begin(p.c, 0, 0, NULL, 0), 0);
	assert_int_equal(write_last_all(p.c, big, 2 * OUTER_CHUNK_MAX),
	    2 * OUTER_CHUNK_MAX);
	assert_false(outer_frame_idle(p.c));
	errno = 0;
	assert_int_equal(outer_shutdown_write(p.c), 0);
	read_exact(p.s, big, 2 * (2 + OUTER_CHUNK_MAX) + 2);
	assert_int_equal(big[2 + OUTER_CHUNK_MAX] << 8 |
	    big[3 + OUTER_CHUNK_MAX], OUTER_CHUNK_MAX);
	assert_memory_equal(big + 2 * (2 + OUTER_CHUNK_MAX), "\x00\x00", 2);
	outer_free(p.c);
	outer_free(p.s);
}

/* The records of 3 * OUTER_CHUNK_MAX + 100 framed bytes, read raw from
 * s's socket: a chunk each, unpadded, and nothing more. */
static void
expect_three_chunks_and_100(struct outer *s)
{
	uint8_t		 wire[4 * (5 + 2 + OUTER_CHUNK_MAX + 1 + 16)], *h;
	size_t		 i, want, got = 0;
	long long	 deadline = now_ms() + DEADLINE_MS;
	ssize_t		 n;

	want = 3 * (5 + 2 + OUTER_CHUNK_MAX + 1 + 16) + 5 + 2 + 100 + 1 + 16;
	while (got < want) {
		n = recv(outer_fd(s), wire + got, sizeof(wire) - got,
		    MSG_DONTWAIT);
		if (n < 0) {
			assert_int_equal(errno, EAGAIN);
			assert_true(now_ms() < deadline);
			usleep(1000);
			continue;
		}
		assert_true(n > 0);
		got += (size_t)n;
	}
	assert_int_equal(got, want);
	for (h = wire, i = 0; i < 4; i++) {
		assert_int_equal(h[0], 23);
		assert_int_equal(h[3] << 8 | h[4], i < 3 ?
		    2 + OUTER_CHUNK_MAX + 1 + 16 : 2 + 100 + 1 + 16);
		h += 5 + (h[3] << 8 | h[4]);
	}
}

/*
 * A framed write over TLS of more than a chunk: up to OUTER_WRITE_CHUNKS
 * chunks, each one full record on the wire (the shape of one chunk per
 * record stays), sent together.  (Their bytes: test_bulk_both_ways.)
 */
static void
test_frame_tls_batch(void **state)
{
	struct ctxs	*x = *state;
	struct pair	 p;
	static uint8_t	 out[3 * OUTER_CHUNK_MAX + 100];

	pair_connect(&p, x->c, x->s, false);
	/* the client's first read takes the session tickets in */
	write_all(p.s, "w", 1);
	assert_int_equal(read_wait(p.c, out, 1), 1);
	assert_int_equal(outer_frame_begin(p.c, 0, 0, NULL, 0), 0);
	memset(out, 'o', sizeof(out));
	assert_int_equal(outer_write(p.c, out, sizeof(out)), sizeof(out));
	expect_three_chunks_and_100(p.s);
	pair_free(&p);
}

/*
 * outer_write_inplace() on a framed TLS flow: the records on the wire are
 * those of outer_write() (a chunk each, sent together), the bytes and the
 * headroom are as they were after every call, and a peer reading the
 * flow gets the bytes exactly, also across writes that block and are
 * repeated (a reader slower than the writer).
 */
#define INPLACE_LEN	(3 * OUTER_CHUNK_MAX + 100)
#define INPLACE_BULK	(4 << 20)
static void
test_frame_tls_inplace(void **state)
{
	struct ctxs	*x = *state;
	struct pair	 p;
	static uint8_t	 mem[OUTER_HEADROOM + INPLACE_LEN], ref[sizeof(mem)];
	static uint8_t	 in[64 * 1024];
	uint8_t		*buf = mem + OUTER_HEADROOM;
	size_t		 i, got = 0, off = 0, k, blocked = 0;
	long long	 deadline = now_ms() + DEADLINE_MS;
	ssize_t		 n;

	pair_connect(&p, x->c, x->s, false);
	write_all(p.s, "w", 1);
	assert_int_equal(read_wait(p.c, in, 1), 1);
	assert_int_equal(outer_frame_begin(p.c, 0, 0, NULL, 0), 0);
	for (i = 0; i < sizeof(mem); i++)
		mem[i] = (uint8_t)(i * 7 + (i >> 8));
	memcpy(ref, mem, sizeof(mem));
	assert_int_equal(outer_write_inplace(p.c, buf, INPLACE_LEN, false),
	    INPLACE_LEN);
	assert_memory_equal(mem, ref, sizeof(mem));
	expect_three_chunks_and_100(p.s);
	pair_free(&p);

	/* many of them, read back through the framing */
	pair_connect(&p, x->c, x->s, false);
	write_all(p.s, "w", 1);
	assert_int_equal(read_wait(p.c, in, 1), 1);
	assert_int_equal(outer_frame_begin(p.c, 0, 0, NULL, 0), 0);
	assert_int_equal(outer_frame_begin(p.s, 0, 0, NULL, 0), 0);
	while (got < INPLACE_BULK) {
		assert_true(now_ms() < deadline);
		if (off < INPLACE_BULK) {
			k = INPLACE_BULK - off < INPLACE_LEN ?
			    INPLACE_BULK - off : INPLACE_LEN;
			for (i = 0; i < k; i++)
				buf[i] = (uint8_t)((off + i) * 13 +
				    ((off + i) >> 12));
			memcpy(ref, mem, sizeof(mem));
			n = outer_write_inplace(p.c, buf, k, false);
			assert_memory_equal(mem, ref, sizeof(mem));
			if (n > 0)
				off += (size_t)n;
			else {
				assert_int_equal(errno, EAGAIN);
				blocked++;
			}
		}
		n = outer_read(p.s, in, 4096);	/* slower than the writer */
		if (n < 0) {
			struct pollfd pfd[2] = {
				{ .fd = outer_fd(p.s), .events = POLLIN },
				{ .fd = outer_fd(p.c), .events =
				    poll_events(outer_events(p.c)) },
			};

			assert_int_equal(errno, EAGAIN);
			assert_true(poll(pfd, 2, 1000) >= 0);
			continue;
		}
		assert_true(n > 0);
		for (i = 0; i < (size_t)n; i++)
			assert_int_equal(in[i], (uint8_t)((got + i) * 13 +
			    ((got + i) >> 12)));
		got += (size_t)n;
	}
	assert_int_equal(off, INPLACE_BULK);
	assert_true(blocked > 0);
	pair_free(&p);
}

/*
 * outer_frame_offer() (the server's): the offer's two bytes ride right
 * behind the end marker, in its record, whether the marker leaves with
 * the last chunk or on its own; the reader gets 0 at the marker, and
 * the offer raw once framing is off.
 */
static void
test_frame_offer(void **state)
{
	struct pair	 p;
	uint8_t		 buf[16];
	int		 i;

	(void)state;
	for (i = 0; i < 2; i++) {
		plain_pair(&p);
		assert_int_equal(outer_frame_begin(p.s, 1, 0, NULL, 0), 0);
		assert_int_equal(outer_frame_begin(p.c, 0, 1, NULL, 0), 0);
		outer_frame_offer(p.s);
		assert_false(outer_frame_offered(p.s));
		if (i == 0)
			assert_int_equal(outer_write_last(p.s, "Sabc", 4), 4);
		else
			assert_int_equal(outer_write(p.s, "Sabc", 4), 4);
		assert_int_equal(outer_shutdown_write(p.s), 0);
		assert_true(outer_frame_offered(p.s));
		assert_int_equal(read_wait(p.c, buf, sizeof(buf)), 1);
		assert_int_equal(buf[0], 'S');
		assert_int_equal(read_wait(p.c, buf, sizeof(buf)), 3);
		assert_memory_equal(buf, "abc", 3);
		assert_int_equal(read_wait(p.c, buf, sizeof(buf)), 0);
		outer_frame_end(p.c);
		read_exact(p.c, buf, 2);
		assert_int_equal(buf[0] << 8 | buf[1], OUTER_FRAME_OFFER);
		outer_frame_end(p.s);
		assert_false(outer_frame_offered(p.s));
		outer_free(p.c);
		outer_free(p.s);
	}
	/* The client's marker came first: no offer with ours (it waits
	 * for the flow's end, so that bytes the client sent past its
	 * marker before any offer are seen). */
	plain_pair(&p);
	assert_int_equal(outer_frame_begin(p.s, 0, 0, NULL, 0), 0);
	assert_int_equal(outer_frame_begin(p.c, 0, 0, NULL, 0), 0);
	outer_frame_offer(p.s);
	assert_int_equal(outer_shutdown_write(p.c), 0);
	assert_int_equal(read_wait(p.s, buf, sizeof(buf)), 0);
	assert_int_equal(outer_shutdown_write(p.s), 0);
	assert_false(outer_frame_offered(p.s));
	assert_int_equal(read_wait(p.c, buf, sizeof(buf)), 0);
	outer_frame_end(p.c);
	outer_frame_end(p.s);
	nothing_else(&p, p.s, p.c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_contexts),
		cmocka_unit_test_setup_teardown(test_bulk_both_ways,
		    setup_ctxs, teardown_ctxs),
		cmocka_unit_test_setup_teardown(test_half_close,
		    setup_ctxs, teardown_ctxs),
		cmocka_unit_test_setup_teardown(test_eof_without_close_notify,
		    setup_ctxs, teardown_ctxs),
		cmocka_unit_test_setup_teardown(test_record_padding,
		    setup_ctxs, teardown_ctxs),
		cmocka_unit_test_setup_teardown(test_server_trust,
		    setup_ctxs, teardown_ctxs),
		cmocka_unit_test_setup_teardown(test_abort_is_reset,
		    setup_ctxs, teardown_ctxs),
		cmocka_unit_test_setup_teardown(test_no_sigpipe,
		    setup_ctxs, teardown_ctxs),
		cmocka_unit_test_setup_teardown(test_resumption,
		    setup_ctxs, teardown_ctxs),
		cmocka_unit_test_setup_teardown(test_resumed_ticket_refill,
		    setup_ctxs, teardown_ctxs),
		cmocka_unit_test_setup_teardown(test_verification,
		    setup_ctxs, teardown_ctxs),
		cmocka_unit_test_setup_teardown(test_share_tickets,
		    setup_ctxs, teardown_ctxs),
		cmocka_unit_test_setup_teardown(test_pinning,
		    setup_ctxs, teardown_ctxs),
		cmocka_unit_test_setup_teardown(test_garbage_peer,
		    setup_ctxs, teardown_ctxs),
		cmocka_unit_test_setup_teardown(test_alpn,
		    setup_ctxs, teardown_ctxs),
		cmocka_unit_test_setup_teardown(test_alpn_client,
		    setup_ctxs, teardown_ctxs),
		cmocka_unit_test_setup_teardown(test_tls12_refused,
		    setup_ctxs, teardown_ctxs),
		cmocka_unit_test_setup_teardown(test_idle_memory,
		    setup_ctxs, teardown_ctxs),
		cmocka_unit_test_setup_teardown(test_sealed_server,
		    setup_ctxs, teardown_ctxs),
		cmocka_unit_test(test_plain),
		cmocka_unit_test_setup_teardown(test_frame_tls,
		    setup_ctxs, teardown_ctxs),
		cmocka_unit_test(test_frame_errors),
		cmocka_unit_test(test_frame_write_last),
		cmocka_unit_test(test_frame_offer),
		cmocka_unit_test_setup_teardown(test_frame_tls_batch,
		    setup_ctxs, teardown_ctxs),
		cmocka_unit_test_setup_teardown(test_frame_tls_inplace,
		    setup_ctxs, teardown_ctxs),
	};

	/* Before OpenSSL allocates anything. */
	if (CRYPTO_set_mem_functions(heap_malloc, heap_realloc,
	    heap_free) != 1)
		return 1;
	log_init(getenv("TEST_DEBUG") != NULL ? LOG_LVL_DEBUG : LOG_LVL_WARN,
	    false, "test_outer");
	return cmocka_run_group_tests(tests, setup_certs, teardown_certs);
}
