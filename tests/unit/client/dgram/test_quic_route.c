/*
 * quic_route: the domain a QUIC conversation is routed by -- named by its
 * first Initial (made by the test encoder, tests/unit/quicenc.c, around
 * OpenSSL's own ClientHello), kept for its later datagrams; a hello over
 * two datagrams holds the first until the second (then both go, in
 * order, by the name) or until the hold time (then by address, the name
 * only reported); forgotten after the idle time, the least recently used
 * conversation replaced when the table is full.
 */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>

#include <openssl/bio.h>
#include <openssl/ssl.h>

#include "client/dgram/quic_route.h"
#include "tests/unit/quicenc.h"
#include "wire/sniff.h"

static const uint8_t app[4] = { 198, 18, 0, 1 }, srv[4] = { 192, 0, 2, 7 };
static const uint8_t dcid[8] = { 9, 8, 7, 6, 5, 4, 3, 2 };

static size_t
hello(const char *sni, uint8_t *hs)
{
	uint8_t	 rec[4096];
	SSL_CTX	*ctx;
	SSL	*ssl;
	BIO	*rb, *wb;
	int	 n;

	assert_non_null(ctx = SSL_CTX_new(TLS_client_method()));
	assert_non_null(ssl = SSL_new(ctx));
	rb = BIO_new(BIO_s_mem());
	wb = BIO_new(BIO_s_mem());
	SSL_set_bio(ssl, rb, wb);
	assert_int_equal(SSL_set_tlsext_host_name(ssl, sni), 1);
	(void)SSL_connect(ssl);
	n = BIO_read(wb, rec, sizeof(rec));
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	assert_true(n > 5);
	memcpy(hs, rec + 5, (size_t)n - 5);
	return (size_t)n - 5;
}

/* An Initial carrying hs[off, off + n), padded to 1200 bytes. */
static size_t
initial(uint32_t pn, uint32_t off, const uint8_t *hs, size_t n, uint8_t *out)
{
	uint8_t	fr[1300];
	size_t	d;

	memset(fr, 0, sizeof(fr));
	(void)quicenc_crypto(fr, off, hs + off, n);
	d = quicenc_initial(SNIFF_QUIC_V1, dcid, sizeof(dcid), pn, fr, 1160,
	    out, 1500);
	assert_true(d > 0);
	return d;
}

/* What the send callback was given. */
static struct {
	size_t	n;
	size_t	len[8];
	char	domain[8][64];
} sent;

static void
on_send(void *arg, const struct quic_conv *c, const uint8_t *d, size_t n,
    const char *domain)
{
	(void)arg;
	(void)d;
	assert_int_equal(c->dport, 443);
	assert_true(sent.n < 8);
	sent.len[sent.n] = n;
	snprintf(sent.domain[sent.n], sizeof(sent.domain[0]), "%s",
	    domain != NULL ? domain : "-");
	sent.n++;
}

/* The domain to send d by now, NULL if none; held: fails the test. */
static const char *
route(struct quic_route *qr, uint16_t sport, const uint8_t *d, size_t n,
    uint64_t now, const char **found)
{
	struct quic_conv	 c = { AF_INET, app, srv, sport, 443 };
	const char		*domain;

	assert_int_equal(quic_route_datagram(qr, &c, d, n, now, 60000, 50,
	    &domain, found, on_send, NULL), 0);
	return domain;
}

/* 1 when held. */
static int
route_held(struct quic_route *qr, uint16_t sport, const uint8_t *d, size_t n,
    uint64_t now, const char **domain, const char **found)
{
	struct quic_conv c = { AF_INET, app, srv, sport, 443 };

	return quic_route_datagram(qr, &c, d, n, now, 60000, 50, domain,
	    found, on_send, NULL);
}

static void
test_conversation(void **state)
{
	static const uint8_t	 one_rtt[40] = { 0x40, 1, 2, 3 };
	struct quic_route	*qr;
	uint8_t			 hs[4096], dg[1500];
	const char		*d, *found;
	size_t			 hl, n;

	(void)state;
	assert_non_null(qr = quic_route_new());
	hl = hello("www.Example.com", hs);
	n = initial(0, 0, hs, hl, dg);
	d = route(qr, 5000, dg, n, 1000, &found);
	assert_non_null(d);
	assert_string_equal(d, "www.example.com");
	assert_ptr_equal(found, d);
	/* A 1-RTT datagram of the same conversation: the same name. */
	d = route(qr, 5000, one_rtt, sizeof(one_rtt), 2000, &found);
	assert_non_null(d);
	assert_string_equal(d, "www.example.com");
	assert_null(found);
	/* Another app port, not QUIC: no name, and it stays so. */
	assert_null(route(qr, 5001, one_rtt, sizeof(one_rtt), 2000, &found));
	assert_null(route(qr, 5001, dg, n, 2001, &found));
	assert_null(found);
	/* Idle past the timeout: a new conversation, by address. */
	assert_null(route(qr, 5000, one_rtt, sizeof(one_rtt), 70000, &found));
	quic_route_free(qr);
	quic_route_free(NULL);
}

static void
test_split(void **state)
{
	struct quic_route	*qr;
	uint8_t			 hs[4096], dg[1500], dg2[1500];
	const char		*found, *domain;
	size_t			 hl, n, n2;

	(void)state;
	assert_non_null(qr = quic_route_new());
	hl = hello("split.example.net", hs);
	/* The head (no extensions yet): held; the rest: both go, by name. */
	memset(&sent, 0, sizeof(sent));
	n = initial(0, 0, hs, 60, dg);
	assert_int_equal(route_held(qr, 6000, dg, n, 1, &domain, &found), 1);
	assert_int_equal(sent.n, 0);
	assert_int_equal(quic_route_expire(qr, 10, on_send, NULL), 51);
	n2 = initial(1, 60, hs, hl - 60, dg2);
	domain = route(qr, 6000, dg2, n2, 20, &found);
	assert_non_null(domain);
	assert_string_equal(domain, "split.example.net");
	assert_ptr_equal(found, domain);
	assert_int_equal(sent.n, 1);		/* the held one, first */
	assert_int_equal(sent.len[0], n);
	assert_string_equal(sent.domain[0], "split.example.net");
	assert_int_equal(quic_route_expire(qr, 100, on_send, NULL), 0);
	/* The second never comes: at the hold time, by address. */
	memset(&sent, 0, sizeof(sent));
	assert_int_equal(route_held(qr, 6001, dg, n, 1000, &domain, &found),
	    1);
	assert_int_equal(quic_route_expire(qr, 1049, on_send, NULL), 1050);
	assert_int_equal(sent.n, 0);
	assert_int_equal(quic_route_expire(qr, 1050, on_send, NULL), 0);
	assert_int_equal(sent.n, 1);
	assert_string_equal(sent.domain[0], "-");
	/* Its name, arriving late, is reported; it still routes by address. */
	assert_null(route(qr, 6001, dg2, n2, 1060, &found));
	assert_non_null(found);
	assert_string_equal(found, "split.example.net");
	quic_route_free(qr);
}

static void
test_full(void **state)
{
	struct quic_route	*qr;
	uint8_t			 hs[4096], dg[1500];
	const char		*found;
	size_t			 hl, n;
	unsigned		 i;

	(void)state;
	assert_non_null(qr = quic_route_new());
	hl = hello("lru.example", hs);
	n = initial(0, 0, hs, hl, dg);
	assert_non_null(route(qr, 1, dg, n, 10, &found));
	/* Fill the table with newer ones; conversation 1 is the oldest. */
	for (i = 2; i <= QUIC_ROUTE_MAX; i++)
		(void)route(qr, (uint16_t)i, dg, 10, 20 + i, &found);
	assert_non_null(route(qr, 1, dg + 1, 30, 5000, &found));
	/* One more: the least recently used (2, not 1) goes. */
	(void)route(qr, 60000, dg, 10, 6000, &found);
	assert_non_null(route(qr, 1, dg + 1, 30, 6001, &found));
	assert_null(found);				/* kept, known */
	/* 2 was forgotten: its Initial again is a new conversation. */
	assert_non_null(route(qr, 2, dg, n, 6002, &found));
	assert_non_null(found);
	quic_route_free(qr);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conversation),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_full),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
