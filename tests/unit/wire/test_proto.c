/* proto: request header (v2 bound, v1) encode/parse/MAC; auth: keys, ids,
 * users_check. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <sodium.h>

#include "wire/auth.h"
#include "server/users.h"
#include "conf/conf.h"
#include "wire/proto.h"

/*
 * Test vectors.  Key 00 01 .. 1f, ts 1700000000 (0x6553f100), nonce
 * a0 a1 .. af, no padding.  Checked field by field against the layout in
 * proto.h and the MACs recomputed with an independent BLAKE2b (Python's
 * hashlib.blake2b(key=..., digest_size=32)); changing any byte here is a
 * wire format change.
 */
static const char VEC_UID[] = "72e816471195b814";
/* TCP to 192.0.2.1:443 */
static const char VEC_V4[] =
    "01" "01" "004d" "000000006553f100"
    "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf" "72e816471195b814"
    "01" "c0000201" "01bb" "0000"
    "a4657f17e22301c6e582a59fa761cca4c6d9fae481b5cfd5ad03051211de04a2";
/* UDP to [2001:db8::1]:8080 */
static const char VEC_V6[] =
    "01" "02" "0059" "000000006553f100"
    "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf" "72e816471195b814"
    "04" "20010db8000000000000000000000001" "1f90" "0000"
    "0919b58fc5afc7cecb77a4c6f7e994d4480085bb2532ac111e7e01fbeecdb692";
/* TCP to example.com:80 */
static const char VEC_DOM[] =
    "01" "01" "0055" "000000006553f100"
    "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf" "72e816471195b814"
    "03" "0b" "6578616d706c652e636f6d" "0050" "0000"
    "6c8e52e6cce1add025ba9b824f5f11cad356bda7acb8c10fcb94f025729c7922";

/*
 * Version 2: the same headers with version 2, the MAC taken over the
 * header and then the connection's exporter value, here VB = 40 41 .. 5f
 * (recomputed with hashlib.blake2b as above).
 */
static const char VEC2_V4[] =
    "02" "01" "004d" "000000006553f100"
    "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf" "72e816471195b814"
    "01" "c0000201" "01bb" "0000"
    "81b8f35e24326fbeb088684421ecd30cf3c92807b37d4f48c114847fd17a34fe";
static const char VEC2_DOM[] =
    "02" "01" "0055" "000000006553f100"
    "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf" "72e816471195b814"
    "03" "0b" "6578616d706c652e636f6d" "0050" "0000"
    "4ee18d59c6dca34aca23626f0c34c7f3d482661d01389fe919f52416c4d1b958";

/*
 * Version 3: version 2's layout and MAC, the version byte 3; the caller
 * binds it to the exporter with the flow's index as context (here VB
 * again: the MAC does not see how the value was made).
 */
static const char VEC3_V4[] =
    "03" "01" "004d" "000000006553f100"
    "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf" "72e816471195b814"
    "01" "c0000201" "01bb" "0000"
    "113d50f1e976e4a6534f1a94763b40e20ecc62746dc4523a0bf592d0d45b428b";

/* The exporter value the tests bind version 2 headers to. */
static uint8_t VB[PROTO_BIND_LEN];

#define TS0	1700000000ull

static size_t
unhex(const char *s, uint8_t *out, size_t outlen)
{
	size_t	n = strlen(s) / 2, i;
	unsigned v;

	assert_true(n <= outlen);
	for (i = 0; i < n; i++) {
		assert_int_equal(sscanf(s + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
	return n;
}

static void
vec_key(uint8_t key[PROTO_KEY_LEN])
{
	int	i;

	for (i = 0; i < PROTO_KEY_LEN; i++)
		key[i] = (uint8_t)i;
}

static void
vec_req(struct proto_req *r, const uint8_t key[PROTO_KEY_LEN])
{
	int	i;

	memset(r, 0, sizeof(*r));
	r->kind = PROTO_KIND_TCP;
	r->ts = TS0;
	for (i = 0; i < PROTO_NONCE_LEN; i++)
		r->nonce[i] = (uint8_t)(0xa0 + i);
	auth_user_id(key, r->user_id);
}

static void
dest_v4(struct proto_dest *d, uint16_t port)
{
	static const uint8_t ip[4] = { 192, 0, 2, 1 };

	memset(d, 0, sizeof(*d));
	d->atyp = PROTO_ATYP_IPV4;
	memcpy(d->ip, ip, 4);
	d->port = port;
}

static void
dest_v6(struct proto_dest *d, uint16_t port)
{
	static const uint8_t ip[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };

	memset(d, 0, sizeof(*d));
	d->atyp = PROTO_ATYP_IPV6;
	memcpy(d->ip, ip, 16);
	d->port = port;
}

static void
dest_dom(struct proto_dest *d, const char *name, uint16_t port)
{
	memset(d, 0, sizeof(*d));
	d->atyp = PROTO_ATYP_DOMAIN;
	assert_true(strlen(name) < sizeof(d->domain));
	memcpy(d->domain, name, strlen(name) + 1);
	d->port = port;
}

static void
assert_req_equal(const struct proto_req *a, const struct proto_req *b)
{
	assert_int_equal(a->kind, b->kind);
	assert_int_equal(a->ts, b->ts);
	assert_memory_equal(a->nonce, b->nonce, PROTO_NONCE_LEN);
	assert_memory_equal(a->user_id, b->user_id, PROTO_USER_ID_LEN);
	assert_int_equal(a->dest.atyp, b->dest.atyp);
	assert_int_equal(a->dest.port, b->dest.port);
	if (a->dest.atyp == PROTO_ATYP_DOMAIN)
		assert_string_equal(a->dest.domain, b->dest.domain);
	else
		assert_memory_equal(a->dest.ip, b->dest.ip,
		    a->dest.atyp == PROTO_ATYP_IPV4 ? 4 : 16);
}

/* Every prefix of a valid header needs more bytes; the whole header (and
 * the header followed by stream bytes) parses to its length. */
static void
check_prefixes(const uint8_t *hdr, size_t hlen)
{
	uint8_t			 buf[PROTO_REQ_MAX + 16];
	struct proto_req	 r;
	size_t			 i;

	for (i = 0; i < hlen; i++)
		assert_int_equal(proto_req_parse(hdr, i, &r), 0);
	assert_int_equal(proto_req_parse(hdr, hlen, &r), (ssize_t)hlen);
	memcpy(buf, hdr, hlen);
	memset(buf + hlen, 0x5a, 16);
	assert_int_equal(proto_req_parse(buf, hlen + 16, &r), (ssize_t)hlen);
	assert_int_equal(r.len, hlen);
}

static void
test_vectors(void **state)
{
	uint8_t			 key[PROTO_KEY_LEN], id[PROTO_USER_ID_LEN];
	uint8_t			 want[PROTO_REQ_MAX], out[PROTO_REQ_MAX];
	struct proto_req	 r, p;
	size_t			 n;

	(void)state;
	vec_key(key);
	auth_user_id(key, id);
	unhex(VEC_UID, want, sizeof(want));
	assert_memory_equal(id, want, PROTO_USER_ID_LEN);

	vec_req(&r, key);
	dest_v4(&r.dest, 443);
	n = unhex(VEC_V4, want, sizeof(want));
	assert_int_equal(n, 77);
	assert_int_equal(proto_req_encode(out, sizeof(out), &r, key, NULL, 0), 77);
	assert_memory_equal(out, want, n);
	assert_int_equal(proto_req_parse(want, n, &p), 77);
	assert_int_equal(p.version, PROTO_VERSION_1);
	assert_int_equal(p.len, 77);
	assert_req_equal(&p, &r);
	assert_int_equal(proto_req_verify_mac(want, n, key, NULL), 0);

	r.kind = PROTO_KIND_UDP;
	dest_v6(&r.dest, 8080);
	n = unhex(VEC_V6, want, sizeof(want));
	assert_int_equal(n, 89);
	assert_int_equal(proto_req_encode(out, sizeof(out), &r, key, NULL, 0), 89);
	assert_memory_equal(out, want, n);
	assert_int_equal(proto_req_parse(want, n, &p), 89);
	assert_req_equal(&p, &r);
	assert_int_equal(proto_req_verify_mac(want, n, key, NULL), 0);

	r.kind = PROTO_KIND_TCP;
	dest_dom(&r.dest, "example.com", 80);
	n = unhex(VEC_DOM, want, sizeof(want));
	assert_int_equal(n, 85);
	assert_int_equal(proto_req_encode(out, sizeof(out), &r, key, NULL, 0), 85);
	assert_memory_equal(out, want, n);
	assert_int_equal(proto_req_parse(want, n, &p), 85);
	assert_req_equal(&p, &r);
	assert_int_equal(proto_req_verify_mac(want, n, key, NULL), 0);

	/* Version 1 is unbound: whatever the caller passes is ignored. */
	assert_int_equal(proto_req_verify_mac(want, n, key, VB), 0);

	/* Version 2. */
	vec_req(&r, key);
	dest_v4(&r.dest, 443);
	n = unhex(VEC2_V4, want, sizeof(want));
	assert_int_equal(proto_req_encode(out, sizeof(out), &r, key, VB, 0), 77);
	assert_memory_equal(out, want, n);
	assert_int_equal(proto_req_parse(want, n, &p), 77);
	assert_int_equal(p.version, PROTO_VERSION);
	assert_req_equal(&p, &r);
	assert_int_equal(proto_req_verify_mac(want, n, key, VB), 0);
	dest_dom(&r.dest, "example.com", 80);
	n = unhex(VEC2_DOM, want, sizeof(want));
	assert_int_equal(proto_req_encode(out, sizeof(out), &r, key, VB, 0), 85);
	assert_memory_equal(out, want, n);
	assert_int_equal(proto_req_parse(want, n, &p), 85);
	assert_int_equal(proto_req_verify_mac(want, n, key, VB), 0);

	/* Version 3. */
	vec_req(&r, key);
	dest_v4(&r.dest, 443);
	r.version = PROTO_VERSION_3;
	n = unhex(VEC3_V4, want, sizeof(want));
	assert_int_equal(proto_req_encode(out, sizeof(out), &r, key, VB, 0), 77);
	assert_memory_equal(out, want, n);
	assert_int_equal(proto_req_parse(want, n, &p), 77);
	assert_int_equal(p.version, PROTO_VERSION_3);
	assert_false(p.can_reuse);
	assert_int_equal(proto_req_verify_mac(want, n, key, VB), 0);
	assert_int_equal(proto_req_verify_mac(want, n, key, NULL), -1);
	/* needs a binding */
	assert_int_equal(proto_req_encode(out, sizeof(out), &r, key, NULL, 0),
	    -1);
}

/*
 * The reuse tag: a version 2 header whose padding starts with
 * PROTO_REUSE_TAG says its client speaks version 3; too little padding,
 * random padding, or another version say nothing.  The flow index is the
 * exporter context, 4 bytes big endian.
 */
static void
test_reuse_tag(void **state)
{
	uint8_t			 key[PROTO_KEY_LEN], hdr[PROTO_REQ_MAX];
	uint8_t			 ctx[PROTO_BIND_CTX_LEN];
	struct proto_req	 r, p;
	ssize_t			 n;
	int			 i;

	(void)state;
	vec_key(key);
	vec_req(&r, key);
	dest_v4(&r.dest, 443);
	r.can_reuse = true;
	n = proto_req_encode(hdr, sizeof(hdr), &r, key, VB, 40);
	assert_int_equal(n, 77 + 40);
	assert_memory_equal(hdr + 45, PROTO_REUSE_TAG, PROTO_REUSE_TAG_LEN);
	assert_int_equal(proto_req_parse(hdr, (size_t)n, &p), n);
	assert_true(p.can_reuse);
	assert_int_equal(proto_req_verify_mac(hdr, (size_t)n, key, VB), 0);
	/* 15 bytes of padding: no room, no tag */
	n = proto_req_encode(hdr, sizeof(hdr), &r, key, VB, 15);
	assert_int_equal(proto_req_parse(hdr, (size_t)n, &p), n);
	assert_false(p.can_reuse);
	/* version 1 and 3 carry none */
	n = proto_req_encode(hdr, sizeof(hdr), &r, key, NULL, 40);
	assert_int_equal(proto_req_parse(hdr, (size_t)n, &p), n);
	assert_false(p.can_reuse);
	r.version = PROTO_VERSION_3;
	n = proto_req_encode(hdr, sizeof(hdr), &r, key, VB, 40);
	assert_int_equal(proto_req_parse(hdr, (size_t)n, &p), n);
	assert_false(p.can_reuse);
	/* random padding is no tag */
	r.version = 0;
	r.can_reuse = false;
	for (i = 0; i < 100; i++) {
		n = proto_req_encode(hdr, sizeof(hdr), &r, key, VB, 40);
		assert_int_equal(proto_req_parse(hdr, (size_t)n, &p), n);
		assert_false(p.can_reuse);
	}
	proto_bind_context(0x01020304, ctx);
	assert_memory_equal(ctx, "\x01\x02\x03\x04", 4);
}

/*
 * A version 2 header verifies with the exporter value it was made with
 * and no other: not another connection's (any bit flipped), not none, not
 * as version 1 (the version byte is under the MAC), and a version 1 MAC
 * does not pass as version 2.
 */
static void
test_binding(void **state)
{
	uint8_t			 key[PROTO_KEY_LEN], hdr[PROTO_REQ_MAX];
	uint8_t			 other[PROTO_BIND_LEN];
	struct proto_req	 r;
	size_t			 i;
	ssize_t			 n;

	(void)state;
	vec_key(key);
	vec_req(&r, key);
	dest_v4(&r.dest, 443);
	n = proto_req_encode(hdr, sizeof(hdr), &r, key, VB, 40);
	assert_int_equal(n, 77 + 40);
	assert_int_equal(hdr[0], PROTO_VERSION);
	assert_int_equal(proto_req_verify_mac(hdr, (size_t)n, key, VB), 0);
	assert_int_equal(proto_req_verify_mac(hdr, (size_t)n, key, NULL), -1);
	for (i = 0; i < PROTO_BIND_LEN * 8; i++) {
		memcpy(other, VB, sizeof(other));
		other[i / 8] ^= (uint8_t)(1 << (i % 8));
		assert_int_equal(proto_req_verify_mac(hdr, (size_t)n, key,
		    other), -1);
	}
	hdr[0] = PROTO_VERSION_1;
	assert_int_equal(proto_req_verify_mac(hdr, (size_t)n, key, VB), -1);
	assert_int_equal(proto_req_verify_mac(hdr, (size_t)n, key, NULL), -1);

	n = proto_req_encode(hdr, sizeof(hdr), &r, key, NULL, 40);
	assert_int_equal(hdr[0], PROTO_VERSION_1);
	assert_int_equal(proto_req_verify_mac(hdr, (size_t)n, key, NULL), 0);
	hdr[0] = PROTO_VERSION;
	assert_int_equal(proto_req_verify_mac(hdr, (size_t)n, key, VB), -1);
	assert_int_equal(proto_req_verify_mac(hdr, (size_t)n, key, NULL), -1);
	/* Any other version byte verifies under nothing. */
	hdr[0] = 3;
	assert_int_equal(proto_req_verify_mac(hdr, (size_t)n, key, VB), -1);
	assert_int_equal(proto_req_verify_mac(hdr, (size_t)n, key, NULL), -1);
}

static void
test_roundtrip_padding(void **state)
{
	uint8_t			 key[PROTO_KEY_LEN], a[PROTO_REQ_MAX];
	uint8_t			 b[PROTO_REQ_MAX];
	struct proto_req	 r, p;
	ssize_t			 n;

	(void)state;
	vec_key(key);
	vec_req(&r, key);
	r.kind = PROTO_KIND_ICMP;
	dest_v6(&r.dest, 0);
	n = proto_req_encode(a, sizeof(a), &r, key, VB, 100);
	assert_int_equal(n, 89 + 100);
	assert_int_equal(a[2] << 8 | a[3], n);
	assert_int_equal(a[PROTO_REQ_FIXED + 16 + 2] << 8 |
	    a[PROTO_REQ_FIXED + 16 + 3], 100);
	assert_int_equal(proto_req_parse(a, (size_t)n, &p), n);
	assert_req_equal(&p, &r);
	assert_int_equal(proto_req_verify_mac(a, (size_t)n, key, VB), 0);
	check_prefixes(a, (size_t)n);
	/* The padding is random: two encodings differ in it (and the MAC). */
	assert_int_equal(proto_req_encode(b, sizeof(b), &r, key, VB, 100), n);
	assert_memory_equal(a, b, 89 - PROTO_MAC_LEN);
	assert_memory_not_equal(a + 57, b + 57, 100);
}

/*
 * The padding a client picks: the header's length does not depend on the
 * destination (IPv4, IPv6, a short and a 180-byte name all land in the
 * same range, which they cover), a longer name gets its own length plus
 * the span, and every pick encodes and parses.
 */
static void
test_pad_random(void **state)
{
	uint8_t			 key[PROTO_KEY_LEN], out[PROTO_REQ_MAX];
	struct proto_req	 r, p;
	char			 name[256];
	size_t			 lo, hi, pad, bare;
	ssize_t			 n;
	int			 d, i;

	(void)state;
	vec_key(key);
	vec_req(&r, key);
	memset(name, 'a', sizeof(name));
	for (d = 0; d < 5; d++) {
		switch (d) {
		case 0: dest_v4(&r.dest, 443); break;
		case 1: dest_v6(&r.dest, 443); break;
		case 2: dest_dom(&r.dest, "a.example", 443); break;
		case 3: name[180] = '\0'; dest_dom(&r.dest, name, 443); break;
		default: name[180] = 'a'; name[255] = '\0';
			dest_dom(&r.dest, name, 443); break;
		}
		bare = (size_t)proto_req_encode(out, sizeof(out), &r, key, VB, 0);
		lo = SIZE_MAX;
		hi = 0;
		for (i = 0; i < 4000; i++) {
			pad = proto_req_pad_random(&r);
			n = proto_req_encode(out, sizeof(out), &r, key, VB, pad);
			assert_int_equal(n, bare + pad);
			assert_int_equal(proto_req_parse(out, (size_t)n, &p), n);
			assert_int_equal(proto_req_verify_mac(out, (size_t)n,
			    key, VB), 0);
			lo = (size_t)n < lo ? (size_t)n : lo;
			hi = (size_t)n > hi ? (size_t)n : hi;
		}
		if (d < 4) {
			assert_int_equal(lo, PROTO_PAD_TO);
			assert_int_equal(hi, PROTO_PAD_TO + PROTO_PAD_SPAN - 1);
		} else {
			assert_int_equal(lo, bare);
			assert_int_equal(hi, bare + PROTO_PAD_SPAN - 1);
			assert_true(hi <= PROTO_REQ_MAX);
		}
	}
	assert_int_equal(proto_req_pad_random(NULL), 0);
}

static void
test_limits(void **state)
{
	uint8_t			 key[PROTO_KEY_LEN], out[PROTO_REQ_MAX + 64];
	struct proto_req	 r, p;
	char			 name[256];
	ssize_t			 n;
	size_t			 maxpad;

	(void)state;
	vec_key(key);
	vec_req(&r, key);

	/* Ports at both ends. */
	dest_v4(&r.dest, 0);
	n = proto_req_encode(out, sizeof(out), &r, key, VB, 0);
	assert_int_equal(n, 77);
	assert_int_equal(proto_req_parse(out, (size_t)n, &p), n);
	assert_int_equal(p.dest.port, 0);
	dest_v4(&r.dest, 65535);
	n = proto_req_encode(out, sizeof(out), &r, key, VB, 0);
	assert_int_equal(proto_req_parse(out, (size_t)n, &p), n);
	assert_int_equal(p.dest.port, 65535);

	/* Maximum padding for IPv4 fits exactly; one more does not. */
	maxpad = PROTO_REQ_MAX - 77;
	n = proto_req_encode(out, sizeof(out), &r, key, VB, maxpad);
	assert_int_equal(n, PROTO_REQ_MAX);
	assert_int_equal(proto_req_parse(out, (size_t)n, &p), PROTO_REQ_MAX);
	assert_int_equal(proto_req_verify_mac(out, (size_t)n, key, VB), 0);
	check_prefixes(out, (size_t)n);
	errno = 0;
	assert_int_equal(proto_req_encode(out, sizeof(out), &r, key,
	    VB, maxpad + 1), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(proto_req_encode(out, sizeof(out), &r, key,
	    VB, (size_t)-1), -1);
	/* Output buffer one byte short. */
	assert_int_equal(proto_req_encode(out, 76, &r, key, VB, 0), -1);
	assert_int_equal(proto_req_encode(out, 77, &r, key, VB, 0), 77);

	/* 255-byte domain with the most padding that still fits. */
	memset(name, 'a', 255);
	name[255] = '\0';
	dest_dom(&r.dest, name, 443);
	maxpad = PROTO_REQ_MAX - (PROTO_REQ_FIXED + 1 + 255 + 4 + 32);
	n = proto_req_encode(out, sizeof(out), &r, key, VB, maxpad);
	assert_int_equal(n, PROTO_REQ_MAX);
	assert_int_equal(proto_req_parse(out, (size_t)n, &p), n);
	assert_int_equal(strlen(p.dest.domain), 255);
	assert_string_equal(p.dest.domain, name);
	check_prefixes(out, (size_t)n);
	assert_int_equal(proto_req_encode(out, sizeof(out), &r, key,
	    VB, maxpad + 1), -1);
	/* One-byte domain. */
	dest_dom(&r.dest, "x", 1);
	n = proto_req_encode(out, sizeof(out), &r, key, VB, 0);
	assert_int_equal(n, PROTO_REQ_FIXED + 2 + 4 + 32);
	assert_int_equal(proto_req_parse(out, (size_t)n, &p), n);
	assert_string_equal(p.dest.domain, "x");
	assert_int_equal(proto_req_verify_mac(out, (size_t)n, key, VB), 0);
	check_prefixes(out, (size_t)n);	/* the shortest header there is */

	/* Invalid fields refused by the encoder. */
	dest_dom(&r.dest, "", 1);
	assert_int_equal(proto_req_encode(out, sizeof(out), &r, key, VB, 0), -1);
	/* 256 bytes, no NUL */
	memset(r.dest.domain, 'a', sizeof(r.dest.domain));
	assert_int_equal(proto_req_encode(out, sizeof(out), &r, key, VB, 0), -1);
	dest_v4(&r.dest, 1);
	r.dest.atyp = 2;
	assert_int_equal(proto_req_encode(out, sizeof(out), &r, key, VB, 0), -1);
	dest_v4(&r.dest, 1);
	r.kind = 0;
	assert_int_equal(proto_req_encode(out, sizeof(out), &r, key, VB, 0), -1);
	r.kind = 4;
	assert_int_equal(proto_req_encode(out, sizeof(out), &r, key, VB, 0), -1);
	r.kind = PROTO_KIND_TCP;
	assert_int_equal(proto_req_encode(NULL, sizeof(out), &r, key, VB, 0), -1);
	assert_int_equal(proto_req_encode(out, sizeof(out), NULL, key, VB, 0), -1);
}

static void
test_vector_prefixes(void **state)
{
	uint8_t	 buf[PROTO_REQ_MAX];
	size_t	 n;

	(void)state;
	n = unhex(VEC_V4, buf, sizeof(buf));
	check_prefixes(buf, n);
	n = unhex(VEC_V6, buf, sizeof(buf));
	check_prefixes(buf, n);
	n = unhex(VEC_DOM, buf, sizeof(buf));
	check_prefixes(buf, n);
}

/* Parse a mutated copy of hdr with all its bytes (plus slack, so "needs
 * more bytes" cannot hide a bad field). */
static ssize_t
parse_mut(const uint8_t *hdr, size_t n, size_t off, uint8_t v)
{
	uint8_t			 buf[PROTO_REQ_MAX * 2];
	struct proto_req	 r;

	memset(buf, 0, sizeof(buf));
	memcpy(buf, hdr, n);
	buf[off] = v;
	return proto_req_parse(buf, sizeof(buf), &r);
}

static void
test_malformed(void **state)
{
	uint8_t			 v4[PROTO_REQ_MAX], dom[PROTO_REQ_MAX];
	uint8_t			 buf[PROTO_REQ_MAX];
	struct proto_req	 r;
	size_t			 n4, nd;
	int			 v;

	(void)state;
	n4 = unhex(VEC_V4, v4, sizeof(v4));
	nd = unhex(VEC_DOM, dom, sizeof(dom));

	/* version */
	assert_int_equal(parse_mut(v4, n4, 0, 0), -1);
	assert_int_equal(parse_mut(v4, n4, 0, 4), -1);
	assert_int_equal(parse_mut(v4, n4, 0, 0xff), -1);
	/* both versions share the layout */
	assert_int_equal(parse_mut(v4, n4, 0, PROTO_VERSION), (ssize_t)n4);
	assert_int_equal(parse_mut(v4, n4, 0, PROTO_VERSION_1), (ssize_t)n4);
	assert_int_equal(parse_mut(v4, n4, 0, PROTO_VERSION_3), (ssize_t)n4);
	/* detected from the first byte alone */
	for (v = 0; v < 256; v++) {
		buf[0] = (uint8_t)v;
		assert_int_equal(proto_req_parse(buf, 1, &r),
		    v == PROTO_VERSION || v == PROTO_VERSION_1 ||
		    v == PROTO_VERSION_3 ? 0 : -1);
	}
	/* kind */
	assert_int_equal(parse_mut(v4, n4, 1, 0), -1);
	assert_int_equal(parse_mut(v4, n4, 1, 4), -1);
	assert_int_equal(parse_mut(v4, n4, 1, 0xff), -1);
	/* length: every value but the right one is inconsistent */
	for (v = 0; v <= 0xffff; v++) {
		memcpy(buf, v4, n4);
		buf[2] = (uint8_t)(v >> 8);
		buf[3] = (uint8_t)v;
		if (v == (int)n4)
			continue;
		assert_int_equal(parse_mut(buf, n4, 0, buf[0]), -1);
	}
	/* too large is refused from the first 4 bytes */
	memcpy(buf, v4, 4);
	buf[2] = 0x04;
	buf[3] = 0x01;		/* 1025 */
	assert_int_equal(proto_req_parse(buf, 4, &r), -1);
	/* atyp */
	for (v = 0; v < 256; v++) {
		if (v == PROTO_ATYP_IPV4)
			continue;
		assert_int_equal(parse_mut(v4, n4, 36, (uint8_t)v), -1);
	}
	/* padding length inconsistent with the total */
	assert_int_equal(parse_mut(v4, n4, 44, 1), -1);
	assert_int_equal(parse_mut(v4, n4, 43, 1), -1);
	/* domain: zero length, other lengths, embedded NUL */
	assert_int_equal(parse_mut(dom, nd, 37, 0), -1);
	assert_int_equal(parse_mut(dom, nd, 37, 10), -1);
	assert_int_equal(parse_mut(dom, nd, 37, 12), -1);
	assert_int_equal(parse_mut(dom, nd, 37, 255), -1);
	assert_int_equal(parse_mut(dom, nd, 38, 0), -1);
	assert_int_equal(parse_mut(dom, nd, 48, 0), -1);
	/* NULs are caught before the MAC has arrived */
	memcpy(buf, dom, nd);
	buf[40] = 0;
	assert_int_equal(proto_req_parse(buf, nd - PROTO_MAC_LEN, &r), -1);

	assert_int_equal(proto_req_parse(NULL, 10, &r), -1);
	assert_int_equal(proto_req_parse(v4, n4, NULL), -1);
}

static void
test_mac_bit_flips(void **state)
{
	uint8_t	 key[PROTO_KEY_LEN], hdr[PROTO_REQ_MAX], other[PROTO_KEY_LEN];
	size_t	 n, i;
	int	 bit;
	const char *const vecs[] = { VEC_V4, VEC_V6, VEC_DOM, VEC2_V4,
	    VEC2_DOM };
	size_t	 k;

	(void)state;
	vec_key(key);
	for (k = 0; k < 5; k++) {
		n = unhex(vecs[k], hdr, sizeof(hdr));
		assert_int_equal(proto_req_verify_mac(hdr, n, key, VB), 0);
		for (i = 0; i < n; i++)
			for (bit = 0; bit < 8; bit++) {
				hdr[i] ^= (uint8_t)(1 << bit);
				assert_int_equal(proto_req_verify_mac(hdr, n,
				    key, VB), -1);
				hdr[i] ^= (uint8_t)(1 << bit);
			}
		/* and every bit of the key */
		for (i = 0; i < PROTO_KEY_LEN * 8; i++) {
			memcpy(other, key, sizeof(other));
			other[i / 8] ^= (uint8_t)(1 << (i % 8));
			assert_int_equal(proto_req_verify_mac(hdr, n, other, VB),
			    -1);
		}
		/* buffer shorter than the declared length */
		assert_int_equal(proto_req_verify_mac(hdr, n - 1, key, VB), -1);
		assert_int_equal(proto_req_verify_mac(hdr, 0, key, VB), -1);
	}
	assert_int_equal(proto_req_verify_mac(NULL, n, key, VB), -1);
}

/* Random and mutated input: the parser answers -1/0/length and never reads
 * out of bounds (run under ASan with --enable-sanitizers). */
static void
test_garbage(void **state)
{
	uint8_t			 key[PROTO_KEY_LEN], valid[PROTO_REQ_MAX];
	uint8_t			*buf;
	struct proto_req	 r, p;
	ssize_t			 n, rc;
	size_t			 len;
	uint32_t		 i, j;

	(void)state;
	vec_key(key);
	vec_req(&r, key);
	dest_dom(&r.dest, "fuzz.example", 9);
	n = proto_req_encode(valid, sizeof(valid), &r, key, VB, 17);
	assert_true(n > 0);
	for (i = 0; i < 200000; i++) {
		len = randombytes_uniform(PROTO_REQ_MAX + 8);
		/* Exact-size heap buffer: ASan flags any overread. */
		buf = malloc(len ? len : 1);
		assert_non_null(buf);
		if (i & 1) {
			randombytes_buf(buf, len);
		} else {
			memcpy(buf, valid, len < (size_t)n ? len : (size_t)n);
			if (len > (size_t)n)
				randombytes_buf(buf + n, len - (size_t)n);
			for (j = randombytes_uniform(4); j > 0 && len > 0; j--)
				buf[randombytes_uniform((uint32_t)len)] =
				    (uint8_t)randombytes_random();
		}
		rc = proto_req_parse(buf, len, &p);
		assert_true(rc >= -1 && rc <= (ssize_t)len);
		if (rc > 0) {
			assert_true(rc <= PROTO_REQ_MAX);
			assert_int_equal(p.len, rc);
			if (p.dest.atyp == PROTO_ATYP_DOMAIN) {
				assert_true(strlen(p.dest.domain) >= 1);
				assert_true(strlen(p.dest.domain) <= 255);
			}
			(void)proto_req_verify_mac(buf, len, key, VB);
		}
		free(buf);
	}
}

static void
test_status(void **state)
{
	int	s;

	(void)state;
	assert_int_equal(proto_status_from_errno(ECONNREFUSED),
	    PROTO_ERR_REFUSED);
	assert_int_equal(proto_status_from_errno(ENETUNREACH),
	    PROTO_ERR_NET_UNREACH);
	assert_int_equal(proto_status_from_errno(EHOSTUNREACH),
	    PROTO_ERR_HOST_UNREACH);
	assert_int_equal(proto_status_from_errno(ETIMEDOUT), PROTO_ERR_TIMEOUT);
	assert_int_equal(proto_status_from_errno(EACCES), PROTO_ERR_GENERAL);
	assert_int_equal(proto_status_from_errno(EIO), PROTO_ERR_GENERAL);
	assert_int_equal(proto_status_from_errno(0), PROTO_OK);
	assert_string_equal(proto_status_str(PROTO_OK), "ok");
	assert_string_equal(proto_status_str(PROTO_ERR_REFUSED),
	    "connection refused");
	for (s = 0; s < 256; s++)
		assert_non_null(proto_status_str((uint8_t)s));
	assert_string_equal(proto_status_str(200), "unknown status");
	/* Each refusal has a reason of its own for the client's counters. */
	assert_string_equal(proto_status_reason(PROTO_ERR_DENIED),
	    "egress denied");
	assert_string_equal(proto_status_reason(200), "unknown status");
	for (s = PROTO_ERR_GENERAL; s <= PROTO_ERR_LIMIT; s++) {
		int	t;

		assert_string_not_equal(proto_status_reason((uint8_t)s),
		    "unknown status");
		for (t = PROTO_ERR_GENERAL; t < s; t++)
			assert_string_not_equal(proto_status_reason((uint8_t)s),
			    proto_status_reason((uint8_t)t));
	}
}

static void
test_keys(void **state)
{
	char	 b64[AUTH_KEY_B64_LEN], bad[64];
	uint8_t	 key[PROTO_KEY_LEN], key2[PROTO_KEY_LEN], zero[PROTO_KEY_LEN];
	uint8_t	 id1[PROTO_USER_ID_LEN], id2[PROTO_USER_ID_LEN];

	(void)state;
	auth_key_generate(b64);
	assert_int_equal(strlen(b64), AUTH_KEY_B64_LEN - 1);
	assert_int_equal(b64[43], '=');
	assert_int_equal(auth_key_parse(b64, key), 0);
	auth_key_generate(bad);
	assert_string_not_equal(b64, bad);

	/* Known value: 32 bytes 00..1f. */
	assert_int_equal(auth_key_parse(
	    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", key), 0);
	vec_key(key2);
	assert_memory_equal(key, key2, PROTO_KEY_LEN);

	memset(zero, 0, sizeof(zero));
	memcpy(key, zero, sizeof(key));
	/* Failures leave the output alone. */
	assert_int_equal(auth_key_parse("", key), -1);
	assert_int_equal(auth_key_parse(NULL, key), -1);
	assert_int_equal(auth_key_parse(
	    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8", key), -1);
	assert_int_equal(auth_key_parse(
	    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=x", key), -1);
	assert_int_equal(auth_key_parse(
	    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8= ", key), -1);
	assert_int_equal(auth_key_parse(
	    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8==", key), -1);
	/* 33 bytes / 31 bytes */
	assert_int_equal(auth_key_parse(
	    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8g", key), -1);
	assert_int_equal(auth_key_parse(
	    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHg==", key), -1);
	/* Non-canonical last character (low bits set). */
	assert_int_equal(auth_key_parse(
	    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh9=", key), -1);
	/* Garbage inside, URL-safe alphabet. */
	assert_int_equal(auth_key_parse(
	    "AAECAwQFBgcICQoLDA0ODxAR!hMUFRYXGBkaGxwdHh8=", key), -1);
	assert_int_equal(auth_key_parse(
	    "AAECAwQFBgcICQoLDA0ODxAR_hMUFRYXGBkaGxwdHh8=", key), -1);
	assert_memory_equal(key, zero, PROTO_KEY_LEN);

	/* Ids differ between keys and are stable for one key. */
	vec_key(key);
	auth_user_id(key, id1);
	auth_user_id(key, id2);
	assert_memory_equal(id1, id2, sizeof(id1));
	key[31] ^= 1;
	auth_user_id(key, id2);
	assert_memory_not_equal(id1, id2, sizeof(id1));
}

/* ---- users_check ---------------------------------------------------------*/

#define WINDOW	120
#define NOW	(TS0 + 1000)

struct fixture {
	struct conf_user	 users[3];
	struct conf		 conf;
	struct users		*auth;
};

static int
setup_auth(void **state)
{
	struct fixture	*f;
	int		 i, j;

	f = calloc(1, sizeof(*f));
	assert_non_null(f);
	for (i = 0; i < 3; i++) {
		snprintf(f->users[i].name, sizeof(f->users[i].name), "u%d", i);
		for (j = 0; j < CONF_KEY_LEN; j++)
			f->users[i].key[j] = (uint8_t)(i * 37 + j * 3 + 1);
	}
	f->conf.role = CONF_ROLE_SERVER;
	f->conf.server.users = f->users;
	f->conf.server.nusers = 3;
	f->conf.server.time_window_s = WINDOW;
	f->auth = users_new(&f->conf);
	assert_non_null(f->auth);
	*state = f;
	return 0;
}

static int
teardown_auth(void **state)
{
	struct fixture	*f = *state;

	users_free(f->auth);
	free(f);
	return 0;
}

/* Encodes a header for key with timestamp ts and a nonce derived from seq. */
static size_t
mkhdr(uint8_t *out, const uint8_t key[PROTO_KEY_LEN], uint64_t ts,
    uint32_t seq, struct proto_req *p)
{
	struct proto_req	r;
	ssize_t			n;

	memset(&r, 0, sizeof(r));
	r.kind = PROTO_KIND_TCP;
	r.ts = ts;
	memcpy(r.nonce, &seq, sizeof(seq));
	r.nonce[15] = 0x77;
	auth_user_id(key, r.user_id);
	dest_v4(&r.dest, 443);
	n = proto_req_encode(out, PROTO_REQ_MAX, &r, key, VB, seq % 7);
	assert_true(n > 0);
	assert_int_equal(proto_req_parse(out, (size_t)n, p), n);
	return (size_t)n;
}

static int
check(struct fixture *f, const uint8_t key[PROTO_KEY_LEN], uint64_t ts,
    uint32_t seq, uint64_t now, size_t *user)
{
	uint8_t			hdr[PROTO_REQ_MAX];
	struct proto_req	p;
	size_t			n;

	n = mkhdr(hdr, key, ts, seq, &p);
	return users_check(f->auth, hdr, n, &p, VB, now, user);
}

static void
test_auth_users(void **state)
{
	struct fixture		*f = *state;
	uint8_t			 stranger[PROTO_KEY_LEN], hdr[PROTO_REQ_MAX];
	struct proto_req	 p;
	size_t			 user = 99, n;
	int			 i;

	for (i = 0; i < 3; i++) {
		assert_int_equal(check(f, f->users[i].key, NOW, (uint32_t)i,
		    NOW, &user), USERS_OK);
		assert_int_equal(user, (size_t)i);
	}
	memset(stranger, 0xee, sizeof(stranger));
	assert_int_equal(check(f, stranger, NOW, 10, NOW, &user),
	    USERS_UNKNOWN);

	/* Known id, MAC under another key. */
	n = mkhdr(hdr, stranger, NOW, 11, &p);
	auth_user_id(f->users[1].key, p.user_id);
	memcpy(hdr + 28, p.user_id, PROTO_USER_ID_LEN);
	assert_int_equal(users_check(f->auth, hdr, n, &p, VB, NOW, &user),
	    USERS_BAD_MAC);
	/* Valid header, one bit of the padding flipped. */
	n = mkhdr(hdr, f->users[2].key, NOW, 12 * 7 + 3, &p);
	hdr[n - PROTO_MAC_LEN - 1] ^= 0x10;
	assert_int_equal(users_check(f->auth, hdr, n, &p, VB, NOW, &user),
	    USERS_BAD_MAC);
	/* Truncated buffer. */
	hdr[n - PROTO_MAC_LEN - 1] ^= 0x10;
	assert_int_equal(users_check(f->auth, hdr, n - 1, &p, VB, NOW, &user),
	    USERS_BAD_MAC);
	assert_int_equal(users_check(f->auth, hdr, n, &p, VB, NOW, &user), USERS_OK);
	assert_int_equal(user, 2);

	assert_string_equal(users_result_str(USERS_OK), "ok");
	assert_string_equal(users_result_str(USERS_REPLAY), "replayed header");
	assert_string_equal(users_result_str(42), "unknown result");
}

static void
test_auth_stale(void **state)
{
	struct fixture	*f = *state;
	const uint8_t	*k = f->users[0].key;

	/* Edges of the window pass, one second beyond fails, both ways. */
	assert_int_equal(check(f, k, NOW - WINDOW, 1, NOW, NULL), USERS_OK);
	assert_int_equal(check(f, k, NOW + WINDOW, 2, NOW, NULL), USERS_OK);
	assert_int_equal(check(f, k, NOW - WINDOW - 1, 3, NOW, NULL),
	    USERS_STALE);
	assert_int_equal(check(f, k, NOW + WINDOW + 1, 4, NOW, NULL),
	    USERS_STALE);
	assert_int_equal(check(f, k, 0, 5, NOW, NULL), USERS_STALE);
	assert_int_equal(check(f, k, UINT64_MAX, 6, NOW, NULL), USERS_STALE);
	/* A stale header is not remembered: the same nonce later is fine. */
	assert_int_equal(check(f, k, NOW, 3, NOW, NULL), USERS_OK);
}

static void
test_auth_replay(void **state)
{
	struct fixture		*f = *state;
	const uint8_t		*k = f->users[0].key;
	uint8_t			 hdr[PROTO_REQ_MAX];
	struct proto_req	 p;
	size_t			 n;

	n = mkhdr(hdr, k, NOW, 1, &p);
	assert_int_equal(users_check(f->auth, hdr, n, &p, VB, NOW, NULL), USERS_OK);
	assert_int_equal(users_check(f->auth, hdr, n, &p, VB, NOW, NULL),
	    USERS_REPLAY);
	assert_int_equal(users_check(f->auth, hdr, n, &p, VB, NOW + WINDOW, NULL),
	    USERS_REPLAY);
	assert_int_equal(users_check(f->auth, hdr, n, &p, VB, NOW + WINDOW + 1,
	    NULL), USERS_STALE);
	/* Same nonce from another user is a replay too (nonces are global). */
	assert_int_equal(check(f, f->users[1].key, NOW, 1, NOW, NULL),
	    USERS_REPLAY);

	/*
	 * Client clock ahead by the whole window: accepted at ts - W, still
	 * replayable until ts + W, i.e. 2W after it entered the cache.
	 */
	n = mkhdr(hdr, k, NOW + WINDOW, 2, &p);
	assert_int_equal(users_check(f->auth, hdr, n, &p, VB, NOW, NULL), USERS_OK);
	assert_int_equal(users_check(f->auth, hdr, n, &p, VB, NOW + 2 * WINDOW,
	    NULL), USERS_REPLAY);
	assert_int_equal(users_check(f->auth, hdr, n, &p, VB, NOW + 2 * WINDOW + 1,
	    NULL), USERS_STALE);

	/* After 2W the entry is gone: a (buggy) reuse of the nonce with a
	 * fresh timestamp is accepted again. */
	assert_int_equal(check(f, k, NOW + 2 * WINDOW + 1, 2,
	    NOW + 2 * WINDOW + 1, NULL), USERS_OK);
	assert_int_equal(check(f, k, NOW + 2 * WINDOW + 1, 2,
	    NOW + 2 * WINDOW + 1, NULL), USERS_REPLAY);
}

#define CAP	65536u

static void
test_auth_eviction(void **state)
{
	struct fixture	*f = *state;
	const uint8_t	*k = f->users[1].key;
	uint32_t	 i, extra = 1000;

	/* Fill the cache with live entries and go past its capacity: new
	 * headers keep being accepted, the oldest are forgotten. */
	for (i = 0; i < CAP + extra; i++)
		assert_int_equal(check(f, k, NOW, 100 + i, NOW, NULL), USERS_OK);
	/* The newest CAP nonces are remembered... */
	for (i = extra; i < CAP + extra; i += 97)
		assert_int_equal(check(f, k, NOW, 100 + i, NOW, NULL),
		    USERS_REPLAY);
	assert_int_equal(check(f, k, NOW, 100 + CAP + extra - 1, NOW, NULL),
	    USERS_REPLAY);
	assert_int_equal(check(f, k, NOW, 100 + extra, NOW, NULL),
	    USERS_REPLAY);
	/* ...the oldest were evicted (each re-accept evicts another old one,
	 * so walk the evicted range oldest first). */
	assert_int_equal(check(f, k, NOW, 100, NOW, NULL), USERS_OK);
	assert_int_equal(check(f, k, NOW, 100 + 1, NOW, NULL), USERS_OK);

	/* Once everything is older than 2W, all of it expires at once and
	 * the index must still find fresh entries (no stale probe runs). */
	for (i = 0; i < 5000; i++)
		assert_int_equal(check(f, k, NOW + 3 * WINDOW, 100 + i,
		    NOW + 3 * WINDOW, NULL), USERS_OK);
	for (i = 0; i < 5000; i += 13)
		assert_int_equal(check(f, k, NOW + 3 * WINDOW, 100 + i,
		    NOW + 3 * WINDOW, NULL), USERS_REPLAY);
}

/*
 * Key rotation: users 0 and 2 stay (2 renamed and moved), user 1 is
 * replaced by a new key.  The old key stops working at once, the new one
 * works, and the replay cache survives the reload.
 */
static void
test_auth_reload(void **state)
{
	struct fixture		*f = *state;
	struct conf_user	 users[2];
	struct conf		 c;
	uint8_t			 oldkey[PROTO_KEY_LEN], hdr[PROTO_REQ_MAX];
	uint8_t			 hdr2[PROTO_REQ_MAX];
	struct proto_req	 p, p2;
	size_t			 user = 99, n, n2;
	int			 j;

	memcpy(oldkey, f->users[1].key, sizeof(oldkey));
	assert_int_equal(users_count(f->auth), 3);
	assert_string_equal(users_name(f->auth, 1), "u1");
	assert_string_equal(users_name(f->auth, 3), "?");
	n = mkhdr(hdr, f->users[0].key, NOW, 500, &p);
	assert_int_equal(users_check(f->auth, hdr, n, &p, VB, NOW, NULL), USERS_OK);
	/* Client clock a whole (old) window ahead. */
	n2 = mkhdr(hdr2, f->users[0].key, NOW + WINDOW, 510, &p2);
	assert_int_equal(users_check(f->auth, hdr2, n2, &p2, VB, NOW, NULL),
	    USERS_OK);

	memset(&c, 0, sizeof(c));
	c.role = CONF_ROLE_SERVER;
	c.server.users = users;
	c.server.nusers = 2;
	c.server.time_window_s = WINDOW / 2;
	users[0] = f->users[2];
	snprintf(users[0].name, sizeof(users[0].name), "renamed");
	users[1] = f->users[0];
	for (j = 0; j < CONF_KEY_LEN; j++)
		f->users[1].key[j] = (uint8_t)(0xa5 ^ j);
	assert_int_equal(users_reload(f->auth, &c), 0);
	/* The auth keeps its own copies: the conf may go. */
	memset(users, 0, sizeof(users));

	assert_int_equal(users_count(f->auth), 2);
	assert_int_equal(check(f, oldkey, NOW, 501, NOW, &user),
	    USERS_UNKNOWN);
	assert_int_equal(check(f, f->users[1].key, NOW, 502, NOW, &user),
	    USERS_UNKNOWN);
	assert_int_equal(check(f, f->users[2].key, NOW, 503, NOW, &user),
	    USERS_OK);
	assert_int_equal(user, 0);
	assert_string_equal(users_name(f->auth, user), "renamed");
	assert_int_equal(check(f, f->users[0].key, NOW, 504, NOW, &user),
	    USERS_OK);
	assert_int_equal(user, 1);
	assert_string_equal(users_name(f->auth, user), "u0");
	/* Accepted before the reload: still a replay after it. */
	assert_int_equal(users_check(f->auth, hdr, n, &p, VB, NOW, NULL),
	    USERS_REPLAY);
	/* The new, shorter window applies to timestamps... */
	assert_int_equal(check(f, f->users[0].key, NOW - WINDOW / 2 - 1, 505,
	    NOW, NULL), USERS_STALE);
	/* ...but nonces live as long as the longest window needs: a header
	 * the old window accepted at ts - W passes the new one until
	 * ts + W/2, 1.5 W after it entered the cache (more than 2 x W/2). */
	assert_int_equal(users_check(f->auth, hdr2, n2, &p2, VB,
	    NOW + WINDOW + WINDOW / 2, NULL), USERS_REPLAY);
	assert_int_equal(users_check(f->auth, hdr2, n2, &p2, VB,
	    NOW + WINDOW + WINDOW / 2 + 1, NULL), USERS_STALE);

	assert_int_equal(users_reload(NULL, &c), -1);
	assert_int_equal(users_reload(f->auth, NULL), -1);
	/* No users at all: everyone is unknown, nothing breaks. */
	c.server.nusers = 0;
	c.server.users = NULL;
	assert_int_equal(users_reload(f->auth, &c), 0);
	assert_int_equal(check(f, f->users[0].key, NOW, 506, NOW, NULL),
	    USERS_UNKNOWN);
	assert_string_equal(users_name(f->auth, 0), "?");
}

/*
 * The binding at the server: a version 2 header passes only with the
 * exporter value it was made for (another connection's, or none, is a
 * bad MAC, and does not enter the replay cache); version 1 is refused
 * before anything else unless accept_v1, which a reload switches.
 */
static void
test_auth_binding(void **state)
{
	struct fixture		*f = *state;
	const uint8_t		*k = f->users[0].key;
	uint8_t			 hdr[PROTO_REQ_MAX], other[PROTO_BIND_LEN];
	struct proto_req	 r, p;
	size_t			 user = 99;
	ssize_t			 n;

	n = (ssize_t)mkhdr(hdr, k, NOW, 900, &p);
	memcpy(other, VB, sizeof(other));
	other[31] ^= 1;
	assert_int_equal(users_check(f->auth, hdr, (size_t)n, &p, other, NOW,
	    &user), USERS_BAD_MAC);
	assert_int_equal(users_check(f->auth, hdr, (size_t)n, &p, NULL, NOW,
	    &user), USERS_BAD_MAC);
	/* Not remembered: on its own connection it still passes, once. */
	assert_int_equal(users_check(f->auth, hdr, (size_t)n, &p, VB, NOW,
	    &user), USERS_OK);
	assert_int_equal(user, 0);
	assert_int_equal(users_check(f->auth, hdr, (size_t)n, &p, VB, NOW,
	    &user), USERS_REPLAY);

	/* Version 1, refused by default, for any user, any key. */
	memset(&r, 0, sizeof(r));
	r.kind = PROTO_KIND_TCP;
	r.ts = NOW;
	r.nonce[0] = 0x91;
	auth_user_id(k, r.user_id);
	dest_v4(&r.dest, 443);
	n = proto_req_encode(hdr, sizeof(hdr), &r, k, NULL, 3);
	assert_true(n > 0);
	assert_int_equal(proto_req_parse(hdr, (size_t)n, &p), n);
	assert_int_equal(p.version, PROTO_VERSION_1);
	assert_int_equal(users_check(f->auth, hdr, (size_t)n, &p, VB, NOW,
	    &user), USERS_V1);
	assert_string_equal(users_result_str(USERS_V1), "version 1 header");

	/* accept_v1 (on reload): it passes, once, with or without a value. */
	f->conf.server.accept_v1 = true;
	assert_int_equal(users_reload(f->auth, &f->conf), 0);
	assert_int_equal(users_check(f->auth, hdr, (size_t)n, &p, NULL, NOW,
	    &user), USERS_OK);
	assert_int_equal(users_check(f->auth, hdr, (size_t)n, &p, VB, NOW,
	    &user), USERS_REPLAY);
	f->conf.server.accept_v1 = false;
	assert_int_equal(users_reload(f->auth, &f->conf), 0);
	r.nonce[0] = 0x92;
	n = proto_req_encode(hdr, sizeof(hdr), &r, k, NULL, 3);
	assert_int_equal(proto_req_parse(hdr, (size_t)n, &p), n);
	assert_int_equal(users_check(f->auth, hdr, (size_t)n, &p, NULL, NOW,
	    &user), USERS_V1);
}

static void
test_auth_empty(void **state)
{
	struct conf		 c;
	struct users		*a;
	uint8_t			 hdr[PROTO_REQ_MAX], key[PROTO_KEY_LEN];
	struct proto_req	 p;
	size_t			 n;

	(void)state;
	memset(&c, 0, sizeof(c));
	c.role = CONF_ROLE_SERVER;
	a = users_new(&c);
	assert_non_null(a);
	vec_key(key);
	n = mkhdr(hdr, key, NOW, 1, &p);
	assert_int_equal(users_check(a, hdr, n, &p, VB, NOW, NULL),
	    USERS_UNKNOWN);
	assert_int_equal(users_check(NULL, hdr, n, &p, VB, NOW, NULL),
	    USERS_UNKNOWN);
	users_free(a);
	users_free(NULL);
	assert_null(users_new(NULL));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_binding),
		cmocka_unit_test(test_reuse_tag),
		cmocka_unit_test(test_roundtrip_padding),
		cmocka_unit_test(test_pad_random),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_vector_prefixes),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_mac_bit_flips),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_status),
		cmocka_unit_test(test_keys),
		cmocka_unit_test_setup_teardown(test_auth_users, setup_auth,
		    teardown_auth),
		cmocka_unit_test_setup_teardown(test_auth_stale, setup_auth,
		    teardown_auth),
		cmocka_unit_test_setup_teardown(test_auth_replay, setup_auth,
		    teardown_auth),
		cmocka_unit_test_setup_teardown(test_auth_eviction, setup_auth,
		    teardown_auth),
		cmocka_unit_test_setup_teardown(test_auth_reload, setup_auth,
		    teardown_auth),
		cmocka_unit_test_setup_teardown(test_auth_binding, setup_auth,
		    teardown_auth),
		cmocka_unit_test(test_auth_empty),
	};

	size_t	i;

	if (sodium_init() < 0)
		return 1;
	for (i = 0; i < PROTO_BIND_LEN; i++)
		VB[i] = (uint8_t)(0x40 + i);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
