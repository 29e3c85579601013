/*
 * sniff: domain recovery from first bytes.  TLS: real ClientHellos made
 * by OpenSSL's client into a memory BIO, with and without SNI, cut at
 * every byte and re-framed into two and three records at every byte.
 * HTTP: request heads by hand.  QUIC: the RFC 9001 Appendix A key
 * schedule and header-protection mask, then Initials made by the
 * test encoder (quicenc.c) around the same OpenSSL hellos: frames out
 * of order, padding, PING and ACK between them, a hello over two
 * datagrams, v2, tampering.
 */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <openssl/bio.h>
#include <openssl/ssl.h>

#include "tests/unit/quicenc.h"
#include "wire/sniff.h"

static size_t
unhex(const char *s, uint8_t *out)
{
	size_t	 n = strlen(s) / 2, i;
	unsigned v;

	for (i = 0; i < n; i++) {
		assert_int_equal(sscanf(s + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
	return n;
}

/* The records OpenSSL's client writes first, SNI name or none. */
static size_t
make_hello(const char *sni, uint8_t *out, size_t outlen)
{
	SSL_CTX	*ctx;
	SSL	*ssl;
	BIO	*rb, *wb;
	int	 n;

	assert_non_null(ctx = SSL_CTX_new(TLS_client_method()));
	assert_non_null(ssl = SSL_new(ctx));
	assert_non_null(rb = BIO_new(BIO_s_mem()));
	assert_non_null(wb = BIO_new(BIO_s_mem()));
	SSL_set_bio(ssl, rb, wb);
	if (sni != NULL)
		assert_int_equal(SSL_set_tlsext_host_name(ssl, sni), 1);
	assert_int_equal(SSL_connect(ssl), -1);
	n = BIO_read(wb, out, (int)outlen);
	assert_true(n > 5 && (size_t)n < outlen);
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	return (size_t)n;
}

/* The hello's handshake bytes (one record from OpenSSL). */
static size_t
hello_body(const uint8_t *rec, size_t n, uint8_t *hs)
{
	size_t rlen = (size_t)rec[3] << 8 | rec[4];

	assert_int_equal(rec[0], 22);
	assert_int_equal(5 + rlen, n);
	memcpy(hs, rec + 5, rlen);
	return rlen;
}

/* hs re-framed into records cut at the offsets in cuts (ascending). */
static size_t
reframe(const uint8_t *hs, size_t n, const size_t *cuts, size_t ncuts,
    uint8_t *out)
{
	size_t	o = 0, from = 0, i, to;

	for (i = 0; i <= ncuts; i++) {
		to = i < ncuts ? cuts[i] : n;
		out[o++] = 22;
		out[o++] = 3;
		out[o++] = 1;
		out[o++] = (uint8_t)((to - from) >> 8);
		out[o++] = (uint8_t)(to - from);
		memcpy(out + o, hs + from, to - from);
		o += to - from;
		from = to;
	}
	return o;
}

/* ---- names --------------------------------------------------------------- */

static void
test_names(void **state)
{
	static const struct { const char *in, *out; } cases[] = {
		{ "example.com", "example.com" },
		{ "WWW.Example.COM.", "www.example.com" },
		{ "a-b.c1", "a-b.c1" },
		{ "x", "x" },
		{ "1.2.3.4", NULL },
		{ "[::1]", NULL },
		{ "-a.com", NULL },
		{ "a-.com", NULL },
		{ "a..com", NULL },
		{ ".a.com", NULL },
		{ "a.com..", NULL },
		{ "", NULL },
		{ ".", NULL },
		{ "a_b.com", NULL },
		{ "a b.com", NULL },
		{ "exa\xc3\xa9mple.com", NULL },
	};
	char	out[SNIFF_NAME_MAX + 1], big[300];
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int ok = sniff_name_ok((const uint8_t *)cases[i].in,
		    strlen(cases[i].in), out, sizeof(out));

		assert_int_equal(ok, cases[i].out != NULL);
		if (ok)
			assert_string_equal(out, cases[i].out);
	}
	/* 63-byte labels pass, 64 do not; 253 bytes pass, 254 do not. */
	memset(big, 'a', 64);
	assert_true(sniff_name_ok((uint8_t *)big, 63, out, sizeof(out)));
	assert_false(sniff_name_ok((uint8_t *)big, 64, out, sizeof(out)));
	for (i = 0; i < 254; i++)
		big[i] = i % 50 == 49 ? '.' : 'a';
	assert_true(sniff_name_ok((uint8_t *)big, 253, out, sizeof(out)));
	assert_int_equal(strlen(out), 253);
	assert_false(sniff_name_ok((uint8_t *)big, 254, out, sizeof(out)));
	assert_false(sniff_name_ok((const uint8_t *)"a.com", 5, out, SNIFF_NAME_MAX));
}

/* ---- TLS ----------------------------------------------------------------- */

static void
test_tls_every_prefix(void **state)
{
	uint8_t		rec[4096];
	char		out[SNIFF_NAME_MAX + 1];
	size_t		n, l, found_at = 0;
	enum sniff_res	r;

	(void)state;
	n = make_hello("Www.Example.COM", rec, sizeof(rec));
	for (l = 0; l <= n; l++) {
		uint8_t *cut = malloc(l + 1);	/* exact size for ASan */

		memcpy(cut, rec, l);
		r = sniff_tls_sni(cut, l, out, sizeof(out));
		free(cut);
		if (r == SNIFF_FOUND) {
			if (found_at == 0)
				found_at = l;
			assert_string_equal(out, "www.example.com");
		} else {
			assert_int_equal(r, SNIFF_MORE);
			assert_int_equal(found_at, 0);
		}
	}
	assert_true(found_at > 5 && found_at <= n);
	/* The verdict does not change with bytes after the hello. */
	memcpy(rec + n, "\x17\x03\x03\x00\x01\x00", 6);
	assert_int_equal(sniff_tls_sni(rec, n + 6, out, sizeof(out)),
	    SNIFF_FOUND);
	assert_int_equal(sniff_tls_sni(rec, n, out, SNIFF_NAME_MAX),
	    SNIFF_NOT);
}

static void
test_tls_no_sni(void **state)
{
	uint8_t	rec[4096];
	char	out[SNIFF_NAME_MAX + 1];
	size_t		n, l, none_at = 0;
	enum sniff_res	r;

	(void)state;
	n = make_hello(NULL, rec, sizeof(rec));
	/* "No SNI" as soon as the last extension's header has come. */
	for (l = 0; l < n; l++) {
		r = sniff_tls_sni(rec, l, out, sizeof(out));
		if (none_at > 0)
			assert_int_equal(r, SNIFF_NONE);
		else if (r == SNIFF_NONE)
			none_at = l;
		else
			assert_int_equal(r, SNIFF_MORE);
	}
	assert_true(none_at > 0);
	assert_int_equal(sniff_tls_sni(rec, n, out, sizeof(out)), SNIFF_NONE);
	/* An IP literal in SNI (RFC 6066 forbids it) is no name. */
	n = make_hello("192.0.2.1", rec, sizeof(rec));
	assert_int_equal(sniff_tls_sni(rec, n, out, sizeof(out)), SNIFF_NONE);
}

static void
test_tls_split_records(void **state)
{
	uint8_t		rec[4096], hs[4096], re[4200];
	char		out[SNIFF_NAME_MAX + 1];
	size_t		n, hl, a, b, m, cuts[2];

	(void)state;
	n = make_hello("split.example.org", rec, sizeof(rec));
	hl = hello_body(rec, n, hs);
	for (a = 1; a < hl; a++) {
		cuts[0] = a;
		m = reframe(hs, hl, cuts, 1, re);
		assert_int_equal(sniff_tls_sni(re, m, out, sizeof(out)),
		    SNIFF_FOUND);
		assert_string_equal(out, "split.example.org");
		/* Only the first record: need more, or found already. */
		assert_true(sniff_tls_sni(re, 5 + a, out, sizeof(out)) >=
		    SNIFF_MORE);
	}
	for (a = 1; a < hl; a += 7)
		for (b = a + 1; b < hl; b += 5) {
			cuts[0] = a;
			cuts[1] = b;
			m = reframe(hs, hl, cuts, 2, re);
			assert_int_equal(sniff_tls_sni(re, m, out,
			    sizeof(out)), SNIFF_FOUND);
			assert_string_equal(out, "split.example.org");
		}
}

static void
test_tls_hostile(void **state)
{
	uint8_t		rec[4096], bad[4096];
	char		out[SNIFF_NAME_MAX + 1];
	size_t		n, i, j;
	enum sniff_res	r;

	(void)state;
	n = make_hello("hostile.example", rec, sizeof(rec));
	/* Not TLS from the first byte; a bad record version. */
	assert_int_equal(sniff_tls_sni((const uint8_t *)"GET /", 5, out,
	    sizeof(out)), SNIFF_NOT);
	assert_int_equal(sniff_tls_sni((const uint8_t *)"\x16\x02", 2, out,
	    sizeof(out)), SNIFF_NOT);
	assert_int_equal(sniff_tls_sni((const uint8_t *)"\x16\x03\x01\x00\x00",
	    5, out, sizeof(out)), SNIFF_NOT);
	assert_int_equal(sniff_tls_sni((const uint8_t *)"\x16\x03\x01\x40\x01",
	    5, out, sizeof(out)), SNIFF_NOT);
	/* A ServerHello is no ClientHello. */
	memcpy(bad, rec, n);
	bad[5] = 2;
	assert_int_equal(sniff_tls_sni(bad, n, out, sizeof(out)), SNIFF_NOT);
	/* Every single-byte change of every length-ish byte: never a read
	 * past the end (ASan), never a name other than the real one unless
	 * the change was inside the name. */
	for (i = 0; i < n; i++)
		for (j = 0; j < 3; j++) {
			static const uint8_t v[3] = { 0x00, 0xff, 0x80 };

			memcpy(bad, rec, n);
			bad[i] = v[j];
			r = sniff_tls_sni(bad, n, out, sizeof(out));
			if (r == SNIFF_FOUND && strcmp(out, "hostile.example"))
				assert_int_equal(strlen(out), 15);
		}
	/* An oversize name (254 bytes, labels of 59) is no name. */
	{
		char	name[255];

		for (i = 0; i < 254; i++)
			name[i] = i % 60 == 59 ? '.' : 'a';
		name[254] = '\0';
		n = make_hello(name, rec, sizeof(rec));
		assert_int_equal(sniff_tls_sni(rec, n, out, sizeof(out)),
		    SNIFF_NONE);
	}
}

/* ---- HTTP ---------------------------------------------------------------- */

static void
test_http(void **state)
{
	static const struct {
		const char	*in;
		enum sniff_res	 r;
		const char	*name;
	} cases[] = {
		{ "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n", SNIFF_FOUND,
		    "example.com" },
		{ "GET / HTTP/1.1\r\nUser-Agent: x\r\nhOsT:\tWWW.a.net:8080 \r\n",
		    SNIFF_FOUND, "www.a.net" },
		{ "POST /x?y HTTP/1.0\nHost: b.org\n\n", SNIFF_FOUND, "b.org" },
		{ "GET http://c.com/ HTTP/1.1\r\nHost: c.com\r\n", SNIFF_FOUND,
		    "c.com" },
		{ "GET / HTTP/1.1\r\nHost: [2001:db8::1]:80\r\n\r\n",
		    SNIFF_NONE, NULL },
		{ "GET / HTTP/1.1\r\nHost: 192.0.2.1\r\n\r\n", SNIFF_NONE,
		    NULL },
		{ "GET / HTTP/1.1\r\nHost: a.com:8x\r\n\r\n", SNIFF_NONE, NULL },
		{ "GET / HTTP/1.1\r\nHost: \r\n\r\n", SNIFF_NONE, NULL },
		{ "GET / HTTP/1.1\r\nX: y\r\n\r\nHost: late.com\r\n",
		    SNIFF_NONE, NULL },
		{ "GET / HTTP/1.1\r\nX-Host: no.com\r\n", SNIFF_MORE, NULL },
		{ "GET / HTTP/1.1\r\nHost: exam", SNIFF_MORE, NULL },
		{ "GET / HTTP/1.1\r\n", SNIFF_MORE, NULL },
		{ "GET / HTTP/1.", SNIFF_MORE, NULL },
		{ "G", SNIFF_MORE, NULL },
		{ "", SNIFF_MORE, NULL },
		{ "get / HTTP/1.1\r\n", SNIFF_NOT, NULL },
		{ "GET / HTTP/2.0\r\n", SNIFF_NOT, NULL },
		{ "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", SNIFF_NOT, NULL },
		{ "SSH-2.0-OpenSSH_9.2\r\n", SNIFF_NOT, NULL },
		{ "GET / HTTP/1.1\r\nBad Header: x\r\n", SNIFF_NOT, NULL },
		{ "\x16\x03\x01", SNIFF_NOT, NULL },
	};
	char	out[SNIFF_NAME_MAX + 1];
	uint8_t	big[SNIFF_HTTP_MAX + 64];
	size_t	i, k;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum sniff_res r = sniff_http_host(
		    (const uint8_t *)cases[i].in, strlen(cases[i].in), out,
		    sizeof(out));

		if (r != cases[i].r)
			fail_msg("case %zu: %d, want %d", i, r, cases[i].r);
		if (r == SNIFF_FOUND)
			assert_string_equal(out, cases[i].name);
	}
	/* Past the bound without a Host: give up. */
	k = (size_t)snprintf((char *)big, sizeof(big), "GET / HTTP/1.1\r\n");
	while (k < SNIFF_HTTP_MAX + 10) {
		memcpy(big + k, "X-Pad: aaaaaaaa\r\n", 17);
		k += 17;
	}
	assert_int_equal(sniff_http_host(big, SNIFF_HTTP_MAX - 1, out,
	    sizeof(out)), SNIFF_MORE);
	assert_int_equal(sniff_http_host(big, k, out, sizeof(out)),
	    SNIFF_NONE);
}

static void
test_stream(void **state)
{
	uint8_t		 rec[4096];
	char		 out[SNIFF_NAME_MAX + 1];
	const char	*kind;
	size_t		 n;

	(void)state;
	n = make_hello("tls.example", rec, sizeof(rec));
	assert_int_equal(sniff_stream(rec, n, out, sizeof(out), &kind),
	    SNIFF_FOUND);
	assert_string_equal(kind, "tls");
	assert_string_equal(out, "tls.example");
	assert_int_equal(sniff_stream((const uint8_t *)
	    "HEAD / HTTP/1.1\r\nHost: h.example\r\n", 34, out, sizeof(out),
	    &kind), SNIFF_FOUND);
	assert_string_equal(kind, "http");
	assert_string_equal(out, "h.example");
	assert_int_equal(sniff_stream((const uint8_t *)"SSH-2.0-x\r\n", 11,
	    out, sizeof(out), &kind), SNIFF_NOT);
	assert_null(kind);
	assert_int_equal(sniff_stream(rec, 3, out, sizeof(out), &kind),
	    SNIFF_MORE);
	assert_int_equal(sniff_stream(NULL, 0, out, sizeof(out), &kind),
	    SNIFF_MORE);
}

/* ---- QUIC ---------------------------------------------------------------- */

static void
test_quic_rfc9001_keys(void **state)
{
	uint8_t	dcid[8], key[16], iv[12], hp[16], want[16], sample[16],
		mask[16];

	(void)state;
	/* RFC 9001 A.1 */
	unhex("8394c8f03e515708", dcid);
	assert_int_equal(sniff_quic_keys(SNIFF_QUIC_V1, dcid, 8, key, iv, hp),
	    0);
	unhex("1f369613dd76d5467730efcbe3b1a22d", want);
	assert_memory_equal(key, want, 16);
	unhex("fa044b2f42a3fd3b46fb255c", want);
	assert_memory_equal(iv, want, 12);
	unhex("9f50449e04a0e810283a1e9933adedd2", want);
	assert_memory_equal(hp, want, 16);
	/* RFC 9001 A.2: the sample and the mask it gives. */
	unhex("d1b1c98dd7689fb8ec11d242b123dc9b", sample);
	assert_int_equal(sniff_quic_hp_mask(hp, sample, mask), 0);
	unhex("437b9aec36", want);
	assert_memory_equal(mask, want, 5);
	assert_int_equal(sniff_quic_keys(0xff00001d, dcid, 8, key, iv, hp),
	    -1);
}

/* A client Initial datagram around frames, padded to 1200 bytes. */
static size_t
quic_dgram(uint32_t version, uint32_t pn, const uint8_t *frames, size_t fl,
    uint8_t *out, size_t outlen)
{
	static const uint8_t dcid[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	uint8_t	 pad[2048];
	size_t	 n;

	assert_true(fl <= sizeof(pad));
	memset(pad, 0, sizeof(pad));
	memcpy(pad, frames, fl);
	if (fl < 1200 - 40)
		fl = 1200 - 40;
	n = quicenc_initial(version, dcid, sizeof(dcid), pn, pad, fl, out,
	    outlen);
	assert_true(n > 0);
	return n;
}

static void
test_quic_one_datagram(void **state)
{
	uint8_t		rec[4096], hs[4096], fr[4096], dg[4096];
	char		out[SNIFF_NAME_MAX + 1];
	size_t		n, hl, f = 0, half, d, l;
	uint32_t	v;

	(void)state;
	n = make_hello("quic.example.net", rec, sizeof(rec));
	hl = hello_body(rec, n, hs);
	half = hl / 2;
	for (v = 0; v < 2; v++) {
		uint32_t version = v ? SNIFF_QUIC_V2 : SNIFF_QUIC_V1;

		/* Second half first, PING, ACK, PADDING, then the first. */
		f = quicenc_crypto(fr, (uint32_t)half, hs + half, hl - half);
		fr[f++] = 0x01;
		memcpy(fr + f, "\x02\x05\x00\x01\x01\x02\x00", 7);
		f += 7;
		fr[f++] = 0x00;
		f += quicenc_crypto(fr + f, 0, hs, half);
		d = quic_dgram(version, 0, fr, f, dg, sizeof(dg));
		assert_true(d >= 1200);
		assert_int_equal(sniff_quic_sni(dg, d, out, sizeof(out)),
		    SNIFF_FOUND);
		assert_string_equal(out, "quic.example.net");
		/* Cut short: never found, never a crash. */
		for (l = 0; l < d; l += 13)
			assert_int_not_equal(sniff_quic_sni(dg, l, out,
			    sizeof(out)), SNIFF_FOUND);
		/* Tampered: the AEAD says no. */
		dg[d - 1] ^= 1;
		assert_true(sniff_quic_sni(dg, d, out, sizeof(out)) < 0);
		dg[d - 1] ^= 1;
		dg[40] ^= 0x10;
		assert_true(sniff_quic_sni(dg, d, out, sizeof(out)) < 0);
	}
	/* Not QUIC: TLS, a short header, another version. */
	assert_int_equal(sniff_quic_sni(rec, n, out, sizeof(out)), SNIFF_NOT);
	dg[0] = 0x40;
	assert_int_equal(sniff_quic_sni(dg, d, out, sizeof(out)), SNIFF_NOT);
	dg[0] = 0xc0;
	dg[4] = 0x1d;
	assert_int_equal(sniff_quic_sni(dg, d, out, sizeof(out)), SNIFF_NOT);
	/* A hello without SNI. */
	n = make_hello(NULL, rec, sizeof(rec));
	hl = hello_body(rec, n, hs);
	f = quicenc_crypto(fr, 0, hs, hl);
	d = quic_dgram(SNIFF_QUIC_V1, 0, fr, f, dg, sizeof(dg));
	assert_int_equal(sniff_quic_sni(dg, d, out, sizeof(out)), SNIFF_NONE);
}

static void
test_quic_two_datagrams(void **state)
{
	uint8_t			 rec[4096], hs[4096], fr[4096], dg[4096];
	char			 out[SNIFF_NAME_MAX + 1];
	struct sniff_quic	*q;
	size_t			 n, hl, f, d, cut;

	(void)state;
	n = make_hello("two.example.com", rec, sizeof(rec));
	hl = hello_body(rec, n, hs);
	/* The hello's first bytes (up to before the extensions) first. */
	cut = 40;
	assert_non_null(q = sniff_quic_new());
	f = quicenc_crypto(fr, 0, hs, cut);
	d = quic_dgram(SNIFF_QUIC_V1, 0, fr, f, dg, sizeof(dg));
	assert_int_equal(sniff_quic_feed(q, dg, d, out, sizeof(out)),
	    SNIFF_MORE);
	f = quicenc_crypto(fr, (uint32_t)cut, hs + cut, hl - cut);
	d = quic_dgram(SNIFF_QUIC_V1, 1, fr, f, dg, sizeof(dg));
	assert_int_equal(sniff_quic_feed(q, dg, d, out, sizeof(out)),
	    SNIFF_FOUND);
	assert_string_equal(out, "two.example.com");
	sniff_quic_free(q);
	/* The tail first, then the head. */
	assert_non_null(q = sniff_quic_new());
	f = quicenc_crypto(fr, (uint32_t)cut, hs + cut, hl - cut);
	d = quic_dgram(SNIFF_QUIC_V1, 0, fr, f, dg, sizeof(dg));
	assert_int_equal(sniff_quic_feed(q, dg, d, out, sizeof(out)),
	    SNIFF_MORE);
	f = quicenc_crypto(fr, 0, hs, cut);
	d = quic_dgram(SNIFF_QUIC_V1, 1, fr, f, dg, sizeof(dg));
	assert_int_equal(sniff_quic_feed(q, dg, d, out, sizeof(out)),
	    SNIFF_FOUND);
	sniff_quic_free(q);
	sniff_quic_free(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_tls_every_prefix),
		cmocka_unit_test(test_tls_no_sni),
		cmocka_unit_test(test_tls_split_records),
		cmocka_unit_test(test_tls_hostile),
		cmocka_unit_test(test_http),
		cmocka_unit_test(test_stream),
		cmocka_unit_test(test_quic_rfc9001_keys),
		cmocka_unit_test(test_quic_one_datagram),
		cmocka_unit_test(test_quic_two_datagrams),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
