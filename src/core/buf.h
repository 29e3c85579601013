/*
 * A bounded byte queue: contiguous storage of fixed capacity, allocated on
 * first use and released when emptied by buf_release_if_empty (idle flows
 * then cost nothing).  Never grows past its capacity.
 */
#ifndef TUNSPLIT_BUF_H
#define TUNSPLIT_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

struct limit_mem;

struct buf {
	uint8_t	*data;
	size_t	 cap;	/* fixed at init */
	size_t	 off;	/* start of unread bytes */
	size_t	 len;	/* unread bytes */
	struct limit_mem *mem;	/* budget charged cap while data is held */
	bool	 denied;	/* the budget refused the last allocation */
};

/* Bytes in front of buf_head() that are always the buffer's own and
 * writable (consumed bytes, or room kept before the storage): a writer
 * may build a header there in place of copying the bytes behind it. */
#define BUF_HEADROOM	8

void   buf_init(struct buf *b, size_t cap);
void   buf_free(struct buf *b);		/* releases storage; b reusable */
size_t buf_len(const struct buf *b);
size_t buf_room(const struct buf *b);	/* bytes that can still be appended */
bool   buf_full(const struct buf *b);
/* Contiguous free space at the tail (compacts and allocates as needed);
 * NULL with *room = 0 when full or out of memory. */
uint8_t *buf_tail(struct buf *b, size_t *room);
void   buf_commit(struct buf *b, size_t n);	/* n bytes written at tail */
/* Appends up to n bytes; returns how many fit (0 on OOM). */
size_t buf_append(struct buf *b, const void *p, size_t n);
const uint8_t *buf_head(const struct buf *b);	/* unread bytes */
/* The same, writable, with BUF_HEADROOM bytes before it; NULL if empty. */
uint8_t *buf_head_mut(struct buf *b);
void   buf_consume(struct buf *b, size_t n);
void   buf_release_if_empty(struct buf *b);
/* Charges the storage to a budget from now on (NULL: none).  Storage
 * held already is charged at once, even past the budget's limit; later
 * allocations that do not fit fail (buf_tail NULL, denied set). */
void   buf_set_budget(struct buf *b, struct limit_mem *m);

#endif
