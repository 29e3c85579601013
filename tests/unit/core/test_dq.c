/* dq: the queue of datagrams on their way into a byte stream. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/dq.h"

static void
test_order(void **state)
{
	struct dq	q;
	char		out[64];

	(void)state;
	dq_init(&q);
	assert_true(dq_empty(&q));
	assert_int_equal(dq_push(&q, "ab", 2, "cd", 2, false), 0);
	assert_int_equal(dq_push(&q, NULL, 0, "ef", 2, false), 0);
	assert_int_equal(dq_push(&q, "H", 1, NULL, 0, true), 0);
	assert_int_equal(dq_bytes(&q), 7);
	assert_int_equal(dq_gather(&q, out, sizeof(out)), 7);
	assert_memory_equal(out, "Habcdef", 7);
	/* Gathering is a copy: nothing consumed, a smaller max is a prefix. */
	assert_int_equal(dq_gather(&q, out, 3), 3);
	assert_memory_equal(out, "Hab", 3);
	assert_int_equal(dq_bytes(&q), 7);
	assert_int_equal(dq_clear(&q), 3);
	assert_true(dq_empty(&q));
	assert_int_equal(dq_bytes(&q), 0);
	/* Nothing to queue: nothing queued. */
	assert_int_equal(dq_push(&q, NULL, 0, NULL, 0, false), 0);
	assert_true(dq_empty(&q));
}

/* Partial consumption across items; an item pushed to the front while the
 * head is half sent goes behind it. */
static void
test_partial(void **state)
{
	struct dq	q;
	char		out[64];
	size_t		n;

	(void)state;
	dq_init(&q);
	dq_push(&q, "1234", 4, NULL, 0, false);
	dq_push(&q, "5678", 4, NULL, 0, false);
	dq_consume(&q, 3);
	assert_int_equal(dq_bytes(&q), 5);
	n = dq_gather(&q, out, sizeof(out));
	assert_int_equal(n, 5);
	assert_memory_equal(out, "45678", 5);
	dq_push(&q, "F", 1, NULL, 0, true);
	n = dq_gather(&q, out, sizeof(out));
	assert_int_equal(n, 6);
	assert_memory_equal(out, "4F5678", 6);
	dq_consume(&q, 2);
	n = dq_gather(&q, out, sizeof(out));
	assert_memory_equal(out, "5678", n);
	dq_consume(&q, 100);	/* more than queued: everything */
	assert_true(dq_empty(&q));
	assert_int_equal(dq_bytes(&q), 0);
	/* Usable again; the tail was reset. */
	dq_push(&q, "x", 1, NULL, 0, false);
	dq_push(&q, "y", 1, NULL, 0, false);
	assert_int_equal(dq_gather(&q, out, sizeof(out)), 2);
	assert_memory_equal(out, "xy", 2);
	assert_int_equal(dq_clear(&q), 2);
}

/* Pushing to the front of a one-item queue whose head is half sent keeps
 * the tail right: later appends land after the new item. */
static void
test_front_tail(void **state)
{
	struct dq	q;
	char		out[16];

	(void)state;
	dq_init(&q);
	dq_push(&q, "ab", 2, NULL, 0, false);
	dq_consume(&q, 1);
	dq_push(&q, "F", 1, NULL, 0, true);
	dq_push(&q, "z", 1, NULL, 0, false);
	assert_int_equal(dq_gather(&q, out, sizeof(out)), 3);
	assert_memory_equal(out, "bFz", 3);
	assert_int_equal(dq_clear(&q), 3);
}

/* A stream that takes random bites (short writes) gets exactly the bytes
 * queued, in order. */
static size_t
bite(struct dq *q, unsigned char *got, size_t off, size_t max)
{
	size_t	k, w;

	k = dq_gather(q, got + off, max);
	w = k == 0 ? 0 : (size_t)rand() % (k + 1);
	dq_consume(q, w);
	return w;
}

static void
test_stream(void **state)
{
	struct dq	 q;
	unsigned char	*want, *got, h[3], b[400];
	size_t		 total = 0, off = 0, i, n, k;

	(void)state;
	assert_non_null(want = malloc(1 << 20));
	assert_non_null(got = malloc(1 << 20));
	dq_init(&q);
	srand(7);
	for (i = 0; i < 2000; i++) {
		n = (size_t)(rand() % 400);
		for (k = 0; k < sizeof(h); k++)
			h[k] = (unsigned char)rand();
		for (k = 0; k < n; k++)
			b[k] = (unsigned char)rand();
		assert_int_equal(dq_push(&q, h, sizeof(h), b, n,
		    false), 0);
		memcpy(want + total, h, sizeof(h));
		memcpy(want + total + sizeof(h), b, n);
		total += sizeof(h) + n;
		if (rand() % 3 == 0)
			off += bite(&q, got, off, (size_t)(rand() % 5000));
		assert_int_equal(dq_bytes(&q), total - off);
	}
	while (!dq_empty(&q))
		off += bite(&q, got, off, 16384);
	assert_int_equal(off, total);
	assert_memory_equal(got, want, total);
	free(want);
	free(got);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_partial),
		cmocka_unit_test(test_front_tail),
		cmocka_unit_test(test_stream),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
