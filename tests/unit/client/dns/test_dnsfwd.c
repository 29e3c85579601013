/*
 * dnsfwd: which upstream a name goes to (the first whose domains hold it
 * at a label boundary, else none), and the answer cache driven by a fake
 * clock: TTLs lowered as time goes, expiry, negative answers kept at most
 * DNSFWD_NEG_TTL, what is never kept, the bound (least recently used
 * out first), the query's id and letter case in what comes back; the
 * learnt names (address to the name asked), bounded, the latest kept.
 */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "client/dns/dnsfwd.h"
#include "conf/conf.h"
#include "wire/dns.h"

static size_t
put_name(uint8_t *p, const char *name)
{
	size_t		 o = 0;
	const char	*dot;
	size_t		 n;

	while (*name != '\0') {
		dot = strchr(name, '.');
		n = dot != NULL ? (size_t)(dot - name) : strlen(name);
		p[o++] = (uint8_t)n;
		memcpy(p + o, name, n);
		o += n;
		name += n + (dot != NULL);
	}
	p[o++] = 0;
	return o;
}

/* A query for name/type with id. */
static size_t
query(uint8_t *m, uint16_t id, const char *name, uint16_t type)
{
	size_t	o = DNS_HDR_LEN;

	memset(m, 0, DNS_HDR_LEN);
	m[0] = (uint8_t)(id >> 8);
	m[1] = (uint8_t)id;
	m[2] = 0x01;		/* RD */
	m[5] = 1;
	o += put_name(m + o, name);
	m[o++] = 0; m[o++] = (uint8_t)type;
	m[o++] = 0; m[o++] = 1;
	return o;
}

/* Its reply: rcode; with an A answer of ttl when a4 != NULL; with a
 * SOA-like authority record of soa_ttl when soa_ttl >= 0. */
static size_t
reply(uint8_t *m, uint16_t id, const char *name, uint16_t type, int rcode,
    const uint8_t *a4, uint32_t ttl, long soa_ttl)
{
	size_t	o = query(m, id, name, type);

	m[2] = 0x81;			/* QR RD */
	m[3] = (uint8_t)(0x80 | rcode);	/* RA */
	if (a4 != NULL) {
		m[7] = 1;
		m[o++] = 0xc0; m[o++] = DNS_HDR_LEN;
		m[o++] = 0; m[o++] = (uint8_t)type; m[o++] = 0; m[o++] = 1;
		m[o++] = (uint8_t)(ttl >> 24); m[o++] = (uint8_t)(ttl >> 16);
		m[o++] = (uint8_t)(ttl >> 8); m[o++] = (uint8_t)ttl;
		m[o++] = 0; m[o++] = 4;
		memcpy(m + o, a4, 4);
		o += 4;
	}
	if (soa_ttl >= 0) {
		m[9] = 1;
		m[o++] = 0xc0; m[o++] = DNS_HDR_LEN;
		m[o++] = 0; m[o++] = 6; m[o++] = 0; m[o++] = 1;
		m[o++] = 0; m[o++] = 0; m[o++] = (uint8_t)(soa_ttl >> 8);
		m[o++] = (uint8_t)soa_ttl;
		m[o++] = 0; m[o++] = 2; m[o++] = 0; m[o++] = 0;
	}
	return o;
}

static void
parse(struct dns_query *q, uint16_t id, const char *name, uint16_t type)
{
	uint8_t	m[512];

	assert_int_equal(dns_query_parse(m, query(m, id, name, type), q), 0);
}

/* The first answer's TTL in a reply made by reply(). */
static uint32_t
ttl_of(const uint8_t *m, const char *name)
{
	size_t	o = DNS_HDR_LEN + strlen(name) + 2 + 4 + 2 + 4;

	return (uint32_t)m[o] << 24 | (uint32_t)m[o + 1] << 16 |
	    (uint32_t)m[o + 2] << 8 | m[o + 3];
}

static void
test_pick(void **state)
{
	struct conf_dns_upstream	 up[3];
	char				 s0[] = "corp.example", s1[] = "lab";
	char				 s2[] = "example", s3[] = "";
	char				*d0[] = { s0, s1 };
	char				*d1[] = { s2 };
	char				*d2[] = { s3 };
	struct conf			 c;

	(void)state;
	memset(&c, 0, sizeof(c));
	memset(up, 0, sizeof(up));
	up[0].domains = d0;
	up[0].ndomains = 2;
	up[1].domains = d1;
	up[1].ndomains = 1;
	c.client.dns_upstreams = up;
	c.client.ndns_upstreams = 2;
	assert_int_equal(dnsfwd_pick(&c, "corp.example"), 0);
	assert_int_equal(dnsfwd_pick(&c, "a.b.corp.example"), 0);
	assert_int_equal(dnsfwd_pick(&c, "x.lab"), 0);
	/* First match wins: corp.example is also under example. */
	assert_int_equal(dnsfwd_pick(&c, "www.example"), 1);
	assert_int_equal(dnsfwd_pick(&c, "xcorp.example"), 1);
	assert_int_equal(dnsfwd_pick(&c, "notexample"), -1);
	assert_int_equal(dnsfwd_pick(&c, "lab.org"), -1);
	assert_int_equal(dnsfwd_pick(&c, ""), -1);
	/* A third upstream of "." (every name) takes the rest. */
	up[2].domains = d2;
	up[2].ndomains = 1;
	c.client.ndns_upstreams = 3;
	assert_int_equal(dnsfwd_pick(&c, "www.example"), 1);
	assert_int_equal(dnsfwd_pick(&c, "notexample"), 2);
	assert_int_equal(dnsfwd_pick(&c, "lab.org"), 2);
	assert_int_equal(dnsfwd_pick(&c, ""), 2);
	c.client.ndns_upstreams = 0;
	assert_int_equal(dnsfwd_pick(&c, "corp.example"), -1);
}

static const uint8_t A1[4] = { 192, 0, 2, 1 };

static void
test_ttl(void **state)
{
	struct dnsfwd_cache	*k;
	struct dns_query	 q;
	uint8_t			 m[512], out[DNSFWD_MSG_MAX];
	size_t			 n;

	(void)state;
	assert_null(dnsfwd_cache_new(0));
	assert_non_null(k = dnsfwd_cache_new(8));
	parse(&q, 7, "www.test", DNS_TYPE_A);
	assert_int_equal(dnsfwd_cache_get(k, &q, 1000, out, sizeof(out)), 0);
	dnsfwd_cache_put(k, m, reply(m, 1, "www.test", DNS_TYPE_A, 0, A1, 60,
	    -1), 1000);
	/* 10.5 s later: TTL 50, the query's id. */
	n = dnsfwd_cache_get(k, &q, 11500, out, sizeof(out));
	assert_true(n > 0);
	assert_int_equal(out[0] << 8 | out[1], 7);
	assert_int_equal(ttl_of(out, "www.test"), 50);
	assert_memory_equal(out + n - 4, A1, 4);
	/* Another type is another entry. */
	parse(&q, 8, "www.test", DNS_TYPE_AAAA);
	assert_int_equal(dnsfwd_cache_get(k, &q, 11500, out, sizeof(out)), 0);
	/* The letter case of the question is the query's. */
	parse(&q, 9, "WWW.Test", DNS_TYPE_A);
	n = dnsfwd_cache_get(k, &q, 59999, out, sizeof(out));
	assert_true(n > 0);
	assert_memory_equal(out + DNS_HDR_LEN + 1, "WWW", 3);
	assert_int_equal(ttl_of(out, "www.test"), 2);
	/* At 61 s it is gone. */
	assert_int_equal(dnsfwd_cache_get(k, &q, 61000, out, sizeof(out)), 0);
	assert_int_equal(dnsfwd_cache_stats(k)->hits, 2);
	assert_int_equal(dnsfwd_cache_stats(k)->misses, 3);
	assert_int_equal(dnsfwd_cache_stats(k)->expired, 1);
	assert_int_equal(dnsfwd_cache_stats(k)->entries, 0);
	/* TTL 0, SERVFAIL, a truncated reply, a query: never kept. */
	dnsfwd_cache_put(k, m, reply(m, 1, "z.test", DNS_TYPE_A, 0, A1, 0, -1),
	    0);
	dnsfwd_cache_put(k, m, reply(m, 1, "s.test", DNS_TYPE_A, DNS_SERVFAIL,
	    NULL, 0, 300), 0);
	n = reply(m, 1, "t.test", DNS_TYPE_A, 0, A1, 60, -1);
	m[2] |= 0x02;
	dnsfwd_cache_put(k, m, n, 0);
	dnsfwd_cache_put(k, m, query(m, 1, "q.test", DNS_TYPE_A), 0);
	dnsfwd_cache_put(k, m, 5, 0);
	assert_int_equal(dnsfwd_cache_stats(k)->stored, 1);
	dnsfwd_cache_free(k);
}

static void
test_negative(void **state)
{
	struct dnsfwd_cache	*k;
	struct dns_query	 q;
	uint8_t			 m[512], out[DNSFWD_MSG_MAX];

	(void)state;
	assert_non_null(k = dnsfwd_cache_new(8));
	/* NXDOMAIN with a SOA of 3600: kept DNSFWD_NEG_TTL only. */
	dnsfwd_cache_put(k, m, reply(m, 1, "nx.test", DNS_TYPE_A,
	    DNS_NXDOMAIN, NULL, 0, 3600), 0);
	parse(&q, 2, "nx.test", DNS_TYPE_A);
	assert_true(dnsfwd_cache_get(k, &q, DNSFWD_NEG_TTL * 1000 - 1, out,
	    sizeof(out)) > 0);
	assert_int_equal(out[3] & 0xf, DNS_NXDOMAIN);
	assert_int_equal(dnsfwd_cache_get(k, &q, DNSFWD_NEG_TTL * 1000, out,
	    sizeof(out)), 0);
	/* NOERROR, no answer, a SOA of 5: kept 5 s. */
	dnsfwd_cache_put(k, m, reply(m, 1, "nodata.test", DNS_TYPE_AAAA, 0,
	    NULL, 0, 5), 0);
	parse(&q, 2, "nodata.test", DNS_TYPE_AAAA);
	assert_true(dnsfwd_cache_get(k, &q, 4999, out, sizeof(out)) > 0);
	assert_int_equal(dnsfwd_cache_get(k, &q, 5000, out, sizeof(out)), 0);
	/* No SOA at all: DNSFWD_NEG_TTL. */
	dnsfwd_cache_put(k, m, reply(m, 1, "bare.test", DNS_TYPE_A,
	    DNS_NXDOMAIN, NULL, 0, -1), 0);
	parse(&q, 2, "bare.test", DNS_TYPE_A);
	assert_true(dnsfwd_cache_get(k, &q, DNSFWD_NEG_TTL * 1000 - 1, out,
	    sizeof(out)) > 0);
	dnsfwd_cache_free(k);
}

static void
test_bound(void **state)
{
	struct dnsfwd_cache	*k;
	struct dns_query	 q;
	uint8_t			 m[512], out[DNSFWD_MSG_MAX];
	char			 name[32];
	int			 i;

	(void)state;
	assert_non_null(k = dnsfwd_cache_new(4));
	for (i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "n%d.test", i);
		dnsfwd_cache_put(k, m, reply(m, 1, name, DNS_TYPE_A, 0, A1,
		    300, -1), 0);
	}
	/* n0 used: n1 is now the least recently used. */
	parse(&q, 1, "n0.test", DNS_TYPE_A);
	assert_true(dnsfwd_cache_get(k, &q, 1, out, sizeof(out)) > 0);
	dnsfwd_cache_put(k, m, reply(m, 1, "n4.test", DNS_TYPE_A, 0, A1, 300,
	    -1), 2);
	assert_int_equal(dnsfwd_cache_stats(k)->entries, 4);
	assert_int_equal(dnsfwd_cache_stats(k)->evicted, 1);
	parse(&q, 1, "n1.test", DNS_TYPE_A);
	assert_int_equal(dnsfwd_cache_get(k, &q, 3, out, sizeof(out)), 0);
	parse(&q, 1, "n0.test", DNS_TYPE_A);
	assert_true(dnsfwd_cache_get(k, &q, 3, out, sizeof(out)) > 0);
	/* Many more than fit: still 4. */
	for (i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "m%d.test", i);
		dnsfwd_cache_put(k, m, reply(m, 1, name, DNS_TYPE_A, 0, A1,
		    300, -1), 4);
	}
	assert_int_equal(dnsfwd_cache_stats(k)->entries, 4);
	/* The same name again replaces its entry. */
	dnsfwd_cache_put(k, m, reply(m, 1, "m999.test", DNS_TYPE_A, 0, A1,
	    10, -1), 5);
	assert_int_equal(dnsfwd_cache_stats(k)->entries, 4);
	parse(&q, 1, "m999.test", DNS_TYPE_A);
	assert_true(dnsfwd_cache_get(k, &q, 5, out, sizeof(out)) > 0);
	assert_int_equal(ttl_of(out, "m999.test"), 10);
	dnsfwd_cache_flush(k);
	assert_int_equal(dnsfwd_cache_stats(k)->entries, 0);
	dnsfwd_cache_free(k);
	dnsfwd_cache_free(NULL);
}

static void
test_names(void **state)
{
	struct dnsfwd_names	*t;
	uint8_t			 m[512], ip[4] = { 198, 51, 100, 0 };
	uint8_t			 six[16] = { 198, 51, 100, 1 };
	char			 name[32];
	int			 i;

	(void)state;
	assert_null(dnsfwd_names_new(0));
	assert_non_null(t = dnsfwd_names_new(4));
	assert_null(dnsfwd_names_find(t, AF_INET, A1));
	dnsfwd_names_learn(t, m, reply(m, 1, "WWW.Test", DNS_TYPE_A, 0, A1,
	    60, -1));
	assert_string_equal(dnsfwd_names_find(t, AF_INET, A1), "www.test");
	/* Not an answer: NXDOMAIN, a query. */
	ip[3] = 9;
	dnsfwd_names_learn(t, m, reply(m, 1, "nx.test", DNS_TYPE_A,
	    DNS_NXDOMAIN, ip, 60, -1));
	dnsfwd_names_learn(t, m, query(m, 1, "q.test", DNS_TYPE_A));
	assert_null(dnsfwd_names_find(t, AF_INET, ip));
	/* The same address under another name: the latest. */
	dnsfwd_names_learn(t, m, reply(m, 1, "cdn.test", DNS_TYPE_A, 0, A1,
	    60, -1));
	assert_string_equal(dnsfwd_names_find(t, AF_INET, A1), "cdn.test");
	/* Bounded: 4 addresses, the oldest learnt out first. */
	for (i = 1; i <= 4; i++) {
		ip[3] = (uint8_t)i;
		snprintf(name, sizeof(name), "n%d.test", i);
		dnsfwd_names_learn(t, m, reply(m, 1, name, DNS_TYPE_A, 0, ip,
		    60, -1));
	}
	assert_null(dnsfwd_names_find(t, AF_INET, A1));
	for (i = 1; i <= 4; i++) {
		ip[3] = (uint8_t)i;
		snprintf(name, sizeof(name), "n%d.test", i);
		assert_string_equal(dnsfwd_names_find(t, AF_INET, ip), name);
	}
	/* Many more: still 4, the latest. */
	for (i = 0; i < 1000; i++) {
		ip[2] = (uint8_t)(i >> 8);
		ip[3] = (uint8_t)i;
		dnsfwd_names_learn(t, m, reply(m, 1, "many.test", DNS_TYPE_A,
		    0, ip, 60, -1));
	}
	assert_string_equal(dnsfwd_names_find(t, AF_INET, ip), "many.test");
	ip[3]--;
	assert_string_equal(dnsfwd_names_find(t, AF_INET, ip), "many.test");
	ip[2] = 0;
	ip[3] = 1;
	assert_null(dnsfwd_names_find(t, AF_INET, ip));
	assert_null(dnsfwd_names_find(t, AF_INET6, six));
	dnsfwd_names_use(t);
	assert_ptr_equal(dnsfwd_names_used(), t);
	dnsfwd_names_free(t);
	assert_null(dnsfwd_names_used());
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pick),
		cmocka_unit_test(test_ttl),
		cmocka_unit_test(test_negative),
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
