/*
 * Fuzz target: the datagram frame parser (frame.h), which both ends run on
 * bytes from the other -- the server on a client's UDP/ICMP stream, the
 * client on the server's replies.  The input is a stream of frames as they
 * arrive; it is parsed frame by frame until a frame is incomplete or
 * malformed.
 *
 * Oracles besides ASan/UBSan:
 *  - prefixes: every prefix of the header is parsed from a buffer of
 *    exactly its size (so reading past it is caught); a prefix of a
 *    complete frame is never malformed, and once a prefix is malformed
 *    every longer one is (frame.h: "rejected as soon as it proves the
 *    frame malformed and never before");
 *  - round trip: a parsed frame encodes back to exactly its bytes, with
 *    frame_hdr_len() agreeing, and an IP address survives the way through
 *    struct addr.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/addr.h"
#include "wire/frame.h"
#include "wire/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static ssize_t
fz_parse_copy(const uint8_t *in, size_t len)
{
	struct proto_dest a;
	const uint8_t *payload;
	uint8_t *copy;
	size_t plen;
	ssize_t r;

	/* An exact-size copy at the end of its own allocation. */
	if ((copy = malloc(len > 0 ? len : 1)) == NULL)
		abort();
	memcpy(copy, in, len);
	r = frame_parse(copy, len, &a, &payload, &plen);
	free(copy);
	return r;
}

/* full: the result for all len bytes (the first frame's length, 0 or -1). */
static void
fz_prefixes(const uint8_t *in, size_t len, ssize_t full)
{
	size_t l, upto;
	bool bad = false;
	ssize_t r;

	/* The parser judges the header only; past it just the length
	 * decides, which the edges below check. */
	upto = len < FRAME_HDR_MAX + 1 ? len : FRAME_HDR_MAX + 1;
	for (l = 0; l <= upto; l++) {
		r = fz_parse_copy(in, l);
		if (full > 0 && r != (l < (size_t)full ? 0 : full))
			abort();
		if (full == 0 && r != 0)
			abort();	/* a prefix cannot be worse */
		if (r < 0)
			bad = true;
		else if (bad)
			abort();	/* malformed, then not any more */
	}
	if (full > 0 && (fz_parse_copy(in, (size_t)full - 1) != 0 ||
	    fz_parse_copy(in, (size_t)full) != full))
		abort();
	if (full < 0 && !bad)
		abort();	/* judged past the header */
}

static void
fz_round_trip(const uint8_t *in, size_t n, const struct proto_dest *a,
    const uint8_t *payload, size_t plen)
{
	static uint8_t out[FRAME_MAX];
	struct proto_dest b;
	struct addr sa;
	ssize_t e;

	e = frame_encode(out, sizeof(out), a, payload, plen);
	if (e < 0 || (size_t)e != n || memcmp(out, in, n) != 0)
		abort();
	if (frame_hdr_len(a) != n - plen)
		abort();
	/* Too small a buffer is refused, not overrun. */
	if (frame_encode(out, n - 1, a, payload, plen) != -1)
		abort();
	if (a->atyp == PROTO_ATYP_DOMAIN) {
		if (frame_dest_to_addr(a, &sa) != -1)
			abort();
		return;
	}
	if (frame_dest_to_addr(a, &sa) != 0)
		abort();
	frame_dest_from_addr(&b, &sa);
	if (b.atyp != a->atyp || b.port != a->port ||
	    memcmp(b.ip, a->ip, a->atyp == PROTO_ATYP_IPV4 ? 4 : 16) != 0)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_dest a;
	const uint8_t *payload;
	size_t plen;
	ssize_t r;

	while (size > 0) {
		r = frame_parse(data, size, &a, &payload, &plen);
		fz_prefixes(data, size, r);
		if (r <= 0)
			break;
		if (payload != data + (size_t)r - plen || plen > FRAME_PAYLOAD_MAX)
			abort();
		fz_round_trip(data, (size_t)r, &a, payload, plen);
		data += r;
		size -= (size_t)r;
	}
	return 0;
}
