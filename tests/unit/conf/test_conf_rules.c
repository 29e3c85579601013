/*
 * conf_rules: client.rules and client.rule_sets -- every key, the errors
 * at their file:line:col (a rule-set file's own line for what is in it),
 * and the dump, which loads back as the same rules.
 */
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

#include "conf/conf.h"
#include "tests/unit/conf/conftest.h"
#include "rules/rules.h"

#define K1	"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
#define CLIENT	"client:\n  server: vpn.example.org:443\n  key: " K1 "\n"

static char	setpath[64];

/* yaml must fail with exactly the error want. */
static void
expect_exact(const char *yaml, const char *want)
{
	expect_err(yaml, want, "");
	if (strcmp(errbuf, want) != 0)
		fail_msg("got \"%s\", expected \"%s\"", errbuf, want);
}

static void
write_set(const char *text)
{
	FILE	*fp = fopen(setpath, "w");

	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
}

static int
setup(void **state)
{
	int	fd;

	(void)state;
	snprintf(setpath, sizeof(setpath), "/tmp/test_conf_rules.XXXXXX");
	if ((fd = mkstemp(setpath)) == -1)
		return -1;
	close(fd);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	unlink(setpath);
	return 0;
}

static int
decide(const struct conf *c, const char *ip, uint16_t port, unsigned net,
    const char *domain)
{
	struct rule_query	q;
	struct rule_hit		h;

	memset(&q, 0, sizeof(q));
	assert_int_equal(rules_query_addr(&q, ip), 0);
	q.port = port;
	q.network = net;
	q.domain = domain;
	rules_decide(c->client.rules, &q, -7, &h);
	return h.rule;
}

static void
test_rules_load(void **state)
{
	char		 y[2048];
	struct conf	*c;

	(void)state;
	write_set("# set\n+.ads.example\n198.51.100.0/24\n");
	snprintf(y, sizeof(y), CLIENT
	    "  rules:\n"
	    "    - dst: [10.0.0.0/8, \"fd00::/8\"]\n"
	    "      outbound: default\n"
	    "    - domain_suffix: +.corp.example\n"
	    "      domain: exact.example\n"
	    "      domain_keyword: [kw]\n"
	    "      port: [443, 8000-8080]\n"
	    "      outbound: default\n"
	    "    - network: udp\n"
	    "      src: 192.168.1.0/24\n"
	    "      outbound: default\n"
	    "    - rule_set: ads\n"
	    "      outbound: default\n"
	    "  rule_sets:\n"
	    "    - name: ads\n"
	    "      path: %s\n", setpath);
	c = load_ok(y);
	assert_non_null(c->client.rules);
	assert_int_equal(rules_count(c->client.rules), 4);
	assert_int_equal(decide(c, "10.1.1.1", 1, RULES_NET_TCP, NULL), 0);
	assert_int_equal(decide(c, "1.1.1.1", 443, RULES_NET_TCP,
	    "x.corp.example"), 1);
	assert_int_equal(decide(c, "1.1.1.1", 8080, RULES_NET_TCP,
	    "exact.example"), 1);
	assert_int_equal(decide(c, "1.1.1.1", 80, RULES_NET_TCP,
	    "exact.example"), -1);
	assert_int_equal(decide(c, "1.1.1.1", 53, RULES_NET_UDP,
	    "a.ads.example"), 3);	/* no src in the query: not rule 2 */
	assert_int_equal(decide(c, "198.51.100.7", 1, RULES_NET_TCP, NULL), 3);
	conf_free(c);

	/* No rules: none built. */
	c = load_ok(CLIENT);
	assert_null(c->client.rules);
	conf_free(c);
}

/* The dump loads back and dumps the same. */
static void
test_rules_dump(void **state)
{
	char		 y[2048], *d1 = NULL, *d2 = NULL;
	size_t		 l1 = 0, l2 = 0;
	struct conf	*c, *c2;
	FILE		*fp;

	(void)state;
	write_set("suffix:a.example\n");
	snprintf(y, sizeof(y), CLIENT
	    "  rule_sets:\n"
	    "    - { name: s1, path: %s, type: suffix }\n"
	    "  rules:\n"
	    "    - { dst: 10.0.0.0/8, port: 1-2, network: [tcp, icmp], "
	    "outbound: default }\n"
	    "    - { domain_keyword: \"x\", rule_set: s1, src: \"::1\", "
	    "outbound: default }\n", setpath);
	c = load_ok(y);
	assert_non_null(fp = open_memstream(&d1, &l1));
	conf_dump_secrets(c, fp);
	fclose(fp);
	assert_non_null(strstr(d1, "  rules:\n"
	    "    - dst: [ \"10.0.0.0/8\" ]\n"
	    "      port: [ \"1-2\" ]\n"
	    "      network: [ \"tcp\", \"icmp\" ]\n"
	    "      outbound: \"default\"\n"
	    "    - domain_keyword: [ \"x\" ]\n"
	    "      src: [ \"::1/128\" ]\n"
	    "      rule_set: [ \"s1\" ]\n"
	    "      outbound: \"default\"\n"));
	assert_non_null(strstr(d1, "  rule_sets:\n    - name: \"s1\"\n"));
	assert_non_null(strstr(d1, "      type: suffix\n"));
	c2 = load_ok(d1);
	assert_non_null(fp = open_memstream(&d2, &l2));
	conf_dump_secrets(c2, fp);
	fclose(fp);
	assert_string_equal(d1, d2);
	free(d1);
	free(d2);
	conf_free(c);
	conf_free(c2);
}

static void
test_rules_errors(void **state)
{
	char	y[2048], want[1024];

	(void)state;
	expect_exact(CLIENT "  rules:\n    - dst: 10.0.0.0/33\n"
	    "      outbound: default\n",
	    "t.yaml:5:12: client.rules[0].dst: '10.0.0.0/33' is not an "
	    "address/prefix");
	expect_exact(CLIENT "  rules:\n    - dst: 10.0.0.0/8\n"
	    "      outbound: nowhere\n",
	    "t.yaml:6:17: client.rules[0]: outbound: no outbound named "
	    "nowhere");
	expect_exact(CLIENT "  rules:\n    - dst: 10.0.0.0/8\n",
	    "t.yaml:5:7: client.rules[0].outbound: missing required key");
	expect_exact(CLIENT "  rules:\n    - outbound: default\n",
	    "t.yaml:5:7: client.rules[0]: a rule needs something to match "
	    "(dst, domain, domain_suffix, domain_keyword, port, network, src, "
	    "rule_set or geoip); the flows no rule takes go to final");
	expect_exact(CLIENT "  rules:\n    - port: [80, 2000-1000]\n"
	    "      outbound: default\n",
	    "t.yaml:5:18: client.rules[0].port[1]: '2000-1000': the range is "
	    "backwards");
	expect_exact(CLIENT "  rules:\n    - port: 65536\n"
	    "      outbound: default\n",
	    "t.yaml:5:13: client.rules[0].port: '65536': ports are 0..65535");
	expect_exact(CLIENT "  rules:\n    - port: http\n"
	    "      outbound: default\n",
	    "t.yaml:5:13: client.rules[0].port: 'http' is not a port or a "
	    "range (443, 1000-2000)");
	expect_exact(CLIENT "  rules:\n    - network: sctp\n"
	    "      outbound: default\n",
	    "t.yaml:5:16: client.rules[0].network: 'sctp' is not tcp, udp or "
	    "icmp");
	expect_exact(CLIENT "  rules:\n    - domain: \"a..b\"\n"
	    "      outbound: default\n",
	    "t.yaml:5:15: client.rules[0].domain: 'a..b': not a domain name "
	    "(letters, digits, '-', '_', dots between labels)");
	expect_exact(CLIENT "  rules:\n    - domain_suffix: \"*.b\"\n"
	    "      outbound: default\n",
	    "t.yaml:5:22: client.rules[0].domain_suffix: '*.b': no wildcards: "
	    "use domain_suffix");
	expect_exact(CLIENT "  rules:\n    - rule_set: nope\n"
	    "      outbound: default\n",
	    "t.yaml:5:17: client.rules[0].rule_set: no rule set named nope in "
	    "rule_sets");
	expect_exact(CLIENT "  rules:\n    - port: []\n"
	    "      outbound: default\n",
	    "t.yaml:5:13: client.rules[0].port: empty list");
	expect_exact(CLIENT "  rules:\n    - geoip: CN\n"
	    "      outbound: default\n",
	    "t.yaml:5:14: client.rules[0].geoip: 'CN': geoip needs a database "
	    "(client.geoip_database)");
	expect_exact(CLIENT "  rules:\n    - bogus: CN\n"
	    "      outbound: default\n",
	    "t.yaml:5:7: client.rules[0].bogus: unknown key");
	expect_exact(CLIENT "  rule_sets:\n    - path: /x\n",
	    "t.yaml:5:7: client.rule_sets[0].name: missing required key");
	expect_exact(CLIENT "  rule_sets:\n    - name: a\n      path: "
	    "/nonexistent/set.txt\n",
	    "t.yaml:6:13: client.rule_sets[0].path: /nonexistent/set.txt: "
	    "No such file or directory");
	expect_exact(CLIENT "  rule_sets:\n    - name: a\n      path: /x\n"
	    "      type: list\n",
	    "t.yaml:7:13: client.rule_sets[0].type: 'list' is not auto, "
	    "domain, suffix, keyword or cidr");

	/* A bad line in the set: the set's own file, line and column. */
	write_set("ok.example\n\n   10.0.0.0/8\n  bad..name\n");
	snprintf(y, sizeof(y), CLIENT "  rule_sets:\n    - name: s\n"
	    "      path: %s\n", setpath);
	snprintf(want, sizeof(want), "%s:4:3: 'bad..name': not a domain name "
	    "(letters, digits, '-', '_', dots between labels) (rule set s, "
	    "t.yaml:6:13)", setpath);
	expect_exact(y, want);
	write_set("ok.example\n");
	snprintf(y, sizeof(y), CLIENT "  rule_sets:\n    - name: s\n"
	    "      path: %s\n    - name: s\n      path: %s\n", setpath,
	    setpath);
	expect_exact(y, "t.yaml:7:7: client.rule_sets[1]: rule set s declared "
	    "twice");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rules_load, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_rules_dump, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_rules_errors, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
