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

/* The answer to req; rc is route_test_answer's. */
static char *
answer(const struct conf *c, const char *req, int *rc)
{
	char	*out = NULL;
	size_t	 len = 0;
	FILE	*fp;

	assert_non_null(fp = open_memstream(&out, &len));
	*rc = route_test_answer(c, req, fp);
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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decisions),
		cmocka_unit_test(test_no_rules),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
