/* Datagram queue (see dq.h). */
#include "config.h"

#include "core/dq.h"

#include <stdlib.h>
#include <string.h>

struct dq_item {
	struct dq_item	*next;
	size_t		 len;
	unsigned char	 data[];
};

void
dq_init(struct dq *q)
{
	memset(q, 0, sizeof(*q));
}

int
dq_push(struct dq *q, const void *a, size_t alen, const void *b, size_t blen,
    bool front)
{
	struct dq_item	*it;

	if (alen + blen == 0)
		return 0;	/* nothing for the stream */
	if ((it = malloc(sizeof(*it) + alen + blen)) == NULL)
		return -1;
	if (alen > 0)
		memcpy(it->data, a, alen);
	if (blen > 0)
		memcpy(it->data + alen, b, blen);
	it->len = alen + blen;
	it->next = NULL;
	if (q->head == NULL) {
		q->head = q->tail = it;
	} else if (front && q->off == 0) {
		it->next = q->head;
		q->head = it;
	} else if (front) {
		it->next = q->head->next;
		q->head->next = it;
		if (q->tail == q->head)
			q->tail = it;
	} else {
		q->tail->next = it;
		q->tail = it;
	}
	q->bytes += it->len;
	q->items++;
	return 0;
}

size_t
dq_gather(const struct dq *q, void *out, size_t max)
{
	const struct dq_item	*it;
	unsigned char		*o = out;
	size_t			 n = 0, k, skip = q->off;

	for (it = q->head; it != NULL && n < max; it = it->next) {
		k = it->len - skip;
		if (k > max - n)
			k = max - n;
		memcpy(o + n, it->data + skip, k);
		n += k;
		skip = 0;
	}
	return n;
}

void
dq_consume(struct dq *q, size_t n)
{
	struct dq_item	*it;
	size_t		 k;

	if (n > q->bytes)
		n = q->bytes;
	q->bytes -= n;
	while (n > 0 && (it = q->head) != NULL) {
		k = it->len - q->off;
		if (k > n) {
			q->off += n;
			return;
		}
		n -= k;
		q->head = it->next;
		q->off = 0;
		q->items--;
		free(it);
	}
	if (q->head == NULL)
		q->tail = NULL;
}

const void *
dq_front(const struct dq *q, size_t *len)
{
	if (q->head == NULL) {
		*len = 0;
		return NULL;
	}
	*len = q->head->len - q->off;
	return q->head->data + q->off;
}

size_t
dq_clear(struct dq *q)
{
	struct dq_item	*it;
	size_t		 n = q->items;

	while ((it = q->head) != NULL) {
		q->head = it->next;
		free(it);
	}
	dq_init(q);
	return n;
}

size_t
dq_bytes(const struct dq *q)
{
	return q->bytes;
}

bool
dq_empty(const struct dq *q)
{
	return q->head == NULL;
}
