/*
 * A TLS client over memory BIOs (see tlsmem.h).
 */
#include "config.h"

#include "tls/tlsmem.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "core/log.h"

struct tlsmem {
	SSL	*ssl;
	BIO	*in, *out;	/* the SSL reads in, writes out */
};

static void
tlsmem_log(const char *what)
{
	unsigned long	e;
	char		buf[256];

	while ((e = ERR_get_error()) != 0) {
		ERR_error_string_n(e, buf, sizeof(buf));
		log_warnx("%s: %s", what, buf);
	}
}

static int
tlsmem_name(SSL *ssl, const char *name)
{
	unsigned char	ip[16];

	if (inet_pton(AF_INET, name, ip) == 1 ||
	    inet_pton(AF_INET6, name, ip) == 1)
		return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl),
		    name) == 1 ? 0 : -1;
	if (SSL_set_tlsext_host_name(ssl, name) != 1)
		return -1;
	SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	return SSL_set1_host(ssl, name) == 1 ? 0 : -1;
}

struct tlsmem *
tlsmem_new(struct ssl_ctx_st *ctx, const char *name)
{
	struct tlsmem	*t;

	ERR_clear_error();
	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	if ((t->ssl = SSL_new(ctx)) == NULL ||
	    (t->in = BIO_new(BIO_s_mem())) == NULL ||
	    (t->out = BIO_new(BIO_s_mem())) == NULL) {
		BIO_free(t->in);
		goto fail;
	}
	BIO_set_mem_eof_return(t->in, -1);	/* empty: retry, not EOF */
	SSL_set_bio(t->ssl, t->in, t->out);	/* the SSL owns them now */
	SSL_set_connect_state(t->ssl);
	if (tlsmem_name(t->ssl, name) == -1)
		goto fail;
	return t;
fail:
	tlsmem_log("tls");
	tlsmem_free(t);
	return NULL;
}

void
tlsmem_free(struct tlsmem *t)
{
	if (t == NULL)
		return;
	SSL_free(t->ssl);
	free(t);
}

int
tlsmem_feed(struct tlsmem *t, const void *buf, size_t len)
{
	return len == 0 || BIO_write(t->in, buf, (int)len) == (int)len ? 0 :
	    -1;
}

size_t
tlsmem_take(struct tlsmem *t, void *buf, size_t len)
{
	int	n;

	if (BIO_ctrl_pending(t->out) == 0)
		return 0;
	n = BIO_read(t->out, buf, (int)(len > 65536 ? 65536 : len));
	return n > 0 ? (size_t)n : 0;
}

int
tlsmem_handshake(struct tlsmem *t)
{
	int	rc;

	ERR_clear_error();
	if ((rc = SSL_do_handshake(t->ssl)) == 1)
		return 1;
	switch (SSL_get_error(t->ssl, rc)) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		return 0;
	default:
		if (SSL_get_verify_result(t->ssl) != X509_V_OK)
			log_warnx("tls: certificate: %s",
			    X509_verify_cert_error_string(
			    SSL_get_verify_result(t->ssl)));
		tlsmem_log("tls handshake");
		return -1;
	}
}

ssize_t
tlsmem_read(struct tlsmem *t, void *buf, size_t len)
{
	int	rc;

	ERR_clear_error();
	if ((rc = SSL_read(t->ssl, buf, (int)(len > 65536 ? 65536 : len))) > 0)
		return rc;
	switch (SSL_get_error(t->ssl, rc)) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_ZERO_RETURN:
		return 0;
	default:
		ERR_clear_error();
		errno = EPROTO;
		return -1;
	}
}

int
tlsmem_write(struct tlsmem *t, const void *buf, size_t len)
{
	ERR_clear_error();
	/* Memory BIOs take everything: one call writes it all. */
	if (len > 0 && SSL_write(t->ssl, buf, (int)len) != (int)len) {
		ERR_clear_error();
		return -1;
	}
	return 0;
}
