/*
 * limit: counts per key (entries live only while held), source keys
 * (IPv4 /32, IPv6 /64, mapped IPv4 as IPv4), the memory budget (take,
 * force, admission reserve, waiters woken once per call), buffers charged
 * to a budget, sizes, and refusal messages rate-limited per kind; and the
 * same shared by threads (the server's workers): a count taken by four
 * at once never passes its maximum, entries got and released by all
 * stay consistent, a budget never goes past its limit nor leaks.
 */
#include "config.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <sys/socket.h>

#include "core/addr.h"
#include "core/buf.h"
#include "core/limit.h"

static void
test_tab_entries_live_while_held(void **state)
{
	struct limit_tab	 t;
	struct limit_ent	*a, *b, *e;
	char			 key[16];
	size_t			 i;

	(void)state;
	assert_int_equal(limit_tab_init(&t, 100), 0);
	assert_int_equal(t.nbucket, 128);
	assert_non_null(a = limit_tab_get(&t, "alice", 5));
	assert_ptr_equal(limit_tab_get(&t, "alice", 5), a);
	assert_non_null(b = limit_tab_get(&t, "bob", 3));
	assert_ptr_not_equal(a, b);
	assert_int_equal(t.n, 2);
	/* Unheld: released at once. */
	limit_tab_release(&t, b);
	assert_int_equal(t.n, 1);
	assert_null(limit_tab_find(&t, "bob", 3));
	/* Held: kept until the last count goes. */
	a->conns = 2;
	limit_tab_release(&t, a);
	assert_ptr_equal(limit_tab_find(&t, "alice", 5), a);
	a->conns = 0;
	a->udp = 1;
	limit_tab_release(&t, a);
	assert_ptr_equal(limit_tab_find(&t, "alice", 5), a);
	a->udp = 0;
	limit_tab_release(&t, a);
	assert_int_equal(t.n, 0);
	/* Many keys through few buckets: all distinct, all found, all gone
	 * once released. */
	for (i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "k%zu", i);
		assert_non_null(e = limit_tab_get(&t, key, strlen(key)));
		e->conns = 1;
	}
	assert_int_equal(t.n, 5000);
	for (i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "k%zu", i);
		assert_non_null(e = limit_tab_find(&t, key, strlen(key)));
		assert_int_equal(e->klen, strlen(key));
		e->conns = 0;
		limit_tab_release(&t, e);
	}
	assert_int_equal(t.n, 0);
	for (i = 0; i < t.nbucket; i++)
		assert_null(t.bucket[i]);
	/* Keys past LIMIT_KEY_MAX are not taken. */
	assert_null(limit_tab_get(&t, key, LIMIT_KEY_MAX + 1));
	/* Free with entries still in: no leak (ASan). */
	assert_non_null(e = limit_tab_get(&t, "left", 4));
	e->conns = 1;
	limit_tab_free(&t);
	assert_null(t.bucket);
	limit_tab_free(&t);		/* twice: harmless */
}

static size_t
key_of(const char *ip, uint8_t key[LIMIT_SOURCE_KEY_LEN])
{
	struct addr	 a;

	assert_int_equal(addr_from_ip(&a, ip, 443), 0);
	return limit_source_key(&a, key);
}

static void
test_source_keys(void **state)
{
	uint8_t	 k1[LIMIT_SOURCE_KEY_LEN], k2[LIMIT_SOURCE_KEY_LEN];
	size_t	 n1, n2;

	(void)state;
	/* IPv4: the address. */
	n1 = key_of("192.0.2.1", k1);
	n2 = key_of("192.0.2.2", k2);
	assert_int_equal(n1, 5);
	assert_int_equal(n2, 5);
	assert_memory_not_equal(k1, k2, n1);
	/* IPv4-mapped IPv6 (dual-stack listener) is the same IPv4 source. */
	n2 = key_of("::ffff:192.0.2.1", k2);
	assert_int_equal(n2, 5);
	assert_memory_equal(k1, k2, 5);
	/* IPv6: the /64. */
	n1 = key_of("2001:db8:1:2::1", k1);
	n2 = key_of("2001:db8:1:2:ffff:eeee:dddd:cccc", k2);
	assert_int_equal(n1, 9);
	assert_int_equal(n2, 9);
	assert_memory_equal(k1, k2, 9);
	n2 = key_of("2001:db8:1:3::1", k2);
	assert_memory_not_equal(k1, k2, 9);
	/* An IPv4 address never collides with an IPv6 prefix. */
	n1 = key_of("0.0.0.0", k1);
	n2 = key_of("::", k2);
	assert_int_not_equal(n1, n2);
	assert_int_not_equal(k1[0], k2[0]);
}

static void
test_mem_take_force_admit(void **state)
{
	struct limit_mem	 m;

	(void)state;
	limit_mem_init(&m, 1000, 100);
	assert_true(limit_mem_take(&m, 600));
	assert_false(limit_mem_take(&m, 401));
	assert_int_equal(m.denied, 1);
	assert_true(limit_mem_take(&m, 400));
	assert_int_equal(m.used, 1000);
	assert_false(limit_mem_take(&m, 1));
	assert_false(limit_mem_take(&m, SIZE_MAX));	/* no overflow */
	/* Bytes that exist already are counted past max. */
	limit_mem_force(&m, 50);
	assert_int_equal(m.used, 1050);
	assert_int_equal(m.peak, 1050);
	limit_mem_give(&m, 1050);
	assert_int_equal(m.used, 0);
	assert_int_equal(m.peak, 1050);
	/* Admission keeps one unit for those already admitted. */
	assert_true(limit_mem_admit(&m, 900));
	assert_false(limit_mem_admit(&m, 901));
	assert_true(limit_mem_take(&m, 800));
	assert_true(limit_mem_admit(&m, 100));
	assert_false(limit_mem_admit(&m, 101));
	assert_false(limit_mem_admit(&m, SIZE_MAX - 50));
	limit_mem_give(&m, 800);
	/* No limit. */
	limit_mem_init(&m, 0, 100);
	assert_true(limit_mem_take(&m, SIZE_MAX / 2));
	assert_true(limit_mem_admit(&m, SIZE_MAX / 4));
}

struct waiter {
	struct limit_waiter	 w;
	struct limit_mem	*m;
	int			 calls;
	size_t			 want;
	bool			 got;
};

static void
waiter_fn(struct limit_waiter *lw)
{
	struct waiter	*w = (struct waiter *)(void *)lw;

	w->calls++;
	if (limit_mem_take(w->m, w->want))
		w->got = true;
	else
		limit_mem_wait(w->m, &w->w);
}

static void
test_mem_waiters(void **state)
{
	struct limit_mem	 m;
	struct waiter		 w[3];
	int			 i;

	(void)state;
	limit_mem_init(&m, 300, 100);
	memset(w, 0, sizeof(w));
	for (i = 0; i < 3; i++) {
		w[i].w.fn = waiter_fn;
		w[i].m = &m;
		w[i].want = 100;
	}
	assert_true(limit_mem_take(&m, 300));
	for (i = 0; i < 3; i++)
		limit_mem_wait(&m, &w[i].w);
	limit_mem_wait(&m, &w[0].w);		/* never queued twice */
	/* Full: nobody is called. */
	limit_mem_wake(&m);
	for (i = 0; i < 3; i++)
		assert_int_equal(w[i].calls, 0);
	/* One unit free: the oldest goes first; the others stay queued. */
	limit_mem_give(&m, 100);
	limit_mem_wake(&m);
	assert_int_equal(w[0].calls, 1);
	assert_true(w[0].got);
	assert_int_equal(w[1].calls, 0);
	/* Room for one, but w[1] wants two units: refused, queued again
	 * behind w[2] -- and not called a second time in the same wake. */
	w[1].want = 200;
	limit_mem_give(&m, 100);
	limit_mem_wake(&m);
	assert_int_equal(w[1].calls, 1);
	assert_false(w[1].got);
	assert_int_equal(w[2].calls, 1);
	assert_true(w[2].got);
	assert_true(w[1].w.queued);
	/* While someone waits, the last unit is not for others: a relay that
	 * just gave its buffer back cannot take it again ahead of them. */
	limit_mem_give(&m, 100);
	assert_int_equal(m.used, 200);
	assert_false(limit_mem_take(&m, 100));
	limit_mem_unwait(&m, &w[1].w);
	assert_true(limit_mem_take(&m, 100));
	limit_mem_wait(&m, &w[1].w);
	/* Unwaited (its owner closed): never called. */
	limit_mem_unwait(&m, &w[1].w);
	limit_mem_give(&m, 300);
	limit_mem_wake(&m);
	assert_int_equal(w[1].calls, 1);
	assert_true(TAILQ_EMPTY(&m.q[0].waiters));
}

static void
test_buf_charged(void **state)
{
	struct limit_mem	 m;
	struct buf		 a, b;
	size_t			 room;

	(void)state;
	limit_mem_init(&m, 100, 64);
	buf_init(&a, 64);
	buf_init(&b, 64);
	buf_set_budget(&a, &m);
	buf_set_budget(&b, &m);
	assert_non_null(buf_tail(&a, &room));
	assert_int_equal(m.used, 64);
	/* The second does not fit: nothing allocated, denied set. */
	assert_null(buf_tail(&b, &room));
	assert_int_equal(room, 0);
	assert_null(b.data);
	assert_true(b.denied);
	assert_int_equal(buf_append(&b, "x", 1), 0);
	/* Freed: given back; then the second fits. */
	buf_release_if_empty(&a);
	assert_int_equal(m.used, 0);
	assert_int_equal(buf_append(&b, "x", 1), 1);
	assert_false(b.denied);
	assert_int_equal(m.used, 64);
	/* Storage held before the budget is attached is charged at once,
	 * even past max; detaching gives it back. */
	buf_set_budget(&a, NULL);
	assert_int_equal(buf_append(&a, "y", 1), 1);	/* uncharged */
	assert_int_equal(m.used, 64);
	buf_set_budget(&a, &m);
	assert_int_equal(m.used, 128);
	buf_set_budget(&a, NULL);
	assert_int_equal(m.used, 64);
	buf_free(&a);
	buf_free(&b);
	assert_int_equal(m.used, 0);
}

static void
test_parse_size(void **state)
{
	unsigned long long	 v;

	(void)state;
	assert_int_equal(limit_parse_size("4096", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(limit_parse_size("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(limit_parse_size("512K", &v), 0);
	assert_int_equal(v, 512ULL << 10);
	assert_int_equal(limit_parse_size("64M", &v), 0);
	assert_int_equal(v, 64ULL << 20);
	assert_int_equal(limit_parse_size("64MiB", &v), 0);
	assert_int_equal(v, 64ULL << 20);
	assert_int_equal(limit_parse_size("2GB", &v), 0);
	assert_int_equal(v, 2ULL << 30);
	/* Past a 32-bit size_t, still a size (the range check is conf's). */
	assert_int_equal(limit_parse_size("8G", &v), 0);
	assert_int_equal(v, 8ULL << 30);
	assert_int_equal(limit_parse_size("", &v), -1);
	assert_int_equal(limit_parse_size("M", &v), -1);
	assert_int_equal(limit_parse_size("-1", &v), -1);
	assert_int_equal(limit_parse_size("1.5M", &v), -1);
	assert_int_equal(limit_parse_size("64 M", &v), -1);
	assert_int_equal(limit_parse_size("64m", &v), -1);
	assert_int_equal(limit_parse_size("1T", &v), -1);
	assert_int_equal(limit_parse_size(NULL, &v), -1);
	assert_int_equal(limit_parse_size("99999999999999999999", &v), -1);
	assert_int_equal(limit_parse_size("17179869184G", &v), -1);
}

static void
test_refuse_rate_limited(void **state)
{
	struct limit_stats	 st;
	int			 i;

	(void)state;
	memset(&st, 0, sizeof(st));
	/* The first refusal is logged, even at loop time 0. */
	assert_true(limit_refuse(&st, LIMIT_SOURCE, 0, "connections",
	    "source %s", "192.0.2.1"));
	/* The next ones within the interval are only counted. */
	for (i = 0; i < 99; i++)
		assert_false(limit_refuse(&st, LIMIT_SOURCE, 5000, "connections",
		    "source %s", "192.0.2.1"));
	/* Another kind has its own interval. */
	assert_true(limit_refuse(&st, LIMIT_MEMORY, 5000, "connections",
	    "memory"));
	assert_int_equal(st.refused[LIMIT_SOURCE], 100);
	assert_int_equal(st.log[LIMIT_SOURCE].since, 99);
	/* After the interval: logged again, with the count since. */
	assert_true(limit_refuse(&st, LIMIT_SOURCE, 1 + LIMIT_LOG_INTERVAL_MS,
	    "connections", "source"));
	assert_int_equal(st.log[LIMIT_SOURCE].since, 0);
	assert_int_equal(st.refused[LIMIT_SOURCE], 101);
	assert_int_equal(st.refused[LIMIT_MEMORY], 1);
	assert_false(limit_refuse(&st, LIMIT_NKINDS, 0, "x", "y"));
	assert_string_equal(limit_kind_name(LIMIT_USER_UDP), "user_udp");
	assert_string_equal(limit_kind_name(LIMIT_COVER_SOURCE),
	    "cover_source");
	assert_string_equal(limit_kind_name(LIMIT_PREAUTH), "preauth");
	assert_string_equal(limit_kind_name(LIMIT_NKINDS), "?");
	/* The cover's budget: an eighth of the main one, 1 MiB at least. */
	assert_int_equal(limit_cover_memory_default((size_t)256 << 20),
	    (size_t)32 << 20);
	assert_int_equal(limit_cover_memory_default((size_t)2 << 20),
	    (size_t)1 << 20);
	assert_int_equal(limit_cover_memory_default(0), (size_t)32 << 20);
}

/* ---- threads ------------------------------------------------------- */

#define T_THREADS	4
#define T_ROUNDS	100000
#define T_MAX		2	/* fewer than the threads: they race for it */

struct shared {
	_Atomic unsigned	 count;
	_Atomic unsigned	 most;		/* the count seen while held */
	struct limit_tab	 tab;
	struct limit_mem	 mem;
	_Atomic unsigned	 bad;
	_Atomic unsigned	 ready;		/* all start at once */
};

static void *
t_worker(void *arg)
{
	struct shared		*sh = arg;
	struct limit_ent	*e;
	unsigned		 v, m, i;
	char			 key[2] = { 'k', 0 };

	sh->ready++;
	while (sh->ready < T_THREADS)
		;
	for (i = 0; i < T_ROUNDS; i++) {
		if (limit_count_take(&sh->count, T_MAX)) {
			v = sh->count;
			m = sh->most;
			while (v > m && !atomic_compare_exchange_weak(&sh->most,
			    &m, v))
				;
			sh->count--;
		}
		key[1] = (char)(i % 3);
		if ((e = limit_tab_get(&sh->tab, key, 2)) == NULL) {
			sh->bad++;
			continue;
		}
		if (limit_count_take(&e->conns, 0)) {
			e->conns--;
		}
		limit_tab_release(&sh->tab, e);
		if (limit_mem_take(&sh->mem, 100)) {
			if (sh->mem.used > sh->mem.max)
				sh->bad++;
			limit_mem_give(&sh->mem, 100);
		}
	}
	return NULL;
}

static void
test_shared_by_threads(void **state)
{
	static struct shared	 sh;
	pthread_t		 th[T_THREADS];
	int			 i;

	(void)state;
	assert_int_equal(limit_tab_init(&sh.tab, 4), 0);
	limit_mem_init(&sh.mem, 250, 100);
	for (i = 0; i < T_THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, t_worker, &sh),
		    0);
	for (i = 0; i < T_THREADS; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(sh.bad, 0);
	assert_int_equal(sh.count, 0);
	assert_true(sh.most >= 1 && sh.most <= T_MAX);
	assert_int_equal(sh.tab.n, 0);		/* every entry freed */
	assert_int_equal(sh.mem.used, 0);
	assert_true(sh.mem.peak <= 200);
	limit_tab_free(&sh.tab);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tab_entries_live_while_held),
		cmocka_unit_test(test_source_keys),
		cmocka_unit_test(test_mem_take_force_admit),
		cmocka_unit_test(test_mem_waiters),
		cmocka_unit_test(test_buf_charged),
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_refuse_rate_limited),
		cmocka_unit_test(test_shared_by_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
