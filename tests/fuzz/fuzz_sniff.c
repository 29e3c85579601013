/*
 * Fuzz target: domain recovery (wire/sniff.h) on hostile first bytes --
 * TLS records, a bare ClientHello, an HTTP request head, a QUIC
 * datagram -- and, so that the fuzzer reaches what lies behind QUIC's
 * encryption, the input wrapped by the test encoder (tests/unit/quicenc.c)
 * into a real protected Initial.
 *
 * Input: one mode byte, then the bytes.  Every mode runs every parser on
 * the bytes as they are; mode 1 also sends them as the plaintext frames
 * of an Initial; mode 2 treats them as a ClientHello message and wraps
 * it in TLS records and in CRYPTO frames cut at the offset the second
 * byte picks, the second part first.
 *
 * Oracles besides ASan/UBSan, from sniff.h:
 *  - a name is reported only as a valid host name, lower case;
 *  - every prefix's verdict, once it is not "need more", is the verdict
 *    of the whole input, and the same name: fields are judged when they
 *    arrive and never by later bytes;
 *  - sniff_stream is the better of the TLS and HTTP verdicts;
 *  - a hello read over records or over CRYPTO frames gives the verdict
 *    of the bare hello, in one datagram or over two.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/quicenc.h"
#include "wire/sniff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "fuzz_sniff: %s:%d: %s\n", __FILE__,	\
		    __LINE__, #cond);					\
		abort();						\
	}								\
} while (0)

#define FZ_MAX		4096
#define FZ_PREFIXES	1024	/* every prefix up to here, then sampled */

typedef enum sniff_res (*fz_fn)(const uint8_t *, size_t, char *, size_t);

static void
fz_name(enum sniff_res r, const char *out)
{
	char	again[SNIFF_NAME_MAX + 1];
	size_t	n;

	if (r != SNIFF_FOUND)
		return;
	n = strnlen(out, SNIFF_NAME_MAX + 1);
	FZ_CHECK(n >= 1 && n <= SNIFF_NAME_MAX);
	FZ_CHECK(sniff_name_ok((const uint8_t *)out, n, again,
	    sizeof(again)));
	FZ_CHECK(strcmp(out, again) == 0);
}

/* Runs fn on every prefix (an exact-size copy each); returns the verdict
 * for all of it, its name in out. */
static enum sniff_res
fz_prefixes(fz_fn fn, const uint8_t *in, size_t len, char *out)
{
	char		 name[SNIFF_NAME_MAX + 1];
	enum sniff_res	 r, whole;
	uint8_t		*copy;
	size_t		 l;

	whole = fn(in, len, out, SNIFF_NAME_MAX + 1);
	fz_name(whole, out);
	for (l = 0; l < len; l += l < FZ_PREFIXES ? 1 : 61) {
		if ((copy = malloc(l > 0 ? l : 1)) == NULL)
			abort();
		memcpy(copy, in, l);
		r = fn(copy, l, name, sizeof(name));
		free(copy);
		fz_name(r, name);
		if (r == SNIFF_MORE)
			continue;
		if (r != whole) {
			fprintf(stderr, "fuzz_sniff: prefix %zu says %d, the "
			    "whole %zu bytes %d\n", l, r, len, whole);
			abort();
		}
		if (r == SNIFF_FOUND)
			FZ_CHECK(strcmp(name, out) == 0);
	}
	return whole;
}

static void
fz_raw(const uint8_t *in, size_t len)
{
	char		 a[SNIFF_NAME_MAX + 1], b[SNIFF_NAME_MAX + 1];
	const char	*kind;
	enum sniff_res	 t, h, s;

	t = fz_prefixes(sniff_tls_sni, in, len, a);
	h = fz_prefixes(sniff_http_host, in, len, b);
	(void)fz_prefixes(sniff_hello_sni, in, len, a);
	s = sniff_stream(in, len, a, sizeof(a), &kind);
	fz_name(s, a);
	FZ_CHECK(s == (t > h ? t : h));
	FZ_CHECK((kind != NULL) == (s == SNIFF_FOUND));
	fz_name(sniff_quic_sni(in, len, a, sizeof(a)), a);
	/* Too small an output buffer is refused, never written past. */
	FZ_CHECK(sniff_tls_sni(in, len, a, SNIFF_NAME_MAX) == SNIFF_NOT);
	FZ_CHECK(sniff_http_host(in, len, a, SNIFF_NAME_MAX) == SNIFF_NOT);
	FZ_CHECK(sniff_quic_sni(in, len, a, SNIFF_NAME_MAX) == SNIFF_NOT);
}

static const uint8_t fz_dcid[8] = { 0xf0, 0x0d, 1, 2, 3, 4, 5, 6 };

/* frames, padded to a realistic 1200-byte datagram, into an Initial. */
static size_t
fz_initial(uint32_t pn, const uint8_t *frames, size_t flen, uint8_t *out,
    size_t outlen)
{
	static uint8_t	pad[FZ_MAX + 64];
	size_t		n = flen < 1160 ? 1160 : flen;

	memset(pad, 0, n);
	memcpy(pad, frames, flen);
	n = quicenc_initial(SNIFF_QUIC_V1, fz_dcid, sizeof(fz_dcid), pn, pad,
	    n, out, outlen);
	FZ_CHECK(n > 0);
	return n;
}

static void
fz_frames(const uint8_t *in, size_t len)
{
	static uint8_t	dg[FZ_MAX + 256];
	char		out[SNIFF_NAME_MAX + 1];
	enum sniff_res	r;
	size_t		n;

	n = fz_initial(0, in, len, dg, sizeof(dg));
	r = sniff_quic_sni(dg, n, out, sizeof(out));
	fz_name(r, out);
}

/* The hello in records and in CRYPTO frames, cut at cut. */
static void
fz_hello(const uint8_t *in, size_t len, size_t cut)
{
	static uint8_t		 rec[FZ_MAX + 64], fr[FZ_MAX + 64],
				 dg[FZ_MAX + 256];
	char			 want[SNIFF_NAME_MAX + 1],
				 out[SNIFF_NAME_MAX + 1];
	struct sniff_quic	*q;
	enum sniff_res		 w, r;
	size_t			 n = 0, f, d;

	if (len == 0)
		return;
	cut = len > 1 ? 1 + cut % (len - 1) : 1;
	w = sniff_hello_sni(in, len, want, sizeof(want));
	/* Records: [0, cut) and [cut, len). */
	memcpy(rec, "\x16\x03\x01", 3);
	rec[3] = (uint8_t)(cut >> 8);
	rec[4] = (uint8_t)cut;
	memcpy(rec + 5, in, cut);
	n = 5 + cut;
	if (cut < len) {
		memcpy(rec + n, "\x16\x03\x03", 3);
		rec[n + 3] = (uint8_t)((len - cut) >> 8);
		rec[n + 4] = (uint8_t)(len - cut);
		memcpy(rec + n + 5, in + cut, len - cut);
		n += 5 + len - cut;
	}
	r = sniff_tls_sni(rec, n, out, sizeof(out));
	FZ_CHECK(r == w);
	if (r == SNIFF_FOUND)
		FZ_CHECK(strcmp(out, want) == 0);
	/* Frames: the tail, then the head, in one datagram; then each in
	 * its own. */
	f = quicenc_crypto(fr, (uint32_t)cut, in + cut, len - cut);
	f += quicenc_crypto(fr + f, 0, in, cut);
	d = fz_initial(0, fr, f, dg, sizeof(dg));
	r = sniff_quic_sni(dg, d, out, sizeof(out));
	FZ_CHECK(r == w);
	if (r == SNIFF_FOUND)
		FZ_CHECK(strcmp(out, want) == 0);
	if ((q = sniff_quic_new()) == NULL)
		abort();
	f = quicenc_crypto(fr, (uint32_t)cut, in + cut, len - cut);
	d = fz_initial(0, fr, f, dg, sizeof(dg));
	FZ_CHECK(sniff_quic_feed(q, dg, d, out, sizeof(out)) == SNIFF_MORE);
	f = quicenc_crypto(fr, 0, in, cut);
	d = fz_initial(1, fr, f, dg, sizeof(dg));
	r = sniff_quic_feed(q, dg, d, out, sizeof(out));
	FZ_CHECK(r == w);
	sniff_quic_free(q);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > FZ_MAX)
		return 0;
	fz_raw(data + 1, size - 1);
	switch (data[0] % 3) {
	case 1:
		fz_frames(data + 1, size - 1);
		break;
	case 2:
		if (size >= 2 && size - 2 <= 0x3fff - 64)
			fz_hello(data + 2, size - 2, data[1]);
		break;
	}
	return 0;
}
