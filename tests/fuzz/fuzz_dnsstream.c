/*
 * Fuzz target: the framing of DNS over TCP/TLS and HTTPS answers
 * (dnsstream.h), which the client runs on whatever a stream upstream --
 * or anyone on the path to a tcp one -- sends back.  The first byte picks
 * the parser (bit 0 clear: the length prefix, set: the HTTP response;
 * bit 1 set: a reply cut to its answer section, dnsstream_strip), the
 * rest is the stream (or the reply).
 *
 * Oracles besides ASan/UBSan: a message taken lies inside the input and
 * its length is within [DNS header, DNSSTREAM_MSG_MAX] (HTTP: at most
 * DNSSTREAM_MSG_MAX); the bytes taken never pass the input; a strict
 * prefix of a taken message is never taken, and the verdict on a longer
 * input never turns from "taken" into something else.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/dnsstream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "fuzz_dnsstream: %s:%d: %s\n", __FILE__,\
		    __LINE__, #cond);					\
		abort();						\
	}								\
} while (0)

static ssize_t
fz_parse(int http, const uint8_t *in, size_t len, const uint8_t **m,
    size_t *mlen)
{
	int	st, close;

	if (http)
		return dnsstream_http_parse(in, len, &st, m, mlen, &close);
	return dnsstream_tcp_parse(in, len, m, mlen);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t	*m = NULL, *in;
	uint8_t		*copy;
	size_t		 mlen = 0, len, mlen2;
	ssize_t		 r, r2;
	int		 http;

	if (size < 1)
		return 0;
	http = data[0] & 1;
	len = size - 1;
	/* An exact copy: a read past the input shows under ASan. */
	if ((copy = malloc(len > 0 ? len : 1)) == NULL)
		abort();
	memcpy(copy, data + 1, len);
	in = copy;
	if (data[0] & 2) {
		/* A prefix, past header and question, counts patched. */
		r = dnsstream_strip(copy, len);
		FZ_CHECK(r == -1 || (r >= 12 + 5 && (size_t)r <= len));
		if (r > 0) {
			FZ_CHECK(memcmp(copy, data + 1, 8) == 0 &&
			    memcmp(copy + 12, data + 13, (size_t)r - 12) == 0);
			FZ_CHECK((copy[8] | copy[9] | copy[10] | copy[11]) == 0);
		}
		free(copy);
		return 0;
	}
	r = fz_parse(http, in, len, &m, &mlen);
	FZ_CHECK(r >= -1 && (r < 0 || (size_t)r <= len));
	if (r > 0) {
		FZ_CHECK(m >= in && m + mlen <= in + (size_t)r);
		FZ_CHECK(mlen <= DNSSTREAM_MSG_MAX);
		if (!http)
			FZ_CHECK(mlen >= 12 && (size_t)r == mlen + 2);
		/* One byte short: not whole yet (or refused, never
		 * taken). */
		r2 = fz_parse(http, in, (size_t)r - 1, &m, &mlen2);
		FZ_CHECK(r2 <= 0);
	}
	free(copy);
	return 0;
}
