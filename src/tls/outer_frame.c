/*
 * Flow framing on an outer stream (see outer.h): chunks and the end
 * marker of one flow at a time, so that a connection can carry the next
 * flow once both ends of this one have crossed.
 *
 * Writing: each outer_write() call becomes up to FRAME_CHUNKS chunks, a
 * TLS record each (or raw bytes, then a chunk, in one record), staged in
 * one buffer and written with one outer_io_write (which sends the records
 * together).  The
 * staged bytes stand for the caller's first bytes: a call that returns
 * EAGAIN is repeated with the same bytes (outer.h's contract), which
 * finds the stage still full and returns their count once it left.
 *
 * Reading: a chunk's length is read (2 bytes), then its bytes go straight
 * into the caller's buffer; early bytes handed over by the owner come
 * first.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tls/outer.h"
#include "tls/outer_int.h"

#define FRAME_REC	(2 + OUTER_CHUNK_MAX)	/* a chunk: one TLS record */
#define FRAME_CHUNKS	OUTER_WRITE_CHUNKS	/* outer_io_write's batch */
#define FRAME_STAGE	(FRAME_CHUNKS * FRAME_REC)

struct outer_frame {
	size_t		 raw_out, raw_in;	/* unframed bytes still to go */
	bool		 end_in, end_out;	/* markers read, written */
	bool		 offer;			/* the offer follows end_out */
	uint8_t		 len[2];		/* a chunk's length as read */
	uint8_t		 len_have;
	size_t		 left;			/* chunk bytes still to read */
	uint8_t		*early;
	size_t		 early_len, early_off;
	uint8_t		*stage;			/* in flight; NULL: none */
	size_t		 stage_len, stage_off;
	size_t		 stage_data;		/* caller's bytes it holds */
	size_t		 stage_cap;		/* its size */
	size_t		 last_chunk;		/* bytes of its last record */
};

uint64_t
outer_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int
outer_frame_begin(struct outer *o, size_t raw_out, size_t raw_in,
    const void *early, size_t n)
{
	struct outer_frame *fr;

	outer_frame_end(o);
	if ((fr = calloc(1, sizeof(*fr))) == NULL)
		return -1;
	if (n > 0) {
		if ((fr->early = malloc(n)) == NULL) {
			free(fr);
			errno = ENOMEM;
			return -1;
		}
		memcpy(fr->early, early, n);
		fr->early_len = n;
	}
	fr->raw_out = raw_out;
	fr->raw_in = raw_in;
	o->fr = fr;
	o->flows++;
	if (o->pad_records > 0 && (o->client || o->flows > 1))
		o->pad_left = o->pad_records;	/* each flow's start blurred */
	return 0;
}

bool
outer_framed(const struct outer *o)
{
	return o != NULL && o->fr != NULL;
}

void
outer_frame_offer(struct outer *o)
{
	if (o->fr != NULL && !o->fr->end_out)
		o->fr->offer = true;
}

bool
outer_frame_offered(const struct outer *o)
{
	return o->fr != NULL && o->fr->offer && o->fr->end_out;
}

/* The end marker at the stage's end, and the offer behind it if asked
 * and the peer's marker has not come yet (else bytes it sent past its
 * marker before our offer would pass unseen: the offer then waits for
 * the flow's end, as without).  false when they do not fit (the caller
 * sends them on their own). */
static bool
frame_put_end(struct outer_frame *fr)
{
	size_t n;

	fr->offer = fr->offer && !fr->end_in;
	n = fr->offer ? 4 : 2;
	if (fr->last_chunk + n > FRAME_REC ||
	    fr->stage_len + n > fr->stage_cap)
		return false;	/* in the last record, or not at all */
	fr->stage[fr->stage_len] = fr->stage[fr->stage_len + 1] = 0;
	if (fr->offer) {
		fr->stage[fr->stage_len + 2] = OUTER_FRAME_OFFER >> 8;
		fr->stage[fr->stage_len + 3] = OUTER_FRAME_OFFER & 0xff;
	}
	fr->stage_len += n;
	fr->end_out = true;
	return true;
}

bool
outer_frame_idle(const struct outer *o)
{
	return o->fr != NULL && o->fr->end_in && o->fr->end_out &&
	    o->fr->stage == NULL && o->fr->early_off == o->fr->early_len;
}

void
outer_frame_free(struct outer *o)
{
	if (o->fr == NULL)
		return;
	free(o->fr->early);
	free(o->fr->stage);
	free(o->fr);
	o->fr = NULL;
}

void
outer_frame_end(struct outer *o)
{
	outer_frame_free(o);
}

unsigned
outer_flows(const struct outer *o)
{
	return o->flows;
}

uint64_t
outer_age_ms(const struct outer *o)
{
	return outer_now_ms() - o->born_ms;
}

/* ---- reading ---------------------------------------------------------- */

static ssize_t
frame_src(struct outer *o, void *buf, size_t len)
{
	struct outer_frame *fr = o->fr;
	size_t k = fr->early_len - fr->early_off;

	if (k == 0)
		return outer_io_read(o, buf, len);
	if (k > len)
		k = len;
	memcpy(buf, fr->early + fr->early_off, k);
	fr->early_off += k;
	return (ssize_t)k;
}

ssize_t
outer_frame_read(struct outer *o, void *buf, size_t len)
{
	struct outer_frame *fr = o->fr;
	ssize_t n;

	if (len == 0) {
		errno = EINVAL;
		return -1;
	}
	if (fr->end_in)
		return 0;
	if (fr->raw_in > 0) {
		if ((n = frame_src(o, buf, len < fr->raw_in ? len :
		    fr->raw_in)) > 0)
			fr->raw_in -= (size_t)n;
		return n;
	}
	while (fr->left == 0) {
		n = frame_src(o, fr->len + fr->len_have, 2 - fr->len_have);
		if (n <= 0) {
			if (n == 0)	/* ended without its marker */
				errno = EPROTO;
			return -1;
		}
		fr->len_have += (uint8_t)n;
		if (fr->len_have < 2)
			continue;
		fr->len_have = 0;
		fr->left = (size_t)fr->len[0] << 8 | fr->len[1];
		if (fr->left == 0) {
			fr->end_in = true;
			return 0;
		}
		if (fr->left > OUTER_CHUNK_MAX) {
			errno = EPROTO;
			return -1;
		}
	}
	n = frame_src(o, buf, len < fr->left ? len : fr->left);
	if (n == 0) {			/* ended inside a chunk */
		errno = EPROTO;
		return -1;
	}
	if (n > 0)
		fr->left -= (size_t)n;
	return n;
}

size_t
outer_frame_pending(const struct outer *o)
{
	return o->fr->early_len - o->fr->early_off;
}

/* ---- writing ---------------------------------------------------------- */

/* Writes what is staged.  0 when all left, -1 (EAGAIN or an error). */
static int
frame_flush(struct outer *o)
{
	struct outer_frame *fr = o->fr;
	ssize_t n;

	while (fr->stage_off < fr->stage_len) {
		n = outer_io_write(o, fr->stage + fr->stage_off,
		    fr->stage_len - fr->stage_off);
		if (n < 0)
			return -1;
		fr->stage_off += (size_t)n;
	}
	free(fr->stage);
	fr->stage = NULL;
	fr->stage_len = fr->stage_off = 0;
	return 0;
}

static int
frame_stage(struct outer_frame *fr, size_t size)
{
	if (size > FRAME_STAGE)
		size = FRAME_STAGE;
	if (fr->stage == NULL && (fr->stage = malloc(size)) == NULL) {
		errno = ENOMEM;
		return -1;
	}
	fr->stage_cap = size;
	fr->stage_len = fr->stage_off = fr->stage_data = fr->last_chunk = 0;
	return 0;
}

/* Chunks of up to n bytes of p into the stage after what it holds, each
 * filling one record; how many bytes they took. */
static size_t
frame_chunks(struct outer_frame *fr, const uint8_t *p, size_t n,
    unsigned max)
{
	size_t k, took = 0;

	while (n > took && max-- > 0 && FRAME_STAGE - fr->stage_len > 2) {
		k = n - took;
		if (k > FRAME_STAGE - fr->stage_len - 2)
			k = FRAME_STAGE - fr->stage_len - 2;
		if (k > OUTER_CHUNK_MAX)
			k = OUTER_CHUNK_MAX;
		fr->stage[fr->stage_len] = (uint8_t)(k >> 8);
		fr->stage[fr->stage_len + 1] = (uint8_t)k;
		memcpy(fr->stage + fr->stage_len + 2, p + took, k);
		fr->stage_len += 2 + k;
		fr->last_chunk = 2 + k;
		took += k;
	}
	return took;
}

ssize_t
outer_frame_write(struct outer *o, const void *buf, size_t len, bool last)
{
	struct outer_frame *fr = o->fr;
	const uint8_t *p = buf;
	size_t raw, k = 0;

	if (fr->stage != NULL) {	/* the repeat of a blocked call */
		if (frame_flush(o) == -1)
			return -1;
		return (ssize_t)fr->stage_data;
	}
	if (o->wq_len > 0 && !o->wq_ctl)	/* the repeat of one in place */
		return outer_io_write(o, buf, len);
	if (fr->end_out) {
		errno = EPIPE;
		return -1;
	}
	if (len == 0)
		return 0;
	/* the bytes, their chunks' lengths, the end marker and offer */
	if (frame_stage(fr, len + 2 * FRAME_CHUNKS + 4) == -1)
		return -1;
	raw = len < fr->raw_out ? len : fr->raw_out;
	if (raw > FRAME_REC)
		raw = FRAME_REC;
	memcpy(fr->stage, p, raw);
	fr->stage_len = raw;
	fr->raw_out -= raw;
	fr->last_chunk = raw;
	/* Raw bytes and a chunk share one record; a write of chunks alone
	 * is a chunk per record, up to FRAME_CHUNKS of them. */
	if (fr->raw_out == 0 && len > raw && raw == 0)
		k = frame_chunks(fr, p, len, FRAME_CHUNKS);
	else if (fr->raw_out == 0 && len > raw && FRAME_REC - raw > 2) {
		k = frame_chunks(fr, p + raw, len - raw < FRAME_REC - raw - 2 ?
		    len - raw : FRAME_REC - raw - 2, 1);
		fr->last_chunk = fr->stage_len;
	}
	fr->stage_data = raw + k;
	/* The caller's last bytes all in this write: the end marker too,
	 * in the last record if it has room. */
	if (last && raw + k == len && fr->raw_out == 0)
		(void)frame_put_end(fr);
	if (frame_flush(o) == -1 && errno != EAGAIN)
		return -1;
	if (fr->stage != NULL) {	/* staged: the caller repeats */
		errno = EAGAIN;
		return -1;
	}
	return (ssize_t)(raw + k);
}

/*
 * A write of chunks in place: each chunk's length goes in the two bytes
 * in front of it (the caller's headroom for the first, the last two of
 * the chunk before, already encrypted, for the others; put back after)
 * and the record is encrypted from there, the records of the call sent
 * together (outer_batch_*): no stage, no copy.  A chunk and its length
 * are at most a record, which OpenSSL writes whole or not at all.  The
 * raw bytes of a flow's start, a write of its last bytes (with the end
 * marker in their record) and one of a single chunk go through the
 * stage: the latter is one record, which OpenSSL sends from its own
 * buffer, where the batch queue (OUTER_WQ_CAP) would stay allocated in a
 * flow that falls idle after a short answer.
 */
ssize_t
outer_frame_write_inplace(struct outer *o, uint8_t *buf, size_t len,
    bool last)
{
	struct outer_frame *fr = o->fr;
	size_t	done = 0, k;
	uint8_t	save[2], *h;
	ssize_t	n;
	unsigned i;

	if (fr->stage != NULL || o->wq_len > 0 || last ||
	    len <= OUTER_CHUNK_MAX || fr->raw_out > 0 || fr->end_out ||
	    o->ssl == NULL || !o->hs_done || o->shut_sent ||
	    outer_batch_begin(o, len) == -1)
		return outer_frame_write(o, buf, len, last);
	for (i = 0; i < FRAME_CHUNKS && done < len; i++) {
		k = len - done < OUTER_CHUNK_MAX ? len - done : OUTER_CHUNK_MAX;
		h = buf + done - 2;
		memcpy(save, h, 2);
		h[0] = (uint8_t)(k >> 8);
		h[1] = (uint8_t)k;
		n = outer_batch_rec(o, h, 2 + k);
		memcpy(h, save, 2);
		if (n <= 0)
			break;
		done += k;
	}
	return outer_batch_end(o, done);
}

int
outer_frame_shutdown(struct outer *o)
{
	struct outer_frame *fr = o->fr;

	if (fr->stage == NULL && o->wq_len > 0 &&	/* one in place */
	    outer_io_write(o, NULL, 0) == -1)
		return -1;
	if (fr->stage == NULL) {
		if (fr->end_out)
			return 0;
		if (frame_stage(fr, 4) == -1)
			return -1;
		(void)frame_put_end(fr);
	}
	return frame_flush(o);
}

int
outer_export_ctx(const struct outer *o, const char *label,
    const uint8_t *ctx, size_t ctxlen, uint8_t *out, size_t len)
{
	if (o == NULL || o->ssl == NULL || !SSL_is_init_finished(o->ssl) ||
	    label == NULL ||
	    SSL_export_keying_material(o->ssl, out, len, label,
	    strlen(label), ctx, ctxlen, 1) != 1) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}
