/*
 * vnet: virtio-net headers checked against their packets on the way in,
 * built on the way out.  Packets are made byte by byte here and checked
 * with the reference sum of netbytes.h, independently of vnet.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "stack/vnet.h"
#include "tests/unit/netbytes.h"

#define PAY	20000

static uint8_t pkt[128 + PAY];

/* IPv4 + TCP (20) + payload bytes; IP length as given (0: right). */
static size_t
mk4(size_t payload, uint16_t iplen)
{
	size_t i, n = 40 + payload;

	memset(pkt, 0, 40);
	pkt[0] = 0x45;
	put16(pkt + 2, iplen != 0 ? iplen : (uint16_t)n);
	pkt[8] = 64;
	pkt[9] = 6;
	memcpy(pkt + 12, "\x0a\x09\x00\x02\x0a\x4d\x02\x02", 8);
	put16(pkt + 10, (uint16_t)~sum_fold(sum_add(0, pkt, 20)));
	put16(pkt + 20, 40000);
	put16(pkt + 22, 8080);
	pkt[32] = 5 << 4;
	pkt[33] = 0x18;
	for (i = 40; i < n; i++)
		pkt[i] = (uint8_t)(i * 7);
	return n;
}

static size_t
mk6(size_t payload, uint8_t nh)
{
	size_t i, n = 60 + payload;

	memset(pkt, 0, 60);
	pkt[0] = 0x60;
	put16(pkt + 4, (uint16_t)(20 + payload));
	pkt[6] = nh;
	pkt[7] = 64;
	pkt[8] = 0xfd;
	pkt[23] = 1;
	pkt[24] = 0xfd;
	pkt[39] = 2;
	pkt[52] = 5 << 4;
	for (i = 60; i < n; i++)
		pkt[i] = (uint8_t)(i * 5);
	return n;
}

static struct vnet_hdr
gso(uint8_t type, uint16_t size, uint16_t start)
{
	struct vnet_hdr h = {
		.flags = VNET_F_NEEDS_CSUM, .gso_type = type, .hdr_len = 40,
		.gso_size = size, .csum_start = start, .csum_offset = 16,
	};

	return h;
}

static void
test_hdr_roundtrip(void **state)
{
	struct vnet_hdr a = { 1, 4, 60, 1460, 40, 16 }, b;
	uint8_t raw[VNET_HDR_LEN];

	(void)state;
	vnet_hdr_put(&a, raw);
	vnet_hdr_get(&b, raw);
	assert_memory_equal(&a, &b, sizeof(a));
}

/* A super-packet whose IP length says less: taken whole, lengths fixed. */
static void
test_rx_gso_fixes_lengths(void **state)
{
	struct vnet_hdr h = gso(VNET_GSO_TCPV4, 1460, 20);
	size_t n;

	(void)state;
	n = mk4(PAY, 1500);
	assert_int_equal(vnet_rx(&h, pkt, n), 1);
	assert_int_equal(get16(pkt + 2), n);
	assert_int_equal(sum_fold(sum_add(0, pkt, 20)), 0xffff);
	h.gso_type |= VNET_GSO_ECN;
	assert_int_equal(vnet_rx(&h, pkt, n), 1);

	h = gso(VNET_GSO_TCPV6, 1440, 40);
	n = mk6(PAY, 6);
	put16(pkt + 4, 0);
	assert_int_equal(vnet_rx(&h, pkt, n), 1);
	assert_int_equal(get16(pkt + 4), n - 40);
}

/* Every way a header can lie about its packet: dropped, never read past. */
static void
test_rx_malformed(void **state)
{
	struct vnet_hdr h;
	size_t n;

	(void)state;
	n = mk4(PAY, 0);
#define BAD(mod) do { h = gso(VNET_GSO_TCPV4, 1460, 20); mod; \
	assert_int_equal(vnet_rx(&h, pkt, n), -1); } while (0)
	BAD(h.gso_size = 0);
	BAD(h.hdr_len = (uint16_t)(n + 1));
	BAD(h.gso_type = VNET_GSO_TCPV6);		/* IPv4 packet */
	BAD(h.gso_type = VNET_GSO_UDP);
	BAD(h.gso_type = VNET_GSO_UDP_L4);
	BAD(h.gso_type = 2);
	BAD(h.flags = 0);				/* GSO needs the csum */
	BAD(h.flags = 4);				/* unknown flag */
	BAD(h.csum_start = 24);
	BAD(h.csum_offset = 6);
	BAD(pkt[9] = 17);				/* not TCP */
	pkt[9] = 6;
	BAD(put16(pkt + 6, 0x2000));			/* a fragment */
	put16(pkt + 6, 0);
	BAD(pkt[32] = 4 << 4);				/* TCP header < 20 */
	pkt[32] = 5 << 4;
	/* Truncated: the TCP header is not all there. */
	h = gso(VNET_GSO_TCPV4, 1460, 20);
	assert_int_equal(vnet_rx(&h, pkt, 30), -1);
	assert_int_equal(vnet_rx(&h, pkt, 0), -1);

	n = mk6(PAY, 6);
	h = gso(VNET_GSO_TCPV4, 1440, 40);		/* IPv6 packet */
	assert_int_equal(vnet_rx(&h, pkt, n), -1);
	n = mk6(PAY, 0);				/* extension header */
	h = gso(VNET_GSO_TCPV6, 1440, 40);
	assert_int_equal(vnet_rx(&h, pkt, n), -1);

	/* No GSO, a checksum to finish outside the packet. */
	n = mk4(100, 0);
	h = gso(VNET_GSO_NONE, 0, 20);
	h.csum_offset = (uint16_t)(n - 20 - 1);	/* one byte short */
	assert_int_equal(vnet_rx(&h, pkt, n), -1);
	h.csum_start = 10;				/* inside the IP header */
	h.csum_offset = 16;
	assert_int_equal(vnet_rx(&h, pkt, n), -1);
	h.csum_start = 0xffff;
	h.csum_offset = 0xffff;
	assert_int_equal(vnet_rx(&h, pkt, n), -1);
#undef BAD
}

/* Plain packets: no header, a trusted TCP partial sum, a UDP one done. */
static void
test_rx_plain(void **state)
{
	struct vnet_hdr h = { 0, 0, 0, 0, 0, 0 };
	uint8_t pseudo[12];
	size_t n;

	(void)state;
	n = mk4(100, 0);
	assert_int_equal(vnet_rx(&h, pkt, n), 0);
	h = gso(VNET_GSO_NONE, 0, 20);
	put16(pkt + 36, 0x1234);
	assert_int_equal(vnet_rx(&h, pkt, n), 0);
	assert_int_equal(get16(pkt + 36), 0x1234);	/* TCP: left as is */

	pkt[9] = 17;					/* UDP, sum at 6 */
	put16(pkt + 24, (uint16_t)(n - 20));
	memcpy(pseudo, pkt + 12, 8);
	pseudo[8] = 0;
	pseudo[9] = 17;
	put16(pseudo + 10, (uint16_t)(n - 20));
	put16(pkt + 26, sum_fold(sum_add(0, pseudo, 12)));
	h.csum_offset = 6;
	assert_int_equal(vnet_rx(&h, pkt, n), 0);
	assert_int_equal(sum_fold(sum_add(sum_add(0, pseudo, 12), pkt + 20,
	    n - 20)), 0xffff);
}

/* Out: pseudo-header sum in place, GSO only above the MSS. */
static void
test_tx(void **state)
{
	struct vnet_hdr h;
	uint8_t pseudo[40];
	size_t n;

	(void)state;
	n = mk4(PAY, 0);
	assert_int_equal(vnet_tx(&h, pkt, 40, n, 536), 1);
	assert_int_equal(h.gso_type, VNET_GSO_TCPV4);
	assert_int_equal(h.gso_size, 536);
	assert_int_equal(h.hdr_len, 40);
	assert_int_equal(h.flags, VNET_F_NEEDS_CSUM);
	assert_int_equal(h.csum_start, 20);
	assert_int_equal(h.csum_offset, 16);
	/* Finishing it as the kernel does gives a valid checksum. */
	memcpy(pseudo, pkt + 12, 8);
	pseudo[8] = 0;
	pseudo[9] = 6;
	put16(pseudo + 10, (uint16_t)(n - 20));
	assert_int_equal(get16(pkt + 36), sum_fold(sum_add(0, pseudo, 12)));
	put16(pkt + 36, (uint16_t)~sum_fold(sum_add(0, pkt + 20, n - 20)));
	assert_int_equal(sum_fold(sum_add(sum_add(0, pseudo, 12), pkt + 20,
	    n - 20)), 0xffff);

	assert_int_equal(vnet_tx(&h, pkt, 40, 40 + 536, 536), 0);
	assert_int_equal(h.gso_type, VNET_GSO_NONE);
	assert_int_equal(h.flags, VNET_F_NEEDS_CSUM);
	assert_int_equal(vnet_tx(&h, pkt, 40, n, 0), 0);	/* no MSS */
	assert_int_equal(vnet_tx(&h, pkt, 30, n, 536), -1);	/* split */

	n = mk6(PAY, 6);
	assert_int_equal(vnet_tx(&h, pkt, n, n, 1440), 1);
	assert_int_equal(h.gso_type, VNET_GSO_TCPV6);
	assert_int_equal(h.csum_start, 40);
	memcpy(pseudo, pkt + 8, 32);
	assert_int_equal(get16(pkt + 56), sum_fold(sum_add(0, pseudo, 32) +
	    6 + (uint32_t)(n - 40)));

	n = mk4(100, 0);
	pkt[9] = 17;					/* UDP: nothing */
	assert_int_equal(vnet_tx(&h, pkt, n, n, 536), 0);
	assert_int_equal(h.flags, 0);
	assert_int_equal(h.gso_type, 0);
}

/* USO: a UDP super-packet cut into datagrams with right lengths and
 * checksums; lies refused before anything is emitted. */
static uint8_t	 seen[4][1200];
static size_t	 seenlen[4];
static int	 nseen;

static void
uso_emit(void *arg, const uint8_t *d, size_t n)
{
	(void)arg;
	assert_true(nseen < 4 && n <= sizeof(seen[0]));
	memcpy(seen[nseen], d, n);
	seenlen[nseen++] = n;
}

static void
test_rx_uso(void **state)
{
	static uint8_t out[2048];
	struct vnet_hdr h = { VNET_F_NEEDS_CSUM, VNET_GSO_UDP_L4, 28, 1000,
	    20, 6 };
	uint8_t pseudo[12];
	size_t n, i, at = 0;

	(void)state;
	n = mk4(2500 - 12, 0);		/* 20 + 8 + 2500 bytes */
	pkt[9] = 17;
	put16(pkt + 4, 100);		/* IP id */
	nseen = 0;
	assert_int_equal(vnet_rx_uso(&h, pkt, n, out, uso_emit, NULL), 3);
	assert_int_equal(nseen, 3);
	for (i = 0; i < 3; i++) {
		size_t pl = i < 2 ? 1000 : 500;

		assert_int_equal(seenlen[i], 28 + pl);
		assert_int_equal(get16(seen[i] + 2), 28 + pl);
		assert_int_equal(get16(seen[i] + 4), 100 + i);
		assert_int_equal(sum_fold(sum_add(0, seen[i], 20)), 0xffff);
		assert_int_equal(get16(seen[i] + 24), 8 + pl);
		memcpy(pseudo, seen[i] + 12, 8);
		pseudo[8] = 0;
		pseudo[9] = 17;
		put16(pseudo + 10, (uint16_t)(8 + pl));
		assert_int_equal(sum_fold(sum_add(sum_add(0, pseudo, 12),
		    seen[i] + 20, 8 + pl)), 0xffff);
		assert_memory_equal(seen[i] + 28, pkt + 28 + at, pl);
		at += pl;
	}
	nseen = 0;
#define BAD(mod) do { struct vnet_hdr b = h; mod; \
	assert_int_equal(vnet_rx_uso(&b, pkt, n, out, uso_emit, NULL), -1); \
	} while (0)
	BAD(b.gso_size = 0);
	BAD(b.hdr_len = (uint16_t)(n + 1));
	BAD(b.csum_offset = 16);
	BAD(b.csum_start = 24);
	BAD(b.flags = 0);
	BAD(b.gso_type = VNET_GSO_TCPV4);
	pkt[9] = 6;
	BAD((void)0);			/* not UDP */
	pkt[9] = 17;
	put16(pkt + 6, 0x2000);
	BAD((void)0);			/* a fragment */
	put16(pkt + 6, 0);
	assert_int_equal(vnet_rx_uso(&h, pkt, 28, out, uso_emit, NULL), -1);
#undef BAD
	assert_int_equal(nseen, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hdr_roundtrip),
		cmocka_unit_test(test_rx_gso_fixes_lengths),
		cmocka_unit_test(test_rx_malformed),
		cmocka_unit_test(test_rx_plain),
		cmocka_unit_test(test_tx),
		cmocka_unit_test(test_rx_uso),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
