/*
 * The outer stream: TLS 1.3 over a non-blocking socket (OpenSSL 3).
 *
 * I/O goes through our own small BIO rather than OpenSSL's socket BIO, for
 * one reason: OpenSSL writes with write(2), which raises SIGPIPE when the
 * peer is gone; ours uses send(MSG_NOSIGNAL), so a dead peer is an EPIPE
 * and never a signal, whatever the process's SIGPIPE disposition.
 *
 * Each operation (handshake, read, write, shutdown) remembers which fd
 * event it is blocked on; outer_events() is their union, so a flow with a
 * blocked read and a blocked write waits for both.
 *
 * Client session cache: TLS 1.3 tickets arrive after the handshake (inside
 * a later SSL_read), so they are captured by the new-session callback as
 * they come and kept in a small per-context cache keyed by server name.
 * A ticket is used once, as browsers do: reusing one would let an observer
 * link connections by its identity.  Each resumption brings a new ticket,
 * so a client that makes connections one after another always has one.
 */
#include "config.h"

#include "outer.h"

#include <sys/socket.h>
#include <sys/epoll.h>
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <sodium.h>

#include "log.h"

#define OUTER_SESS_MAX	8	/* tickets kept per client context */
#define OUTER_READ_BUF	(64 * 1024)	/* read-ahead buffer while active */

struct outer {
	SSL		*ssl;
	int		 fd;
	bool		 client;
	bool		 hs_done;
	bool		 shut_sent;	/* close_notify written */
	bool		 wr_closed;	/* TCP write side shut too */
	bool		 eof;		/* recv() returned 0 */
	uint32_t	 want_hs, want_rd, want_wr, want_shut;
	char		*sni;		/* client: name to verify; cache key */
	unsigned	 pad_left;	/* records still to pad */
	unsigned	 pad_max;
};

struct outer_sess {
	char		*host;
	SSL_SESSION	*sess;
};

/* Oldest first.  Locked: the context may be shared between threads. */
struct outer_cache {
	pthread_mutex_t	 lock;
	struct outer_sess ent[OUTER_SESS_MAX];
	size_t		 n;
};

/* Public-key pin of a client context (outer_ctx_pin). */
struct outer_pin {
	uint8_t		 sha256[32];
	bool		 verify_chain;	/* false: insecure context, pin only */
};

static pthread_once_t	 outer_once = PTHREAD_ONCE_INIT;
static BIO_METHOD	*outer_bio_meth;
static int		 outer_cache_idx = -1;
static int		 outer_pin_idx = -1;
static int		 outer_pad_idx = -1;

/* Record padding of a context's streams (outer_ctx_padding). */
struct outer_pad {
	unsigned	 records;
	unsigned	 max;
};
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

	(void)num;
	switch (cmd) {
	case BIO_CTRL_FLUSH:
		return 1;
	case BIO_CTRL_EOF:
		return o->eof;
	case BIO_C_GET_FD:
		if (ptr != NULL)
			*(int *)ptr = o->fd;
		return o->fd;
	default:
		return 0;
	}
}

static void
outer_cache_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx,
    long argl, void *argp)
{
	struct outer_cache	*c = ptr;
	size_t			 i;

	(void)parent;
	(void)ad;
	(void)idx;
	(void)argl;
	(void)argp;
	if (c == NULL)
		return;
	for (i = 0; i < c->n; i++) {
		SSL_SESSION_free(c->ent[i].sess);
		free(c->ent[i].host);
	}
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static void
outer_pin_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx,
    long argl, void *argp)
{
	(void)parent;
	(void)ad;
	(void)idx;
	(void)argl;
	(void)argp;
	free(ptr);
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

	m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK |
	    BIO_TYPE_DESCRIPTOR, "tunsplit socket");
	if (m == NULL || BIO_meth_set_write(m, outer_bio_write) != 1 ||
	    BIO_meth_set_read(m, outer_bio_read) != 1 ||
	    BIO_meth_set_ctrl(m, outer_bio_ctrl) != 1) {
		BIO_meth_free(m);
		return;
	}
	outer_bio_meth = m;
	outer_free_buffers_ok = outer_free_buffers_safe();
	/* The cache is freed with the context, not in outer_ctx_free():
	 * SSL objects hold references and may still deliver tickets. */
	outer_cache_idx = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL,
	    outer_cache_free);
	outer_pin_idx = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL,
	    outer_pin_free);
	outer_pad_idx = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL,
	    outer_pin_free);	/* plain free() as well */
}

static int
outer_init(void)
{
	pthread_once(&outer_once, outer_init_once);
	if (outer_bio_meth == NULL || outer_cache_idx < 0 ||
	    outer_pin_idx < 0 || outer_pad_idx < 0) {
		log_ssl_errors("outer: initialisation");
		return -1;
	}
	return 0;
}

/* ---- session cache ---------------------------------------------------- */

static void
outer_cache_remove(struct outer_cache *c, size_t i)
{
	free(c->ent[i].host);
	memmove(&c->ent[i], &c->ent[i + 1], (c->n - i - 1) * sizeof(c->ent[0]));
	c->n--;
}

static int
outer_on_new_session(SSL *ssl, SSL_SESSION *sess)
{
	struct outer		*o = SSL_get_app_data(ssl);
	struct outer_cache	*c;
	char			*host;

	c = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), outer_cache_idx);
	if (c == NULL || o == NULL || o->sni == NULL ||
	    !SSL_SESSION_is_resumable(sess))
		return 0;
	if ((host = strdup(o->sni)) == NULL)
		return 0;
	pthread_mutex_lock(&c->lock);
	if (c->n == OUTER_SESS_MAX) {
		SSL_SESSION_free(c->ent[0].sess);
		outer_cache_remove(c, 0);
	}
	c->ent[c->n].host = host;
	c->ent[c->n].sess = sess;
	c->n++;
	pthread_mutex_unlock(&c->lock);
	return 1;	/* we keep the reference */
}

/* Newest usable ticket for host, removed from the cache (single use). */
static SSL_SESSION *
outer_cache_take(SSL_CTX *ctx, const char *host)
{
	struct outer_cache	*c;
	SSL_SESSION		*s, *found = NULL;
	long			 now = (long)time(NULL);
	size_t			 i;

	if ((c = SSL_CTX_get_ex_data(ctx, outer_cache_idx)) == NULL)
		return NULL;
	pthread_mutex_lock(&c->lock);
	for (i = c->n; i-- > 0 && found == NULL;) {
		if (strcmp(c->ent[i].host, host) != 0)
			continue;
		s = c->ent[i].sess;
		outer_cache_remove(c, i);
		if (SSL_SESSION_is_resumable(s) &&
		    SSL_SESSION_get_time(s) + SSL_SESSION_get_timeout(s) > now)
			found = s;
		else
			SSL_SESSION_free(s);
	}
	pthread_mutex_unlock(&c->lock);
	return found;
}

/* ---- contexts --------------------------------------------------------- */

static int
outer_ctx_common(SSL_CTX *ctx)
{
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1)
		return -1;
	/* Partial writes so a short socket write is a short outer_write();
	 * moving buffer because callers retry from queues that may move;
	 * released buffers so an idle flow holds no 16 KiB records. */
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
	/* Read ahead: one read() fetches several records instead of two
	 * read()s (header, body) per record; the buffer is still released
	 * when idle. */
	SSL_CTX_set_read_ahead(ctx, 1);
	SSL_CTX_set_default_read_buffer_len(ctx, OUTER_READ_BUF);
	/* A TCP FIN without close_notify is NOT an end of stream: it is what
	 * a killed peer (or an attacker truncating the stream) produces, and
	 * the relayed stream has no framing of its own to notice.  OpenSSL's
	 * default reports it as an error, which becomes a reset upstream. */
	return 0;
}

SSL_CTX *
outer_ctx_client(const char *ca_file, bool insecure)
{
	static const unsigned char alpn[] = "\x02h2\x08http/1.1";
	/* Arrays, not literals: the OpenSSL macros cast away const. */
	static char		 groups[] = "X25519:P-256";
	static const char	 suites[] = "TLS_AES_128_GCM_SHA256:"
	    "TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";
	SSL_CTX			*ctx = NULL;
	struct outer_cache	*c = NULL;

	if (outer_init() == -1)
		return NULL;
	ERR_clear_error();
	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL ||
	    outer_ctx_common(ctx) == -1)
		goto fail;
	if (SSL_CTX_set1_groups_list(ctx, groups) != 1 ||
	    SSL_CTX_set_ciphersuites(ctx, suites) != 1 ||
	    SSL_CTX_set_alpn_protos(ctx, alpn, sizeof(alpn) - 1) != 0)
		goto fail;
	if (insecure) {
		SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	} else {
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
		if (ca_file != NULL) {
			if (SSL_CTX_load_verify_locations(ctx, ca_file,
			    NULL) != 1)
				goto fail;
		} else if (SSL_CTX_set_default_verify_paths(ctx) != 1)
			goto fail;
	}

	if ((c = calloc(1, sizeof(*c))) == NULL)
		goto fail;
	if (pthread_mutex_init(&c->lock, NULL) != 0) {
		free(c);
		goto fail;
	}
	if (SSL_CTX_set_ex_data(ctx, outer_cache_idx, c) != 1) {
		outer_cache_free(NULL, c, NULL, 0, 0, NULL);
		goto fail;
	}
	/* Sessions live only in our cache; OpenSSL's internal client store
	 * would keep every ticket. */
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT |
	    SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(ctx, outer_on_new_session);
	return ctx;

fail:
	log_ssl_errors("outer: client TLS context%s%s",
	    ca_file != NULL ? " with CA file " : "",
	    ca_file != NULL ? ca_file : "");
	SSL_CTX_free(ctx);
	return NULL;
}

/* ---- public-key pinning ---------------------------------------------- */

static int
outer_spki_sha256(X509 *cert, uint8_t out[32])
{
	unsigned char	*der = NULL;
	unsigned int	 mdlen = 0;
	int		 len, rc = -1;

	if ((len = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(cert), &der)) <= 0)
		return -1;
	if (EVP_Digest(der, (size_t)len, out, &mdlen, EVP_sha256(), NULL) == 1 &&
	    mdlen == 32)
		rc = 0;
	OPENSSL_free(der);
	return rc;
}

/*
 * Replaces OpenSSL's chain check (it calls it itself first, unless the
 * context is insecure) and then compares the leaf's key with the pin.
 * Runs inside the handshake, so a mismatch aborts it before the client
 * has sent anything of its own.
 */
static int
outer_on_verify(X509_STORE_CTX *xs, void *arg)
{
	const struct outer_pin	*pin = arg;
	const struct outer	*o;
	uint8_t			 got[32];
	SSL			*ssl;
	X509			*leaf;
	int			 rc;

	if (pin->verify_chain && (rc = X509_verify_cert(xs)) <= 0)
		return rc;
	if ((leaf = X509_STORE_CTX_get0_cert(xs)) == NULL ||
	    outer_spki_sha256(leaf, got) == -1 ||
	    CRYPTO_memcmp(got, pin->sha256, sizeof(got)) != 0) {
		ssl = X509_STORE_CTX_get_ex_data(xs,
		    SSL_get_ex_data_X509_STORE_CTX_idx());
		o = ssl != NULL ? SSL_get_app_data(ssl) : NULL;
		log_warnx("outer: public key of %s does not match "
		    "pin_sha256", o != NULL && o->sni != NULL ? o->sni :
		    "server");
		X509_STORE_CTX_set_error(xs,
		    X509_V_ERR_APPLICATION_VERIFICATION);
		return 0;
	}
	return 1;
}

/*
 * TLS 1.3 record padding (inside the encryption, stripped by any peer's TLS
 * layer: no protocol change).  The first records of a flow carry the app's
 * own handshake -- an inner TLS ClientHello, ServerHello, certificates --
 * whose sizes would show through one-to-one; random padding of 1..max
 * bytes on the first `records` application records hides them.
 */
static size_t
outer_on_pad(SSL *ssl, int type, size_t len, void *arg)
{
	struct outer	*o = arg;

	(void)ssl;
	(void)len;
	if (type != SSL3_RT_APPLICATION_DATA || o->pad_left == 0)
		return 0;
	o->pad_left--;
	return 1 + randombytes_uniform(o->pad_max);
}

int
outer_ctx_padding(SSL_CTX *ctx, unsigned records, unsigned max)
{
	struct outer_pad	*pad;

	if (ctx == NULL || outer_init() == -1)
		return -1;
	if (records == 0 || max == 0)
		return 0;
	if ((pad = calloc(1, sizeof(*pad))) == NULL) {
		log_warn("outer: padding");
		return -1;
	}
	pad->records = records;
	pad->max = max;
	free(SSL_CTX_get_ex_data(ctx, outer_pad_idx));
	if (SSL_CTX_set_ex_data(ctx, outer_pad_idx, pad) != 1) {
		free(pad);
		log_ssl_errors("outer: padding");
		return -1;
	}
	return 0;
}

int
outer_ctx_pin(SSL_CTX *ctx, const uint8_t spki_sha256[32])
{
	struct outer_pin	*pin;

	if (ctx == NULL || outer_init() == -1)
		return -1;
	if (SSL_CTX_get_ex_data(ctx, outer_pin_idx) != NULL) {
		log_warnx("outer: context already pinned");
		return -1;
	}
	if ((pin = calloc(1, sizeof(*pin))) == NULL) {
		log_warn("outer: pin");
		return -1;
	}
	memcpy(pin->sha256, spki_sha256, sizeof(pin->sha256));
	pin->verify_chain = SSL_CTX_get_verify_mode(ctx) != SSL_VERIFY_NONE;
	if (SSL_CTX_set_ex_data(ctx, outer_pin_idx, pin) != 1) {
		free(pin);
		log_ssl_errors("outer: pin");
		return -1;
	}
	/* An insecure context verifies nothing but the pin; it still needs
	 * VERIFY_PEER, or OpenSSL ignores what the callback says. */
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_cert_verify_callback(ctx, outer_on_verify, pin);
	return 0;
}

int
outer_ctx_alpn(SSL_CTX *ctx, const char *protos)
{
	unsigned char	 wire[256];
	size_t		 n = 0, len;
	const char	*p, *comma;

	if (ctx == NULL || protos == NULL)
		return -1;
	/* Every name, the last one included, is 1..255 bytes. */
	for (p = protos;; p = comma + 1) {
		if ((comma = strchr(p, ',')) == NULL)
			comma = p + strlen(p);
		len = (size_t)(comma - p);
		if (len == 0 || len > 255 || n + 1 + len > sizeof(wire)) {
			log_warnx("outer: bad ALPN list '%s'", protos);
			return -1;
		}
		wire[n++] = (unsigned char)len;
		memcpy(wire + n, p, len);
		n += len;
		if (*comma == '\0')
			break;
	}
	if (SSL_CTX_set_alpn_protos(ctx, wire, (unsigned)n) != 0) {
		log_warnx("outer: cannot set ALPN '%s'", protos);
		return -1;
	}
	return 0;
}

int
outer_ctx_share_tickets(SSL_CTX *dst, SSL_CTX *src)
{
	unsigned char	 keys[80];	/* name, HMAC key, AES key */
	int		 rc = -1;

	if (dst == NULL || src == NULL)
		return -1;
	ERR_clear_error();
	if (SSL_CTX_get_tlsext_ticket_keys(src, keys, sizeof(keys)) == 1 &&
	    SSL_CTX_set_tlsext_ticket_keys(dst, keys, sizeof(keys)) == 1)
		rc = 0;
	else
		log_ssl_errors("outer: session ticket keys");
	OPENSSL_cleanse(keys, sizeof(keys));
	return rc;
}

int
outer_ctx_allow_tls12(SSL_CTX *ctx)
{
	if (ctx == NULL ||
	    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
		log_ssl_errors("outer: TLS 1.2");
		return -1;
	}
	return 0;
}

int
outer_pin_from_file(const char *cert_file, uint8_t spki_sha256[32])
{
	X509	*cert = NULL;
	FILE	*fp;
	int	 rc = -1;

	if ((fp = fopen(cert_file, "r")) == NULL) {
		log_warn("%s", cert_file);
		return -1;
	}
	ERR_clear_error();
	if ((cert = PEM_read_X509(fp, NULL, NULL, NULL)) == NULL)
		log_ssl_errors("%s: no certificate", cert_file);
	else if (outer_spki_sha256(cert, spki_sha256) == -1)
		log_ssl_errors("%s: public key", cert_file);
	else
		rc = 0;
	X509_free(cert);
	fclose(fp);
	return rc;
}

/*
 * ALPN: answer like a web server.  http/1.1 is preferred to h2 because a
 * connection that fails authentication is spliced to the cover site as a
 * byte stream, and a plain-text cover site speaks HTTP/1.1; a prober that
 * negotiated h2 would get nonsense back.  Unknown protocols only: no ALPN
 * in the answer, as servers do.
 */
static int
outer_on_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
    const unsigned char *in, unsigned int inlen, void *arg)
{
	static const unsigned char prefs[] = "\x08http/1.1\x02h2";
	unsigned char	*sel = NULL;

	(void)ssl;
	(void)arg;
	if (SSL_select_next_proto(&sel, outlen, prefs, sizeof(prefs) - 1, in,
	    inlen) != OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_NOACK;
	*out = sel;
	return SSL_TLSEXT_ERR_OK;
}

SSL_CTX *
outer_ctx_server(const char *cert_file, const char *key_file)
{
	SSL_CTX	*ctx = NULL;

	if (cert_file == NULL || key_file == NULL) {
		log_warnx("outer: server TLS context needs a certificate "
		    "and a key");
		return NULL;
	}
	if (outer_init() == -1)
		return NULL;
	ERR_clear_error();
	if ((ctx = SSL_CTX_new(TLS_server_method())) == NULL ||
	    outer_ctx_common(ctx) == -1)
		goto fail;
	if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
		log_ssl_errors("outer: certificate %s", cert_file);
		goto fail_quiet;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_check_private_key(ctx) != 1) {
		log_ssl_errors("outer: private key %s", key_file);
		goto fail_quiet;
	}
	SSL_CTX_set_alpn_select_cb(ctx, outer_on_alpn, NULL);
	/* Stateless TLS 1.3 tickets (OpenSSL's default, 2 per full
	 * handshake, 1 per resumption) let clients resume without server
	 * memory. */
	SSL_CTX_clear_options(ctx, SSL_OP_NO_TICKET);
	return ctx;

fail:
	log_ssl_errors("outer: server TLS context");
fail_quiet:
	SSL_CTX_free(ctx);
	return NULL;
}

void
outer_ctx_free(SSL_CTX *ctx)
{
	SSL_CTX_free(ctx);	/* accepts NULL; the cache goes with it */
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

struct outer *
outer_new(SSL_CTX *ctx, int fd, bool client, const char *sni)
{
	struct outer	*o = NULL;
	struct outer_pad *pad;
	BIO		*bio;

	if (ctx == NULL || fd < 0) {
		errno = EINVAL;
		goto fail;
	}
	if (outer_init() == -1)
		goto fail;
	if ((o = calloc(1, sizeof(*o))) == NULL)
		goto fail;
	o->fd = fd;
	o->client = client;
	if (client && sni != NULL && *sni != '\0' &&
	    (o->sni = strdup(sni)) == NULL)
		goto fail;
	ERR_clear_error();
	if ((o->ssl = SSL_new(ctx)) == NULL)
		goto fail;
	if ((bio = BIO_new(outer_bio_meth)) == NULL)
		goto fail;
	BIO_set_data(bio, o);
	BIO_set_init(bio, 1);
	SSL_set_bio(o->ssl, bio, bio);		/* the SSL owns it now */
	if (SSL_set_app_data(o->ssl, o) != 1)
		goto fail;
	if ((pad = SSL_CTX_get_ex_data(ctx, outer_pad_idx)) != NULL) {
		o->pad_left = pad->records;
		o->pad_max = pad->max;
		SSL_set_record_padding_callback(o->ssl, outer_on_pad);
		SSL_set_record_padding_callback_arg(o->ssl, o);
	}
	if (client) {
		SSL_set_connect_state(o->ssl);
		if (outer_client_setup(o, ctx) == -1)
			goto fail;
	} else
		SSL_set_accept_state(o->ssl);
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

int
outer_handshake(struct outer *o)
{
	long	 v;
	int	 r, saved;

	if (o->hs_done)
		return 1;
	ERR_clear_error();
	if ((r = SSL_do_handshake(o->ssl)) == 1) {
		o->hs_done = true;
		o->want_hs = 0;
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

bool
outer_handshake_done(const struct outer *o)
{
	return o->hs_done;
}

bool
outer_session_reused(const struct outer *o)
{
	return SSL_session_reused(o->ssl) == 1;
}

ssize_t
outer_read(struct outer *o, void *buf, size_t len)
{
	size_t	n;
	int	r, rc;

	if (len == 0) {
		errno = EINVAL;
		return -1;
	}
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
		errno = EAGAIN;
	}
	return rc;
}

ssize_t
outer_write(struct outer *o, const void *buf, size_t len)
{
	size_t	n;
	int	r;

	if (o->shut_sent) {
		errno = EPIPE;
		return -1;
	}
	if (len == 0)
		return 0;
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

size_t
outer_pending(const struct outer *o)
{
	int	n = SSL_pending(o->ssl);

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

	if (o->wr_closed)
		return 0;
	if (!o->hs_done) {
		if ((r = outer_handshake(o)) == 0)
			errno = EAGAIN;
		if (r != 1)
			return -1;
	}
	if (!o->shut_sent) {
		ERR_clear_error();
		if ((r = SSL_shutdown(o->ssl)) < 0) {
			if (outer_error(o, r, &o->want_shut, "shutdown") == 0)
				errno = EPIPE;
			return -1;
		}
		o->shut_sent = true;
		o->want_shut = 0;
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
outer_release(struct outer *o)
{
	/* Marked as shut down so that SSL_free() does not flag the session
	 * (and the tickets it came with) as unresumable: closing a flow is
	 * not a TLS failure. */
	SSL_set_shutdown(o->ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
	SSL_free(o->ssl);
	close(o->fd);
	free(o->sni);
	free(o);
}

void
outer_abort(struct outer *o)
{
	struct linger	l = { .l_onoff = 1, .l_linger = 0 };

	if (o == NULL)
		return;
	/* Linger 0: close() sends RST instead of FIN. */
	(void)setsockopt(o->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	outer_release(o);
}

void
outer_free(struct outer *o)
{
	if (o == NULL)
		return;
	outer_release(o);
}
