/*
 * TLS contexts for the outer streams (OpenSSL 3): client and server
 * contexts, verification and public-key pinning, ALPN, record padding, the
 * client's session-ticket cache and the server's ticket keys.  The streams
 * themselves are in outer.c; outer_int.h is what the two share.
 *
 * Client session cache: TLS 1.3 tickets arrive after the handshake (inside
 * a later SSL_read), so they are captured by the new-session callback as
 * they come and kept in a small per-context cache keyed by server name.
 * A ticket is used once, as browsers do: reusing one would let an observer
 * link connections by its identity.  Each resumption brings a new ticket,
 * so a client that makes connections one after another always has one.
 */
#include "config.h"

#include "tls/outer.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "core/log.h"
#include "tls/outer_int.h"

#define OUTER_SESS_MAX	64	/* tickets kept per client context */
/* ... and once dials have paused for OUTER_SESS_PAUSE_S: see
 * outer_cache_settle. */
#define OUTER_SESS_IDLE		8
#define OUTER_SESS_PAUSE_S	5
#define OUTER_READ_BUF	(64 * 1024)	/* read-ahead buffer while active */

struct outer_sess {
	char		*host;
	SSL_SESSION	*sess;
};

/* Oldest first.  Locked: the context may be shared between threads. */
struct outer_cache {
	pthread_mutex_t	 lock;
	struct outer_sess ent[OUTER_SESS_MAX];
	size_t		 n;
	time_t		 take_s;	/* the last outer_cache_take */
};

/* Public-key pin of a client context (outer_ctx_pin). */
struct outer_pin {
	uint8_t		 sha256[32];
	bool		 verify_chain;	/* false: insecure context, pin only */
};

static pthread_once_t	 outer_ctx_once = PTHREAD_ONCE_INIT;
static int		 outer_cache_idx = -1;
static int		 outer_pin_idx = -1;
static int		 outer_pad_idx = -1;
static int		 outer_lax_idx = -1;	/* set: any TLS version */

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

static void
outer_ctx_init_once(void)
{
	/* The cache is freed with the context, not in outer_ctx_free():
	 * SSL objects hold references and may still deliver tickets. */
	outer_cache_idx = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL,
	    outer_cache_free);
	outer_pin_idx = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL,
	    outer_pin_free);
	outer_pad_idx = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL,
	    outer_pin_free);	/* plain free() as well */
	outer_lax_idx = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, NULL);
}

int
outer_ctx_init(void)
{
	pthread_once(&outer_ctx_once, outer_ctx_init_once);
	if (outer_cache_idx < 0 || outer_pin_idx < 0 || outer_pad_idx < 0 ||
	    outer_lax_idx < 0) {
		log_ssl_errors("outer: initialisation");
		return -1;
	}
	return 0;
}

const struct outer_pad *
outer_ctx_get_pad(SSL_CTX *ctx)
{
	if (outer_ctx_init() == -1)
		return NULL;
	return SSL_CTX_get_ex_data(ctx, outer_pad_idx);
}

bool
outer_ctx_needs_tls13(SSL_CTX *ctx)
{
	return outer_ctx_init() == -1 ||
	    SSL_CTX_get_ex_data(ctx, outer_lax_idx) == NULL;
}

/* ---- session cache ---------------------------------------------------- */

static time_t
outer_mono_s(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

static void
outer_cache_remove(struct outer_cache *c, size_t i)
{
	free(c->ent[i].host);
	memmove(&c->ent[i], &c->ent[i + 1], (c->n - i - 1) * sizeof(c->ent[0]));
	c->n--;
}

int	outer_bio_type;

struct outer *
outer_of_ssl(const SSL *ssl)
{
	BIO	*b = SSL_get_rbio(ssl);

	return b != NULL && outer_bio_type != 0 &&
	    BIO_method_type(b) == outer_bio_type ? BIO_get_data(b) : NULL;
}

static int
outer_on_new_session(SSL *ssl, SSL_SESSION *sess)
{
	struct outer		*o = outer_of_ssl(ssl);
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

/* Single use: see outer.c. */
SSL_SESSION *
outer_cache_take(SSL_CTX *ctx, const char *host)
{
	struct outer_cache	*c;
	SSL_SESSION		*s, *found = NULL;
	long			 now = (long)time(NULL);
	size_t			 i;

	if ((c = SSL_CTX_get_ex_data(ctx, outer_cache_idx)) == NULL)
		return NULL;
	pthread_mutex_lock(&c->lock);
	c->take_s = outer_mono_s();
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

/*
 * A burst of dials fills the cache with tickets of connections that did a
 * full handshake, each session with its own parsed copy of the server's
 * certificate (some 6 KiB in ~50 small allocations), made while the heap
 * was at its peak: 64 of them scattered over it keep hundreds of pages
 * resident once the burst's flows are gone.  Dials that come one at a
 * time need a few tickets, so once none was taken for a while the cache
 * keeps its newest OUTER_SESS_IDLE.
 */
void
outer_cache_settle(SSL_CTX *ctx)
{
	struct outer_cache	*c;
	size_t			 drop, i;

	if ((c = SSL_CTX_get_ex_data(ctx, outer_cache_idx)) == NULL)
		return;
	pthread_mutex_lock(&c->lock);
	if (c->n > OUTER_SESS_IDLE &&
	    outer_mono_s() - c->take_s >= OUTER_SESS_PAUSE_S) {
		drop = c->n - OUTER_SESS_IDLE;
		for (i = 0; i < drop; i++) {
			SSL_SESSION_free(c->ent[i].sess);
			free(c->ent[i].host);
		}
		memmove(&c->ent[0], &c->ent[drop],
		    OUTER_SESS_IDLE * sizeof(c->ent[0]));
		c->n = OUTER_SESS_IDLE;
	}
	pthread_mutex_unlock(&c->lock);
}

/* ---- contexts --------------------------------------------------------- */

static int
outer_ctx_common(SSL_CTX *ctx)
{
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

/*
 * The ClientHello of curl on Debian 12 (curl 7.88, OpenSSL 3.0), the most
 * common client built on the same library, so that tunsplit's outer
 * connections are one more curl in the crowd: OpenSSL's defaults as the
 * system configuration leaves them (cipher list, TLS 1.3 suites, groups,
 * signature algorithms, a key share for X25519) plus what curl sets:
 * TLS 1.0 to 1.3, SSL_OP_ALL (the padding extension), no session_ticket
 * extension (SSL_OP_NO_TICKET: TLS 1.3 tickets still arrive and resume),
 * post-handshake authentication offered (never used: the server asks for
 * no certificate), ALPN h2,http/1.1.  Offering older versions costs
 * nothing: the handshake fails unless TLS 1.3 was negotiated
 * (outer_handshake), before a byte of ours is sent.
 * tests/netns/e2e/e2e_clienthello.sh compares the bytes with curl's.
 */
static int
outer_ctx_curl(SSL_CTX *ctx)
{
	static const unsigned char alpn[] = "\x02h2\x08http/1.1";

	if (SSL_CTX_set_min_proto_version(ctx, TLS1_VERSION) != 1 ||
	    SSL_CTX_set_max_proto_version(ctx, 0) != 1 ||
	    SSL_CTX_set_alpn_protos(ctx, alpn, sizeof(alpn) - 1) != 0)
		return -1;
	SSL_CTX_set_options(ctx, SSL_OP_ALL | SSL_OP_NO_TICKET);
	SSL_CTX_set_post_handshake_auth(ctx, 1);
	return 0;
}

/*
 * As close to Chrome as OpenSSL 3.0 lets a client come (what remains
 * different is listed in tunsplit.yaml(5), fingerprint): Chrome's cipher
 * suites in its order, its groups (without the post-quantum one) and
 * signature algorithms, TLS 1.2 and 1.3, the session_ticket,
 * status_request and signed_certificate_timestamp extensions, no
 * encrypt_then_mac nor post-handshake authentication, padding.  The
 * TLS 1.2 suites are offered for looks only, as with curl.
 */
static int
outer_ctx_browser(SSL_CTX *ctx)
{
	static const unsigned char alpn[] = "\x02h2\x08http/1.1";
	static const char	suites[] = "TLS_AES_128_GCM_SHA256:"
	    "TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";
	static const char	ciphers[] = "ECDHE-ECDSA-AES128-GCM-SHA256:"
	    "ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
	    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:"
	    "ECDHE-RSA-CHACHA20-POLY1305:ECDHE-RSA-AES128-SHA:"
	    "ECDHE-RSA-AES256-SHA:AES128-GCM-SHA256:AES256-GCM-SHA384:"
	    "AES128-SHA:AES256-SHA";
	/* Arrays, not literals: the OpenSSL macros cast away const. */
	static char		groups[] = "X25519:P-256:P-384";
	static char		sigalgs[] = "ECDSA+SHA256:rsa_pss_rsae_sha256:"
	    "RSA+SHA256:ECDSA+SHA384:rsa_pss_rsae_sha384:RSA+SHA384:"
	    "rsa_pss_rsae_sha512:RSA+SHA512";

	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
	    SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) != 1 ||
	    SSL_CTX_set_ciphersuites(ctx, suites) != 1 ||
	    SSL_CTX_set_cipher_list(ctx, ciphers) != 1 ||
	    SSL_CTX_set1_groups_list(ctx, groups) != 1 ||
	    SSL_CTX_set1_sigalgs_list(ctx, sigalgs) != 1 ||
	    SSL_CTX_set_tlsext_status_type(ctx, TLSEXT_STATUSTYPE_ocsp) != 1 ||
	    SSL_CTX_enable_ct(ctx, SSL_CT_VALIDATION_PERMISSIVE) != 1 ||
	    SSL_CTX_set_alpn_protos(ctx, alpn, sizeof(alpn) - 1) != 0)
		return -1;
	SSL_CTX_clear_options(ctx, SSL_OP_NO_TICKET);
	SSL_CTX_set_options(ctx, SSL_OP_TLSEXT_PADDING |
	    SSL_OP_NO_ENCRYPT_THEN_MAC);
	SSL_CTX_set_post_handshake_auth(ctx, 0);
	return 0;
}

int
outer_ctx_fingerprint(SSL_CTX *ctx, enum outer_fp fp)
{
	int	rc;

	if (ctx == NULL)
		return -1;
	ERR_clear_error();
	rc = fp == OUTER_FP_BROWSER ? outer_ctx_browser(ctx) :
	    outer_ctx_curl(ctx);
	if (rc == -1)
		log_ssl_errors("outer: %s ClientHello",
		    fp == OUTER_FP_BROWSER ? "browser" : "curl");
	return rc;
}

/*
 * OpenSSL 3.0 works out a certificate's cached extensions (key ids,
 * flags) the first time a verification looks at it, under the
 * certificate's lock, while another thread's verification may read
 * them without it: two dialer threads verifying the same CA at once
 * raced there (ThreadSanitizer, e2e_dialer).  Worked out here, once,
 * before any thread shares the context, they are only read after.
 */
static void
outer_ctx_store_warm(SSL_CTX *ctx)
{
	STACK_OF(X509_OBJECT) *objs;
	X509	*x;
	int	 i;

	objs = X509_STORE_get0_objects(SSL_CTX_get_cert_store(ctx));
	for (i = 0; i < sk_X509_OBJECT_num(objs); i++)
		if ((x = X509_OBJECT_get0_X509(sk_X509_OBJECT_value(objs,
		    i))) != NULL)
			(void)X509_check_purpose(x, -1, 0);
}

SSL_CTX *
outer_ctx_client(const char *ca_file, bool insecure)
{
	SSL_CTX			*ctx = NULL;
	struct outer_cache	*c = NULL;

	if (outer_ctx_init() == -1)
		return NULL;
	ERR_clear_error();
	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL ||
	    outer_ctx_common(ctx) == -1 ||
	    outer_ctx_curl(ctx) == -1)
		goto fail;
	if (insecure) {
		SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	} else {
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
		if (ca_file != NULL) {
			if (SSL_CTX_load_verify_locations(ctx, ca_file,
			    NULL) != 1)
				goto fail;
			outer_ctx_store_warm(ctx);
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
		o = ssl != NULL ? outer_of_ssl(ssl) : NULL;
		log_warnx("outer: public key of %s does not match "
		    "pin_sha256", o != NULL && o->sni != NULL ? o->sni :
		    "server");
		X509_STORE_CTX_set_error(xs,
		    X509_V_ERR_APPLICATION_VERIFICATION);
		return 0;
	}
	return 1;
}

int
outer_ctx_padding(SSL_CTX *ctx, unsigned records, unsigned max)
{
	struct outer_pad	*pad;

	if (ctx == NULL || outer_ctx_init() == -1)
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

	if (ctx == NULL || outer_ctx_init() == -1)
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
	static const char	lax = 1;

	if (ctx == NULL || outer_ctx_init() == -1 ||
	    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
	    SSL_CTX_set_ex_data(ctx, outer_lax_idx, (void *)(uintptr_t)&lax)
	    != 1) {
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
 * The server's TLS front is a stock nginx 1.22 on Debian 12 (OpenSSL 3.0)
 * with Debian's nginx.conf and the http2 module off, since a connection
 * that does not authenticate is handed to the cover site as if nginx had
 * terminated it: what a prober sees of the TLS layer must be nginx's too.
 * tests/netns/e2e/e2e_probe_diff.sh compares the two.
 *
 * ALPN: nginx's list without h2; a client that offers none of it gets a
 * no_application_protocol alert, as from nginx.  The native client offers
 * h2 and http/1.1 and gets http/1.1.
 */
static int
outer_on_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
    const unsigned char *in, unsigned int inlen, void *arg)
{
	static const unsigned char prefs[] =
	    "\x08http/1.1\x08http/1.0\x08http/0.9";
	unsigned char	*sel = NULL;

	(void)ssl;
	(void)arg;
	if (SSL_select_next_proto(&sel, outlen, prefs, sizeof(prefs) - 1, in,
	    inlen) != OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	*out = sel;
	return SSL_TLSEXT_ERR_OK;
}

/* SNI: every name is accepted, and acknowledged in the EncryptedExtensions
 * as nginx's servername callback does (it picks a virtual server). */
static int
outer_on_servername(SSL *ssl, int *alert, void *arg)
{
	(void)ssl;
	(void)alert;
	(void)arg;
	return SSL_TLSEXT_ERR_OK;
}

/*
 * nginx's session set-up with its defaults (ssl_session_cache none,
 * ssl_session_timeout 5m, tickets on): a server cache that stores
 * nothing, tickets with a 300 s lifetime, and nginx's session id context,
 * SHA-1 of "HTTP" and of the certificate's SHA-1, which sits in every
 * ticket (so its size is nginx's).
 */
static int
outer_ctx_sessions(SSL_CTX *ctx)
{
	static const char	 name[] = "HTTP";
	unsigned char		 md[EVP_MAX_MD_SIZE], certmd[EVP_MAX_MD_SIZE];
	unsigned int		 mdlen = 0, certlen = 0;
	EVP_MD_CTX		*m;
	X509			*cert;
	int			 rc = -1;

	if ((cert = SSL_CTX_get0_certificate(ctx)) == NULL ||
	    X509_digest(cert, EVP_sha1(), certmd, &certlen) != 1 ||
	    (m = EVP_MD_CTX_new()) == NULL)
		return -1;
	if (EVP_DigestInit_ex(m, EVP_sha1(), NULL) == 1 &&
	    EVP_DigestUpdate(m, name, sizeof(name) - 1) == 1 &&
	    EVP_DigestUpdate(m, certmd, certlen) == 1 &&
	    EVP_DigestFinal_ex(m, md, &mdlen) == 1 &&
	    SSL_CTX_set_session_id_context(ctx, md, mdlen) == 1)
		rc = 0;
	EVP_MD_CTX_free(m);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER |
	    SSL_SESS_CACHE_NO_AUTO_CLEAR | SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_cache_size(ctx, 1);
	SSL_CTX_set_timeout(ctx, 300);
	return rc;
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
	if (outer_ctx_init() == -1)
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
	/* nginx's protocols (Debian's ssl_protocols: TLS 1.0 to 1.3, which
	 * OpenSSL's security level then narrows to 1.2 and 1.3, refusing
	 * the older ones as nginx does), ciphers (its default, HIGH:!aNULL:
	 * !MD5, server's order: Debian's ssl_prefer_server_ciphers on) and
	 * options.  Stateless tickets (OpenSSL's default, 2 per full
	 * handshake, 1 per resumption) let clients resume without server
	 * memory. */
	if (SSL_CTX_set_min_proto_version(ctx, 0) != 1 ||
	    SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) != 1 ||
	    SSL_CTX_set_cipher_list(ctx, "HIGH:!aNULL:!MD5") != 1)
		goto fail;
	SSL_CTX_set_options(ctx, SSL_OP_NO_SSLv3 | SSL_OP_NO_COMPRESSION |
	    SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_clear_options(ctx, SSL_OP_NO_TICKET);
	SSL_CTX_set_mode(ctx, SSL_MODE_NO_AUTO_CHAIN);
	SSL_CTX_set_alpn_select_cb(ctx, outer_on_alpn, NULL);
	SSL_CTX_set_tlsext_servername_callback(ctx, outer_on_servername);
	/* The secret a sealed stream follows a KeyUpdate with (outer_seal.c). */
	if (outer_seal_supported())
		SSL_CTX_set_keylog_callback(ctx, outer_seal_keylog);
	if (outer_ctx_sessions(ctx) == -1)
		goto fail;
	return ctx;

fail:
	log_ssl_errors("outer: server TLS context");
fail_quiet:
	SSL_CTX_free(ctx);
	return NULL;
}

SSL_CTX *
outer_ctx_ref(SSL_CTX *ctx)
{
	if (ctx != NULL)
		(void)SSL_CTX_up_ref(ctx);
	return ctx;
}

void
outer_ctx_free(SSL_CTX *ctx)
{
	SSL_CTX_free(ctx);	/* accepts NULL; the cache goes with it */
}
