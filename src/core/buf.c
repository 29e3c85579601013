/*
 * Bounded byte queue.  Storage is allocated on first write and may be
 * released once empty, so an idle flow holds no buffer memory.  Unread
 * bytes are [off, off + len); free space is moved to the tail by
 * compaction when needed, so buf_tail always offers all of buf_room.
 */
#include "config.h"

#include "core/buf.h"

#include <stdlib.h>
#include <string.h>

#include "core/limit.h"
#include "core/log.h"

void
buf_init(struct buf *b, size_t cap)
{
	b->data = NULL;
	b->cap = cap;
	b->off = 0;
	b->len = 0;
	b->mem = NULL;
	b->denied = false;
}

void
buf_free(struct buf *b)
{
	if (b == NULL)
		return;
	if (b->data != NULL && b->mem != NULL)
		limit_mem_give(b->mem, b->cap);
	if (b->data != NULL)
		free(b->data - BUF_HEADROOM);
	b->data = NULL;
	b->off = 0;
	b->len = 0;
}

size_t
buf_len(const struct buf *b)
{
	return b->len;
}

size_t
buf_room(const struct buf *b)
{
	return b->cap - b->len;
}

bool
buf_full(const struct buf *b)
{
	return b->len >= b->cap;
}

static int
buf_alloc(struct buf *b)
{
	if (b->mem != NULL && !limit_mem_take(b->mem, b->cap)) {
		b->denied = true;
		return -1;
	}
	b->denied = false;
	if ((b->data = malloc(BUF_HEADROOM + b->cap)) == NULL) {
		if (b->mem != NULL)
			limit_mem_give(b->mem, b->cap);
		return -1;
	}
	b->data += BUF_HEADROOM;
	return 0;
}

uint8_t *
buf_tail(struct buf *b, size_t *room)
{
	*room = 0;
	if (buf_full(b))
		return NULL;
	if (b->data == NULL && buf_alloc(b) == -1)
		return NULL;
	/* Costs at most len bytes of copying and gives the caller one
	 * contiguous region for the whole room (one read() instead of two). */
	if (b->off > 0) {
		memmove(b->data, b->data + b->off, b->len);
		b->off = 0;
	}
	*room = b->cap - b->len;
	return b->data + b->len;
}

void
buf_commit(struct buf *b, size_t n)
{
	if (b->data == NULL || n > b->cap - b->off - b->len)
		fatalx("buf_commit: %zu bytes past the tail (len %zu cap %zu)",
		    n, b->len, b->cap);
	b->len += n;
}

size_t
buf_append(struct buf *b, const void *p, size_t n)
{
	uint8_t	*tail;
	size_t	 room;

	/* Nothing to add: no allocation, and no memcpy from a NULL p (the
	 * head of an empty buffer), which is undefined even for 0 bytes. */
	if (n == 0)
		return 0;
	if ((tail = buf_tail(b, &room)) == NULL)
		return 0;
	if (n > room)
		n = room;
	memcpy(tail, p, n);
	b->len += n;
	return n;
}

const uint8_t *
buf_head(const struct buf *b)
{
	return b->data == NULL ? NULL : b->data + b->off;
}

uint8_t *
buf_head_mut(struct buf *b)
{
	return b->data == NULL ? NULL : b->data + b->off;
}

void
buf_consume(struct buf *b, size_t n)
{
	if (n > b->len)
		fatalx("buf_consume: %zu bytes of %zu", n, b->len);
	b->off += n;
	b->len -= n;
	if (b->len == 0)
		b->off = 0;
}

void
buf_release_if_empty(struct buf *b)
{
	if (b->len == 0)
		buf_free(b);
}

void
buf_set_budget(struct buf *b, struct limit_mem *m)
{
	if (b->mem == m)
		return;
	if (b->data != NULL) {
		if (b->mem != NULL)
			limit_mem_give(b->mem, b->cap);
		if (m != NULL)
			limit_mem_force(m, b->cap);
	}
	b->mem = m;
	b->denied = false;
}
