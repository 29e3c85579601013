/* reass: fragment reassembly with bounded memory and a timeout. */
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

#include "wire/pkt.h"
#include "client/dgram/reass.h"

static const uint8_t A4[4] = { 10, 0, 0, 1 }, B4[4] = { 192, 0, 2, 7 };
static const uint8_t A6[16] = { 0xfd, 0, [15] = 1 };
static const uint8_t B6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 7 };

static uint8_t	buf[PKT_MAX], data[PKT_MAX], scratch[PKT_MAX];

/* Fragments of one datagram, kept as whole packets. */
struct frags {
	size_t	 n;
	uint8_t	*pkt[64];
	size_t	 len[64];
};

static int
keep(void *arg, const uint8_t *p, size_t len)
{
	struct frags	*f = arg;

	assert_true(f->n < 64);
	assert_non_null(f->pkt[f->n] = malloc(len));
	memcpy(f->pkt[f->n], p, len);
	f->len[f->n++] = len;
	return 0;
}

static void
frags_free(struct frags *f)
{
	size_t	i;

	for (i = 0; i < f->n; i++)
		free(f->pkt[i]);
	f->n = 0;
}

static void
make(struct frags *f, int family, size_t plen, uint32_t id, unsigned mtu)
{
	size_t	n, i;

	for (i = 0; i < plen; i++)
		data[i] = (uint8_t)(i * 31 + id);
	f->n = 0;
	if (family == AF_INET)
		n = pkt_build_udp(buf, AF_INET, A4, 5000, B4, 53, data, plen,
		    (uint16_t)id);
	else
		n = pkt_build_udp(buf, AF_INET6, A6, 5000, B6, 53, data, plen,
		    0);
	assert_int_equal(pkt_fragment(buf, n, mtu, id, scratch, keep, f), 0);
}

/* Feeds fragment i; returns reass_add's result. */
static int
feed(struct reass *r, struct frags *f, size_t i, uint64_t now,
    struct pkt_ip *ip)
{
	assert_int_equal(pkt_parse(f->pkt[i], f->len[i], ip), PKT_OK);
	assert_true(ip->frag);
	return reass_add(r, ip, now);
}

static void
check_datagram(struct pkt_ip *ip, size_t plen, uint32_t id)
{
	struct pkt_udp	u;
	size_t		i;

	if (ip->family == AF_INET6) {
		/* The fragmentable part may hold more extension headers. */
		assert_int_equal(pkt_parse_ext6(ip, ip->proto, ip->l4,
		    ip->l4_len), PKT_OK);
	}
	assert_int_equal(pkt_udp_parse(ip, &u), PKT_OK);
	assert_int_equal(u.len, plen);
	for (i = 0; i < plen; i++)
		assert_int_equal(u.data[i], (uint8_t)(i * 31 + id));
}

static void
test_in_order(void **state)
{
	struct reass	*r;
	struct frags	 f;
	struct pkt_ip	 ip;
	size_t		 i;
	int		 fam;

	(void)state;
	assert_non_null(r = reass_new());
	for (fam = 0; fam < 2; fam++) {
		make(&f, fam ? AF_INET6 : AF_INET, fam ? 65527 : 65507, 7,
		    9000);
		assert_int_equal(f.n, 8);
		for (i = 0; i + 1 < f.n; i++)
			assert_int_equal(feed(r, &f, i, 100, &ip), 0);
		assert_int_equal(feed(r, &f, i, 100, &ip), 1);
		assert_false(ip.frag);
		check_datagram(&ip, fam ? 65527 : 65507, 7);
		frags_free(&f);
	}
	assert_int_equal(reass_stats(r)->completed, 2);
	assert_int_equal(reass_expire(r, 100), 0);
	reass_free(r);
	reass_free(NULL);
}

/* Reverse order, and two datagrams interleaved. */
static void
test_out_of_order(void **state)
{
	struct reass	*r;
	struct frags	 f, g;
	struct pkt_ip	 ip;
	size_t		 i;
	int		 done = 0;

	(void)state;
	assert_non_null(r = reass_new());
	make(&f, AF_INET, 20000, 1, 1500);
	make(&g, AF_INET6, 20000, 2, 1280);
	for (i = f.n; i-- > 0;) {
		if (feed(r, &f, i, 10, &ip) == 1) {
			assert_int_equal(i, 0);
			check_datagram(&ip, 20000, 1);
			done++;
		}
		if (i < g.n && feed(r, &g, i, 10, &ip) == 1) {
			check_datagram(&ip, 20000, 2);
			done++;
		}
	}
	/* g has more fragments (smaller MTU): the rest of them. */
	assert_true(g.n >= f.n);
	for (i = f.n; i < g.n; i++) {
		if (feed(r, &g, i, 10, &ip) == 1) {
			check_datagram(&ip, 20000, 2);
			done++;
		}
	}
	assert_int_equal(done, 2);
	frags_free(&f);
	frags_free(&g);
	reass_free(r);
}

static void
test_timeout(void **state)
{
	struct reass	*r;
	struct frags	 f;
	struct pkt_ip	 ip;

	(void)state;
	assert_non_null(r = reass_new());
	make(&f, AF_INET, 5000, 3, 1500);
	assert_int_equal(feed(r, &f, 0, 1000, &ip), 0);
	assert_int_equal(reass_expire(r, 1000 + REASS_TIMEOUT_MS - 1), 1);
	assert_int_equal(reass_expire(r, 1000 + REASS_TIMEOUT_MS), 0);
	assert_int_equal(reass_stats(r)->timeouts, 1);
	/* The rest arrives too late: a new, incomplete datagram. */
	assert_int_equal(feed(r, &f, 1, 1000 + REASS_TIMEOUT_MS, &ip), 0);
	assert_int_equal(feed(r, &f, 2, 1000 + REASS_TIMEOUT_MS, &ip), 0);
	assert_int_equal(feed(r, &f, 3, 1000 + REASS_TIMEOUT_MS, &ip), 0);
	assert_int_equal(reass_expire(r, 1000 + 2 * REASS_TIMEOUT_MS), 0);
	assert_int_equal(reass_stats(r)->timeouts, 2);
	frags_free(&f);
	reass_free(r);
}

static void
test_bounded(void **state)
{
	struct reass	*r;
	struct frags	 f;
	struct pkt_ip	 ip;
	uint32_t	 id;

	(void)state;
	assert_non_null(r = reass_new());
	/* First fragments of REASS_MAX + 5 datagrams: the oldest go. */
	for (id = 0; id < REASS_MAX + 5; id++) {
		make(&f, AF_INET6, 3000, id, 1280);
		assert_int_equal(feed(r, &f, 0, id, &ip), 0);
		frags_free(&f);
	}
	assert_int_equal(reass_stats(r)->evicted, 5);
	assert_int_equal(reass_expire(r, REASS_MAX + 5), REASS_MAX);
	/* Datagram 0 was evicted; the last one still completes. */
	make(&f, AF_INET6, 3000, REASS_MAX + 4, 1280);
	assert_int_equal(feed(r, &f, 1, 100, &ip), 0);
	assert_int_equal(feed(r, &f, 2, 100, &ip), 1);
	check_datagram(&ip, 3000, REASS_MAX + 4);
	frags_free(&f);
	reass_free(r);
}

static void
test_invalid(void **state)
{
	struct reass	*r;
	struct frags	 f;
	struct pkt_ip	 ip;
	uint8_t		*p;

	(void)state;
	assert_non_null(r = reass_new());
	/* Duplicate fragment: overlap, the datagram is dropped, and its
	 * remaining fragments too. */
	make(&f, AF_INET, 4000, 9, 1500);
	assert_int_equal(feed(r, &f, 0, 0, &ip), 0);
	assert_int_equal(feed(r, &f, 0, 0, &ip), -1);
	assert_int_equal(feed(r, &f, 1, 0, &ip), -1);
	assert_int_equal(feed(r, &f, 2, 0, &ip), -1);
	assert_int_equal(reass_stats(r)->invalid, 1);
	/* The poisoned entry goes quietly at its timeout. */
	assert_int_equal(reass_expire(r, REASS_TIMEOUT_MS), 0);
	assert_int_equal(reass_stats(r)->timeouts, 0);
	frags_free(&f);

	/* A non-final fragment whose length is not a multiple of 8. */
	make(&f, AF_INET, 4000, 10, 1500);
	p = f.pkt[0];
	p[2] = (uint8_t)((f.len[0] - 1) >> 8);
	p[3] = (uint8_t)(f.len[0] - 1);
	p[10] = p[11] = 0;
	{
		uint16_t s = pkt_csum_fold(pkt_csum_add(0, p, 20));
		memcpy(p + 10, &s, 2);
	}
	f.len[0]--;
	assert_int_equal(feed(r, &f, 0, 0, &ip), -1);
	assert_int_equal(reass_stats(r)->invalid, 2);
	frags_free(&f);

	/* Overlapping offset: fragment 1 claims to start inside fragment 0. */
	make(&f, AF_INET6, 4000, 11, 1500);
	assert_int_equal(feed(r, &f, 0, 0, &ip), 0);
	p = f.pkt[1];
	p[43] = (uint8_t)((p[43] & 0x07) | 0x08);	/* offset lowered */
	p[42] = 0;
	assert_int_equal(feed(r, &f, 1, 0, &ip), -1);
	assert_int_equal(reass_stats(r)->invalid, 3);
	frags_free(&f);

	/* Two different final lengths. */
	make(&f, AF_INET6, 4000, 12, 1500);
	assert_int_equal(feed(r, &f, f.n - 1, 0, &ip), 0);
	p = f.pkt[f.n - 1];
	p[43] = (uint8_t)(p[43] + 8);
	assert_int_equal(feed(r, &f, f.n - 1, 0, &ip), -1);
	frags_free(&f);
	reass_free(r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_order),
		cmocka_unit_test(test_out_of_order),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_bounded),
		cmocka_unit_test(test_invalid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
