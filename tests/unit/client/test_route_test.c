/*
 * route_test: the request line, the decision and the reasons, under a
 * configuration loaded from a buffer.
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
#include <sys/socket.h>

#include "client/route_test.h"
#include "conf/conf.h"
#include "rules/rules.h"

#define K1	"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
#define CLIENT	"client:\n  server: vpn.example.org:443\n  key: " K1 "\n"

static struct conf *
load(const char *yaml)
{
	char		 err[512];
	struct conf	*c = conf_load_buf("t.yaml", yaml, strlen(yaml), err,
			    sizeof(err));

	if (c == NULL)
		fail_msg("%s", err);
	return c;
}

static const struct route_test_fake *t_fake;

/* The answer to req; rc is route_test_answer's. */
static char *
answer(const struct conf *c, const char *req, int *rc)
{
	char	*out = NULL;
	size_t	 len = 0;
	FILE	*fp;

	assert_non_null(fp = open_memstream(&out, &len));
	*rc = route_test_answer(c, req, fp, t_fake);
	assert_int_equal(fclose(fp), 0);
	return out;
}

static void
expect(const struct conf *c, const char *req, const char *want)
{
	int	 rc;
	char	*s = answer(c, req, &rc);

	if (rc != 0 || strstr(s, want) == NULL)
		fail_msg("%s: rc %d, want \"%s\" in:\n%s", req, rc, want, s);
	free(s);
}

static void
test_decisions(void **state)
{
	struct conf	*c;
	char		*s;
	int		 rc;

	(void)state;
	c = load(CLIENT "  rules:\n"
	    "    - {dst: 10.0.0.0/8, port: 22, outbound: default}\n"
	    "    - {network: udp, src: 192.168.1.0/24, outbound: default}\n"
	    "    - {domain_suffix: example.com, outbound: default}\n");
	expect(c, "tcp 22 - 10.1.2.3", "rule: 0 (dst 10.0.0.0/8, port 22)\n"
	    "flow: tcp to 10.1.2.3 port 22\n"
	    "why: the first rule that matches (of 3)\n");
	expect(c, "tcp 23 - 10.1.2.3",
	    "outbound: default (tunsplit)\nrule: final\n");
	expect(c, "tcp 23 - 10.1.2.3", "why: none of the 3 rules matches\n");
	expect(c, "udp 53 192.168.1.9 2001:db8::1",
	    "rule: 1 (network udp, src 192.168.1.0/24)\n"
	    "flow: udp to 2001:db8::1 port 53 from 192.168.1.9\n");
	expect(c, "udp 53 - 2001:db8::1", "rule: final\n");
	expect(c, "tcp 443 - WWW.Example.COM.",
	    "rule: 2 (domain_suffix example.com)\n");
	expect(c, "tcp 443 - www.example.com", "note: the domain decides only "
	    "when it is known");
	/* route-test never counts a hit. */
	assert_int_equal(rules_hits(c->client.rules, 0), 0);
	assert_int_equal(rules_hits(c->client.rules, -1), 0);
	/* Bad requests. */
	s = answer(c, "sctp 1 - 10.0.0.1", &rc);
	assert_int_equal(rc, -1);
	assert_string_equal(s, "error: route-test: the network is tcp, udp "
	    "or icmp\n");
	free(s);
	s = answer(c, "tcp 70000 - 10.0.0.1", &rc);
	assert_int_equal(rc, -1);
	free(s);
	s = answer(c, "tcp 1 nope 10.0.0.1", &rc);
	assert_string_equal(s, "error: route-test: the source is an address\n");
	free(s);
	s = answer(c, "tcp 1 - a..b", &rc);
	assert_int_equal(rc, -1);
	free(s);
	s = answer(c, "tcp 1 -", &rc);
	assert_string_equal(s, "error: route-test: expected: NETWORK PORT SRC "
	    "DEST\n");
	free(s);
	s = answer(c, "tcp 1 - a b", &rc);
	assert_int_equal(rc, -1);
	free(s);
	conf_free(c);
}

static void
test_no_rules(void **state)
{
	struct conf	*c;

	(void)state;
	c = load(CLIENT);
	expect(c, "icmp 0 - 192.0.2.1",
	    "outbound: default (tunsplit)\nrule: final\n"
	    "flow: icmp to 192.0.2.1 port 0\n"
	    "why: no rules: every flow takes final\n");
	expect(c, "tcp 443 - name.example", "note: no rule matches domain "
	    "names");
	conf_free(c);
	c = load(CLIENT "  rules:\n    - {dst: 10.0.0.0/8, outbound: default}\n");
	expect(c, "tcp 443 - name.example", "note: no rule matches domain "
	    "names");
	conf_free(c);
}

/* A table in which 198.19.0.7 stands for www.fake.example and
 * 198.19.0.8 for nothing. */
static bool
fake_lookup(void *arg, int family, const void *ip, const char **name)
{
	const uint8_t	*b = ip;

	(void)arg;
	if (family != AF_INET || b[0] != 198 || b[1] != 19)
		return false;
	*name = b[3] == 7 ? "www.fake.example" : NULL;
	return true;
}

static void
test_fake_ip(void **state)
{
	static const struct route_test_fake fake = { fake_lookup, NULL };
	struct conf	*c;

	(void)state;
	c = load(CLIENT "  dns: {mode: fake-ip}\n  rules:\n"
	    "    - {domain_suffix: fake.example, outbound: default}\n"
	    "    - {dst: 198.19.0.0/16, port: 1, outbound: default}\n");
	/* From a file: the range is known, the names are not. */
	t_fake = NULL;
	expect(c, "tcp 443 - 198.19.0.7", "rule: final\n");
	expect(c, "tcp 443 - 198.19.0.7", "note: a fake-IP address: only the "
	    "running daemon knows its name (route-test without -c)\n");
	/* The daemon: by the name, as its flows are. */
	t_fake = &fake;
	expect(c, "tcp 443 - 198.19.0.7",
	    "rule: 0 (domain_suffix fake.example)\n"
	    "flow: tcp to 198.19.0.7 port 443 (www.fake.example)\n");
	expect(c, "tcp 443 - 198.19.0.7", "note: a fake-IP address: decided "
	    "by the name it stands for\n");
	/* The address is kept too, as a flow's is. */
	expect(c, "tcp 1 - 198.19.0.7", "rule: 0 (");
	expect(c, "tcp 1 - 198.19.0.8", "outbound: none (refused)\nrule: "
	    "none\nflow: tcp to 198.19.0.8 port 1\nnote: a fake-IP address "
	    "with no name (evicted, or never issued): a flow to it is "
	    "refused\n");
	/* Not a fake address: as before. */
	expect(c, "tcp 1 - 198.18.0.9", "rule: final\n");
	t_fake = NULL;
	conf_free(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decisions),
		cmocka_unit_test(test_no_rules),
		cmocka_unit_test(test_fake_ip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
