/* buf: bounded byte queue. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <unistd.h>
#include <sys/wait.h>

#include "core/buf.h"

static void
test_lazy_alloc_and_release(void **state)
{
	struct buf	b;
	size_t		room;

	(void)state;
	buf_init(&b, 64);
	assert_null(b.data);
	assert_int_equal(buf_len(&b), 0);
	assert_int_equal(buf_room(&b), 64);
	assert_false(buf_full(&b));
	assert_null(buf_head(&b));

	assert_non_null(buf_tail(&b, &room));
	assert_int_equal(room, 64);
	assert_non_null(b.data);
	buf_release_if_empty(&b);
	assert_null(b.data);

	/* Appending nothing (say, an empty buffer's NULL head) neither
	 * allocates nor copies. */
	assert_int_equal(buf_append(&b, buf_head(&b), 0), 0);
	assert_null(b.data);

	assert_int_equal(buf_append(&b, "abc", 3), 3);
	buf_release_if_empty(&b);		/* not empty: kept */
	assert_non_null(b.data);
	buf_consume(&b, 3);
	buf_release_if_empty(&b);
	assert_null(b.data);
	assert_int_equal(buf_room(&b), 64);
	buf_free(&b);
	buf_free(NULL);
}

static void
test_append_bounded(void **state)
{
	struct buf	b;
	uint8_t		big[100];
	size_t		room;

	(void)state;
	memset(big, 'x', sizeof(big));
	buf_init(&b, 16);
	assert_int_equal(buf_append(&b, big, sizeof(big)), 16);
	assert_true(buf_full(&b));
	assert_int_equal(buf_room(&b), 0);
	assert_int_equal(buf_append(&b, big, 1), 0);
	assert_null(buf_tail(&b, &room));
	assert_int_equal(room, 0);
	assert_int_equal(buf_len(&b), 16);
	buf_free(&b);
	/* Reusable after free, same capacity. */
	assert_int_equal(buf_len(&b), 0);
	assert_int_equal(buf_append(&b, big, 20), 16);
	buf_free(&b);
}

static void
test_fifo_order_and_compaction(void **state)
{
	struct buf	 b;
	uint8_t		*tail;
	size_t		 room;

	(void)state;
	buf_init(&b, 8);
	assert_int_equal(buf_append(&b, "abcdefgh", 8), 8);
	buf_consume(&b, 5);
	assert_memory_equal(buf_head(&b), "fgh", 3);
	assert_int_equal(buf_room(&b), 5);
	/* All free space is offered contiguously at the tail. */
	tail = buf_tail(&b, &room);
	assert_non_null(tail);
	assert_int_equal(room, 5);
	memcpy(tail, "ij", 2);
	buf_commit(&b, 2);
	assert_int_equal(buf_len(&b), 5);
	assert_memory_equal(buf_head(&b), "fghij", 5);
	assert_int_equal(buf_append(&b, "klmnop", 6), 3);
	assert_memory_equal(buf_head(&b), "fghijklm", 8);
	buf_consume(&b, 8);
	assert_int_equal(buf_len(&b), 0);
	assert_int_equal(b.off, 0);
	buf_free(&b);
}

static void
test_stream_through_small_buffer(void **state)
{
	struct buf	b;
	uint8_t		in[1000], out[1000];
	size_t		wi = 0, ro = 0, n, chunk = 1;

	(void)state;
	for (n = 0; n < sizeof(in); n++)
		in[n] = (uint8_t)(n * 7 + 3);
	buf_init(&b, 37);
	while (ro < sizeof(out)) {
		wi += buf_append(&b, in + wi, sizeof(in) - wi < chunk ?
		    sizeof(in) - wi : chunk);
		assert_true(buf_len(&b) <= 37);
		n = buf_len(&b) < chunk + 2 ? buf_len(&b) : chunk + 2;
		memcpy(out + ro, buf_head(&b), n);
		buf_consume(&b, n);
		ro += n;
		chunk = chunk % 23 + 5;
	}
	assert_memory_equal(in, out, sizeof(in));
	buf_free(&b);
}

static void
test_zero_capacity(void **state)
{
	struct buf	b;
	size_t		room = 99;

	(void)state;
	buf_init(&b, 0);
	assert_true(buf_full(&b));
	assert_null(buf_tail(&b, &room));
	assert_int_equal(room, 0);
	assert_int_equal(buf_append(&b, "a", 1), 0);
	buf_free(&b);
}

/* Consuming or committing past the data is a caller bug: fatal, exit 1. */
static void
expect_fatal(void (*fn)(struct buf *))
{
	struct buf	b;
	pid_t		pid;
	int		status;

	buf_init(&b, 8);
	assert_int_equal(buf_append(&b, "abc", 3), 3);
	/* The child's exit() would flush our stdout a second time. */
	fflush(stdout);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		fn(&b);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 1);
	assert_int_equal(buf_len(&b), 3);
	buf_free(&b);
}

static void
consume_too_much(struct buf *b)
{
	buf_consume(b, 4);
}

static void
commit_too_much(struct buf *b)
{
	buf_commit(b, 6);
}

static void
test_overrun_is_fatal(void **state)
{
	(void)state;
	expect_fatal(consume_too_much);
	expect_fatal(commit_too_much);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lazy_alloc_and_release),
		cmocka_unit_test(test_append_bounded),
		cmocka_unit_test(test_fifo_order_and_compaction),
		cmocka_unit_test(test_stream_through_small_buffer),
		cmocka_unit_test(test_zero_capacity),
		cmocka_unit_test(test_overrun_is_fatal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
