/*
 * flow_held.c: connect_mode faithful's held flows by 4-tuple.  Every SYN
 * of a faithful client and every accepted pcb asks the table; it used to
 * be a walk of every live flow.
 *
 * Many held flows -- a SYN burst to one target (one dst, the app's
 * ports), one app to many targets, IPv4 and IPv6 -- are each found, and
 * only by their own 4-tuple (not by a near miss: a port, an address, the
 * IPv6 scope, the two ends swapped); removed ones are gone, the rest
 * stay; the table grows through its resizes and is freed.  And finding
 * them all costs a fraction of the CPU time of the old walk (the walk
 * replayed here over the same flows).
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <cmocka.h>

#include <sodium.h>

#include "core/addr.h"
#include "client/tcp/flow_tcp.h"
#include "client/tcp/flow_tcp_int.h"

#define HELD_N		20000	/* past several resizes (64 buckets first) */
#define HELD_WALK_N	4096	/* the default max_flows, for the timing */

struct fixture {
	struct flow_env	*env;
	struct flow	**f;
	size_t		 n;
};

/* Flow i's 4-tuple: a third to one target from the app's ports, a third
 * from one app port to many IPv4 targets, a third IPv6 (scope 0). */
static void
held_tuple(size_t i, struct addr *dst, struct addr *app)
{
	uint8_t		 ip4[4] = { 10, 77, 2, 1 }, app4[4] = { 10, 0, 0, 2 };
	uint8_t		 ip6[16] = { 0xfd, 0x77, 0, 2 }, app6[16] = { 0xfd, 0 };
	uint16_t	 k = (uint16_t)(i / 3);

	switch (i % 3) {
	case 0:
		addr_from_raw(dst, AF_INET, ip4, 443);
		addr_from_raw(app, AF_INET, app4, (uint16_t)(10000 + k));
		break;
	case 1:
		ip4[2] = (uint8_t)(k >> 8);
		ip4[3] = (uint8_t)k;
		addr_from_raw(dst, AF_INET, ip4, 80);
		addr_from_raw(app, AF_INET, app4, 40000);
		break;
	default:
		ip6[14] = (uint8_t)(k >> 8);
		ip6[15] = (uint8_t)k;
		app6[15] = 2;
		addr_from_raw(dst, AF_INET6, ip6, 443);
		addr_from_raw(app, AF_INET6, app6, (uint16_t)(20000 + k % 7));
		break;
	}
}

/* a with another port, all else kept. */
static struct addr
held_port(const struct addr *a, uint16_t port)
{
	struct addr	 b = *a;

	if (addr_family(&b) == AF_INET6)
		b.u.sin6.sin6_port = htons(port);
	else
		b.u.sin.sin_port = htons(port);
	assert_int_equal(addr_port(&b), port);
	return b;
}

/* A flow's addresses as struct addr (it keeps them packed), each in
 * its own buffer: good until the next call of the same one. */
static const struct addr *
fdst(const struct flow *f)
{
	static struct addr	 a;

	return addr_unpack(&f->dst, &a);
}

static const struct addr *
fapp(const struct flow *f)
{
	static struct addr	 a;

	return addr_unpack(&f->app, &a);
}

static struct fixture *
held_fill(size_t n)
{
	struct fixture	*fx;
	struct addr	 ud, ua;
	size_t		 i;

	assert_non_null(fx = calloc(1, sizeof(*fx)));
	assert_non_null(fx->env = calloc(1, sizeof(*fx->env)));
	assert_non_null(fx->f = calloc(n, sizeof(*fx->f)));
	fx->n = n;
	for (i = 0; i < n; i++) {
		assert_non_null(fx->f[i] = calloc(1, sizeof(struct flow)));
		fx->f[i]->env = fx->env;
		fx->f[i]->id = i;
		held_tuple(i, &ud, &ua);
		addr_pack(&fx->f[i]->dst, &ud);
		addr_pack(&fx->f[i]->app, &ua);
		assert_int_equal(flow_held_add(fx->f[i]), 0);
		assert_true(fx->f[i]->held);
	}
	return fx;
}

static void
held_free(struct fixture *fx)
{
	size_t	 i;

	for (i = 0; i < fx->n; i++) {
		flow_held_del(fx->f[i]);
		assert_false(fx->f[i]->held);
		flow_held_del(fx->f[i]);	/* not held: nothing */
	}
	for (i = 0; i < fx->n; i++)
		assert_null(flow_held_find(fx->env, fdst(fx->f[i]),
		    fapp(fx->f[i])));
	flow_held_free(fx->env);
	assert_null(fx->env->held);
	flow_held_free(fx->env);		/* again: nothing */
	for (i = 0; i < fx->n; i++)
		free(fx->f[i]);
	free(fx->f);
	free(fx->env);
	free(fx);
}

static void
test_empty(void **state)
{
	struct flow_env	*env;
	struct addr	 dst, app;

	(void)state;
	assert_non_null(env = calloc(1, sizeof(*env)));
	held_tuple(0, &dst, &app);
	assert_null(flow_held_find(env, &dst, &app));	/* no table yet */
	flow_held_free(env);
	free(env);
}

static void
test_many_found(void **state)
{
	struct fixture	*fx;
	size_t		 i;

	(void)state;
	fx = held_fill(HELD_N);
	for (i = 0; i < fx->n; i++)
		assert_ptr_equal(flow_held_find(fx->env, fdst(fx->f[i]),
		    fapp(fx->f[i])), fx->f[i]);
	held_free(fx);
}

static void
test_near_misses(void **state)
{
	struct fixture	*fx;
	struct addr	 dst, app, other;
	size_t		 i;

	(void)state;
	fx = held_fill(3 * 500);
	for (i = 0; i < fx->n; i++) {
		/* Both ends swapped. */
		assert_null(flow_held_find(fx->env, fapp(fx->f[i]),
		    fdst(fx->f[i])));
		/* Another app port, another target port. */
		held_tuple(i, &dst, &app);
		other = held_port(&app, 9);
		assert_null(flow_held_find(fx->env, &dst, &other));
		other = held_port(&dst, 8443);
		assert_null(flow_held_find(fx->env, &other, &app));
		/* The same IPv6 address in another scope. */
		if (addr_family(&dst) == AF_INET6) {
			other = dst;
			other.u.sin6.sin6_scope_id = 3;
			assert_null(flow_held_find(fx->env, &other, &app));
		}
		/* The tuple itself, rebuilt: found. */
		assert_ptr_equal(flow_held_find(fx->env, &dst, &app), fx->f[i]);
	}
	held_tuple(fx->n, &dst, &app);		/* never added */
	assert_null(flow_held_find(fx->env, &dst, &app));
	held_free(fx);
}

static void
test_remove_some(void **state)
{
	struct fixture	*fx;
	size_t		 i;

	(void)state;
	fx = held_fill(HELD_N);
	for (i = 0; i < fx->n; i += 2)
		flow_held_del(fx->f[i]);
	for (i = 0; i < fx->n; i++)
		assert_ptr_equal(flow_held_find(fx->env, fdst(fx->f[i]),
		    fapp(fx->f[i])), i % 2 == 0 ? NULL : fx->f[i]);
	/* Added again (an app's new connection on a reused port). */
	for (i = 0; i < fx->n; i += 2)
		assert_int_equal(flow_held_add(fx->f[i]), 0);
	for (i = 0; i < fx->n; i++)
		assert_ptr_equal(flow_held_find(fx->env, fdst(fx->f[i]),
		    fapp(fx->f[i])), fx->f[i]);
	held_free(fx);
}

static double
cpu_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* What flow_held_find did before: every flow, held or not, compared. */
static struct flow *
walk_find(struct flow **all, size_t n, const struct addr *dst,
    const struct addr *app)
{
	struct addr	 d, a;
	size_t		 i;

	for (i = 0; i < n; i++)
		if (all[i]->held &&
		    addr_eq(addr_unpack(&all[i]->dst, &d), dst) &&
		    addr_eq(addr_unpack(&all[i]->app, &a), app))
			return all[i];
	return NULL;
}

static void
test_cheaper_than_walk(void **state)
{
	struct fixture	*fx;
	double		 t0, hash_ms, walk_ms;
	size_t		 i;

	(void)state;
	fx = held_fill(HELD_WALK_N);
	t0 = cpu_ms();
	for (i = 0; i < fx->n; i++)
		assert_ptr_equal(flow_held_find(fx->env, fdst(fx->f[i]),
		    fapp(fx->f[i])), fx->f[i]);
	hash_ms = cpu_ms() - t0;
	t0 = cpu_ms();
	for (i = 0; i < fx->n; i++)
		assert_ptr_equal(walk_find(fx->f, fx->n, fdst(fx->f[i]),
		    fapp(fx->f[i])), fx->f[i]);
	walk_ms = cpu_ms() - t0;
	printf("# %d held flows, each found: table %.2f ms, walk %.2f ms "
	    "(CPU)\n", HELD_WALK_N, hash_ms, walk_ms);
	/* n lookups against n^2/2 comparisons: far apart, not a close call
	 * that load could swing. */
	assert_true(hash_ms * 4 < walk_ms);
	held_free(fx);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_many_found),
		cmocka_unit_test(test_near_misses),
		cmocka_unit_test(test_remove_some),
		cmocka_unit_test(test_cheaper_than_walk),
	};

	if (sodium_init() < 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
