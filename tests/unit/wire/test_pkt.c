/* pkt: IP/UDP/ICMP parsing and building, checksums, fragmenting. */
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

static const uint8_t A4[4] = { 10, 0, 0, 1 }, B4[4] = { 192, 0, 2, 7 };
static const uint8_t A6[16] = { 0xfd, 0, [15] = 1 };
static const uint8_t B6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 7 };

static uint8_t	buf[PKT_MAX], frag[PKT_MAX], scratch[PKT_MAX];

/* Textbook RFC 1071 checksum over big-endian 16-bit words: an
 * independent check of pkt_csum_*. */
static uint16_t
ref_sum(const uint8_t *p, size_t len, uint32_t acc)
{
	size_t	i;

	for (i = 0; i + 1 < len; i += 2)
		acc += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		acc += (uint32_t)p[len - 1] << 8;
	while (acc >> 16)
		acc = (acc & 0xffff) + (acc >> 16);
	return (uint16_t)acc;
}

static uint16_t
ref_udp4(const uint8_t *pkt)
{
	uint8_t		ph[12];
	size_t		ulen = (size_t)(pkt[24] << 8 | pkt[25]);
	uint8_t		tmp[PKT_MAX];
	uint16_t	s;

	memcpy(ph, pkt + 12, 8);
	ph[8] = 0;
	ph[9] = 17;
	ph[10] = pkt[24];
	ph[11] = pkt[25];
	memcpy(tmp, pkt + 20, ulen);
	tmp[6] = tmp[7] = 0;
	s = (uint16_t)~ref_sum(tmp, ulen, ref_sum(ph, 12, 0));
	return s == 0 ? 0xffff : s;
}

static void
test_csum(void **state)
{
	uint8_t		data[1001];
	uint16_t	got, want;
	size_t		i, len;

	(void)state;
	srand(1);
	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)rand();
	for (len = 0; len < sizeof(data); len += 37) {
		got = pkt_csum_fold(pkt_csum_add(0, data, len));
		want = (uint16_t)~ref_sum(data, len, 0);
		/* Stored in the data's byte order: big endian on the wire. */
		assert_memory_equal(&got, ((uint8_t[]){ (uint8_t)(want >> 8),
		    (uint8_t)want }), 2);
	}
}

static void
test_udp4_roundtrip(void **state)
{
	struct pkt_ip	ip;
	struct pkt_udp	u;
	size_t		n;

	(void)state;
	n = pkt_build_udp(buf, AF_INET, B4, 53, A4, 40000, "hello", 5, 77);
	assert_int_equal(n, 20 + 8 + 5);
	/* Independent checksum check. */
	assert_int_equal(buf[26] << 8 | buf[27], ref_udp4(buf));
	assert_int_equal(ref_sum(buf, 20, 0), 0xffff);
	assert_int_equal(pkt_parse(buf, n, &ip), PKT_OK);
	assert_int_equal(ip.family, AF_INET);
	assert_int_equal(ip.proto, PKT_PROTO_UDP);
	assert_false(ip.frag);
	assert_memory_equal(ip.src, B4, 4);
	assert_memory_equal(ip.dst, A4, 4);
	assert_int_equal(pkt_udp_parse(&ip, &u), PKT_OK);
	assert_int_equal(u.sport, 53);
	assert_int_equal(u.dport, 40000);
	assert_int_equal(u.len, 5);
	assert_memory_equal(u.data, "hello", 5);

	/* A flipped payload bit is a bad checksum; checksum 0 is none. */
	buf[30] ^= 1;
	assert_int_equal(pkt_parse(buf, n, &ip), PKT_OK);
	assert_int_equal(pkt_udp_parse(&ip, &u), PKT_BADSUM);
	buf[26] = buf[27] = 0;
	assert_int_equal(pkt_udp_parse(&ip, &u), PKT_OK);
	/* IPv4 header checksum. */
	buf[8] = 1;
	assert_int_equal(pkt_parse(buf, n, &ip), PKT_BADSUM);
}

static void
test_udp6_roundtrip(void **state)
{
	struct pkt_ip	ip;
	struct pkt_udp	u;
	size_t		n;

	(void)state;
	n = pkt_build_udp(buf, AF_INET6, A6, 1234, B6, 443, "x", 1, 0);
	assert_int_equal(n, 40 + 8 + 1);
	assert_int_equal(pkt_parse(buf, n, &ip), PKT_OK);
	assert_int_equal(ip.family, AF_INET6);
	assert_int_equal(pkt_udp_parse(&ip, &u), PKT_OK);
	assert_int_equal(u.dport, 443);
	/* Zero checksum is not allowed over IPv6. */
	buf[46] = buf[47] = 0;
	assert_int_equal(pkt_udp_parse(&ip, &u), PKT_BADSUM);
	/* Largest datagram. */
	memset(frag, 0xab, 65527);
	n = pkt_build_udp(buf, AF_INET6, A6, 1, B6, 2, frag, 65527, 0);
	assert_int_equal(n, PKT_MAX);
	assert_int_equal(pkt_parse(buf, n, &ip), PKT_OK);
	assert_int_equal(pkt_udp_parse(&ip, &u), PKT_OK);
	assert_int_equal(u.len, 65527);
	assert_int_equal(pkt_build_udp(buf, AF_INET6, A6, 1, B6, 2, frag,
	    65528, 0), 0);
	assert_int_equal(pkt_build_udp(buf, AF_INET, A4, 1, B4, 2, frag,
	    65508, 0), 0);
	assert_int_equal(pkt_build_udp(buf, AF_INET, A4, 1, B4, 2, frag,
	    65507, 0), 65535);
}

static void
test_malformed(void **state)
{
	struct pkt_ip	ip;
	struct pkt_udp	u;
	size_t		n;

	(void)state;
	assert_int_equal(pkt_parse(buf, 0, &ip), PKT_MALFORMED);
	memset(buf, 0, 64);
	buf[0] = 0x55;		/* version 5 */
	assert_int_equal(pkt_parse(buf, 64, &ip), PKT_MALFORMED);
	n = pkt_build_udp(buf, AF_INET, B4, 53, A4, 40000, "hello", 5, 77);
	assert_int_equal(pkt_parse(buf, n - 1, &ip), PKT_MALFORMED);
	assert_int_equal(pkt_parse(buf, 19, &ip), PKT_MALFORMED);
	buf[0] = 0x44;		/* IHL 16 bytes */
	assert_int_equal(pkt_parse(buf, n, &ip), PKT_MALFORMED);
	/* UDP length longer than the packet, and shorter than 8. */
	n = pkt_build_udp(buf, AF_INET, B4, 53, A4, 40000, "hello", 5, 77);
	buf[25] = 14;
	assert_int_equal(pkt_parse(buf, n, &ip), PKT_OK);
	assert_int_equal(pkt_udp_parse(&ip, &u), PKT_MALFORMED);
	buf[25] = 7;
	assert_int_equal(pkt_udp_parse(&ip, &u), PKT_MALFORMED);
	/* IPv6: payload length mismatch, truncated UDP header, UDP length
	 * different from the payload. */
	n = pkt_build_udp(buf, AF_INET6, A6, 1234, B6, 443, "abcd", 4, 0);
	assert_int_equal(pkt_parse(buf, n + 1, &ip), PKT_MALFORMED);
	assert_int_equal(pkt_parse(buf, 39, &ip), PKT_MALFORMED);
	buf[5] = 4;
	assert_int_equal(pkt_parse(buf, 44, &ip), PKT_OK);
	assert_int_equal(pkt_udp_parse(&ip, &u), PKT_MALFORMED);
	n = pkt_build_udp(buf, AF_INET6, A6, 1234, B6, 443, "abcd", 4, 0);
	buf[45] = 11;
	assert_int_equal(pkt_parse(buf, n, &ip), PKT_OK);
	assert_int_equal(pkt_udp_parse(&ip, &u), PKT_MALFORMED);
}

/* UDP behind hop-by-hop and destination options headers. */
static void
test_ext6(void **state)
{
	struct pkt_ip	ip;
	struct pkt_udp	u;
	uint8_t		pkt[200];
	size_t		n, i;

	(void)state;
	n = pkt_build_udp(buf, AF_INET6, A6, 1234, B6, 443, "abcd", 4, 0);
	memcpy(pkt, buf, 40);
	pkt[6] = 0;			/* hop-by-hop */
	memset(pkt + 40, 0, 24);
	pkt[40] = 60;			/* -> destination options */
	pkt[41] = 0;			/* 8 bytes */
	pkt[48] = 17;			/* -> UDP */
	pkt[49] = 1;			/* 16 bytes */
	memcpy(pkt + 64, buf + 40, n - 40);
	pkt[5] = (uint8_t)(n - 40 + 24);
	assert_int_equal(pkt_parse(pkt, n + 24, &ip), PKT_OK);
	assert_int_equal(ip.proto, PKT_PROTO_UDP);
	assert_int_equal(pkt_udp_parse(&ip, &u), PKT_OK);
	assert_memory_equal(u.data, "abcd", 4);
	/* Truncated extension header. */
	pkt[49] = 9;
	assert_int_equal(pkt_parse(pkt, n + 24, &ip), PKT_MALFORMED);
	/* A chain of nine option headers is too long. */
	memcpy(pkt, buf, 40);
	pkt[6] = 60;
	for (i = 0; i < 9; i++) {
		memset(pkt + 40 + 8 * i, 0, 8);
		pkt[40 + 8 * i] = i < 8 ? 60 : 17;
	}
	pkt[4] = 0;
	pkt[5] = 72;
	assert_int_equal(pkt_parse(pkt, 112, &ip), PKT_MALFORMED);
	/* Atomic fragment: a whole datagram. */
	memcpy(pkt, buf, 40);
	pkt[6] = 44;
	memset(pkt + 40, 0, 8);
	pkt[40] = 17;
	pkt[44] = 9;
	memcpy(pkt + 48, buf + 40, n - 40);
	pkt[5] = (uint8_t)(n - 40 + 8);
	assert_int_equal(pkt_parse(pkt, n + 8, &ip), PKT_OK);
	assert_false(ip.frag);
	assert_int_equal(pkt_udp_parse(&ip, &u), PKT_OK);
}

static void
test_echo(void **state)
{
	struct pkt_ip	ip;
	struct pkt_echo	e;
	size_t		n;

	(void)state;
	n = pkt_build_echo_reply(buf, AF_INET, B4, A4, 0x1234, 9, "ping", 4, 1);
	assert_int_equal(n, 20 + 8 + 4);
	assert_int_equal(ref_sum(buf + 20, 12, 0), 0xffff);
	assert_int_equal(pkt_parse(buf, n, &ip), PKT_OK);
	/* An echo reply is well formed but not a request. */
	assert_int_equal(pkt_echo_parse(&ip, &e), PKT_OTHER);
	/* Turn it into a request: type 8, fix the checksum. */
	buf[20] = 8;
	buf[22] = buf[23] = 0;
	{
		uint16_t s = pkt_csum_fold(pkt_csum_add(0, buf + 20, 12));
		memcpy(buf + 22, &s, 2);
	}
	assert_int_equal(pkt_echo_parse(&ip, &e), PKT_OK);
	assert_int_equal(e.id, 0x1234);
	assert_int_equal(e.seq, 9);
	assert_int_equal(e.len, 4);
	buf[25] ^= 0x10;
	assert_int_equal(pkt_echo_parse(&ip, &e), PKT_BADSUM);

	/* ICMPv6: the checksum covers the pseudo header. */
	n = pkt_build_echo_reply(buf, AF_INET6, B6, A6, 7, 65535, NULL, 0, 0);
	assert_int_equal(n, 48);
	assert_int_equal(pkt_parse(buf, n, &ip), PKT_OK);
	assert_int_equal(pkt_echo_parse(&ip, &e), PKT_OTHER);
	buf[40] = 128;
	buf[42] = buf[43] = 0;
	{
		uint8_t ph[40] = { 0 };
		uint16_t s;

		memcpy(ph, B6, 16);
		memcpy(ph + 16, A6, 16);
		ph[35] = 8;
		ph[39] = 58;
		s = pkt_csum_fold(pkt_csum_add(pkt_csum_add(0, ph, 40),
		    buf + 40, 8));
		memcpy(buf + 42, &s, 2);
	}
	assert_int_equal(pkt_echo_parse(&ip, &e), PKT_OK);
	assert_int_equal(e.seq, 65535);
	/* Same bytes over the wrong pseudo header. */
	memcpy(ip.src, A6, 16);
	assert_int_equal(pkt_echo_parse(&ip, &e), PKT_BADSUM);
	ip.l4_len = 7;
	assert_int_equal(pkt_echo_parse(&ip, &e), PKT_MALFORMED);
}

/* ICMPv6 checksum of the message at buf + 40 (plen bytes), src to dst. */
static void
icmp6_fix_sum(uint8_t *p, const uint8_t *src, const uint8_t *dst,
    size_t plen)
{
	uint8_t		ph[40] = { 0 };
	uint16_t	s;

	memcpy(ph, src, 16);
	memcpy(ph + 16, dst, 16);
	ph[34] = (uint8_t)(plen >> 8);
	ph[35] = (uint8_t)plen;
	ph[39] = 58;
	p[42] = p[43] = 0;
	s = pkt_csum_fold(pkt_csum_add(pkt_csum_add(0, ph, 40), p + 40, plen));
	memcpy(p + 42, &s, 2);
}

/* A router's Packet Too Big for one of our datagrams (B6 to A6): the MTU
 * and the quoted packet's destination. */
static void
test_ptb6(void **state)
{
	static const uint8_t	R6[16] = { 0xfd, 0x88, [15] = 1 };
	struct pkt_ip		ip;
	const uint8_t		*to = NULL;
	unsigned		mtu = 0;
	size_t			q, n, ql = 0;

	(void)state;
	q = pkt_build_udp(scratch, AF_INET6, B6, 7, A6, 9, frag, 8000, 0);
	n = pkt_build_unreach(buf, AF_INET6, R6, B6, PKT_UNREACH_ADMIN6,
	    scratch, q, 0);
	assert_true(n >= 40 + 8 + 40);
	assert_int_equal(pkt_parse(buf, n, &ip), PKT_OK);
	assert_int_equal(pkt_ptb6_parse(&ip, &mtu, &to, &ql), PKT_OTHER);
	buf[40] = 2;	/* Packet Too Big, code 0, MTU 1500 */
	buf[41] = 0;
	buf[44] = 0, buf[45] = 0, buf[46] = 0x05, buf[47] = 0xdc;
	icmp6_fix_sum(buf, R6, B6, n - 40);
	assert_int_equal(pkt_parse(buf, n, &ip), PKT_OK);
	assert_int_equal(pkt_ptb6_parse(&ip, &mtu, &to, &ql), PKT_OK);
	assert_int_equal(mtu, 1500);
	assert_int_equal(ql, n - 48);
	assert_memory_equal(to, scratch, ql);	/* our packet, quoted */
	buf[n - 1] ^= 1;
	assert_int_equal(pkt_ptb6_parse(&ip, &mtu, &to, &ql), PKT_BADSUM);
	/* Too short to quote our header. */
	ip.l4_len = 8 + 39;
	assert_int_equal(pkt_ptb6_parse(&ip, &mtu, &to, &ql), PKT_OTHER);
}

struct collect {
	size_t	n, bytes;
	size_t	lens[64];
	uint8_t	out[PKT_MAX];	/* payloads reassembled by offset */
	size_t	max_end;
	int	fail_at;
};

static int
collect_emit(void *arg, const uint8_t *p, size_t len)
{
	struct collect	*c = arg;
	struct pkt_ip	 ip;

	assert_true(c->n < 64);
	c->lens[c->n++] = len;
	c->bytes += len;
	assert_int_equal(pkt_parse(p, len, &ip), PKT_OK);
	if (ip.frag) {
		memcpy(c->out + ip.frag_off, ip.l4, ip.l4_len);
		if (ip.frag_off + ip.l4_len > c->max_end)
			c->max_end = ip.frag_off + ip.l4_len;
		if (ip.frag_more)
			assert_int_equal(ip.l4_len % 8, 0);
	}
	return c->fail_at == (int)c->n ? -1 : 0;
}

static void
test_fragment(void **state)
{
	struct collect	*c;
	struct pkt_ip	 ip;
	struct pkt_udp	 u;
	size_t		 n, i;
	int		 fam;

	(void)state;
	assert_non_null(c = calloc(1, sizeof(*c)));
	for (i = 0; i < 65507; i++)
		frag[i] = (uint8_t)(i * 13);
	for (fam = 0; fam < 2; fam++) {
		memset(c, 0, sizeof(*c));
		n = fam == 0 ?
		    pkt_build_udp(buf, AF_INET, B4, 7, A4, 9, frag, 65000, 5) :
		    pkt_build_udp(buf, AF_INET6, B6, 7, A6, 9, frag, 65000, 0);
		assert_int_equal(pkt_fragment(buf, n, 9000, 0xabcdef, scratch,
		    collect_emit, c), 0);
		assert_int_equal(c->n, 8);
		for (i = 0; i < c->n; i++)
			assert_true(c->lens[i] <= 9000);
		/* The pieces put together are the UDP datagram. */
		assert_int_equal(c->max_end, 65008);
		ip.family = fam == 0 ? AF_INET : AF_INET6;
		memcpy(ip.src, fam == 0 ? B4 : B6, fam == 0 ? 4 : 16);
		memcpy(ip.dst, fam == 0 ? A4 : A6, fam == 0 ? 4 : 16);
		ip.proto = PKT_PROTO_UDP;
		ip.frag = false;
		ip.l4 = c->out;
		ip.l4_len = c->max_end;
		assert_int_equal(pkt_udp_parse(&ip, &u), PKT_OK);
		assert_int_equal(u.len, 65000);
		assert_memory_equal(u.data, frag, 65000);
	}
	/* A packet that fits goes out whole; emit's failure stops. */
	memset(c, 0, sizeof(*c));
	n = pkt_build_udp(buf, AF_INET, B4, 7, A4, 9, frag, 100, 5);
	assert_int_equal(pkt_fragment(buf, n, 1500, 1, c->out, collect_emit,
	    c), 0);
	assert_int_equal(c->n, 1);
	memset(c, 0, sizeof(*c));
	c->fail_at = 2;
	n = pkt_build_udp(buf, AF_INET, B4, 7, A4, 9, frag, 5000, 5);
	assert_int_equal(pkt_fragment(buf, n, 1500, 1, scratch,
	    collect_emit, c), -1);
	assert_int_equal(c->n, 2);
	free(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_csum),
		cmocka_unit_test(test_udp4_roundtrip),
		cmocka_unit_test(test_udp6_roundtrip),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_ext6),
		cmocka_unit_test(test_echo),
		cmocka_unit_test(test_fragment),
		cmocka_unit_test(test_ptb6),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
