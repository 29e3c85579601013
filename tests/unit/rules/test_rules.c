/* rules: first match wins, each key, all keys of a rule, hits, text. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <arpa/inet.h>

#include "rules/rules.h"

static void
dst(struct rules *rs, int i, const char *s)
{
	struct cidr	c;

	assert_int_equal(cidr_parse(&c, s), 0);
	assert_int_equal(rules_rule_dst(rs, i, &c), 0);
}

static void
name(struct rules *rs, int i, enum rules_domain_kind k, const char *s)
{
	const char	*why = NULL;

	assert_int_equal(rules_rule_domain(rs, i, k, s, &why), 0);
}

static int
rule(struct rules *rs, int outbound)
{
	int	i = rules_add(rs);

	assert_true(i >= 0);
	rules_bind(rs, i, outbound);
	return i;
}

/* The rule index that takes (ip, port, net, domain); final is 99. */
static int
ask(const struct rules *rs, const char *ip, uint16_t port, unsigned net,
    const char *domain, int *outbound)
{
	struct rule_query	q;
	struct rule_hit		h;
	int			ob;

	memset(&q, 0, sizeof(q));
	if (ip != NULL)
		assert_int_equal(rules_query_addr(&q, ip), 0);
	q.port = port;
	q.network = net;
	q.domain = domain;
	ob = rules_decide(rs, &q, 99, &h);
	assert_int_equal(ob, h.outbound);
	if (outbound != NULL)
		*outbound = h.outbound;
	if (h.rule == -1)
		assert_int_equal(h.outbound, 99);
	return h.rule;
}

static void
test_first_match(void **state)
{
	struct rules	*rs = rules_new();
	int		 r0, r1, r2, ob;

	(void)state;
	r0 = rule(rs, 1);
	dst(rs, r0, "10.1.0.0/16");
	r1 = rule(rs, 2);
	dst(rs, r1, "10.0.0.0/8");
	r2 = rule(rs, 3);
	dst(rs, r2, "10.1.2.0/24");		/* shadowed by r0 */
	assert_int_equal(ask(rs, "10.1.2.3", 80, RULES_NET_TCP, NULL, &ob), 0);
	assert_int_equal(ob, 1);
	assert_int_equal(ask(rs, "10.2.0.1", 80, RULES_NET_TCP, NULL, &ob), 1);
	assert_int_equal(ob, 2);
	assert_int_equal(ask(rs, "11.0.0.1", 80, RULES_NET_TCP, NULL, &ob), -1);
	assert_int_equal(ob, 99);
	/* No address known: an address key does not match. */
	assert_int_equal(ask(rs, NULL, 80, RULES_NET_TCP, "x.example", NULL),
	    -1);
	assert_int_equal(rules_hits(rs, 0), 1);
	assert_int_equal(rules_hits(rs, 1), 1);
	assert_int_equal(rules_hits(rs, 2), 0);
	assert_int_equal(rules_hits(rs, -1), 2);
	/* rules_match decides without counting; rules_hit_add counts. */
	{
		struct rule_query	q;
		struct rule_hit		h;

		memset(&q, 0, sizeof(q));
		assert_int_equal(rules_query_addr(&q, "10.1.0.1"), 0);
		rules_match(rs, &q, 99, &h);
		assert_int_equal(h.rule, 0);
		assert_int_equal(rules_hits(rs, 0), 1);
		rules_hit_add(rs, &h);
		assert_int_equal(rules_hits(rs, 0), 2);
		h.rule = -1;
		rules_hit_add(rs, &h);
		assert_int_equal(rules_hits(rs, -1), 3);
	}
	rules_free(rs);
	/* No rules at all. */
	assert_int_equal(ask(NULL, "1.2.3.4", 1, RULES_NET_UDP, NULL, &ob), -1);
	assert_int_equal(ob, 99);
}

static void
test_ports_network(void **state)
{
	struct rules	*rs = rules_new();
	int		 r;

	(void)state;
	r = rule(rs, 1);
	assert_int_equal(rules_rule_port(rs, r, 443, 443), 0);
	assert_int_equal(rules_rule_port(rs, r, 1000, 2000), 0);
	assert_int_equal(rules_rule_port(rs, r, 2, 1), -1);
	assert_int_equal(rules_rule_network(rs, r, RULES_NET_TCP), 0);
	r = rule(rs, 2);
	assert_int_equal(rules_rule_network(rs, r, RULES_NET_UDP), 0);
	assert_int_equal(rules_rule_network(rs, r, RULES_NET_ICMP), 0);
	r = rule(rs, 3);
	assert_int_equal(rules_rule_port(rs, r, 0, 65535), 0);

	assert_int_equal(ask(rs, "1.1.1.1", 443, RULES_NET_TCP, NULL, NULL), 0);
	assert_int_equal(ask(rs, "1.1.1.1", 1000, RULES_NET_TCP, NULL, NULL),
	    0);
	assert_int_equal(ask(rs, "1.1.1.1", 2000, RULES_NET_TCP, NULL, NULL),
	    0);
	assert_int_equal(ask(rs, "1.1.1.1", 999, RULES_NET_TCP, NULL, NULL), 2);
	assert_int_equal(ask(rs, "1.1.1.1", 2001, RULES_NET_TCP, NULL, NULL),
	    2);
	/* port matches but network does not */
	assert_int_equal(ask(rs, "1.1.1.1", 443, RULES_NET_UDP, NULL, NULL), 1);
	assert_int_equal(ask(rs, "1.1.1.1", 0, RULES_NET_ICMP, NULL, NULL), 1);
	assert_int_equal(ask(rs, "::1", 65535, RULES_NET_TCP, NULL, NULL), 2);
	rules_free(rs);
	assert_int_equal(rules_net_parse("udp"), RULES_NET_UDP);
	assert_int_equal(rules_net_parse("sctp"), 0);
}

/* Several keys: all must match; the three domain keys are one key. */
static void
test_all_keys(void **state)
{
	struct rules		*rs = rules_new();
	struct rule_query	 q;
	struct rule_hit		 h;
	struct cidr		 c;
	int			 r;

	(void)state;
	r = rule(rs, 1);
	name(rs, r, RULES_DOMAIN_EXACT, "exact.example");
	name(rs, r, RULES_DOMAIN_SUFFIX, "Suffix.Example");
	name(rs, r, RULES_DOMAIN_KEYWORD, "kw");
	assert_int_equal(rules_rule_port(rs, r, 443, 443), 0);
	r = rule(rs, 2);
	dst(rs, r, "192.0.2.0/24");
	assert_int_equal(cidr_parse(&c, "10.9.0.0/16"), 0);
	assert_int_equal(rules_rule_src(rs, r, &c), 0);
	assert_true(rules_use_domains(rs));

	assert_int_equal(ask(rs, "1.1.1.1", 443, RULES_NET_TCP,
	    "exact.example", NULL), 0);
	assert_int_equal(ask(rs, "1.1.1.1", 443, RULES_NET_TCP,
	    "A.SUFFIX.EXAMPLE.", NULL), 0);
	assert_int_equal(ask(rs, "1.1.1.1", 443, RULES_NET_TCP,
	    "has-kw.example", NULL), 0);
	assert_int_equal(ask(rs, "1.1.1.1", 80, RULES_NET_TCP,
	    "exact.example", NULL), -1);
	assert_int_equal(ask(rs, "1.1.1.1", 443, RULES_NET_TCP, NULL, NULL),
	    -1);
	assert_int_equal(ask(rs, "1.1.1.1", 443, RULES_NET_TCP, "not a name",
	    NULL), -1);

	memset(&q, 0, sizeof(q));
	assert_int_equal(rules_query_addr(&q, "192.0.2.7"), 0);
	q.network = RULES_NET_TCP;
	rules_decide(rs, &q, 99, &h);
	assert_int_equal(h.rule, -1);		/* no source given */
	q.src_family = AF_INET;
	inet_pton(AF_INET, "10.9.1.1", q.src);
	rules_decide(rs, &q, 99, &h);
	assert_int_equal(h.rule, 1);
	assert_int_equal(h.outbound, 2);
	inet_pton(AF_INET, "10.8.1.1", q.src);
	rules_decide(rs, &q, 99, &h);
	assert_int_equal(h.rule, -1);

	/* The same from a flow's addresses. */
	{
		struct addr	d, s;

		assert_int_equal(addr_parse(&d, "192.0.2.7:443"), 0);
		assert_int_equal(addr_parse(&s, "10.9.0.5:50000"), 0);
		rules_query_flow(&q, &d, &s, RULES_NET_TCP, "");
		assert_null(q.domain);
		assert_int_equal(q.port, 443);
		rules_decide(rs, &q, 99, &h);
		assert_int_equal(h.rule, 1);
		rules_query_flow(&q, &d, NULL, RULES_NET_TCP, "x.corp.example");
		assert_int_equal(q.src_family, 0);
		assert_string_equal(q.domain, "x.corp.example");
		rules_decide(rs, &q, 99, &h);
		assert_int_equal(h.rule, -1);
	}
	rules_free(rs);
}

static void
test_rule_sets(void **state)
{
	char		 path[] = "/tmp/test_rules.XXXXXX", err[256];
	struct rules	*rs = rules_new();
	FILE		*fp;
	int		 fd, s, r;

	(void)state;
	assert_true((fd = mkstemp(path)) >= 0);
	assert_non_null(fp = fdopen(fd, "w"));
	fputs("# ads\n+.ads.example\n203.0.113.0/24\n", fp);
	fclose(fp);
	s = rules_set_add(rs, "ads", path, RULES_SET_AUTO, err, sizeof(err));
	assert_int_equal(s, 0);
	assert_int_equal(rules_set_add(rs, "ads", path, RULES_SET_AUTO, err,
	    sizeof(err)), -1);
	assert_string_equal(err, "rule set ads declared twice");
	assert_int_equal(rules_set_find(rs, "ads"), 0);
	assert_int_equal(rules_set_find(rs, "nope"), -1);
	r = rule(rs, 7);
	assert_int_equal(rules_rule_set(rs, r, s), 0);
	assert_int_equal(rules_rule_set(rs, r, 5), -1);
	assert_true(rules_use_domains(rs));
	assert_int_equal(ask(rs, "1.1.1.1", 80, RULES_NET_TCP,
	    "x.ads.example", NULL), 0);
	assert_int_equal(ask(rs, "203.0.113.9", 80, RULES_NET_UDP, NULL,
	    NULL), 0);
	assert_int_equal(ask(rs, "1.1.1.1", 80, RULES_NET_TCP, "ads.example.x",
	    NULL), -1);
	unlink(path);
	rules_free(rs);
}

static void
test_describe_dump(void **state)
{
	struct rules	*rs = rules_new();
	char		 buf[128], *mem = NULL;
	size_t		 memlen = 0;
	FILE		*fp;
	int		 r;

	(void)state;
	r = rule(rs, 0);
	name(rs, r, RULES_DOMAIN_SUFFIX, "example.com");
	assert_string_equal(rules_describe(rs, r, buf, sizeof(buf)),
	    "domain_suffix example.com");
	r = rule(rs, 0);
	dst(rs, r, "10.0.0.0/8");
	dst(rs, r, "fd00::/8");
	dst(rs, r, "192.168.0.0/16");
	assert_int_equal(rules_rule_port(rs, r, 80, 80), 0);
	assert_int_equal(rules_rule_port(rs, r, 8000, 8080), 0);
	assert_int_equal(rules_rule_network(rs, r, RULES_NET_TCP), 0);
	assert_string_equal(rules_describe(rs, r, buf, sizeof(buf)),
	    "dst 10.0.0.0/8 +2, port 80 +1, network tcp");
	assert_string_equal(rules_describe(rs, r, buf, 24),
	    "dst 10.0.0.0/8 +2, ...");
	assert_string_equal(rules_describe(rs, -1, buf, sizeof(buf)), "final");
	assert_false(rules_rule_empty(rs, r));
	assert_true(rules_rule_empty(rs, rule(rs, 0)));

	assert_non_null(fp = open_memstream(&mem, &memlen));
	rules_dump_rule(rs, 1, fp, "    ");
	fclose(fp);
	assert_string_equal(mem,
	    "dst: [ \"10.0.0.0/8\", \"fd00::/8\", \"192.168.0.0/16\" ]\n"
	    "    port: [ \"80\", \"8000-8080\" ]\n"
	    "    network: [ \"tcp\" ]\n");
	free(mem);
	rules_free(rs);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_match),
		cmocka_unit_test(test_ports_network),
		cmocka_unit_test(test_all_keys),
		cmocka_unit_test(test_rule_sets),
		cmocka_unit_test(test_describe_dump),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
