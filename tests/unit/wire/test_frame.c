/* frame: datagram frames of UDP and ICMP streams (vectors, truncated,
 * oversized and garbage input). */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/addr.h"
#include "wire/frame.h"

/*
 * Test vectors (doc/PROTOCOL.md quotes the first two).  Changing any byte
 * here is a wire format change.
 */
/* UDP datagram "abc" to 192.0.2.1:53 */
static const char VEC_V4[] = "0003" "01" "c0000201" "0035" "616263";
/* empty UDP datagram from [2001:db8::1]:443 */
static const char VEC_V6[] =
    "0000" "04" "20010db8000000000000000000000001" "01bb";
/* one byte to example.com:80 */
static const char VEC_DOM[] =
    "0001" "03" "0b" "6578616d706c652e636f6d" "0050" "ff";
/* ICMP echo, sequence 7, payload 00 01 02 03 to 198.51.100.7 */
static const char VEC_ICMP[] = "0004" "01" "c6336407" "0007" "00010203";

static size_t
unhex(const char *s, uint8_t *out, size_t outlen)
{
	size_t		n = strlen(s) / 2, i;
	unsigned	v;

	assert_true(n <= outlen);
	for (i = 0; i < n; i++) {
		assert_int_equal(sscanf(s + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
	return n;
}

static void
dest_v4(struct proto_dest *a, uint8_t a0, uint8_t a1, uint8_t a2, uint8_t a3,
    uint16_t port)
{
	uint8_t	ip[4] = { a0, a1, a2, a3 };

	frame_dest_from_ip(a, AF_INET, ip, port);
}

static void
test_encode_vectors(void **state)
{
	struct proto_dest	a;
	uint8_t			out[128], want[128];
	uint8_t			ip6[16] = { 0x20, 0x01, 0x0d, 0xb8,
	    [15] = 1 };
	size_t			n;
	ssize_t			r;

	(void)state;
	dest_v4(&a, 192, 0, 2, 1, 53);
	n = unhex(VEC_V4, want, sizeof(want));
	r = frame_encode(out, sizeof(out), &a, "abc", 3);
	assert_int_equal(r, n);
	assert_memory_equal(out, want, n);

	frame_dest_from_ip(&a, AF_INET6, ip6, 443);
	n = unhex(VEC_V6, want, sizeof(want));
	r = frame_encode(out, sizeof(out), &a, NULL, 0);
	assert_int_equal(r, n);
	assert_memory_equal(out, want, n);

	memset(&a, 0, sizeof(a));
	a.atyp = PROTO_ATYP_DOMAIN;
	strcpy(a.domain, "example.com");
	a.port = 80;
	n = unhex(VEC_DOM, want, sizeof(want));
	r = frame_encode(out, sizeof(out), &a, "\xff", 1);
	assert_int_equal(r, n);
	assert_memory_equal(out, want, n);

	dest_v4(&a, 198, 51, 100, 7, 7);
	n = unhex(VEC_ICMP, want, sizeof(want));
	r = frame_encode(out, sizeof(out), &a, "\x00\x01\x02\x03", 4);
	assert_int_equal(r, n);
	assert_memory_equal(out, want, n);
	assert_int_equal(frame_hdr_len(&a), FRAME_HDR_MIN);
}

/* The complete vector parses; every proper prefix asks for more. */
static void
check_vector(const char *hex, uint8_t atyp, uint16_t port, size_t plen)
{
	struct proto_dest	a;
	uint8_t			in[128];
	const uint8_t		*p;
	size_t			n, i, got;

	n = unhex(hex, in, sizeof(in));
	for (i = 0; i < n; i++)
		assert_int_equal(frame_parse(in, i, &a, &p, &got), 0);
	assert_int_equal(frame_parse(in, n, &a, &p, &got), n);
	assert_int_equal(a.atyp, atyp);
	assert_int_equal(a.port, port);
	assert_int_equal(got, plen);
	assert_ptr_equal(p, in + n - plen);
}

static void
test_parse_vectors(void **state)
{
	struct proto_dest	a;
	uint8_t			in[128];
	const uint8_t		*p;
	size_t			n, plen;

	(void)state;
	check_vector(VEC_V4, PROTO_ATYP_IPV4, 53, 3);
	check_vector(VEC_V6, PROTO_ATYP_IPV6, 443, 0);
	check_vector(VEC_DOM, PROTO_ATYP_DOMAIN, 80, 1);
	check_vector(VEC_ICMP, PROTO_ATYP_IPV4, 7, 4);

	n = unhex(VEC_DOM, in, sizeof(in));
	assert_int_equal(frame_parse(in, n, &a, &p, &plen), n);
	assert_string_equal(a.domain, "example.com");
	n = unhex(VEC_V4, in, sizeof(in));
	assert_int_equal(frame_parse(in, n, &a, &p, &plen), n);
	assert_memory_equal(a.ip, "\xc0\x00\x02\x01", 4);
	assert_memory_equal(p, "abc", 3);
}

/* Two frames back to back, then a partial third: one at a time. */
static void
test_parse_stream(void **state)
{
	struct proto_dest	a;
	uint8_t			in[256];
	const uint8_t		*p;
	size_t			n = 0, plen, off = 0;
	ssize_t			r;

	(void)state;
	n += unhex(VEC_V4, in + n, sizeof(in) - n);
	n += unhex(VEC_V6, in + n, sizeof(in) - n);
	n += unhex(VEC_ICMP, in + n, sizeof(in) - n) - 2;
	r = frame_parse(in + off, n - off, &a, &p, &plen);
	assert_int_equal(r, 12);
	off += (size_t)r;
	r = frame_parse(in + off, n - off, &a, &p, &plen);
	assert_int_equal(r, 21);
	assert_int_equal(a.atyp, PROTO_ATYP_IPV6);
	off += (size_t)r;
	assert_int_equal(frame_parse(in + off, n - off, &a, &p, &plen), 0);
}

static void
test_largest(void **state)
{
	struct proto_dest	a, b;
	uint8_t			*buf, *pl;
	const uint8_t		*p;
	size_t			plen, i;
	ssize_t			r;

	(void)state;
	assert_non_null(buf = malloc(FRAME_MAX));
	assert_non_null(pl = malloc(FRAME_PAYLOAD_MAX));
	for (i = 0; i < FRAME_PAYLOAD_MAX; i++)
		pl[i] = (uint8_t)(i * 7);
	dest_v4(&a, 203, 0, 113, 9, 65535);
	r = frame_encode(buf, FRAME_MAX, &a, pl, FRAME_PAYLOAD_MAX);
	assert_int_equal(r, FRAME_HDR_MIN + FRAME_PAYLOAD_MAX);
	assert_int_equal(frame_parse(buf, (size_t)r - 1, &b, &p, &plen), 0);
	assert_int_equal(frame_parse(buf, (size_t)r, &b, &p, &plen), r);
	assert_int_equal(plen, FRAME_PAYLOAD_MAX);
	assert_memory_equal(p, pl, FRAME_PAYLOAD_MAX);
	assert_int_equal(b.port, 65535);
	/* One byte more cannot be encoded. */
	assert_int_equal(frame_encode(buf, FRAME_MAX, &a, pl,
	    FRAME_PAYLOAD_MAX + 1), -1);
	free(buf);
	free(pl);
}

static void
test_oversized(void **state)
{
	struct proto_dest	a;
	uint8_t			in[8] = { 0xff, 0xf8 };
	const uint8_t		*p;
	size_t			plen;

	(void)state;
	/* 65528 is judged as soon as the length has arrived. */
	assert_int_equal(frame_parse(in, 1, &a, &p, &plen), 0);
	assert_int_equal(frame_parse(in, 2, &a, &p, &plen), -1);
	in[0] = 0xff;
	in[1] = 0xff;
	assert_int_equal(frame_parse(in, 2, &a, &p, &plen), -1);
	in[0] = 0xff;
	in[1] = 0xf7;		/* 65527: fine, needs its bytes */
	in[2] = PROTO_ATYP_IPV4;
	assert_int_equal(frame_parse(in, 8, &a, &p, &plen), 0);
}

static void
test_garbage(void **state)
{
	struct proto_dest	a;
	uint8_t			in[300];
	const uint8_t		*p;
	size_t			plen;
	int			i;

	(void)state;
	memset(in, 0, sizeof(in));
	/* Unknown address types, judged at the third byte. */
	in[2] = 0;
	assert_int_equal(frame_parse(in, 3, &a, &p, &plen), -1);
	in[2] = 2;
	assert_int_equal(frame_parse(in, 3, &a, &p, &plen), -1);
	in[2] = 5;
	assert_int_equal(frame_parse(in, 3, &a, &p, &plen), -1);
	/* Domain: empty name, NUL inside the name. */
	in[2] = PROTO_ATYP_DOMAIN;
	in[3] = 0;
	assert_int_equal(frame_parse(in, 3, &a, &p, &plen), 0);
	assert_int_equal(frame_parse(in, 4, &a, &p, &plen), -1);
	in[3] = 5;
	memcpy(in + 4, "ab\0de", 5);
	assert_int_equal(frame_parse(in, 6, &a, &p, &plen), 0);
	assert_int_equal(frame_parse(in, 7, &a, &p, &plen), -1);
	/* The longest name (255) parses. */
	in[3] = 255;
	memset(in + 4, 'x', 255);
	in[259] = 0;
	in[260] = 1;
	assert_int_equal(frame_parse(in, 261, &a, &p, &plen), 261);
	assert_int_equal(strlen(a.domain), 255);
	assert_int_equal(a.port, 1);
	/* Random bytes: never a length past the input, never a crash. */
	srand(4);
	for (i = 0; i < 100000; i++) {
		size_t	n = (size_t)(rand() % 40), j;
		ssize_t	r;

		for (j = 0; j < n; j++)
			in[j] = (uint8_t)rand();
		if (i & 1)
			in[0] = 0;	/* short payloads: complete frames too */
		r = frame_parse(in, n, &a, &p, &plen);
		assert_true(r >= -1 && r <= (ssize_t)n);
		if (r > 0)
			assert_true(p + plen == in + r);
	}
}

static void
test_encode_errors(void **state)
{
	struct proto_dest	a;
	uint8_t			out[64];

	(void)state;
	dest_v4(&a, 192, 0, 2, 1, 53);
	/* Too small for header, or for header + payload. */
	assert_int_equal(frame_encode(out, 8, &a, "x", 1), -1);
	assert_int_equal(frame_encode(out, 9, &a, "x", 1), -1);
	assert_int_equal(frame_encode(out, 10, &a, "x", 1), 10);
	assert_int_equal(frame_encode_hdr(out, 9, &a, 1000), 9);
	/* Unknown address type, empty domain. */
	a.atyp = 7;
	assert_int_equal(frame_hdr_len(&a), 0);
	assert_int_equal(frame_encode(out, sizeof(out), &a, NULL, 0), -1);
	memset(&a, 0, sizeof(a));
	a.atyp = PROTO_ATYP_DOMAIN;
	assert_int_equal(frame_encode(out, sizeof(out), &a, NULL, 0), -1);
}

static void
test_addr_conv(void **state)
{
	struct proto_dest	a;
	struct addr		sa, back;
	char			buf[ADDR_STRLEN];

	(void)state;
	assert_int_equal(addr_parse(&sa, "[2001:db8::5]:5353"), 0);
	frame_dest_from_addr(&a, &sa);
	assert_int_equal(a.atyp, PROTO_ATYP_IPV6);
	assert_int_equal(a.port, 5353);
	assert_int_equal(frame_dest_to_addr(&a, &back), 0);
	assert_true(addr_eq(&sa, &back));
	assert_int_equal(addr_parse(&sa, "192.0.2.9:7"), 0);
	frame_dest_from_addr(&a, &sa);
	assert_int_equal(frame_dest_to_addr(&a, &back), 0);
	assert_string_equal(addr_fmt(&back, buf, sizeof(buf)), "192.0.2.9:7");
	a.atyp = PROTO_ATYP_DOMAIN;
	assert_int_equal(frame_dest_to_addr(&a, &back), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encode_vectors),
		cmocka_unit_test(test_parse_vectors),
		cmocka_unit_test(test_parse_stream),
		cmocka_unit_test(test_largest),
		cmocka_unit_test(test_oversized),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_encode_errors),
		cmocka_unit_test(test_addr_conv),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
