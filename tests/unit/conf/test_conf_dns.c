/*
 * conf: client.dns in both forms -- the old scalar that pins port-53
 * queries, the mapping with mode redirect or fake-ip -- the fake ranges'
 * defaults (away from the TUN's address), the errors with their
 * positions (a range holding the TUN's address, overlapping
 * route_exclude, too small; keys of the other mode), and the dump that
 * loads back as the same configuration.
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

#include "conf/conf.h"
#include "tests/unit/conf/conftest.h"

#define HEAD	"client:\n  server: 192.0.2.1:443\n" \
		"  key: UR8GBfXkCWILEa357of526YctXNYj5edwp3e59D7Z7I=\n"

static const char *
fmt_range(const struct cidr *c)
{
	static char	buf[64];

	return cidr_fmt(c, buf, sizeof(buf));
}

static void
test_scalar(void **state)
{
	struct conf	*c;
	char		 buf[ADDR_STRLEN];

	(void)state;
	c = load_ok(HEAD "  dns: 10.0.0.53\n");
	assert_true(c->client.has_dns);
	assert_false(c->client.dns_map);
	assert_false(c->client.dns_fakeip);
	assert_string_equal(addr_fmt(&c->client.dns, buf, sizeof(buf)),
	    "10.0.0.53:53");
	conf_free(c);
	c = load_ok(HEAD "  dns: {mode: redirect, server: \"[2001:db8::53]:5353\"}\n");
	assert_true(c->client.has_dns);
	assert_true(c->client.dns_map);
	assert_false(c->client.dns_fakeip);
	assert_int_equal(addr_port(&c->client.dns), 5353);
	conf_free(c);
}

static void
test_fakeip_defaults(void **state)
{
	struct conf	*c;

	(void)state;
	/* The TUN's default 198.18.0.1/15: the fake /16 is the other. */
	c = load_ok(HEAD "  dns: {mode: fake-ip}\n");
	assert_true(c->client.dns_fakeip);
	assert_false(c->client.has_dns);
	assert_string_equal(fmt_range(&c->client.fake_ip_range4),
	    "198.19.0.0/16");
	assert_true(c->client.has_fake_ip_range6);
	assert_string_equal(fmt_range(&c->client.fake_ip_range6),
	    "fdfe:dcba:9876:1::/64");
	assert_int_equal(c->client.fake_ip_size, 65536);
	assert_string_equal(c->client.fake_ip_file, "/run/tunsplit/fakeip");
	conf_free(c);
	/* A TUN elsewhere, IPv4 only: 198.18.0.0/16, no IPv6 range. */
	c = load_ok("tun: {address: 10.9.0.1/24}\n" HEAD
	    "  dns: {mode: fake-ip, fake_ip_file: \"\", fake_ip_size: 100,\n"
	    "        fake_ip_exclude: [Corp.Example, .lan]}\n");
	assert_string_equal(fmt_range(&c->client.fake_ip_range4),
	    "198.18.0.0/16");
	assert_false(c->client.has_fake_ip_range6);
	assert_null(c->client.fake_ip_file);
	assert_int_equal(c->client.fake_ip_size, 100);
	assert_int_equal(c->client.nfake_ip_exclude, 2);
	assert_string_equal(c->client.fake_ip_exclude[0], "corp.example");
	assert_string_equal(c->client.fake_ip_exclude[1], ".lan");
	conf_free(c);
}

static void
test_errors(void **state)
{
	(void)state;
	expect_err(HEAD "  dns: {mode: fake-ip, fake_ip_range: 198.18.0.0/16}\n",
	    "t.yaml:4:39: client.dns.fake_ip_range: ",
	    "holds the TUN's own address 198.18.0.1");
	expect_err(HEAD "  dns: {mode: fake-ip, fake_ip_range6: "
	    "\"fdfe:dcba:9876::/64\"}\n",
	    "t.yaml:4:40: client.dns.fake_ip_range6: ",
	    "holds the TUN's own address fdfe:dcba:9876::1");
	expect_err(HEAD "  route_exclude: [198.19.128.0/17]\n"
	    "  dns: {mode: fake-ip}\n", "t.yaml:5:3: client.dns.fake_ip_range: ",
	    "overlaps route_exclude 198.19.128.0/17");
	expect_err(HEAD "  route_exclude: [10.0.0.0/8, 198.0.0.0/8]\n"
	    "  dns: {mode: fake-ip, fake_ip_range: 198.19.0.0/16}\n",
	    "t.yaml:5:39: client.dns.fake_ip_range: ",
	    "overlaps route_exclude 198.0.0.0/8");
	expect_err(HEAD "  dns: {mode: fake-ip, fake_ip_range: 198.19.0.0/25}\n",
	    "t.yaml:4:39: client.dns.fake_ip_range: ", "too small");
	expect_err(HEAD "  dns: {mode: fake-ip, fake_ip_range: 198.19.0.0}\n",
	    "t.yaml:4:39: client.dns.fake_ip_range: ", "not an IPv4 prefix");
	expect_err(HEAD "  dns: {mode: fake-ip, fake_ip_range6: 198.19.0.0/16}\n",
	    "t.yaml:4:40: client.dns.fake_ip_range6: ", "not an IPv6 prefix");
	expect_err(HEAD "  dns: {mode: redirect}\n", "t.yaml:4:8: client.dns.server: ",
	    "missing required key");
	expect_err(HEAD "  dns: {server: 10.0.0.53}\n", "t.yaml:4:8: client.dns.mode: ",
	    "missing required key");
	expect_err(HEAD "  dns: {mode: redirect, server: 10.0.0.53, "
	    "fake_ip_size: 10}\n", "t.yaml:4:8: client.dns.fake_ip_size: ",
	    "needs mode: fake-ip");
	expect_err(HEAD "  dns: {mode: fake-ip, fake_ip_exclude: [\"a b\"]}\n",
	    "t.yaml:4:42: client.dns.fake_ip_exclude[0]: ", "not a domain name");
	expect_err(HEAD "  dns: {mode: fake-ip, fake_ip_size: 1}\n",
	    "t.yaml:4:38: client.dns.fake_ip_size: ", "");
	expect_err(HEAD "  dns: {mode: dig}\n", "t.yaml:4:15: client.dns.mode: ",
	    "");
	expect_err(HEAD "  dns: [10.0.0.53]\n", "t.yaml:4:8: client.dns: ", "");
	expect_err(HEAD "  dns: {mode: fake-ip, ttl: 5}\n", "t.yaml:4:24: client.dns.ttl: ",
	    "");
}

#define UPS	"  dns:\n    mode: redirect\n    server: 10.0.0.53\n" \
		"    upstreams:\n"

static void
test_upstreams(void **state)
{
	struct conf	*c;
	char		 buf[ADDR_STRLEN];

	(void)state;
	c = load_ok(HEAD UPS
	    "      - {name: corp, address: 10.1.0.53, protocol: udp,"
	    " domains: [Corp.Example, .lab.example]}\n"
	    "      - {name: v6, address: \"[2001:db8::53]:5353\","
	    " domains: x.test}\n");
	assert_int_equal(c->client.ndns_upstreams, 2);
	assert_string_equal(c->client.dns_upstreams[0].name, "corp");
	assert_string_equal(addr_fmt(&c->client.dns_upstreams[0].addr, buf,
	    sizeof(buf)), "10.1.0.53:53");
	assert_int_equal(c->client.dns_upstreams[0].ndomains, 2);
	assert_string_equal(c->client.dns_upstreams[0].domains[0],
	    "corp.example");
	assert_string_equal(c->client.dns_upstreams[0].domains[1],
	    "lab.example");
	assert_string_equal(addr_fmt(&c->client.dns_upstreams[1].addr, buf,
	    sizeof(buf)), "[2001:db8::53]:5353");
	assert_int_equal(c->client.dns_cache_size, 1024);
	conf_free(c);
	c = load_ok(HEAD "  dns: {mode: fake-ip, cache_size: 0, upstreams: "
	    "[{name: a, address: 10.1.0.53, domains: [a.test]}]}\n");
	assert_int_equal(c->client.dns_cache_size, 0);
	assert_int_equal(c->client.ndns_upstreams, 1);
	conf_free(c);
}

static void
test_upstream_errors(void **state)
{
	(void)state;
	expect_err(HEAD UPS "      - {name: a, address: corp.example, "
	    "domains: [a.test]}\n",
	    "t.yaml:8:28: client.dns.upstreams[0].address: ",
	    "not a numeric address");
	expect_err(HEAD UPS "      - {name: a, address: 10.1.0.53, "
	    "domains: [a.test]}\n      - {name: a, address: 10.1.0.54, "
	    "domains: [b.test]}\n",
	    "t.yaml:9:16: client.dns.upstreams[1].name: ",
	    "an upstream of that name is listed already");
	expect_err(HEAD UPS "      - {name: a, address: 10.1.0.53}\n",
	    "t.yaml:8:9: client.dns.upstreams[0].domains: ",
	    "missing required key");
	expect_err(HEAD UPS "      - {name: a, address: 10.1.0.53, "
	    "domains: [\"a..b\"]}\n",
	    "t.yaml:8:49: client.dns.upstreams[0].domains[0]: ",
	    "not a domain name");
	expect_err(HEAD UPS "      - {name: a, address: 10.1.0.53, "
	    "protocol: quic, domains: [a.test]}\n",
	    "t.yaml:8:49: client.dns.upstreams[0].protocol: ", "is not udp");
	expect_err(HEAD UPS "      - {name: A!, address: 10.1.0.53, "
	    "domains: [a.test]}\n",
	    "t.yaml:8:16: client.dns.upstreams[0].name: ", "not a name");
	expect_err(HEAD "  dns: {mode: redirect, server: 10.0.0.53, "
	    "upstreams: {name: a}}\n", "t.yaml:4:55: client.dns.upstreams: ",
	    "expected a list of upstreams");
}

/* tcp, tls, https: ports by protocol, their TLS keys; keys that belong
 * to another protocol are errors. */
static void
test_upstream_streams(void **state)
{
	const struct conf_dns_upstream *u;
	struct conf	*c;
	char		 buf[ADDR_STRLEN];

	(void)state;
	c = load_ok(HEAD UPS
	    "      - {name: t, address: 10.1.0.1, protocol: tcp, domains: a}\n"
	    "      - {name: d, address: 10.1.0.2, protocol: tls, domains: b,"
	    " tls_name: dns.example, ca: /etc/ssl/ca.pem}\n"
	    "      - {name: h, address: 10.1.0.3, protocol: https, domains: c,"
	    " path: /q}\n"
	    "      - {name: p, address: \"10.1.0.4:8443\", protocol: https,"
	    " domains: d}\n");
	u = c->client.dns_upstreams;
	assert_int_equal(u[0].protocol, CONF_DNS_TCP);
	assert_string_equal(addr_fmt(&u[0].addr, buf, sizeof(buf)),
	    "10.1.0.1:53");
	assert_int_equal(u[1].protocol, CONF_DNS_TLS);
	assert_string_equal(addr_fmt(&u[1].addr, buf, sizeof(buf)),
	    "10.1.0.2:853");
	assert_string_equal(u[1].tls_name, "dns.example");
	assert_string_equal(u[1].ca_file, "/etc/ssl/ca.pem");
	assert_null(u[1].path);
	assert_int_equal(u[2].protocol, CONF_DNS_HTTPS);
	assert_string_equal(addr_fmt(&u[2].addr, buf, sizeof(buf)),
	    "10.1.0.3:443");
	assert_string_equal(u[2].path, "/q");
	assert_string_equal(u[2].tls_name, "");
	assert_string_equal(addr_fmt(&u[3].addr, buf, sizeof(buf)),
	    "10.1.0.4:8443");
	conf_free(c);
	expect_err(HEAD UPS "      - {name: a, address: 10.1.0.53, "
	    "domains: [\"..\"]}\n",
	    "t.yaml:8:49: client.dns.upstreams[0].domains[0]: ",
	    "not a domain name");
	expect_err(HEAD UPS "      - {name: a, address: 10.1.0.53, "
	    "tls_name: x.example, domains: [a.test]}\n",
	    "t.yaml:8:9: client.dns.upstreams[0]: ", "for protocol tls");
	expect_err(HEAD UPS "      - {name: a, address: 10.1.0.53, "
	    "protocol: tls, path: /q, domains: [a.test]}\n",
	    "t.yaml:8:9: client.dns.upstreams[0]: ", "for protocol https");
	expect_err(HEAD UPS "      - {name: a, address: 10.1.0.53, "
	    "protocol: https, path: q, domains: [a.test]}\n",
	    "t.yaml:8:9: client.dns.upstreams[0]: ", "not an absolute path");
	expect_err(HEAD UPS "      - {name: a, address: 10.1.0.53, "
	    "protocol: https, tls_name: \"a b\", domains: [a.test]}\n",
	    "t.yaml:8:66: client.dns.upstreams[0].tls_name: ", "");
}

static void
round_trip(const char *yaml)
{
	struct conf	*c = load_ok(yaml), *d;
	char		*a = NULL, *b = NULL;
	size_t		 alen, blen;
	FILE		*fp;

	assert_non_null(fp = open_memstream(&a, &alen));
	conf_dump_secrets(c, fp);
	fclose(fp);
	d = load_ok(a);
	assert_non_null(fp = open_memstream(&b, &blen));
	conf_dump_secrets(d, fp);
	fclose(fp);
	assert_string_equal(a, b);
	assert_int_equal(c->client.dns_fakeip, d->client.dns_fakeip);
	assert_int_equal(c->client.dns_map, d->client.dns_map);
	assert_int_equal(c->client.has_dns, d->client.has_dns);
	free(a);
	free(b);
	conf_free(c);
	conf_free(d);
}

static void
test_dump(void **state)
{
	(void)state;
	round_trip(HEAD "  dns: 10.0.0.53\n");
	round_trip(HEAD "  dns: {mode: redirect, server: 10.0.0.53}\n");
	round_trip(HEAD "  dns: {mode: fake-ip}\n");
	round_trip(HEAD "  dns: {mode: fake-ip, server: 10.0.0.53:5353,"
	    " fake_ip_range: 100.64.0.0/16, fake_ip_file: \"\","
	    " fake_ip_exclude: [a.example, \".b.example\"]}\n");
	round_trip(HEAD);
	round_trip(HEAD UPS "      - {name: corp, address: 10.1.0.53, "
	    "domains: [corp.example, b.example]}\n"
	    "      - {name: six, address: \"[2001:db8::53]:5353\", "
	    "domains: [x.test, \"-\", \"1e5\"]}\n    cache_size: 10\n");
	round_trip(HEAD UPS "      - {name: d, address: 10.1.0.2, protocol: tls,"
	    " domains: b, tls_name: dns.example, ca: /etc/ssl/ca.pem}\n"
	    "      - {name: h, address: 10.1.0.3, protocol: https, domains: c,"
	    " path: /q}\n      - {name: t, address: 10.1.0.1, protocol: tcp,"
	    " domains: [\".\"]}\n");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scalar),
		cmocka_unit_test(test_fakeip_defaults),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_dump),
		cmocka_unit_test(test_upstreams),
		cmocka_unit_test(test_upstream_errors),
		cmocka_unit_test(test_upstream_streams),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
