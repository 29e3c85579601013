/*
 * server: the egress policy -- default-deny ranges and their edges,
 * IPv6 embedding IPv4 (mapped, NAT64, 6to4), allow entries overriding the
 * defaults, deny entries winning over allow entries, and the server's own
 * listen addresses and interface addresses; the per-user lists (server.users[], trojan_passwords
 * maps): what they override, how they are read and rejected, their
 * lifetime across a reload.  Nothing here sends traffic: the policy is a
 * pure function of the config.
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

#include "core/addr.h"
#include "conf/conf.h"
#include "server/egress.h"

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
	return egress_allowed(c, &a);
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
	    /* NAT64 (RFC 6052) and 6to4: judged by the IPv4 address */
	    "[64:ff9b::7f00:1]:80", "[64:ff9b::127.0.0.1]:80",
	    "[64:ff9b::a9fe:a9fe]:80", "[64:ff9b::10.1.2.3]:80",
	    "[64:ff9b::1]:80", "[64:ff9b::192.168.1.1]:80",
	    "[2002:7f00:1::]:80", "[2002:7f00:1:ffff::1]:80",
	    "[2002:a9fe:a9fe::1]:80", "[2002:a01:203::]:80",
	    "[2002:c0a8:101::5]:80", "[2002:6440:1::1]:80",
	    /* local-use NAT64 (RFC 8215), site-local: as a whole */
	    "[64:ff9b:1::1]:80", "[64:ff9b:1:ffff:ffff:ffff:ffff:ffff]:80",
	    "[64:ff9b:1::808:808]:80",
	    "[fec0::1]:80", "[feff:ffff::1]:80",
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
	    "[fe00::1]:80", "[::ffff:8.8.8.8]:53",
	    "[64:ff9b::8.8.8.8]:53", "[64:ff9b::808:808]:53",
	    "[64:ff9b::1:0:0:1]:80",	/* outside the /96: IPv6 */
	    "[64:ff9b:2::1]:80", "[64:ff9b:0:1::1]:80",
	    "[2002:808:808::1]:80", "[2002:b00:1::]:80",
	    "[2001:ffff::1]:80", "[2003::1]:80",
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

/*
 * The host's own (interface) addresses: denied even inside an allowed
 * range, opened only by an allow entry naming exactly that address; on a
 * wildcard listener's port never; other hosts of the range unaffected.
 */
static void
test_local_addresses(void **state)
{
	struct addr	 local[3];
	struct conf	*c;

	(void)state;
	assert_int_equal(addr_parse(&local[0], "10.77.2.1:0"), 0);
	assert_int_equal(addr_parse(&local[1], "[fd77:2::1]:0"), 0);
	assert_int_equal(addr_parse(&local[2], "198.51.100.7:0"), 0);
	assert_int_equal(egress_local_set(local, 3), 0);
	assert_int_equal(egress_local_count(), 3);

	c = load("[\"0.0.0.0:8443\", \"[::]:8443\"]",
	    "  egress:\n    allow: [10.77.2.0/24, \"fd77:2::/64\"]\n");
	assert_false(allowed(c, "10.77.2.1:22"));
	assert_false(allowed(c, "[fd77:2::1]:22"));
	assert_false(allowed(c, "[::ffff:10.77.2.1]:22"));
	assert_false(allowed(c, "198.51.100.7:80"));	/* public, still ours */
	assert_false(allowed(c, "198.51.100.7:8443"));
	assert_true(allowed(c, "10.77.2.2:22"));
	assert_true(allowed(c, "[fd77:2::2]:22"));
	assert_true(allowed(c, "198.51.100.8:80"));
	conf_free(c);

	/* Named exactly: open, except the wildcard listener's port. */
	c = load("0.0.0.0:8443", "  egress:\n    allow: [10.77.2.0/24, "
	    "10.77.2.1/32, 198.51.100.7/32]\n");
	assert_true(allowed(c, "10.77.2.1:22"));
	assert_true(allowed(c, "198.51.100.7:80"));
	assert_false(allowed(c, "198.51.100.7:8443"));
	assert_false(allowed(c, "10.77.2.1:8443"));
	conf_free(c);

	egress_local_clear();
	assert_int_equal(egress_local_count(), 0);
	c = load("0.0.0.0:8443", "  egress:\n    allow: [10.77.2.0/24]\n");
	assert_true(allowed(c, "10.77.2.1:22"));
	conf_free(c);
}

#define K2	"ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8="

static bool
user_allowed(const struct conf *c, const struct conf_egress *u,
    const char *hostport)
{
	struct addr	 a;

	if (addr_parse(&a, hostport) == -1)
		fail_msg("bad address %s", hostport);
	return egress_allowed_user(c, u, &a);
}

static struct conf *
load_users(const char *users, const char *rest)
{
	static char	 yaml[2048], err[512];
	struct conf	*c;

	snprintf(yaml, sizeof(yaml), "server:\n  listen: 0.0.0.0:443\n"
	    "  cert: /c.pem\n  cert_key: /k.pem\n  users:\n%s%s", users, rest);
	c = conf_load_buf("t.yaml", yaml, strlen(yaml), err, sizeof(err));
	if (c == NULL)
		fail_msg("%s", err);
	return c;
}

/*
 * A user's own lists come before the server's: its allow entries open
 * what the server's deny list and the default denies close (for it only),
 * its deny entries close what the server allows; a listener stays closed.
 */
static void
test_user_lists(void **state)
{
	struct conf		*c;
	struct conf_egress	*a, *b, *t0, *t1;

	(void)state;
	c = load_users(
	    "    - name: a\n      key: " K1 "\n"
	    "      egress_allow: [10.9.0.0/16, \"fd09::/64\", 127.0.0.1]\n"
	    "      egress_deny: [10.9.9.0/24]\n"
	    "    - name: b\n      key: " K2 "\n"
	    "      egress_deny: [198.51.100.0/24, \"2001:db8::/32\"]\n"
	    "    - name: c\n      key: AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n",
	    "  trojan_passwords:\n"
	    "    - plain\n"
	    "    - password: mapped\n"
	    "      egress_allow: 192.168.7.0/24\n"
	    "  egress:\n    allow: [10.8.0.0/16]\n    deny: [10.9.1.0/24]\n");
	a = c->server.users[0].egress;
	b = c->server.users[1].egress;
	assert_non_null(a);
	assert_non_null(b);
	assert_null(c->server.users[2].egress);
	assert_int_equal(a->nallow, 3);
	assert_int_equal(a->ndeny, 1);
	assert_int_equal(b->nallow, 0);
	assert_int_equal(b->ndeny, 2);
	assert_int_equal(c->server.ntrojan, 2);
	t0 = c->server.trojan_egress[0];
	t1 = c->server.trojan_egress[1];
	assert_null(t0);
	assert_non_null(t1);
	assert_int_equal(t1->nallow, 1);

	/* User a: its allow opens private ranges and the server's deny. */
	assert_true(user_allowed(c, a, "10.9.3.4:80"));
	assert_true(user_allowed(c, a, "10.9.1.4:80"));	/* server deny */
	assert_true(user_allowed(c, a, "[fd09::5]:80"));
	assert_true(user_allowed(c, a, "127.0.0.1:80"));
	assert_false(user_allowed(c, a, "127.0.0.2:80"));
	assert_false(user_allowed(c, a, "10.9.9.4:80"));	/* its own deny */
	assert_false(user_allowed(c, a, "127.0.0.1:443"));	/* the listener */
	assert_true(user_allowed(c, a, "10.8.0.1:80"));	/* server allow */
	/* Without a's lists the same targets are the server's to judge. */
	assert_false(user_allowed(c, NULL, "10.9.3.4:80"));
	assert_false(user_allowed(c, NULL, "10.9.1.4:80"));
	assert_false(user_allowed(c, c->server.users[2].egress,
	    "10.9.3.4:80"));

	/* User b: its deny closes public space and what the server allows
	 * stays open to it. */
	assert_false(user_allowed(c, b, "198.51.100.1:443"));
	assert_false(user_allowed(c, b, "[2001:db8::1]:443"));
	assert_true(user_allowed(c, NULL, "198.51.100.1:443"));
	assert_true(user_allowed(c, b, "10.8.0.1:80"));
	assert_false(user_allowed(c, b, "10.9.3.4:80"));

	/* A trojan password's lists. */
	assert_true(user_allowed(c, t1, "192.168.7.9:80"));
	assert_false(user_allowed(c, t0, "192.168.7.9:80"));

	/* A session's reference outlives a reload's conf_free. */
	assert_ptr_equal(conf_egress_ref(a), a);
	assert_null(conf_egress_ref(NULL));
	conf_free(c);
	assert_int_equal(a->refs, 1);
	assert_int_equal(a->nallow, 3);
	conf_egress_unref(a);
	conf_egress_unref(NULL);
}

/*
 * NAT64 (64:ff9b::/96) and 6to4 (2002::/16) addresses are judged by the
 * IPv4 address they embed, like IPv4-mapped ones: an allow entry of the
 * IPv4 range opens them, an allow entry of the IPv6 prefix does not open
 * the private addresses they embed; a deny entry matches either form.
 */
static void
test_embedded_ipv4(void **state)
{
	static const char *const denied[] = {
	    "[64:ff9b::10.77.2.200]:80",	/* deny of the IPv4 form */
	    "[2002:a4d:2c8::1]:80",		/* 10.77.2.200 */
	    "[64:ff9b::10.77.3.1]:80",		/* outside the allow entry */
	    "[2002:7f00:1::1]:80",		/* allow 2002::/16: not these */
	    "[2002:a4d:301::]:80",
	    "[64:ff9b::198.51.100.7]:443",	/* deny of a public range */
	    "[2002:c633:6407::1]:443",
	    "[64:ff9b::203.0.113.9]:80",	/* deny of the IPv6 form */
	    "[64:ff9b::203.0.113.1]:443",	/* the listener itself */
	    "[2002:cb00:7101::]:443",
	    NULL };
	static const char *const allowed_[] = {
	    "[64:ff9b::10.77.2.1]:80", "[64:ff9b::a4d:205]:80",
	    "[2002:a4d:201::]:80", "[2002:a4d:27f:ffff::1]:80",
	    "203.0.113.9:80", "[::ffff:203.0.113.9]:80",
	    "[2002:cb00:7109::]:80",
	    NULL };
	struct conf		*c;
	struct conf_egress	*u;

	(void)state;
	c = load("203.0.113.1:443",
	    "  egress:\n"
	    "    allow: [10.77.2.0/24, \"2002::/16\"]\n"
	    "    deny: [10.77.2.128/25, 198.51.100.0/24,"
	    " \"64:ff9b::cb00:7109/128\"]\n");
	expect(c, denied, false);
	expect(c, allowed_, true);
	conf_free(c);

	/* A user's allow of 10.0.0.0/8 opens every form of 10.1.2.3. */
	c = load_users("    - name: a\n      key: " K1 "\n"
	    "      egress_allow: [10.0.0.0/8]\n"
	    "      egress_deny: [\"2002:a09::/32\"]\n", "");
	u = c->server.users[0].egress;
	assert_true(user_allowed(c, u, "10.1.2.3:80"));
	assert_true(user_allowed(c, u, "[::ffff:10.1.2.3]:80"));
	assert_true(user_allowed(c, u, "[64:ff9b::10.1.2.3]:80"));
	assert_true(user_allowed(c, u, "[2002:a01:203::1]:80"));
	assert_false(user_allowed(c, u, "[2002:a09:1::]:80"));	/* its deny */
	assert_true(user_allowed(c, u, "10.9.0.1:80"));
	assert_false(user_allowed(c, NULL, "[64:ff9b::10.1.2.3]:80"));
	assert_false(user_allowed(c, NULL, "[2002:a01:203::1]:80"));
	assert_false(user_allowed(c, u, "[64:ff9b:1::a01:203]:80"));
	/* Wildcard listener: the loopback forms on its port are this
	 * server. */
	assert_false(user_allowed(c, u, "[64:ff9b::127.0.0.1]:443"));
	conf_free(c);
}

static void
test_user_lists_errors(void **state)
{
	static const struct {
		const char	*users, *rest, *where, *msg;
	} bad[] = {
		{ "    - name: a\n      key: " K1 "\n"
		  "      egress_allow: [10.0.0.0/33]\n", "",
		  "t.yaml:8:22: server.users[0].egress_allow[0]: ",
		  "'10.0.0.0/33' is not an address/prefix" },
		{ "    - name: a\n      key: " K1 "\n"
		  "      egress_deny: {a: b}\n", "",
		  "t.yaml:8:20: server.users[0].egress_deny: ",
		  "expected a value or a list" },
		{ "    - name: a\n      key: " K1 "\n"
		  "      egress_deny: [1.2.3.4]\n      egress_deny: [1.2.3.5]\n",
		  "", "t.yaml:9:7: server.users[0].egress_deny: ",
		  "duplicate key" },
		{ "    - name: a\n      key: " K1 "\n",
		  "  trojan_passwords:\n    - egress_allow: [10.0.0.0/8]\n",
		  "t.yaml:9:7: server.trojan_passwords[0].password: ",
		  "missing required key" },
		{ "    - name: a\n      key: " K1 "\n",
		  "  trojan_passwords:\n    - password: x\n      egress: []\n",
		  "t.yaml:10:7: server.trojan_passwords[0].egress: ",
		  "unknown key" },
		{ "    - name: a\n      key: " K1 "\n",
		  "  trojan_passwords:\n    - x\n    - password: x\n",
		  "t.yaml:10:17: server.trojan_passwords[1].password: ",
		  "duplicate password" },
		{ "    - name: a\n      key: " K1 "\n",
		  "  trojan_passwords:\n    - password: x\n"
		  "      egress_deny: [nope]\n",
		  "t.yaml:10:21: server.trojan_passwords[0].egress_deny[0]: ",
		  "'nope' is not an address/prefix" },
		{ "    - name: a\n      key: " K1 "\n",
		  "  resolver:\n    workers: 0\n",
		  "t.yaml:9:14: server.resolver.workers: ", "out of range" },
		{ "    - name: a\n      key: " K1 "\n",
		  "  resolver:\n    timeout: forever\n",
		  "t.yaml:9:14: server.resolver.timeout: ", "is not a duration" },
		{ "    - name: a\n      key: " K1 "\n",
		  "  resolver:\n    ttl: 1s\n",
		  "t.yaml:9:5: server.resolver.ttl: ", "unknown key" },
	};
	static char	 yaml[2048], err[512];
	struct conf	*c;
	size_t		 i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(yaml, sizeof(yaml), "server:\n  listen: 0.0.0.0:443\n"
		    "  cert: /c.pem\n  cert_key: /k.pem\n  users:\n%s%s",
		    bad[i].users, bad[i].rest);
		c = conf_load_buf("t.yaml", yaml, strlen(yaml), err,
		    sizeof(err));
		if (c != NULL) {
			conf_free(c);
			fail_msg("loaded:\n%s", yaml);
		}
		if (strncmp(err, bad[i].where, strlen(bad[i].where)) != 0 ||
		    strstr(err, bad[i].msg) == NULL)
			fail_msg("got \"%s\", expected \"%s...%s\"", err,
			    bad[i].where, bad[i].msg);
	}
}

static void
test_resolver_conf(void **state)
{
	struct conf	*c;
	char		*out = NULL;
	size_t		 len = 0;
	FILE		*fp;

	(void)state;
	c = load_users("    - name: a\n      key: " K1 "\n", "");
	assert_int_equal(c->server.resolve_workers, 4);
	assert_int_equal(c->server.resolve_queue, 256);
	assert_int_equal(c->server.resolve_timeout_ms, 5000);
	assert_int_equal(c->server.resolve_cache, 1024);
	assert_int_equal(c->server.resolve_ttl_ms, 60000);
	assert_int_equal(c->server.resolve_negative_ttl_ms, 10000);
	conf_free(c);
	c = load_users("    - name: a\n      key: " K1 "\n"
	    "      egress_allow: 10.1.0.0/16\n",
	    "  resolver:\n    workers: 2\n    queue: 8\n    timeout: 1500ms\n"
	    "    cache: 0\n    cache_ttl: 5s\n    negative_ttl: 0\n");
	assert_int_equal(c->server.resolve_workers, 2);
	assert_int_equal(c->server.resolve_queue, 8);
	assert_int_equal(c->server.resolve_timeout_ms, 1500);
	assert_int_equal(c->server.resolve_cache, 0);
	assert_int_equal(c->server.resolve_ttl_ms, 5000);
	assert_int_equal(c->server.resolve_negative_ttl_ms, 0);
	assert_non_null(fp = open_memstream(&out, &len));
	conf_dump(c, fp);
	fclose(fp);
	assert_non_null(strstr(out, "  resolver:\n    workers: 2\n"
	    "    queue: 8\n    timeout: 1500ms\n    cache: 0\n"
	    "    cache_ttl: 5s\n    negative_ttl: 0s\n"));
	assert_non_null(strstr(out, "      egress_allow:\n"
	    "        - 10.1.0.0/16\n      egress_deny: []\n"));
	free(out);
	conf_free(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_deny),
		cmocka_unit_test(test_allow_and_deny),
		cmocka_unit_test(test_embedded_ipv4),
		cmocka_unit_test(test_own_addresses),
		cmocka_unit_test(test_local_addresses),
		cmocka_unit_test(test_user_lists),
		cmocka_unit_test(test_user_lists_errors),
		cmocka_unit_test(test_resolver_conf),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
