/* rules_trie: any-match prefix sets, IPv4 and IPv6, against brute force. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <arpa/inet.h>

#include "rules/rules_trie.h"

static struct rules_trie *
trie_of(const char *const *v)
{
	struct rules_trie	*t = rules_trie_new();
	struct cidr		 c;

	assert_non_null(t);
	for (; *v != NULL; v++) {
		assert_int_equal(cidr_parse(&c, *v), 0);
		assert_int_equal(rules_trie_add(t, &c), 0);
	}
	return t;
}

static bool
has(const struct rules_trie *t, const char *ip)
{
	uint8_t	b[16];

	if (inet_pton(AF_INET, ip, b) == 1)
		return rules_trie_match(t, AF_INET, b);
	assert_int_equal(inet_pton(AF_INET6, ip, b), 1);
	return rules_trie_match(t, AF_INET6, b);
}

static void
test_edges_v4(void **state)
{
	static const char *const p32[] = { "192.0.2.1/32", NULL };
	static const char *const p0[] = { "0.0.0.0/0", NULL };
	static const char *const mix[] = {
		"10.0.0.0/8", "10.1.0.0/16", "172.16.0.0/12", "192.168.1.0/24",
		"192.168.2.128/25", "203.0.113.7", NULL
	};
	struct rules_trie	*t;

	(void)state;
	t = trie_of(p32);
	assert_true(has(t, "192.0.2.1"));
	assert_false(has(t, "192.0.2.0"));
	assert_false(has(t, "192.0.2.2"));
	assert_false(has(t, "::1"));		/* the other family */
	rules_trie_free(t);

	t = trie_of(p0);
	assert_true(has(t, "0.0.0.0"));
	assert_true(has(t, "255.255.255.255"));
	assert_false(has(t, "::"));
	rules_trie_free(t);

	t = trie_of(mix);
	assert_true(has(t, "10.255.255.255"));
	assert_true(has(t, "10.1.2.3"));
	assert_false(has(t, "11.0.0.0"));
	assert_true(has(t, "172.31.255.255"));
	assert_false(has(t, "172.32.0.0"));
	assert_false(has(t, "172.15.255.255"));
	assert_true(has(t, "192.168.1.0"));
	assert_false(has(t, "192.168.0.255"));
	assert_true(has(t, "192.168.2.128"));
	assert_true(has(t, "192.168.2.255"));
	assert_false(has(t, "192.168.2.127"));
	assert_true(has(t, "203.0.113.7"));
	assert_false(has(t, "203.0.113.6"));
	assert_false(has(t, "0.0.0.0"));
	assert_int_equal(rules_trie_count(t), 6);
	rules_trie_free(t);

	/* An empty trie and a NULL one match nothing. */
	t = rules_trie_new();
	assert_false(has(t, "1.2.3.4"));
	rules_trie_free(t);
	assert_false(rules_trie_match(NULL, AF_INET, "\1\2\3\4"));
	rules_trie_free(NULL);
}

static void
test_edges_v6(void **state)
{
	static const char *const v[] = {
		"2001:db8::/32", "2001:db8:1::1/128", "fd00::/8",
		"::ffff:0:0/96", "fe80::1", NULL
	};
	static const char *const p0[] = { "::/0", "10.0.0.0/8", NULL };
	static const char *const p128[] = {
		"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", NULL
	};
	struct rules_trie	*t;

	(void)state;
	t = trie_of(v);
	assert_true(has(t, "2001:db8::"));
	assert_true(has(t, "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff"));
	assert_false(has(t, "2001:db9::"));
	assert_false(has(t, "2001:db7:ffff::"));
	assert_true(has(t, "fdff::1"));
	assert_false(has(t, "fc00::1"));
	assert_true(has(t, "::ffff:1.2.3.4"));
	assert_true(has(t, "fe80::1"));
	assert_false(has(t, "fe80::2"));
	assert_false(has(t, "1.2.3.4"));
	rules_trie_free(t);

	t = trie_of(p0);
	assert_true(has(t, "::"));
	assert_true(has(t, "ffff::1"));
	assert_true(has(t, "10.9.8.7"));
	assert_false(has(t, "11.0.0.1"));
	rules_trie_free(t);

	t = trie_of(p128);
	assert_true(has(t, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"));
	assert_false(has(t, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe"));
	rules_trie_free(t);
}

/* Covered prefixes in either order, and the same prefix twice. */
static void
test_covered(void **state)
{
	static const char *const longfirst[] = {
		"10.1.2.0/24", "10.1.0.0/16", "10.0.0.0/8", "10.0.0.0/8", NULL
	};
	static const char *const shortfirst[] = {
		"10.0.0.0/8", "10.1.0.0/16", "10.1.2.0/24", NULL
	};
	struct rules_trie	*a = trie_of(longfirst), *b = trie_of(shortfirst);

	(void)state;
	assert_true(has(a, "10.200.0.1"));
	assert_true(has(b, "10.200.0.1"));
	assert_true(has(a, "10.1.2.3"));
	assert_false(has(a, "9.255.255.255"));
	assert_false(has(b, "11.0.0.0"));
	rules_trie_free(a);
	rules_trie_free(b);
}

static void
rand_bytes(uint8_t *b, size_t n)
{
	while (n-- > 0)
		*b++ = (uint8_t)(rand() >> 7);
}

/* Random prefixes and addresses near them, checked against cidr_match. */
static void
brute(int family)
{
	enum { NP = 400, NQ = 20000 };
	struct cidr		*p = calloc(NP, sizeof(*p));
	struct rules_trie	*t = rules_trie_new();
	unsigned		 bits = family == AF_INET ? 32 : 128, i, j;
	size_t			 alen = bits / 8, hits = 0;
	uint8_t			 ip[16];
	bool			 want;

	assert_non_null(p);
	for (i = 0; i < NP; i++) {
		p[i].family = family;
		rand_bytes(p[i].bytes, alen);
		/* Few distinct top bytes, so that prefixes nest and part. */
		p[i].bytes[0] &= 0x3;
		/* lengths from a quarter up: shorter ones take everything */
		p[i].prefix = (uint8_t)(bits / 4 + (unsigned)rand() %
		    (bits - bits / 4 + 1));
		if (i % 50 == 0)
			p[i].prefix = (uint8_t)bits;
		assert_int_equal(rules_trie_add(t, &p[i]), 0);
	}
	for (i = 0; i < NQ; i++) {
		if (i % 2 == 0) {
			/* near a prefix: its bits, then random ones */
			memcpy(ip, p[rand() % NP].bytes, alen);
			ip[alen - 1 - (size_t)(rand() % (int)alen)] ^=
			    (uint8_t)(1u << (rand() % 8));
		} else {
			rand_bytes(ip, alen);
			ip[0] &= 0x3;
		}
		for (j = 0, want = false; j < NP && !want; j++)
			want = cidr_match(&p[j], family, ip);
		assert_int_equal(rules_trie_match(t, family, ip), want);
		hits += want;
	}
	/* Both answers were asked often. */
	assert_true(hits > NQ / 20 && hits < NQ - NQ / 20);
	rules_trie_free(t);
	free(p);
}

static void
test_brute(void **state)
{
	(void)state;
	srand(7);
	brute(AF_INET);
	brute(AF_INET6);
}

/* 10,000 prefixes: every one is found, its neighbours past it are not. */
static void
test_large(void **state)
{
	struct rules_trie	*t = rules_trie_new();
	struct cidr		 c;
	uint8_t			 ip[4];
	uint32_t		 a;
	unsigned		 i;

	(void)state;
	for (i = 0; i < 10000; i++) {
		memset(&c, 0, sizeof(c));
		c.family = AF_INET;
		a = (uint32_t)i << 12;		/* /20 blocks, every other one */
		a *= 2;
		c.bytes[0] = (uint8_t)(a >> 24);
		c.bytes[1] = (uint8_t)(a >> 16);
		c.bytes[2] = (uint8_t)(a >> 8);
		c.prefix = 20;
		assert_int_equal(rules_trie_add(t, &c), 0);
	}
	assert_int_equal(rules_trie_count(t), 10000);
	assert_true(rules_trie_bytes(t) < 2u << 20);
	for (i = 0; i < 10000; i++) {
		a = ((uint32_t)i << 13) | 0xabc;
		ip[0] = (uint8_t)(a >> 24), ip[1] = (uint8_t)(a >> 16);
		ip[2] = (uint8_t)(a >> 8), ip[3] = (uint8_t)a;
		assert_true(rules_trie_match(t, AF_INET, ip));
		a += 1u << 12;
		ip[0] = (uint8_t)(a >> 24), ip[1] = (uint8_t)(a >> 16);
		ip[2] = (uint8_t)(a >> 8), ip[3] = (uint8_t)a;
		assert_false(rules_trie_match(t, AF_INET, ip));
	}
	rules_trie_free(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_edges_v4),
		cmocka_unit_test(test_edges_v6),
		cmocka_unit_test(test_covered),
		cmocka_unit_test(test_brute),
		cmocka_unit_test(test_large),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
