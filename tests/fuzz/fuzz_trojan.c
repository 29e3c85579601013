/*
 * Fuzz target: the trojan request parser (proto_trojan.h), which the
 * server runs on the first bytes of every connection once trojan
 * passwords are configured -- before any authentication.
 *
 * Oracles besides ASan/UBSan:
 *  - prefixes: every prefix of the request is parsed from a buffer of
 *    exactly its size (reading past it is caught); a prefix of a complete
 *    request always asks for more, and once a prefix is malformed every
 *    longer one is;
 *  - detection agrees: a stream that parses was detected as trojan;
 *  - round trip: a parsed request encodes back to exactly its bytes.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "proto_trojan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
	if (full <= 0)
		return 0;
	if ((size_t)full > PROTO_TROJAN_REQ_MAX ||
	    proto_trojan_detect(data, size) != 1)
		abort();
	e = proto_trojan_encode(out, sizeof(out), r.hex, r.cmd, &r.dest);
	if (e != full || memcmp(out, data, (size_t)full) != 0)
		abort();
	return 0;
}
