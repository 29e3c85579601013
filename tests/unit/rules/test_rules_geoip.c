/*
 * rules_geoip: the country of an address from a .mmdb file, and geoip
 * keys in rules and in the configuration.  The test writes its own small
 * MaxMind DB (format 2.0, an IPv6 tree holding IPv4 at ::/96) so that it
 * needs no downloaded database.  A build without libmaxminddb must say so
 * instead.
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
#include "rules/rules.h"
#include "rules/rules_geoip.h"

static char	dbpath[64];

/* ---- a minimal MaxMind DB writer ---------------------------------------- */

struct mm {
	uint8_t	*b;
	size_t	 n, cap;
};

static void
put(struct mm *m, const void *p, size_t n)
{
	if (m->n + n > m->cap) {
		m->cap = (m->n + n) * 2 + 64;
		m->b = realloc(m->b, m->cap);
		assert_non_null(m->b);
	}
	memcpy(m->b + m->n, p, n);
	m->n += n;
}

static void
put_u8(struct mm *m, unsigned v)
{
	uint8_t	b = (uint8_t)v;

	put(m, &b, 1);
}

static void
enc_str(struct mm *m, const char *s)
{
	assert_true(strlen(s) < 29);
	put_u8(m, 0x40 | (unsigned)strlen(s));		/* type 2: utf8 */
	put(m, s, strlen(s));
}

static void
enc_map(struct mm *m, unsigned n)
{
	put_u8(m, 0xe0 | n);				/* type 7: map */
}

/* type 5 (uint16), 6 (uint32), 9 (uint64, extended) */
static void
enc_uint(struct mm *m, unsigned type, uint64_t v)
{
	uint8_t	be[8];
	int	k = 0, i;

	for (; v != 0; v >>= 8)
		be[k++] = (uint8_t)v;
	if (type <= 7)
		put_u8(m, (type << 5) | (unsigned)k);
	else {
		put_u8(m, (unsigned)k);
		put_u8(m, type - 7);
	}
	for (i = k - 1; i >= 0; i--)
		put_u8(m, be[i]);
}

struct node {
	int	kind[2];	/* 0 empty, 1 node, 2 data */
	uint32_t v[2];
};

static struct node	*nodes;
static size_t		 nnodes;

static size_t
node_new(void)
{
	nodes = realloc(nodes, (nnodes + 1) * sizeof(*nodes));
	assert_non_null(nodes);
	memset(&nodes[nnodes], 0, sizeof(*nodes));
	return nnodes++;
}

static void
tree_add(const char *prefix, unsigned len, uint32_t data)
{
	uint8_t		ip[16];
	size_t		n = 0;
	unsigned	d, bit;

	memset(ip, 0, sizeof(ip));
	if (inet_pton(AF_INET, prefix, ip + 12) == 1)
		len += 96;
	else
		assert_int_equal(inet_pton(AF_INET6, prefix, ip), 1);
	for (d = 0; d < len; d++) {
		bit = (ip[d / 8] >> (7 - d % 8)) & 1;
		if (d == len - 1) {
			nodes[n].kind[bit] = 2;
			nodes[n].v[bit] = data;
		} else if (nodes[n].kind[bit] == 1)
			n = nodes[n].v[bit];
		else {
			size_t	c = node_new();

			nodes[n].kind[bit] = 1;
			nodes[n].v[bit] = (uint32_t)c;
			n = c;
		}
	}
}

static void
country(struct mm *m, const char *cc)
{
	enc_map(m, 1);
	enc_str(m, "country");
	enc_map(m, 1);
	enc_str(m, "iso_code");
	enc_str(m, cc);
}

/* 10.0.0.0/8 CN, 192.0.2.0/24 DE, 2001:db8::/32 JP. */
static void
write_db(const char *path)
{
	struct mm	 data = { NULL, 0, 0 }, out = { NULL, 0, 0 };
	uint32_t	 cn, de, jp, v;
	size_t		 i;
	unsigned	 side;
	FILE		*fp;

	nodes = NULL;
	nnodes = 0;
	node_new();
	cn = (uint32_t)data.n;
	country(&data, "CN");
	de = (uint32_t)data.n;
	country(&data, "DE");
	jp = (uint32_t)data.n;
	country(&data, "jp");		/* lower case: read as JP */
	tree_add("10.0.0.0", 8, cn);
	tree_add("192.0.2.0", 24, de);
	tree_add("2001:db8::", 32, jp);
	for (i = 0; i < nnodes; i++)
		for (side = 0; side < 2; side++) {
			v = nodes[i].kind[side] == 0 ? (uint32_t)nnodes :
			    nodes[i].kind[side] == 1 ? nodes[i].v[side] :
			    (uint32_t)nnodes + 16 + nodes[i].v[side];
			put_u8(&out, v >> 16);
			put_u8(&out, v >> 8);
			put_u8(&out, v);
		}
	for (i = 0; i < 16; i++)
		put_u8(&out, 0);
	put(&out, data.b, data.n);
	put(&out, "\xab\xcd\xefMaxMind.com", 14);
	enc_map(&out, 9);
	enc_str(&out, "binary_format_major_version");
	enc_uint(&out, 5, 2);
	enc_str(&out, "binary_format_minor_version");
	enc_uint(&out, 5, 0);
	enc_str(&out, "build_epoch");
	enc_uint(&out, 9, 1700000000);
	enc_str(&out, "database_type");
	enc_str(&out, "tunsplit-test-country");
	enc_str(&out, "description");
	enc_map(&out, 0);
	enc_str(&out, "ip_version");
	enc_uint(&out, 5, 6);
	enc_str(&out, "languages");
	put_u8(&out, 0);		/* extended type 11: array, 0 items */
	put_u8(&out, 4);
	enc_str(&out, "node_count");
	enc_uint(&out, 6, nnodes);
	enc_str(&out, "record_size");
	enc_uint(&out, 5, 24);
	assert_non_null(fp = fopen(path, "w"));
	assert_int_equal(fwrite(out.b, 1, out.n, fp), out.n);
	fclose(fp);
	free(out.b);
	free(data.b);
	free(nodes);
}

static int
setup(void **state)
{
	int	fd;

	(void)state;
	snprintf(dbpath, sizeof(dbpath), "/tmp/test_rules_geoip.XXXXXX");
	if ((fd = mkstemp(dbpath)) == -1)
		return -1;
	close(fd);
	write_db(dbpath);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	unlink(dbpath);
	return 0;
}

/* ---- the tests ------------------------------------------------------------ */

static const char *
cc_of(const struct rules_geoip *g, const char *ip, char *cc)
{
	uint8_t	b[16];

	if (inet_pton(AF_INET, ip, b) == 1)
		return rules_geoip_country(g, AF_INET, b, cc) ? cc : "-";
	assert_int_equal(inet_pton(AF_INET6, ip, b), 1);
	return rules_geoip_country(g, AF_INET6, b, cc) ? cc : "-";
}

static void
test_lookup(void **state)
{
	struct rules_geoip	*g;
	char			 err[256], cc[3];

	(void)state;
	g = rules_geoip_open(dbpath, err, sizeof(err));
	if (!rules_geoip_available()) {
		assert_null(g);
		assert_non_null(strstr(err, "built without libmaxminddb"));
		return;
	}
	if (g == NULL)
		fail_msg("%s", err);
	assert_string_equal(cc_of(g, "10.1.2.3", cc), "CN");
	assert_string_equal(cc_of(g, "10.255.255.255", cc), "CN");
	assert_string_equal(cc_of(g, "11.0.0.0", cc), "-");
	assert_string_equal(cc_of(g, "192.0.2.200", cc), "DE");
	assert_string_equal(cc_of(g, "192.0.3.1", cc), "-");
	assert_string_equal(cc_of(g, "2001:db8:1::5", cc), "JP");
	assert_string_equal(cc_of(g, "2001:db9::", cc), "-");
	assert_string_equal(rules_geoip_path(g), dbpath);
	rules_geoip_free(g);

	assert_null(rules_geoip_open("/nonexistent.mmdb", err, sizeof(err)));
	assert_int_equal(strncmp(err, "/nonexistent.mmdb: ", 19), 0);
	assert_null(rules_geoip_open("/etc/hostname", err, sizeof(err)));
	assert_int_equal(rules_geoip_code("cn"), ('C' << 8) | 'N');
	assert_int_equal(rules_geoip_code("C"), -1);
	assert_int_equal(rules_geoip_code("C1"), -1);
}

static void
test_conf(void **state)
{
	static const char key[] = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
	struct rule_query	 q;
	struct rule_hit		 h;
	struct conf		*c;
	char			 y[1024], err[512], *d = NULL;
	size_t			 dlen = 0;
	FILE			*fp;

	(void)state;
	snprintf(y, sizeof(y), "client:\n  server: vpn.example.org:443\n"
	    "  key: %s\n  geoip_database: %s\n  rules:\n"
	    "    - geoip: [de, JP]\n      port: 443\n"
	    "      outbound: default\n"
	    "    - geoip: CN\n      outbound: default\n", key, dbpath);
	c = conf_load_buf("t.yaml", y, strlen(y), err, sizeof(err));
	if (!rules_geoip_available()) {
		assert_null(c);
		assert_non_null(strstr(err, "t.yaml:4:19: "
		    "client.geoip_database: "));
		assert_non_null(strstr(err, "built without libmaxminddb"));
		return;
	}
	if (c == NULL)
		fail_msg("%s", err);
	memset(&q, 0, sizeof(q));
	q.network = RULES_NET_TCP;
	q.port = 443;
	assert_int_equal(rules_query_addr(&q, "192.0.2.9"), 0);
	rules_decide(c->client.rules, &q, -1, &h);
	assert_int_equal(h.rule, 0);
	assert_int_equal(rules_query_addr(&q, "2001:db8::1"), 0);
	rules_decide(c->client.rules, &q, -1, &h);
	assert_int_equal(h.rule, 0);
	assert_int_equal(rules_query_addr(&q, "10.9.9.9"), 0);
	rules_decide(c->client.rules, &q, -1, &h);
	assert_int_equal(h.rule, 1);
	q.port = 80;
	assert_int_equal(rules_query_addr(&q, "192.0.2.9"), 0);
	rules_decide(c->client.rules, &q, -1, &h);
	assert_int_equal(h.rule, -1);
	assert_int_equal(rules_query_addr(&q, "172.16.0.1"), 0);
	rules_decide(c->client.rules, &q, -1, &h);
	assert_int_equal(h.rule, -1);
	/* The dump names the database and the codes, and loads back. */
	assert_non_null(fp = open_memstream(&d, &dlen));
	conf_dump_secrets(c, fp);
	fclose(fp);
	assert_non_null(strstr(d, "  geoip_database: \""));
	assert_non_null(strstr(d, "      geoip: [ \"DE\", \"JP\" ]\n"));
	conf_free(c);
	c = conf_load_buf("dump", d, dlen, err, sizeof(err));
	if (c == NULL)
		fail_msg("%s", err);
	conf_free(c);
	free(d);

	/* A bad code, and a file that is not a database. */
	snprintf(y, sizeof(y), "client:\n  server: vpn.example.org:443\n"
	    "  key: %s\n  geoip_database: %s\n  rules:\n"
	    "    - geoip: CHN\n      outbound: default\n", key, dbpath);
	assert_null(conf_load_buf("t.yaml", y, strlen(y), err, sizeof(err)));
	assert_string_equal(err, "t.yaml:6:14: client.rules[0].geoip: 'CHN': "
	    "not a country code (two letters, ISO 3166: CN, DE)");
	snprintf(y, sizeof(y), "client:\n  server: vpn.example.org:443\n"
	    "  key: %s\n  geoip_database: /etc/hostname\n", key);
	assert_null(conf_load_buf("t.yaml", y, strlen(y), err, sizeof(err)));
	assert_non_null(strstr(err, "t.yaml:4:19: client.geoip_database: "
	    "/etc/hostname: "));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_lookup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_conf, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
