/*
 * dns: queries parsed (names, compression, EDNS) and hostile ones
 * refused -- pointer loops, forward pointers, over-long names and labels,
 * counts the bytes cannot hold -- and answers built byte for byte, the
 * vectors written out by hand from RFC 1035's and RFC 6891's layouts.
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

#include "wire/dns.h"

static size_t
unhex(const char *s, uint8_t *out)
{
	size_t	 n = 0;
	unsigned v;

	while (*s != '\0') {
		if (*s == ' ') {
			s++;
			continue;
		}
		assert_int_equal(sscanf(s, "%2x", &v), 1);
		out[n++] = (uint8_t)v;
		s += 2;
	}
	return n;
}

/* id 0x1234, RD, one question, no other records */
#define HDR_Q1		"1234 0100 0001 0000 0000 0000"
#define HDR_Q1_AR1	"1234 0100 0001 0000 0000 0001"
#define NAME_EXAMPLE	"07 4578616d706c65 03 434f4d 00"	/* Example.COM */
#define OPT_4096	"00 0029 1000 00 00 8000 0000"	/* DO set */

static void
test_parse_plain(void **state)
{
	uint8_t m[512];
	struct dns_query q;
	size_t n;

	(void)state;
	n = unhex(HDR_Q1 NAME_EXAMPLE "0001 0001", m);
	assert_int_equal(dns_query_parse(m, n, &q), 0);
	assert_int_equal(q.id, 0x1234);
	assert_int_equal(q.flags, 0x0100);
	assert_int_equal(q.qtype, DNS_TYPE_A);
	assert_int_equal(q.qclass, DNS_CLASS_IN);
	assert_string_equal(q.name, "example.com");
	assert_true(q.plain);
	assert_false(q.has_opt);
	assert_int_equal(q.qname_len, 13);
	assert_memory_equal(q.qname, m + 12, 13);	/* case kept on wire */
	/* Every shorter prefix is refused, never read past. */
	for (size_t l = 0; l < n; l++)
		assert_int_equal(dns_query_parse(m, l, &q), -1);
	/* A byte too many is refused too. */
	m[n] = 0;
	assert_int_equal(dns_query_parse(m, n + 1, &q), -1);
}

static void
test_parse_opt(void **state)
{
	uint8_t m[512];
	struct dns_query q;
	size_t n;

	(void)state;
	n = unhex(HDR_Q1_AR1 NAME_EXAMPLE "001c 0001" OPT_4096, m);
	assert_int_equal(dns_query_parse(m, n, &q), 0);
	assert_int_equal(q.qtype, DNS_TYPE_AAAA);
	assert_true(q.has_opt);
	assert_int_equal(q.opt_size, 4096);
	assert_int_equal(q.opt_version, 0);
	assert_true(q.opt_do);
	/* An option in the OPT's RDATA (cookie, 8 bytes) is skipped. */
	n = unhex(HDR_Q1_AR1 NAME_EXAMPLE "0001 0001"
	    "00 0029 04d0 00 01 0000 000c 000a 0008 0102030405060708", m);
	assert_int_equal(dns_query_parse(m, n, &q), 0);
	assert_int_equal(q.opt_version, 1);
	assert_int_equal(q.opt_size, 1232);
	/* Two OPT records: FORMERR (RFC 6891 6.1.1). */
	n = unhex("1234 0100 0001 0000 0000 0002" NAME_EXAMPLE "0001 0001"
	    OPT_4096 OPT_4096, m);
	assert_int_equal(dns_query_parse(m, n, &q), -1);
	/* An OPT not named root. */
	n = unhex(HDR_Q1_AR1 NAME_EXAMPLE "0001 0001"
	    "c00c 0029 1000 00 00 0000 0000", m);
	assert_int_equal(dns_query_parse(m, n, &q), -1);
	/* An OPT in the answer section. */
	n = unhex("1234 0100 0001 0001 0000 0000" NAME_EXAMPLE "0001 0001"
	    OPT_4096, m);
	assert_int_equal(dns_query_parse(m, n, &q), -1);
	/* Another additional record (a TSIG stand-in) is skipped. */
	n = unhex(HDR_Q1_AR1 NAME_EXAMPLE "0001 0001"
	    "c00c 00fa 00ff 00000000 0002 abcd", m);
	assert_int_equal(dns_query_parse(m, n, &q), 0);
	assert_false(q.has_opt);
}

static void
test_parse_refused(void **state)
{
	uint8_t m[1024];
	struct dns_query q;
	size_t n, i;

	(void)state;
	/* A response (QR), two questions, none. */
	n = unhex("1234 8100 0001 0000 0000 0000" NAME_EXAMPLE "0001 0001", m);
	assert_int_equal(dns_query_parse(m, n, &q), -1);
	n = unhex("1234 0100 0002 0000 0000 0000" NAME_EXAMPLE "0001 0001"
	    NAME_EXAMPLE "0001 0001", m);
	assert_int_equal(dns_query_parse(m, n, &q), -1);
	n = unhex("1234 0100 0000 0000 0000 0000", m);
	assert_int_equal(dns_query_parse(m, n, &q), -1);
	/* Counts the bytes cannot hold. */
	n = unhex("1234 0100 0001 ffff ffff ffff" NAME_EXAMPLE "0001 0001", m);
	assert_int_equal(dns_query_parse(m, n, &q), -1);
	/* A pointer to itself, one forward, one into the header. */
	n = unhex(HDR_Q1 "c00c 0001 0001", m);
	assert_int_equal(dns_query_parse(m, n, &q), -1);
	n = unhex(HDR_Q1 "c00e 00 0001 0001", m);
	assert_int_equal(dns_query_parse(m, n, &q), -1);
	n = unhex(HDR_Q1 "c002 0001 0001", m);
	assert_int_equal(dns_query_parse(m, n, &q), -1);
	/* A loop through two records: the second points back to the
	 * first, whose name points forward into the second. */
	n = unhex(HDR_Q1_AR1 "01 61 c015 0001 0001 c00c 0001 0001 00000000 0000",
	    m);
	assert_int_equal(dns_query_parse(m, n, &q), -1);
	/* Label types 0x40 and 0x80. */
	n = unhex(HDR_Q1 "41 00 0001 0001", m);
	assert_int_equal(dns_query_parse(m, n, &q), -1);
	n = unhex(HDR_Q1 "81 00 0001 0001", m);
	assert_int_equal(dns_query_parse(m, n, &q), -1);
	/* A name of 256 bytes: 4 labels of 63 and one of 2 (4 * 64 + 3 +
	 * root = 260) is too long; of 255 (3 * 64 + 61 + 1 + 1) fits. */
	n = unhex(HDR_Q1, m);
	for (i = 0; i < 4; i++) {
		m[n++] = 63;
		memset(m + n, 'a', 63);
		n += 63;
	}
	m[n++] = 2;
	m[n++] = 'b';
	m[n++] = 'b';
	m[n++] = 0;
	n += unhex("0001 0001", m + n);
	assert_int_equal(dns_query_parse(m, n, &q), -1);
	n = unhex(HDR_Q1, m);
	for (i = 0; i < 3; i++) {
		m[n++] = 63;
		memset(m + n, 'a', 63);
		n += 63;
	}
	m[n++] = 61;
	memset(m + n, 'c', 61);
	n += 61;
	m[n++] = 0;
	n += unhex("0001 0001", m + n);
	assert_int_equal(dns_query_parse(m, n, &q), 0);
	assert_int_equal(q.qname_len, 255);
	assert_int_equal(strlen(q.name), 253);
	assert_true(q.plain);
}

static void
test_parse_names(void **state)
{
	uint8_t m[512];
	struct dns_query q;
	size_t n;

	(void)state;
	/* A dot and a NUL inside labels: not plain, never mistaken. */
	n = unhex(HDR_Q1 "03 612e62 03 636f6d 00 0001 0001", m);
	assert_int_equal(dns_query_parse(m, n, &q), 0);
	assert_false(q.plain);
	assert_string_equal(q.name, "a?b.com");
	n = unhex(HDR_Q1 "03 610062 00 0001 0001", m);
	assert_int_equal(dns_query_parse(m, n, &q), 0);
	assert_false(q.plain);
	/* The root: parsed, not a host name. */
	n = unhex(HDR_Q1 "00 0002 0001", m);
	assert_int_equal(dns_query_parse(m, n, &q), 0);
	assert_string_equal(q.name, "");
	assert_false(q.plain);
	/* _service and digits are plain. */
	n = unhex(HDR_Q1 "04 5f736970 01 37 00 0021 0001", m);
	assert_int_equal(dns_query_parse(m, n, &q), 0);
	assert_true(q.plain);
	assert_string_equal(q.name, "_sip.7");
	/* A record after the question may point back into it. */
	n = unhex(HDR_Q1_AR1 NAME_EXAMPLE "0001 0001"
	    "03 777777 c00c 0001 0001 00000000 0004 01020304", m);
	assert_int_equal(dns_query_parse(m, n, &q), 0);
}

static void
test_answer(void **state)
{
	uint8_t m[512], out[DNS_ANSWER_MAX], want[512];
	static const uint8_t a4[4] = { 198, 19, 0, 7 };
	uint8_t a6[16];
	struct dns_query q;
	size_t n, w;
	ssize_t r;

	(void)state;
	n = unhex(HDR_Q1 NAME_EXAMPLE "0001 0001", m);
	assert_int_equal(dns_query_parse(m, n, &q), 0);
	r = dns_answer(out, sizeof(out), &q, DNS_NOERROR, a4, 4, 1);
	w = unhex("1234 8180 0001 0001 0000 0000" NAME_EXAMPLE "0001 0001"
	    "c00c 0001 0001 00000001 0004 c6130007", want);
	assert_int_equal(r, (ssize_t)w);
	assert_memory_equal(out, want, w);
	/* Exactly enough room, and one byte less. */
	assert_int_equal(dns_answer(out, w, &q, 0, a4, 4, 1), (ssize_t)w);
	assert_int_equal(dns_answer(out, w - 1, &q, 0, a4, 4, 1), -1);
	/* An A query gets no 16-byte answer. */
	memset(a6, 0xfd, sizeof(a6));
	assert_int_equal(dns_answer(out, sizeof(out), &q, 0, a6, 16, 1), -1);
	/* NXDOMAIN, no answer; without OPT no extended rcode. */
	r = dns_answer(out, sizeof(out), &q, DNS_NXDOMAIN, NULL, 0, 0);
	w = unhex("1234 8183 0001 0000 0000 0000" NAME_EXAMPLE "0001 0001",
	    want);
	assert_int_equal(r, (ssize_t)w);
	assert_memory_equal(out, want, w);
	assert_int_equal(dns_answer(out, sizeof(out), &q, DNS_BADVERS, NULL,
	    0, 0), -1);
	/* AAAA with OPT: ours goes back (1232, version 0, DO clear). */
	n = unhex("beef 0000 0001 0000 0000 0001" NAME_EXAMPLE "001c 0001"
	    OPT_4096, m);
	assert_int_equal(dns_query_parse(m, n, &q), 0);
	r = dns_answer(out, sizeof(out), &q, DNS_NOERROR, a6, 16, 1);
	w = unhex("beef 8080 0001 0001 0000 0001" NAME_EXAMPLE "001c 0001"
	    "c00c 001c 0001 00000001 0010 fdfdfdfdfdfdfdfdfdfdfdfdfdfdfdfd"
	    "00 0029 04d0 00000000 0000", want);
	assert_int_equal(r, (ssize_t)w);
	assert_memory_equal(out, want, w);
	/* BADVERS: 16 = extended 1, header 0. */
	r = dns_answer(out, sizeof(out), &q, DNS_BADVERS, NULL, 0, 0);
	w = unhex("beef 8080 0001 0000 0000 0001" NAME_EXAMPLE "001c 0001"
	    "00 0029 04d0 01000000 0000", want);
	assert_int_equal(r, (ssize_t)w);
	assert_memory_equal(out, want, w);
	/* REFUSED echoes the opcode bits and RD. */
	n = unhex("0001 0900 0001 0000 0000 0000" NAME_EXAMPLE "0010 0001", m);
	assert_int_equal(dns_query_parse(m, n, &q), 0);
	r = dns_answer(out, sizeof(out), &q, DNS_REFUSED, NULL, 0, 0);
	assert_true(r > 4);
	assert_int_equal(out[2], 0x89);
	assert_int_equal(out[3], 0x85);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_plain),
		cmocka_unit_test(test_parse_opt),
		cmocka_unit_test(test_parse_refused),
		cmocka_unit_test(test_parse_names),
		cmocka_unit_test(test_answer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
