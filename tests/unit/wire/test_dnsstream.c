/*
 * dnsstream: the framing of DNS over TCP/TLS (a 2-byte length) and over
 * HTTPS (HTTP/1.1 POST and its 200 with a Content-Length body): whole
 * messages taken, partial ones waited for, and what no honest server
 * sends refused -- lengths below a header or past DNSSTREAM_MSG_MAX, a
 * missing, doubled or bad Content-Length, chunked coding, a head past
 * DNSSTREAM_HEAD_MAX, a bad status line, bytes in the request's host or
 * path that would split it.
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

#include "wire/dnsstream.h"

static void
test_tcp(void **state)
{
	uint8_t		 in[2 + 40 + 2 + 12];
	const uint8_t	*m;
	size_t		 len, i;

	(void)state;
	memset(in, 0xab, sizeof(in));
	dnsstream_tcp_prefix(in, 40);
	dnsstream_tcp_prefix(in + 42, 12);
	assert_int_equal(dnsstream_tcp_parse(in, sizeof(in), &m, &len), 42);
	assert_ptr_equal(m, in + 2);
	assert_int_equal(len, 40);
	assert_int_equal(dnsstream_tcp_parse(in + 42, 14, &m, &len), 14);
	assert_int_equal(len, 12);
	/* Every strict prefix waits. */
	for (i = 0; i < 42; i++)
		assert_int_equal(dnsstream_tcp_parse(in, i, &m, &len), 0);
	/* Below a header, above the bound: refused at the prefix. */
	dnsstream_tcp_prefix(in, 11);
	assert_int_equal(dnsstream_tcp_parse(in, 2, &m, &len), -1);
	dnsstream_tcp_prefix(in, 0);
	assert_int_equal(dnsstream_tcp_parse(in, 2, &m, &len), -1);
	dnsstream_tcp_prefix(in, DNSSTREAM_MSG_MAX + 1);
	assert_int_equal(dnsstream_tcp_parse(in, 2, &m, &len), -1);
	in[0] = 0xff;
	in[1] = 0xff;
	assert_int_equal(dnsstream_tcp_parse(in, sizeof(in), &m, &len), -1);
}

static void
test_http_request(void **state)
{
	char	out[512];
	ssize_t	n;

	(void)state;
	n = dnsstream_http_request(out, sizeof(out), "dns.example",
	    "/dns-query", 33);
	assert_true(n > 0);
	assert_int_equal((size_t)n, strlen(out));
	assert_string_equal(out, "POST /dns-query HTTP/1.1\r\n"
	    "Host: dns.example\r\n"
	    "Content-Type: application/dns-message\r\n"
	    "Accept: application/dns-message\r\n"
	    "Content-Length: 33\r\n\r\n");
	assert_int_equal(dnsstream_http_request(out, sizeof(out),
	    "a\r\nX: y", "/q", 1), -1);
	assert_int_equal(dnsstream_http_request(out, sizeof(out), "a",
	    "/q x", 1), -1);
	assert_int_equal(dnsstream_http_request(out, sizeof(out), "a", "q",
	    1), -1);
	assert_int_equal(dnsstream_http_request(out, sizeof(out), "", "/q",
	    1), -1);
	assert_int_equal(dnsstream_http_request(out, 20, "a", "/q", 1), -1);
}

static ssize_t
parse(const char *s, size_t len, int *st, size_t *blen, int *close)
{
	const uint8_t	*m;

	return dnsstream_http_parse((const uint8_t *)s, len, st, &m, blen,
	    close);
}

static void
test_http_response(void **state)
{
	static const char ok[] = "HTTP/1.1 200 OK\r\n"
	    "content-type: application/dns-message\r\n"
	    "Content-Length:  12 \r\n\r\n0123456789ab" "HTTP/1.1 200";
	size_t	whole = strlen(ok) - strlen("HTTP/1.1 200"), blen, i;
	int	st = 0, close = 0;
	char	big[DNSSTREAM_HEAD_MAX + 64];

	(void)state;
	assert_int_equal(parse(ok, strlen(ok), &st, &blen, &close),
	    (ssize_t)whole);
	assert_int_equal(st, 200);
	assert_int_equal(blen, 12);
	assert_int_equal(close, 0);
	for (i = 0; i < whole; i++)
		assert_int_equal(parse(ok, i, &st, &blen, &close), 0);
	/* Status other than 200: still framed (the caller judges it). */
	assert_int_equal(parse("HTTP/1.1 502 Bad\r\nContent-Length: 0\r\n\r\n",
	    39, &st, &blen, &close), 39);
	assert_int_equal(st, 502);
	/* Connection: close, HTTP/1.0. */
	assert_true(parse("HTTP/1.1 200 OK\r\nConnection: close\r\n"
	    "Content-Length: 0\r\n\r\n", 57, &st, &blen, &close) > 0);
	assert_int_equal(close, 1);
	assert_true(parse("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", 38,
	    &st, &blen, &close) > 0);
	assert_int_equal(close, 1);
	/* Refused. */
#define BAD(s) assert_int_equal(parse(s, strlen(s), &st, &blen, &close), -1)
	BAD("HTTP/1.1 200 OK\r\n\r\n");				/* no length */
	BAD("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n"
	    "Content-Length: 1\r\n\r\nx");
	BAD("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n");
	BAD("HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n");
	BAD("HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n");
	BAD("HTTP/1.1 200 OK\r\nContent-Length: 70000\r\n\r\n");
	BAD("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n");
	BAD("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
	    "Content-Length: 1\r\n\r\nx");
	BAD("HTTP/2 200 OK\r\nContent-Length: 0\r\n\r\n");
	BAD("HTTP/1.1 20 OK\r\nContent-Length: 0\r\n\r\n");
	BAD("HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n\r\n");
	BAD("HTTP/1.1 200 OK\r\n\nContent-Length: 0\r\n\r\n");
	BAD("SSH-2.0-OpenSSH\r\n\r\n");
#undef BAD
	/* A head that never ends, or ends past the bound. */
	memset(big, 'a', sizeof(big));
	memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 20);
	assert_int_equal(parse(big, DNSSTREAM_HEAD_MAX, &st, &blen, &close),
	    0);
	assert_int_equal(parse(big, DNSSTREAM_HEAD_MAX + 1, &st, &blen,
	    &close), -1);
	memcpy(big + DNSSTREAM_HEAD_MAX, "\r\n\r\n", 4);
	assert_int_equal(parse(big, DNSSTREAM_HEAD_MAX + 4, &st, &blen,
	    &close), -1);
}

/* www.example A: 2 answers (one by a pointer), 1 authority, 1
 * additional, each compressed against the question. */
static const uint8_t REPLY[] = {
	0x12, 0x34, 0x81, 0x80, 0, 1, 0, 2, 0, 1, 0, 1,
	3, 'w', 'w', 'w', 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 0, 0, 1, 0, 1,
	0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 1, 0x2c, 0, 4, 10, 0, 0, 1,
	0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 1, 0x2c, 0, 4, 10, 0, 0, 2,
	0xc0, 0x10, 0, 2, 0, 1, 0, 0, 1, 0x2c, 0, 2, 0xc0, 0x0c,
	0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 1, 0x2c, 0, 4, 10, 0, 0, 3,
};

static void
test_strip(void **state)
{
	uint8_t	m[sizeof(REPLY)];
	size_t	i;

	(void)state;
	memcpy(m, REPLY, sizeof(m));
	/* Header, question (17), two answers (16 each). */
	assert_int_equal(dnsstream_strip(m, sizeof(m)), 12 + 17 + 32);
	assert_memory_equal(m, REPLY, 8);
	assert_int_equal(m[8] | m[9] | m[10] | m[11], 0);
	assert_memory_equal(m + 12, REPLY + 12, 17 + 32);
	/* Cut inside the answer section: malformed. */
	for (i = 0; i < 12 + 17 + 32; i++) {
		memcpy(m, REPLY, sizeof(m));
		assert_int_equal(dnsstream_strip(m, i), -1);
	}
	/* Two questions, a bad label type, an RDLENGTH past the end. */
	memcpy(m, REPLY, sizeof(m));
	m[5] = 2;
	assert_int_equal(dnsstream_strip(m, sizeof(m)), -1);
	memcpy(m, REPLY, sizeof(m));
	m[12] = 0x43;
	assert_int_equal(dnsstream_strip(m, sizeof(m)), -1);
	memcpy(m, REPLY, sizeof(m));
	m[12 + 17 + 11] = 0xff;
	assert_int_equal(dnsstream_strip(m, sizeof(m)), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tcp),
		cmocka_unit_test(test_http_request),
		cmocka_unit_test(test_http_response),
		cmocka_unit_test(test_strip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
