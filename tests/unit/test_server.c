/*
 * server: the egress policy -- default-deny ranges and their edges,
 * IPv4-mapped IPv6, allow entries overriding the defaults, deny entries
 * winning over allow entries, and the server's own listen addresses.
 * Nothing here sends traffic: the policy is a pure function of the config.
 */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "addr.h"
#include "conf.h"
#include "server.h"

#define K1	"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="

static struct conf *
load(const char *listen, const char *egress)
{
	static char	 yaml[1024], err[512];
	struct conf	*c;

	snprintf(yaml, sizeof(yaml), "server:\n  listen: %s\n"
	    "  cert: /c.pem\n  cert_key: /k.pem\n"
	    "  users:\n    - name: a\n      key: " K1 "\n%s", listen, egress);
	c = conf_load_buf("t.yaml", yaml, strlen(yaml), err, sizeof(err));
	if (c == NULL)
		fail_msg("%s", err);
	return c;
}

static bool
allowed(const struct conf *c, const char *hostport)
{
	struct addr	 a;

	if (addr_parse(&a, hostport) == -1)
		fail_msg("bad address %s", hostport);
	return server_egress_allowed(c, &a);
}

static void
expect(const struct conf *c, const char *const *list, bool want)
{
	for (; *list != NULL; list++)
		if (allowed(c, *list) != want)
			fail_msg("%s: expected %s", *list,
			    want ? "allowed" : "denied");
}

static void
test_default_deny(void **state)
{
	static const char *const denied[] = {
	    "0.0.0.0:80", "0.255.255.255:80",
	    "10.0.0.1:80", "10.255.255.255:80",
	    "100.64.0.0:80", "100.127.255.255:80",
	    "127.0.0.1:80", "127.255.255.254:80",
	    "169.254.169.254:80", "169.254.0.1:80",
	    "172.16.0.0:80", "172.31.255.255:80",
	    "192.168.0.1:80", "192.168.255.255:80",
	    "224.0.0.1:80", "239.255.255.255:80",
	    "240.0.0.1:80", "255.255.255.255:80",
	    "[::]:80", "[::1]:80",
	    "[fc00::1]:80", "[fdff:ffff::1]:80",
	    "[fe80::1]:80", "[febf:ffff::1]:80",
	    "[ff02::1]:80", "[ff0e::1]:80",
	    "[::ffff:127.0.0.1]:80", "[::ffff:169.254.169.254]:80",
	    "[::ffff:10.1.2.3]:80", "[::ffff:0.0.0.0]:80",
	    NULL };
	static const char *const allowed_[] = {
	    "1.0.0.1:80", "9.255.255.255:80", "11.0.0.0:80",
	    "100.63.255.255:80", "100.128.0.0:80",
	    "126.255.255.255:80", "128.0.0.0:80",
	    "169.253.255.255:80", "169.255.0.0:80",
	    "172.15.255.255:80", "172.32.0.0:80",
	    "192.167.255.255:80", "192.169.0.0:80",
	    "223.255.255.255:443",
	    "[::2]:80", "[2001:db8::1]:80", "[fbff:ffff::1]:80",
	    "[fec0::1]:80", "[feff::1]:80",
	    "[::ffff:8.8.8.8]:53", "[64:ff9b::1]:80",
	    NULL };
	struct conf *c = load("203.0.113.1:443", "");

	(void)state;
	expect(c, denied, false);
	expect(c, allowed_, true);
	conf_free(c);
}

static void
test_allow_and_deny(void **state)
{
	static const char *const denied[] = {
	    "10.77.3.1:80",		/* outside the allow entry */
	    "10.77.2.200:80",		/* deny wins over allow */
	    "[::ffff:10.77.2.200]:80",
	    "198.51.100.7:443",		/* explicit deny of a public range */
	    "[2001:db8::5]:80",
	    "127.0.0.1:80",
	    NULL };
	static const char *const allowed_[] = {
	    "10.77.2.1:80", "10.77.2.127:80",
	    "[::ffff:10.77.2.5]:80",	/* mapped, judged as IPv4 */
	    "[fd00:77::1]:80",
	    "198.51.101.7:443", "[2001:db9::5]:80",
	    NULL };
	struct conf *c = load("203.0.113.1:443",
	    "  egress:\n"
	    "    allow: [10.77.2.0/24, \"fd00:77::/64\"]\n"
	    "    deny: [10.77.2.128/25, 198.51.100.0/24, \"2001:db8::/32\"]\n");

	(void)state;
	expect(c, denied, false);
	expect(c, allowed_, true);
	conf_free(c);
}

static void
test_own_addresses(void **state)
{
	struct conf	*c;

	(void)state;
	/* A listener's address is denied on any port, even though the range
	 * is public. */
	c = load("[\"198.51.100.1:443\", \"[2001:db8::1]:443\"]", "");
	assert_false(allowed(c, "198.51.100.1:443"));
	assert_false(allowed(c, "198.51.100.1:22"));
	assert_false(allowed(c, "[2001:db8::1]:22"));
	assert_false(allowed(c, "[::ffff:198.51.100.1]:22"));
	assert_true(allowed(c, "198.51.100.2:443"));
	assert_true(allowed(c, "[2001:db8::2]:443"));
	conf_free(c);

	/* An allow entry may open the address on other ports, but never the
	 * listener itself: that would loop into this server. */
	c = load("198.51.100.1:443", "  egress:\n    allow: [198.51.100.0/24]\n");
	assert_true(allowed(c, "198.51.100.1:80"));
	assert_false(allowed(c, "198.51.100.1:443"));
	conf_free(c);

	/* Wildcard listener: loopback and unspecified on its port are this
	 * server, even with loopback allowed. */
	c = load("[\"0.0.0.0:8443\", \"[::]:8443\"]",
	    "  egress:\n    allow: [127.0.0.0/8, \"::1/128\"]\n");
	assert_false(allowed(c, "127.0.0.1:8443"));
	assert_false(allowed(c, "127.3.2.1:8443"));
	assert_false(allowed(c, "[::1]:8443"));
	assert_false(allowed(c, "0.0.0.0:8443"));
	assert_true(allowed(c, "127.0.0.1:8000"));
	assert_true(allowed(c, "[::1]:8000"));
	assert_true(allowed(c, "192.0.2.10:8443"));	/* another host */
	conf_free(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_deny),
		cmocka_unit_test(test_allow_and_deny),
		cmocka_unit_test(test_own_addresses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
