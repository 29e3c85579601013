/*
 * A queue of datagrams on their way into a byte stream: each item is one
 * malloc'd chunk of exactly its size (a frame header and its payload), so
 * an idle queue holds nothing and a burst of small datagrams does not pin
 * large buffers.  The stream takes bytes from the front with dq_gather
 * (copies, possibly across items) and dq_consume (after a partial write the
 * rest of an item stays at the front).  Bounds are the caller's: dq_bytes
 * says how much is queued.
 */
#ifndef TUNSPLIT_DQ_H
#define TUNSPLIT_DQ_H

#include <stdbool.h>
#include <stddef.h>

struct dq_item;

struct dq {
	struct dq_item	*head, *tail;
	size_t		 bytes;		/* queued, not yet consumed */
	size_t		 off;		/* consumed part of the head item */
	size_t		 items;
};

void   dq_init(struct dq *q);
/* Appends (or, front: prepends) one item made of a then b (either may be
 * empty; both empty: nothing is queued).  0, or -1 when out of memory.  An
 * item prepended while the head is partly consumed goes after it: the
 * stream already has that item's first bytes. */
int    dq_push(struct dq *q, const void *a, size_t alen, const void *b,
    size_t blen, bool front);
/* Copies up to max bytes from the front into out; returns how many. */
size_t dq_gather(const struct dq *q, void *out, size_t max);
void   dq_consume(struct dq *q, size_t n);
/* The unconsumed part of the front item (for datagram sockets, which
 * take one whole item at a time); NULL with *len 0 when empty. */
const void *dq_front(const struct dq *q, size_t *len);
/* Drops everything; returns how many items were whole or partly queued. */
size_t dq_clear(struct dq *q);
size_t dq_bytes(const struct dq *q);
bool   dq_empty(const struct dq *q);

#endif
