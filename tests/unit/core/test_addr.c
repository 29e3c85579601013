/* addr: "host:port" parsing and formatting, CIDR prefixes. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <arpa/inet.h>

#include "core/addr.h"

/* Parses s, formats it back and expects want (NULL: same as s). */
static void
roundtrip(const char *s, const char *want, int family, uint16_t port)
{
	struct addr	a;
	char		out[ADDR_STRLEN];

	assert_int_equal(addr_parse(&a, s), 0);
	assert_int_equal(addr_family(&a), family);
	assert_int_equal(addr_port(&a), port);
	assert_string_equal(addr_fmt(&a, out, sizeof(out)), want ? want : s);
}

static void
test_parse_fmt(void **state)
{
	(void)state;
	roundtrip("1.2.3.4:80", NULL, AF_INET, 80);
	roundtrip("0.0.0.0:0", NULL, AF_INET, 0);
	roundtrip("255.255.255.255:65535", NULL, AF_INET, 65535);
	roundtrip("[::1]:443", NULL, AF_INET6, 443);
	roundtrip("[::]:1", NULL, AF_INET6, 1);
	roundtrip("[2001:DB8:0:0::1]:8080", "[2001:db8::1]:8080", AF_INET6, 8080);
	roundtrip("[::ffff:10.0.0.1]:53", NULL, AF_INET6, 53);
	roundtrip("[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535", NULL,
	    AF_INET6, 65535);
}

static void
test_parse_rejects(void **state)
{
	static const char *const bad[] = {
		"", ":", ":80", "1.2.3.4", "1.2.3.4:", "1.2.3.4:65536",
		"1.2.3.4:-1", "1.2.3.4:+80", "1.2.3.4: 80", "1.2.3.4:80 ",
		"1.2.3.4:8o", "1.2.3.4:123456", "1.2.3.4:80:80",
		"1.2.3:80", "1.2.3.256:80", " 1.2.3.4:80", "example.com:80",
		"::1:443", "[::1]", "[::1]:", "[::1]443", "[::1:443",
		"::1]:443", "[1.2.3.4]:80", "[]:80", "[::1%lo]:80",
		"[fe80::1::2]:80", "[::1]:80x",
		"[0000:0000:0000:0000:0000:0000:0000:0000:0000:0000]:1",
		"[::1]:0000080",
	};
	struct addr	a;
	size_t		i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (addr_parse(&a, bad[i]) != -1)
			fail_msg("accepted '%s'", bad[i]);
	}
	assert_int_equal(addr_parse(&a, NULL), -1);
}

static void
test_from_ip_raw_eq(void **state)
{
	struct addr	 a, b;
	uint8_t		 v4[4] = { 10, 0, 0, 1 };
	const void	*ip;
	size_t		 len;
	char		 out[ADDR_STRLEN];

	(void)state;
	assert_int_equal(addr_from_ip(&a, "10.0.0.1", 53), 0);
	addr_from_raw(&b, AF_INET, v4, 53);
	assert_true(addr_eq(&a, &b));
	assert_int_equal(a.len, sizeof(struct sockaddr_in));
	ip = addr_ip(&a, &len);
	assert_int_equal(len, 4);
	assert_memory_equal(ip, v4, 4);

	addr_from_raw(&b, AF_INET, v4, 54);
	assert_false(addr_eq(&a, &b));
	v4[3] = 2;
	addr_from_raw(&b, AF_INET, v4, 53);
	assert_false(addr_eq(&a, &b));

	assert_int_equal(addr_from_ip(&a, "fd00::1", 7), 0);
	assert_int_equal(a.len, sizeof(struct sockaddr_in6));
	assert_int_equal(addr_parse(&b, "[fd00:0::1]:7"), 0);
	assert_true(addr_eq(&a, &b));
	ip = addr_ip(&a, &len);
	assert_int_equal(len, 16);
	assert_string_equal(addr_fmt(&a, out, sizeof(out)), "[fd00::1]:7");

	/* Same bytes, different family. */
	assert_int_equal(addr_from_ip(&a, "::", 0), 0);
	assert_int_equal(addr_from_ip(&b, "0.0.0.0", 0), 0);
	assert_false(addr_eq(&a, &b));

	assert_int_equal(addr_from_ip(&a, "1.2.3.4:80", 1), -1);
	assert_int_equal(addr_from_ip(&a, "[::1]", 1), -1);
	assert_int_equal(addr_from_ip(&a, "", 1), -1);
}

static void
test_fmt_small_and_unknown(void **state)
{
	struct addr	a;
	char		out[8];

	(void)state;
	assert_int_equal(addr_parse(&a, "100.100.100.100:1000"), 0);
	/* Truncated, but terminated. */
	assert_string_equal(addr_fmt(&a, out, sizeof(out)), "100.100");
	memset(&a, 0, sizeof(a));
	assert_int_equal(addr_port(&a), 0);
	assert_false(addr_eq(&a, &a));
	assert_non_null(addr_fmt(&a, out, sizeof(out)));
}

static void
cidr_roundtrip(const char *s, const char *want, int family, int prefix)
{
	struct cidr	c;
	char		out[ADDR_STRLEN];

	if (cidr_parse(&c, s) != 0)
		fail_msg("rejected '%s'", s);
	assert_int_equal(c.family, family);
	assert_int_equal(c.prefix, prefix);
	assert_string_equal(cidr_fmt(&c, out, sizeof(out)), want ? want : s);
}

static void
test_cidr_parse(void **state)
{
	(void)state;
	cidr_roundtrip("10.0.0.0/8", NULL, AF_INET, 8);
	cidr_roundtrip("0.0.0.0/0", NULL, AF_INET, 0);
	cidr_roundtrip("192.168.1.7", "192.168.1.7/32", AF_INET, 32);
	cidr_roundtrip("10.1.2.3/24", NULL, AF_INET, 24); /* host bits kept */
	cidr_roundtrip("fd00::/8", NULL, AF_INET6, 8);
	cidr_roundtrip("::/0", NULL, AF_INET6, 0);
	cidr_roundtrip("::1", "::1/128", AF_INET6, 128);
	cidr_roundtrip("2001:db8::1/128", NULL, AF_INET6, 128);
}

static void
test_cidr_rejects(void **state)
{
	static const char *const bad[] = {
		"", "/8", "10.0.0.0/", "10.0.0.0/33", "10.0.0.0/-1",
		"10.0.0.0/8/8", "10.0.0.0/ 8", "10.0.0.0/8 ", "10.0.0/8",
		"10.0.0.0/1000", "10.0.0.0/x", "::/129", "::/256",
		"fd00::/0128", "[::1]/64", "fd00::1:/64", "localhost",
		"10.0.0.0:80/8",
		"0000:0000:0000:0000:0000:0000:0000:0000:0000:0000/1",
	};
	struct cidr	c;
	size_t		i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (cidr_parse(&c, bad[i]) != -1)
			fail_msg("accepted '%s'", bad[i]);
	}
	assert_int_equal(cidr_parse(&c, NULL), -1);
}

static bool
match(const char *prefix, const char *ip)
{
	struct cidr	c;
	uint8_t		raw[16];
	int		family = strchr(ip, ':') ? AF_INET6 : AF_INET;

	assert_int_equal(cidr_parse(&c, prefix), 0);
	assert_int_equal(inet_pton(family, ip, raw), 1);
	return cidr_match(&c, family, raw);
}

static void
test_cidr_match(void **state)
{
	(void)state;
	assert_true(match("10.0.0.0/8", "10.255.1.2"));
	assert_false(match("10.0.0.0/8", "11.0.0.0"));
	assert_true(match("10.1.2.3/8", "10.9.9.9"));	/* host bits masked */
	assert_true(match("172.16.0.0/12", "172.31.255.255"));
	assert_false(match("172.16.0.0/12", "172.32.0.0"));
	assert_false(match("172.16.0.0/12", "172.15.255.255"));
	assert_true(match("0.0.0.0/0", "203.0.113.9"));
	assert_true(match("192.0.2.1", "192.0.2.1"));
	assert_false(match("192.0.2.1", "192.0.2.0"));
	assert_true(match("192.0.2.1/31", "192.0.2.0"));
	assert_false(match("192.0.2.1/31", "192.0.2.2"));
	assert_true(match("fe80::/10", "febf::1"));
	assert_false(match("fe80::/10", "fec0::1"));
	assert_true(match("::/0", "2001:db8::1"));
	assert_true(match("::1", "::1"));
	assert_false(match("::1", "::2"));
	assert_true(match("2001:db8::ff/121", "2001:db8::80"));
	assert_false(match("2001:db8::ff/121", "2001:db8::7f"));
	/* Families never match each other. */
	assert_false(match("0.0.0.0/0", "::"));
	assert_false(match("::/0", "0.0.0.0"));
	assert_false(match("::/0", "1.2.3.4"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_fmt),
		cmocka_unit_test(test_parse_rejects),
		cmocka_unit_test(test_from_ip_raw_eq),
		cmocka_unit_test(test_fmt_small_and_unknown),
		cmocka_unit_test(test_cidr_parse),
		cmocka_unit_test(test_cidr_rejects),
		cmocka_unit_test(test_cidr_match),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
