/*
 * Fuzz target: the server's request-header path, as sess.c drives it --
 * proto_req_parse() on the bytes read so far, then users_check() on a
 * complete header.
 *
 * Input: what a client sends after the TLS handshake (header, then
 * anything).  The last input byte also picks the server clock's distance
 * from the header's timestamp in the second stage.
 *
 * Stage 1, the bytes as given:
 *   - every prefix parses to "need more" (0), "malformed" (-1) or the
 *     header length; once a prefix is judged, every longer prefix gets the
 *     same answer (a prefix of a valid header is never rejected, a
 *     malformed one stays malformed, a complete one stays complete);
 *   - a complete header has a length in [75, 1024] that fits the input,
 *     and its fields are ones the wire format allows;
 *   - users_check() only says OK for the harness's own user id (seeds made
 *     with its key and, for version 2, bound to the harness's exporter
 *     value FZ_BIND), never for a forged one; a server without accept_v1
 *     refuses every version 1 header before looking at it.
 * Stage 2, the parsed request encoded again under the harness's key (so
 * that the checks behind the MAC are reached):
 *   - the encoding has the same length and parses back to the same fields;
 *   - the MAC verifies (version 2: with the exporter value it was made
 *     with), and fails once any byte is flipped, and for version 2 with
 *     another connection's value or none;
 *   - users_check() says STALE exactly when the clock is outside the window,
 *     and a second check of the same bytes is a REPLAY whenever the first
 *     one was accepted.  The replay cache lives across inputs, so long runs
 *     also exercise its expiry and eviction.
 */
#include "config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/auth.h"
#include "server/users.h"
#include "conf/conf.h"
#include "core/log.h"
#include "wire/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_WINDOW_S	120
#define FZ_TS_BASE	1700000000ULL

static struct users	*fz_auth;	/* accept_v1: true */
static struct users	*fz_strict;	/* accept_v1: false, the default */
static uint8_t		 fz_key[PROTO_KEY_LEN];
/* The exporter value of the harness's "connection": 40 41 .. 5f, as in
 * tests/unit/wire/test_proto.c (seeds are made with it). */
static uint8_t		 fz_bind[PROTO_BIND_LEN];
static uint8_t		 fz_id[PROTO_USER_ID_LEN];

#define FZ_CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "fuzz_header: %s:%d: %s\n", __FILE__,	\
		    __LINE__, #cond);					\
		abort();						\
	}								\
} while (0)

/* The user of the test vectors: key 00 01 .. 1f. */
static void
fz_init(void)
{
	static struct conf_user	 user = { .name = "fuzz" };
	static struct conf	 c;
	size_t			 i;

	log_init(LOG_LVL_ERROR, false, "fuzz_header");
	for (i = 0; i < PROTO_KEY_LEN; i++)
		fz_key[i] = (uint8_t)i;
	memcpy(user.key, fz_key, sizeof(user.key));
	c.role = CONF_ROLE_SERVER;
	c.server.users = &user;
	c.server.nusers = 1;
	c.server.time_window_s = FZ_WINDOW_S;
	if ((fz_strict = users_new(&c)) == NULL)
		abort();
	c.server.accept_v1 = true;
	if ((fz_auth = users_new(&c)) == NULL)
		abort();
	for (i = 0; i < PROTO_BIND_LEN; i++)
		fz_bind[i] = (uint8_t)(0x40 + i);
	auth_user_id(fz_key, fz_id);
}

static bool
fz_kind_ok(uint8_t kind)
{
	return kind == PROTO_KIND_TCP || kind == PROTO_KIND_UDP ||
	    kind == PROTO_KIND_ICMP;
}

/* Wire size of the destination address field. */
static size_t
fz_addr_len(const struct proto_dest *d)
{
	switch (d->atyp) {
	case PROTO_ATYP_IPV4:
		return 4;
	case PROTO_ATYP_IPV6:
		return 16;
	default:
		return 1 + strlen(d->domain);
	}
}

static void
fz_check_fields(const struct proto_req *r, size_t hlen)
{
	size_t	n;

	FZ_CHECK(hlen >= 75 && hlen <= PROTO_REQ_MAX);
	FZ_CHECK(r->len == hlen);
	FZ_CHECK(r->version == PROTO_VERSION || r->version == PROTO_VERSION_1 ||
	    r->version == PROTO_VERSION_3);
	FZ_CHECK(!r->can_reuse || r->version == PROTO_VERSION);
	FZ_CHECK(fz_kind_ok(r->kind));
	FZ_CHECK(r->dest.atyp == PROTO_ATYP_IPV4 ||
	    r->dest.atyp == PROTO_ATYP_IPV6 ||
	    r->dest.atyp == PROTO_ATYP_DOMAIN);
	if (r->dest.atyp == PROTO_ATYP_DOMAIN) {
		n = strnlen(r->dest.domain, sizeof(r->dest.domain));
		FZ_CHECK(n >= 1 && n <= 255);
	}
	FZ_CHECK(PROTO_REQ_FIXED + fz_addr_len(&r->dest) + 4 +
	    PROTO_MAC_LEN <= hlen);
}

/* Stage 1: returns the header length, or 0 when there is none. */
static size_t
fz_parse_prefixes(const uint8_t *data, size_t size, struct proto_req *r)
{
	struct proto_req	 tmp;
	ssize_t			 rc, judged = 0;
	size_t			 len;

	for (len = 0; len <= size; len++) {
		rc = proto_req_parse(data, len, &tmp);
		FZ_CHECK(rc >= -1);
		if (judged != 0) {
			FZ_CHECK(rc == judged);
			continue;
		}
		if (rc == 0)
			continue;
		judged = rc;
		if (rc > 0) {
			FZ_CHECK((size_t)rc == len);
			fz_check_fields(&tmp, (size_t)rc);
			*r = tmp;
		}
	}
	return judged > 0 ? (size_t)judged : 0;
}

static void
fz_stage2(const struct proto_req *r, size_t hlen, uint8_t clock)
{
	struct proto_req	 req = *r, back;
	uint8_t			 hdr[PROTO_REQ_MAX], other[PROTO_BIND_LEN];
	const uint8_t		*bind;
	size_t			 pad, user;
	ssize_t			 n;
	uint64_t		 now, d;
	int			 rc, rc2;

	memcpy(req.user_id, fz_id, sizeof(req.user_id));
	pad = hlen - (PROTO_REQ_FIXED + fz_addr_len(&req.dest) + 4 +
	    PROTO_MAC_LEN);
	bind = req.version != PROTO_VERSION_1 ? fz_bind : NULL;
	n = proto_req_encode(hdr, sizeof(hdr), &req, fz_key, bind, pad);
	FZ_CHECK(n == (ssize_t)hlen);
	FZ_CHECK(proto_req_parse(hdr, hlen, &back) == (ssize_t)hlen);
	FZ_CHECK(back.version == req.version && back.kind == req.kind &&
	    back.can_reuse == req.can_reuse &&
	    back.len == req.len && back.ts == req.ts &&
	    memcmp(back.nonce, req.nonce, sizeof(req.nonce)) == 0 &&
	    memcmp(back.user_id, req.user_id, sizeof(req.user_id)) == 0 &&
	    memcmp(&back.dest, &req.dest, sizeof(req.dest)) == 0);

	FZ_CHECK(proto_req_verify_mac(hdr, hlen, fz_key, bind) == 0);
	hdr[clock % hlen] ^= 0x80;
	FZ_CHECK(proto_req_verify_mac(hdr, hlen, fz_key, bind) == -1);
	hdr[clock % hlen] ^= 0x80;
	if (bind != NULL) {
		/* Another connection's value, or none: no MAC matches. */
		memcpy(other, fz_bind, sizeof(other));
		other[clock % PROTO_BIND_LEN] ^= (uint8_t)(1 << (clock % 8));
		FZ_CHECK(proto_req_verify_mac(hdr, hlen, fz_key, other) == -1);
		FZ_CHECK(proto_req_verify_mac(hdr, hlen, fz_key, NULL) == -1);
		FZ_CHECK(users_check(fz_auth, hdr, hlen, &back, other,
		    back.ts, &user) == USERS_BAD_MAC);
	} else
		FZ_CHECK(users_check(fz_strict, hdr, hlen, &back, fz_bind,
		    back.ts, &user) == USERS_V1);

	/* -256 .. +254 s around the timestamp (saturating at the ends of
	 * the clock); the window is 120 s. */
	d = (uint64_t)(clock >= 128 ? clock - 128 : 128 - clock) * 2;
	if (clock >= 128)
		now = back.ts <= UINT64_MAX - d ? back.ts + d : UINT64_MAX;
	else
		now = back.ts >= d ? back.ts - d : 0;
	d = now > back.ts ? now - back.ts : back.ts - now;
	rc = users_check(fz_auth, hdr, hlen, &back, bind, now, &user);
	if (d > FZ_WINDOW_S) {
		FZ_CHECK(rc == USERS_STALE);
		return;
	}
	FZ_CHECK(rc == USERS_OK || rc == USERS_REPLAY);
	if (rc == USERS_OK)
		FZ_CHECK(user == 0);
	rc2 = users_check(fz_auth, hdr, hlen, &back, bind, now, &user);
	FZ_CHECK(rc2 == USERS_REPLAY);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_req	 r;
	size_t			 hlen, user;
	int			 rc;

	if (fz_auth == NULL)
		fz_init();
	if (size > 4 * PROTO_REQ_MAX)
		return 0;	/* the server reads at most PROTO_REQ_MAX */
	if ((hlen = fz_parse_prefixes(data, size, &r)) == 0)
		return 0;

	/* As the server sees it: a real clock far from any seed's time. */
	rc = users_check(fz_auth, data, hlen, &r, fz_bind, FZ_TS_BASE, &user);
	FZ_CHECK(rc == USERS_OK || rc == USERS_UNKNOWN ||
	    rc == USERS_BAD_MAC || rc == USERS_STALE || rc == USERS_REPLAY);
	if (rc == USERS_OK || rc == USERS_STALE || rc == USERS_REPLAY)
		FZ_CHECK(memcmp(r.user_id, fz_id, sizeof(fz_id)) == 0);
	rc = users_check(fz_strict, data, hlen, &r, fz_bind, FZ_TS_BASE,
	    &user);
	if (r.version == PROTO_VERSION_1)
		FZ_CHECK(rc == USERS_V1);
	else
		FZ_CHECK(rc != USERS_V1);

	fz_stage2(&r, hlen, data[size - 1]);
	return 0;
}
