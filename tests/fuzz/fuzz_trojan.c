/*
 * Fuzz target: the trojan request parser (proto_trojan.h), which the
 * server runs on the first bytes of every connection once trojan
 * passwords are configured -- before any authentication; and the UDP
 * packet parser, which both roles run on the stream after a UDP ASSOCIATE.
 * The input is a stream: a request, if it parses, then UDP packets (the
 * whole input is taken as packets when it is no request).
 *
 * Oracles besides ASan/UBSan:
 *  - prefixes: every prefix of the request is parsed from a buffer of
 *    exactly its size (reading past it is caught); a prefix of a complete
 *    request always asks for more, and once a prefix is malformed every
 *    longer one is;
 *  - detection agrees: a stream that parses was detected as trojan;
 *  - round trip: a parsed request encodes back to exactly its bytes.
 * The same for every UDP packet in the stream, one after another: exact
 * prefixes ask for more (up to past the longest header, and one byte
 * short), a malformed header stays malformed, the payload lies inside the
 * packet, and the packet encodes back to exactly its bytes.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/proto.h"
#include "wire/proto_trojan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_UDP_PACKETS	64	/* packets judged per input */

static ssize_t
fz_parse_copy(const uint8_t *in, size_t len, struct proto_trojan_req *r)
{
	uint8_t *copy;
	ssize_t n;

	/* An exact-size copy at the end of its own allocation. */
	if ((copy = malloc(len > 0 ? len : 1)) == NULL)
		abort();
	memcpy(copy, in, len);
	n = proto_trojan_parse(copy, len, r);
	free(copy);
	return n;
}

static ssize_t
fz_udp_copy(const uint8_t *in, size_t len, struct proto_dest *a,
    const uint8_t **payload, size_t *plen, uint8_t **copyp)
{
	uint8_t *copy;
	ssize_t n;

	if ((copy = malloc(len > 0 ? len : 1)) == NULL)
		abort();
	memcpy(copy, in, len);
	n = proto_trojan_udp_parse(copy, len, a, payload, plen);
	if (n > 0 && (*payload < copy || *payload + *plen != copy + n))
		abort();		/* the payload ends the packet */
	if (copyp != NULL && n > 0) {
		*payload = in + (*payload - copy);
		*copyp = copy;
	} else
		free(copy);
	return n;
}

/* Judges the packet at in; returns its length, or 0 at the end of the
 * parseable stream. */
static size_t
fz_udp_one(const uint8_t *in, size_t size)
{
	static uint8_t out[PROTO_TROJAN_UDP_MAX];
	struct proto_dest a, b;
	const uint8_t *p, *q;
	uint8_t *copy = NULL;
	size_t plen, qlen, l, upto;
	ssize_t full, n, e;
	bool bad = false;

	full = fz_udp_copy(in, size, &a, &p, &plen, &copy);
	free(copy);
	upto = size < PROTO_TROJAN_UDP_HDR_MAX + 1 ? size :
	    PROTO_TROJAN_UDP_HDR_MAX + 1;
	for (l = 0; l <= upto; l++) {
		n = fz_udp_copy(in, l, &b, &q, &qlen, NULL);
		if (full > 0 && n != (l < (size_t)full ? 0 : full))
			abort();
		if (full == 0 && n != 0)
			abort();	/* a prefix cannot be worse */
		if (n < 0)
			bad = true;
		else if (bad)
			abort();	/* malformed, then not any more */
	}
	if (full < 0 && !bad)
		abort();		/* judged past the longest header */
	if (full <= 0)
		return 0;
	if ((size_t)full > PROTO_TROJAN_UDP_MAX ||
	    plen > PROTO_TROJAN_UDP_PAYLOAD_MAX ||
	    fz_udp_copy(in, (size_t)full - 1, &b, &q, &qlen, NULL) != 0 ||
	    proto_trojan_udp_hdr_len(&a) != (size_t)full - plen)
		abort();
	e = proto_trojan_udp_encode(out, sizeof(out), &a, p, plen);
	if (e != full || memcmp(out, in, (size_t)full) != 0)
		abort();
	return (size_t)full;
}

static void
fz_udp_stream(const uint8_t *in, size_t size)
{
	size_t off = 0, n, i;

	for (i = 0; i < FZ_UDP_PACKETS && off < size; i++) {
		if ((n = fz_udp_one(in + off, size - off)) == 0)
			break;
		off += n;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[PROTO_TROJAN_REQ_MAX];
	struct proto_trojan_req r, q;
	size_t l, upto;
	ssize_t full, n, e;
	bool bad = false;

	full = fz_parse_copy(data, size, &r);
	upto = size < PROTO_TROJAN_REQ_MAX + 1 ? size : PROTO_TROJAN_REQ_MAX + 1;
	for (l = 0; l <= upto; l++) {
		n = fz_parse_copy(data, l, &q);
		if (full > 0 && n != (l < (size_t)full ? 0 : full))
			abort();
		if (full == 0 && n != 0)
			abort();	/* a prefix cannot be worse */
		if (n < 0)
			bad = true;
		else if (bad)
			abort();	/* malformed, then not any more */
	}
	if (full < 0 && !bad)
		abort();		/* judged past the longest request */
	if (full <= 0) {
		fz_udp_stream(data, size);
		return 0;
	}
	if ((size_t)full > PROTO_TROJAN_REQ_MAX ||
	    proto_trojan_detect(data, size) != 1)
		abort();
	e = proto_trojan_encode(out, sizeof(out), r.hex, r.cmd, &r.dest);
	if (e != full || memcmp(out, data, (size_t)full) != 0)
		abort();
	fz_udp_stream(data + full, size - (size_t)full);
	return 0;
}
