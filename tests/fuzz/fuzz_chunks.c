/*
 * Fuzz target: the flow framing of a reusable native connection
 * (outer.h, outer_frame.c; PROTOCOL.md "Reusable connections"), which
 * both ends run on bytes from the other.  The input is the first byte,
 * settings, then the stream as a peer sends it after the request
 * header: chunks, an end marker, and whatever follows.
 *
 * The stream goes through a socketpair into a plain (no TLS) outer
 * stream with framing on; settings pick how many of its first bytes are
 * handed over as early bytes (as the server does with what followed the
 * header) and the size of each read.
 *
 * Oracles besides ASan/UBSan:
 *  - a reference decoder written here: the bytes read are exactly the
 *    chunks' bytes up to the end marker, after which reads return 0
 *    (and keep returning 0); the reader fails with EPROTO exactly when
 *    the stream ends inside a chunk, before the marker, or a length is
 *    over OUTER_CHUNK_MAX;
 *  - after the marker, with framing off, the bytes that followed it are
 *    read back raw, none lost or consumed; early bytes after the marker
 *    leave the stream not idle (outer_frame_idle), never silently lost;
 *  - round trip: the input written through a framed writer (in pieces
 *    the settings choose) and shut comes out of a framed reader whole,
 *    then 0.
 */
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tls/outer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_MAX	32768	/* fits a socketpair's buffer in one send */

static void
fz_check(bool ok)
{
	if (!ok)
		abort();
}

static void
fz_pair(int sv[2])
{
	fz_check(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	fz_check(fcntl(sv[0], F_SETFL, O_NONBLOCK) == 0);
	fz_check(fcntl(sv[1], F_SETFL, O_NONBLOCK) == 0);
}

/* Reference: payload bytes into out, *end the offset after the end
 * marker; 1 ended well, -1 malformed or truncated. */
static int
fz_ref(const uint8_t *in, size_t len, uint8_t *out, size_t *outlen,
    size_t *end)
{
	size_t off = 0, l;

	*outlen = 0;
	for (;;) {
		if (len - off < 2) {
			/* as much of the last chunk as there is */
			return -1;
		}
		l = (size_t)in[off] << 8 | in[off + 1];
		off += 2;
		if (l == 0) {
			*end = off;
			return 1;
		}
		if (l > OUTER_CHUNK_MAX)
			return -1;
		if (len - off < l) {
			memcpy(out + *outlen, in + off, len - off);
			*outlen += len - off;
			return -1;
		}
		memcpy(out + *outlen, in + off, l);
		*outlen += l;
		off += l;
	}
}

static void
fz_decode(uint8_t set, const uint8_t *in, size_t len)
{
	uint8_t *want, *got;
	size_t wantlen, gotlen = 0, end = 0, early, rd;
	struct outer *o;
	ssize_t n;
	int sv[2], ref;

	want = malloc(len + 1);
	got = malloc(len + 1);
	fz_check(want != NULL && got != NULL);
	ref = fz_ref(in, len, want, &wantlen, &end);
	early = len == 0 ? 0 : (size_t)(set & 0x0f) * len / 15;
	rd = (size_t)1 << ((set >> 4) & 0x0f);
	fz_pair(sv);
	if (len > early)
		fz_check(write(sv[1], in + early, len - early) ==
		    (ssize_t)(len - early));
	fz_check(shutdown(sv[1], SHUT_WR) == 0);
	fz_check((o = outer_new(NULL, sv[0], false, NULL)) != NULL);
	fz_check(outer_frame_begin(o, 0, 0, in, early) == 0);
	for (;;) {
		n = outer_read(o, got + gotlen, rd);
		if (n <= 0)
			break;
		gotlen += (size_t)n;
		fz_check(gotlen <= wantlen);
	}
	fz_check(gotlen == wantlen && memcmp(got, want, wantlen) == 0);
	if (ref == 1 && end < early) {
		/* Early bytes after the marker: the stream is not idle (the
		 * server takes it as data after the flow's end). */
		fz_check(n == 0);
		fz_check(outer_shutdown_write(o) == 0);
		fz_check(!outer_frame_idle(o));
	} else if (ref == 1) {
		fz_check(n == 0);
		fz_check(outer_read(o, got, 1) == 0);
		/* What followed the marker is still there, raw. */
		fz_check(outer_shutdown_write(o) == 0);
		fz_check(outer_frame_idle(o));
		outer_frame_end(o);
		gotlen = 0;
		while ((n = outer_read(o, got + gotlen, rd)) > 0)
			gotlen += (size_t)n;
		fz_check(n == 0 && gotlen == len - end &&
		    memcmp(got, in + end, gotlen) == 0);
	} else
		fz_check(n == -1 && errno == EPROTO);
	outer_free(o);
	close(sv[1]);
	free(want);
	free(got);
}

static void
fz_roundtrip(uint8_t set, const uint8_t *in, size_t len)
{
	struct outer *w, *r;
	uint8_t *got;
	size_t off = 0, gotlen = 0, piece;
	ssize_t n;
	int sv[2];

	got = malloc(len + 1);
	fz_check(got != NULL);
	fz_pair(sv);
	fz_check((w = outer_new(NULL, sv[0], true, NULL)) != NULL);
	fz_check((r = outer_new(NULL, sv[1], false, NULL)) != NULL);
	fz_check(outer_frame_begin(w, 0, 0, NULL, 0) == 0);
	fz_check(outer_frame_begin(r, 0, 0, NULL, 0) == 0);
	piece = (size_t)set * 131 + 1;
	while (off < len) {
		n = outer_write(w, in + off, len - off < piece ? len - off :
		    piece);
		if (n < 0) {
			/* Full (many small sends fill a socketpair): what
			 * was staged goes once the reader takes some; the
			 * same call is repeated. */
			fz_check(errno == EAGAIN);
			n = outer_read(r, got + gotlen, len + 1 - gotlen);
			fz_check(n > 0);
			gotlen += (size_t)n;
			continue;
		}
		fz_check(n > 0);
		off += (size_t)n;
	}
	while (outer_shutdown_write(w) != 0) {
		fz_check(errno == EAGAIN);
		n = outer_read(r, got + gotlen, len + 1 - gotlen);
		fz_check(n > 0);
		gotlen += (size_t)n;
	}
	while ((n = outer_read(r, got + gotlen, len + 1 - gotlen)) > 0)
		gotlen += (size_t)n;
	fz_check(n == 0 && gotlen == len && memcmp(got, in, len) == 0);
	outer_free(w);
	outer_free(r);
	free(got);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size - 1 > FZ_MAX)
		return 0;
	fz_decode(data[0], data + 1, size - 1);
	fz_roundtrip(data[0], data + 1, size - 1);
	return 0;
}
