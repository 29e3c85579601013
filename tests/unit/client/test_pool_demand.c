/*
 * pool_demand: the warm pool's size from the flow arrival rate, on a
 * fake clock.  Rate up (or sequential flows, or a burst) -> size up to
 * the ceiling and never above it;
 * quiet -> back to the floor; idle -> 0; idle 0 keeps the floor.
 */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "client/pool_demand.h"

#define IDLE	60000

/* n flows, one every gap_ms from *now on; *now moves past them. */
static void
flows(struct pool_demand *d, uint64_t *now, unsigned n, unsigned gap_ms)
{
	while (n-- > 0) {
		pool_demand_flow(d, *now);
		*now += gap_ms;
	}
}

static void
test_cold(void **state)
{
	struct pool_demand d;

	(void)state;
	pool_demand_init(&d);
	/* No flow yet: nothing, at any time, whatever the floor. */
	assert_int_equal(pool_demand_target(&d, 0, 1, 8, IDLE), 0);
	assert_int_equal(pool_demand_target(&d, 3600000, 4, 8, IDLE), 0);
	/* idle 0: the old fixed pool, the floor from the start. */
	assert_int_equal(pool_demand_target(&d, 0, 2, 2, 0), 2);
	assert_int_equal(pool_demand_target(&d, 0, 3, 2, 0), 2);
}

static void
test_rate_up(void **state)
{
	struct pool_demand d;
	uint64_t now = 1000;
	unsigned prev = 0, t, i;

	(void)state;
	pool_demand_init(&d);
	pool_demand_handshake(&d, 100);	/* smoothed: 100 stays 100 */
	assert_int_equal(d.hs_ms, 100);
	/* The first flow: one over the floor, until the next. */
	flows(&d, &now, 1, 0);
	assert_int_equal(pool_demand_target(&d, now, 1, 8, IDLE), 2);
	assert_int_equal(pool_demand_target(&d, now, 1, 1, IDLE), 1);
	/* 2/s: 2 * 2/s * 0.1 s = 0.4 -> the floor of 1. */
	flows(&d, &now, 20, 500);
	assert_int_equal(pool_demand_target(&d, now, 1, 8, IDLE), 1);
	/* A rising rate never lowers the size, and it reaches the ceiling. */
	for (i = 0; i < 1000; i++) {
		flows(&d, &now, 1, 5);		/* 200/s, 5 s: near steady */
		t = pool_demand_target(&d, now, 1, 8, IDLE);
		assert_true(t >= prev);
		assert_true(t <= 8);
		prev = t;
	}
	assert_int_equal(prev, 8);
	/* Little's law, twice: 200/s * 0.1 s * 2 = 40 under a ceiling of 64. */
	t = pool_demand_target(&d, now, 1, 64, IDLE);
	assert_in_range(t, 36, 42);
	/* Never above the ceiling, however many arrive at once. */
	flows(&d, &now, 100000, 0);
	assert_int_equal(pool_demand_target(&d, now, 1, 8, IDLE), 8);
	assert_int_equal(pool_demand_target(&d, now, 0, 0, IDLE), 0);
	/* A slower link needs more: the same 10/s over 1 s handshakes. */
	pool_demand_init(&d);
	flows(&d, &now, 50, 100);
	assert_int_equal(pool_demand_target(&d, now, 0, 64, IDLE), 2);
	for (i = 0; i < 64; i++)
		pool_demand_handshake(&d, 1000);
	t = pool_demand_target(&d, now, 0, 64, IDLE);
	assert_in_range(t, 16, 20);
}

/* Sequential flows (one connection after the other, as a client that
 * reuses nothing) are seen from the third on, before the count builds
 * up; a burst at one instant asks for the ceiling at once. */
static void
test_sequential(void **state)
{
	struct pool_demand d;
	uint64_t now = 1000;

	(void)state;
	pool_demand_init(&d);
	d.hs_ms = 280;			/* 2 RTT at 140 ms */
	flows(&d, &now, 1, 150);
	assert_int_equal(pool_demand_target(&d, now - 150, 1, 8, IDLE), 2);
	flows(&d, &now, 1, 150);
	assert_int_equal(pool_demand_target(&d, now - 150, 1, 8, IDLE), 1);
	flows(&d, &now, 1, 150);
	/* Two gaps of 150 ms, 6.7/s: 2 * 6.7 * 0.28 = 3.7 -> 4. */
	assert_int_equal(pool_demand_target(&d, now - 150, 1, 8, IDLE), 4);
	/* A burst at one instant: the ceiling. */
	pool_demand_init(&d);
	now += 10000;
	flows(&d, &now, 1, 0);
	flows(&d, &now, 20, 0);
	assert_int_equal(pool_demand_target(&d, now, 1, 8, IDLE), 8);
	/* Two flows at once after a long gap: not a burst, the floor. */
	pool_demand_init(&d);
	flows(&d, &now, 1, 30000);
	flows(&d, &now, 2, 0);
	assert_int_equal(pool_demand_target(&d, now, 1, 8, IDLE), 1);
	/* One after idle: one over the floor again, until the next. */
	now += IDLE;
	flows(&d, &now, 1, 0);
	assert_int_equal(pool_demand_target(&d, now, 1, 8, IDLE), 2);
	assert_int_equal(pool_demand_target(&d, now, 3, 8, IDLE), 4);
	now += 500;
	flows(&d, &now, 1, 0);
	assert_int_equal(pool_demand_target(&d, now, 1, 8, IDLE), 1);
}

static void
test_decay(void **state)
{
	struct pool_demand d;
	uint64_t now = 5000, last;
	unsigned prev = 64, t;

	(void)state;
	pool_demand_init(&d);
	flows(&d, &now, 400, 5);
	last = now - 5;
	assert_int_equal(pool_demand_target(&d, now, 1, 8, IDLE), 8);
	/* Quiet: the size falls monotonically to the floor... */
	for (; now < last + IDLE - 1; now += 250) {
		t = pool_demand_target(&d, now, 1, 8, IDLE);
		assert_true(t <= prev);
		assert_true(t >= 1);
		prev = t;
	}
	assert_int_equal(pool_demand_target(&d, last + 20000, 1, 8, IDLE), 1);
	assert_int_equal(pool_demand_target(&d, last + IDLE - 1, 2, 8, IDLE),
	    2);
	/* ...and to 0 once idle, for ever after. */
	assert_int_equal(pool_demand_target(&d, last + IDLE, 2, 8, IDLE), 0);
	assert_int_equal(pool_demand_target(&d, last + 86400000, 2, 8, IDLE),
	    0);
	/* idle 0 never decays below the floor. */
	assert_int_equal(pool_demand_target(&d, last + 86400000, 2, 8, 0), 2);
	/* A flow after idle: the floor again at once, and one more until
	 * the next flow. */
	now = last + 120000;
	flows(&d, &now, 1, 0);
	assert_int_equal(pool_demand_target(&d, now, 1, 8, IDLE), 2);
	assert_int_equal(pool_demand_rate(&d, now + 3600000), 0);
}

/* A group's standby member: no flow of its own, its group's flows
 * elsewhere keep its floor warm (never more), until they stop for idle. */
static void
test_standby(void **state)
{
	struct pool_demand d;
	uint64_t now = 5000;
	int i;

	(void)state;
	pool_demand_init(&d);
	assert_int_equal(pool_demand_target(&d, now, 1, 8, IDLE), 0);
	for (i = 0; i < 400; i++, now += 5)
		pool_demand_standby(&d, now);
	assert_int_equal(pool_demand_target(&d, now, 1, 8, IDLE), 1);
	assert_int_equal(pool_demand_target(&d, now, 2, 8, IDLE), 2);
	assert_int_equal(pool_demand_target(&d, now + IDLE - 6, 1, 8, IDLE),
	    1);
	assert_int_equal(pool_demand_target(&d, now + IDLE, 1, 8, IDLE), 0);
	/* Its own flows size it as ever. */
	flows(&d, &now, 400, 5);
	assert_int_equal(pool_demand_target(&d, now, 1, 8, IDLE), 8);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cold),
		cmocka_unit_test(test_rate_up),
		cmocka_unit_test(test_sequential),
		cmocka_unit_test(test_decay),
		cmocka_unit_test(test_standby),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
