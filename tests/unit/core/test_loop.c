/* loop: timers, fd dispatch and its deletion safety, hooks, stop. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/time.h>

#include "core/loop.h"

#define NTIMERS	1000

struct ttimer {
	struct loop_timer	 t;
	struct loop		*l;
	int			 id;
	int			 fired;
	int			 rearm;		/* re-arm itself this often */
	bool			 rearm_now;	/* ... or with 0 ms */
	uint64_t		 want_ms;	/* deadline it was given */
};

struct tfd {
	struct loop_fd	 lfd;
	struct loop	*l;
	int		 calls;
	uint32_t	 last;
	struct tfd	*victim;	/* deleted by this one's callback */
	int		 victim_fd;	/* ... and re-added on this fd */
	struct tfd	*mod_victim;	/* its interest dropped instead */
};

static int	order[NTIMERS + 16];
static int	norder;

static void
ttimer_cb(struct loop_timer *t)
{
	struct ttimer	*tt = container_of(t, struct ttimer, t);

	assert_false(loop_timer_armed(t));
	assert_true(loop_now(tt->l) >= tt->want_ms);
	tt->fired++;
	order[norder++] = tt->id;
	if (tt->rearm > 0 && tt->fired < 3) {
		tt->want_ms = loop_now(tt->l) + (uint64_t)tt->rearm;
		loop_timer_set(tt->l, t, (uint64_t)tt->rearm);
	}
	if (tt->rearm_now && tt->fired < 3) {
		tt->want_ms = loop_now(tt->l);
		loop_timer_set(tt->l, t, 0);
	}
}

static void
ttimer_arm(struct loop *l, struct ttimer *tt, int id, uint64_t after)
{
	tt->l = l;
	tt->id = id;
	loop_timer_set(l, &tt->t, after);
	tt->want_ms = loop_now(l) + after;
	assert_true(loop_timer_armed(&tt->t));
}

/* Runs iterations until n timer firings were seen (bounded by 5 s). */
static void
run_until(struct loop *l, int n)
{
	uint64_t	deadline = loop_now_refresh(l) + 5000;

	while (norder < n) {
		assert_int_equal(loop_run_once(l, 100), 0);
		assert_true(loop_now(l) < deadline);
	}
}

static void
test_timers_in_order(void **state)
{
	struct ttimer	tt[5];
	static const uint64_t after[5] = { 30, 10, 20, 0, 15 };
	static const int want[5] = { 3, 1, 4, 2, 0 };
	struct loop	*l = loop_new();
	int		 i;

	(void)state;
	assert_non_null(l);
	norder = 0;
	memset(tt, 0, sizeof(tt));
	for (i = 0; i < 5; i++) {
		loop_timer_init(&tt[i].t, ttimer_cb);
		assert_false(loop_timer_armed(&tt[i].t));
		ttimer_arm(l, &tt[i], i, after[i]);
	}
	run_until(l, 5);
	for (i = 0; i < 5; i++) {
		assert_int_equal(order[i], want[i]);
		assert_int_equal(tt[i].fired, 1);
	}
	/* Nothing left: one more iteration fires nothing. */
	assert_int_equal(loop_run_once(l, 0), 0);
	assert_int_equal(norder, 5);
	loop_free(l);
}

static void
test_timer_cancel_rearm(void **state)
{
	struct ttimer	 a, b, c, d;
	struct loop	*l = loop_new();

	(void)state;
	norder = 0;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	memset(&c, 0, sizeof(c));
	memset(&d, 0, sizeof(d));
	loop_timer_init(&a.t, ttimer_cb);
	loop_timer_init(&b.t, ttimer_cb);
	loop_timer_init(&c.t, ttimer_cb);
	loop_timer_init(&d.t, ttimer_cb);
	loop_timer_cancel(l, &d.t);		/* never armed: no-op */

	ttimer_arm(l, &a, 1, 5);
	ttimer_arm(l, &b, 2, 10);
	ttimer_arm(l, &c, 3, 10000);
	loop_timer_cancel(l, &a.t);
	loop_timer_cancel(l, &a.t);		/* idempotent */
	assert_false(loop_timer_armed(&a.t));
	/* Re-arming an armed timer moves it, it does not duplicate it. */
	ttimer_arm(l, &c, 3, 1);
	ttimer_arm(l, &b, 2, 20);
	run_until(l, 2);
	assert_int_equal(order[0], 3);
	assert_int_equal(order[1], 2);
	assert_int_equal(a.fired, 0);
	assert_int_equal(b.fired, 1);
	assert_int_equal(c.fired, 1);
	/* Push a timer later than it was. */
	ttimer_arm(l, &a, 1, 1);
	ttimer_arm(l, &a, 1, 30);
	ttimer_arm(l, &b, 2, 10);
	run_until(l, 4);
	assert_int_equal(order[2], 2);
	assert_int_equal(order[3], 1);
	loop_free(l);
}

static void
test_timer_rearms_itself(void **state)
{
	struct ttimer	 a, z;
	struct loop	*l = loop_new();

	(void)state;
	norder = 0;
	memset(&a, 0, sizeof(a));
	memset(&z, 0, sizeof(z));
	loop_timer_init(&a.t, ttimer_cb);
	loop_timer_init(&z.t, ttimer_cb);
	a.rearm = 2;
	ttimer_arm(l, &a, 1, 0);
	run_until(l, 3);
	assert_int_equal(a.fired, 3);
	assert_false(loop_timer_armed(&a.t));

	/* A 0 ms re-arm does not spin inside one iteration. */
	norder = 0;
	z.rearm_now = true;
	ttimer_arm(l, &z, 9, 0);
	assert_int_equal(loop_run_once(l, 0), 0);
	assert_int_equal(z.fired, 1);
	assert_true(loop_timer_armed(&z.t));
	assert_int_equal(loop_run_once(l, 0), 0);
	assert_int_equal(z.fired, 2);
	loop_timer_cancel(l, &z.t);
	loop_free(l);
}

static void
cancel_cb(struct loop_timer *t)
{
	(void)t;
	fail_msg("cancelled timer fired");
}

/* Many timers, random deadlines, a third cancelled: heap order holds. */
static void
test_timer_heap_stress(void **state)
{
	struct ttimer	*tt = calloc(NTIMERS, sizeof(*tt));
	struct loop	*l = loop_new();
	uint64_t	 prev = 0;
	int		 i, live = 0;

	(void)state;
	assert_non_null(tt);
	norder = 0;
	srand(7);
	for (i = 0; i < NTIMERS; i++) {
		loop_timer_init(&tt[i].t, i % 3 == 0 ? cancel_cb : ttimer_cb);
		ttimer_arm(l, &tt[i], i, (uint64_t)(rand() % 40));
	}
	for (i = 0; i < NTIMERS; i += 3)
		loop_timer_cancel(l, &tt[i].t);
	for (i = 0; i < NTIMERS; i++)
		live += i % 3 != 0;
	run_until(l, live);
	assert_int_equal(norder, live);
	for (i = 0; i < live; i++) {
		assert_true(tt[order[i]].want_ms >= prev);
		prev = tt[order[i]].want_ms;
		assert_int_equal(tt[order[i]].fired, 1);
	}
	loop_free(l);
	free(tt);
}

/* ---- fds ---------------------------------------------------------- */

static void
tfd_cb(struct loop_fd *lfd, uint32_t revents)
{
	struct tfd	*t = container_of(lfd, struct tfd, lfd);

	t->calls++;
	t->last = revents;
	if (t->victim != NULL) {
		loop_fd_del(t->l, &t->victim->lfd);
		loop_fd_del(t->l, &t->victim->lfd);	/* inactive: no-op */
		if (t->victim_fd >= 0)
			assert_int_equal(loop_fd_add(t->l, &t->victim->lfd,
			    t->victim_fd, EPOLLIN, tfd_cb), 0);
		t->victim = NULL;
	}
	if (t->mod_victim != NULL) {
		assert_int_equal(loop_fd_mod(t->l, &t->mod_victim->lfd, 0), 0);
		t->mod_victim = NULL;
	}
}

static void
make_pipe(int p[2], bool readable)
{
	assert_int_equal(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
	if (readable)
		assert_int_equal(write(p[1], "x", 1), 1);
}

static void
drain(int fd)
{
	char	c[16];

	while (read(fd, c, sizeof(c)) > 0)
		;
}

static void
close_pipe(int p[2])
{
	close(p[0]);
	close(p[1]);
}

static void
test_pipe_readable(void **state)
{
	struct loop	*l = loop_new();
	struct tfd	 a = { .l = l, .victim_fd = -1 };
	char		 c;
	int		 p[2];

	(void)state;
	make_pipe(p, false);
	assert_int_equal(loop_fd_add(l, &a.lfd, p[0], EPOLLIN, tfd_cb), 0);
	assert_true(a.lfd.active);
	assert_int_equal(loop_run_once(l, 0), 0);
	assert_int_equal(a.calls, 0);
	assert_int_equal(write(p[1], "y", 1), 1);
	assert_int_equal(loop_run_once(l, 1000), 0);
	assert_int_equal(a.calls, 1);
	assert_true(a.last & EPOLLIN);
	/* Level-triggered: still readable, reported again. */
	assert_int_equal(loop_run_once(l, 1000), 0);
	assert_int_equal(a.calls, 2);
	assert_int_equal(read(p[0], &c, 1), 1);
	assert_int_equal(loop_run_once(l, 0), 0);
	assert_int_equal(a.calls, 2);
	/* Writer gone: EPOLLHUP. */
	close(p[1]);
	assert_int_equal(loop_run_once(l, 1000), 0);
	assert_int_equal(a.calls, 3);
	assert_true(a.last & EPOLLHUP);
	loop_fd_del(l, &a.lfd);
	assert_false(a.lfd.active);
	assert_int_equal(loop_run_once(l, 0), 0);
	assert_int_equal(a.calls, 3);
	close(p[0]);
	assert_int_equal(loop_fd_add(l, &a.lfd, p[0], EPOLLIN, tfd_cb), -1);
	assert_int_equal(errno, EBADF);
	loop_free(l);
}

/*
 * The batch tests: a and b on fresh readable pipes pa and pb, one loop
 * iteration that reports both, of which the first callback acts on the
 * other so that exactly one is called.
 */
static void
batch_one_called(struct loop *l, struct tfd *a, struct tfd *b, int pa[2],
    int pb[2])
{
	make_pipe(pa, true);
	make_pipe(pb, true);
	assert_int_equal(loop_fd_add(l, &a->lfd, pa[0], EPOLLIN, tfd_cb), 0);
	assert_int_equal(loop_fd_add(l, &b->lfd, pb[0], EPOLLIN, tfd_cb), 0);
	assert_int_equal(loop_run_once(l, 1000), 0);
	assert_int_equal(a->calls + b->calls, 1);
}

/* Each deletes the other; both are readable in the same batch. */
static void
test_delete_pending_in_batch(void **state)
{
	struct loop	*l = loop_new();
	struct tfd	 a = { .l = l, .victim_fd = -1 };
	struct tfd	 b = { .l = l, .victim_fd = -1 };
	int		 pa[2], pb[2];

	(void)state;
	a.victim = &b;
	b.victim = &a;
	batch_one_called(l, &a, &b, pa, pb);
	assert_true(a.lfd.active != b.lfd.active);
	loop_fd_del(l, &a.lfd);
	loop_fd_del(l, &b.lfd);
	close_pipe(pa);
	close_pipe(pb);
	loop_free(l);
}

/*
 * The victim is deleted and its struct re-added on a quiet pipe within the
 * batch: the old fd's pending event must not reach the new registration.
 */
static void
test_delete_readd_in_batch(void **state)
{
	struct loop	*l = loop_new();
	struct tfd	 a = { .l = l }, b = { .l = l };
	int		 pa[2], pb[2], pa2[2], pb2[2];

	(void)state;
	make_pipe(pa2, false);
	make_pipe(pb2, false);
	a.victim = &b;
	a.victim_fd = pb2[0];
	b.victim = &a;
	b.victim_fd = pa2[0];
	batch_one_called(l, &a, &b, pa, pb);
	assert_true(a.lfd.active && b.lfd.active);
	/* The re-added registration works in later iterations. */
	a.victim = b.victim = NULL;
	drain(pa[0]);
	drain(pb[0]);
	assert_int_equal(write(pa2[1], "z", 1), 1);
	assert_int_equal(write(pb2[1], "z", 1), 1);
	assert_int_equal(loop_run_once(l, 1000), 0);
	assert_int_equal(a.calls + b.calls, 2);
	loop_fd_del(l, &a.lfd);
	loop_fd_del(l, &b.lfd);
	close_pipe(pa);
	close_pipe(pb);
	close_pipe(pa2);
	close_pipe(pb2);
	loop_free(l);
}

/* Interest dropped by an earlier callback in the batch is not reported. */
static void
test_mod_pending_in_batch(void **state)
{
	struct loop	*l = loop_new();
	struct tfd	 a = { .l = l, .victim_fd = -1 };
	struct tfd	 b = { .l = l, .victim_fd = -1 };
	int		 pa[2], pb[2];

	(void)state;
	a.mod_victim = &b;
	b.mod_victim = &a;
	batch_one_called(l, &a, &b, pa, pb);
	loop_fd_del(l, &a.lfd);
	loop_fd_del(l, &b.lfd);
	close_pipe(pa);
	close_pipe(pb);
	loop_free(l);
}

static void
test_fd_mod(void **state)
{
	struct loop	*l = loop_new();
	struct tfd	 w = { .l = l, .victim_fd = -1 };
	int		 p[2];

	(void)state;
	make_pipe(p, false);
	/* The write end is writable, but nobody asked. */
	assert_int_equal(loop_fd_add(l, &w.lfd, p[1], 0, tfd_cb), 0);
	assert_int_equal(loop_run_once(l, 0), 0);
	assert_int_equal(w.calls, 0);
	assert_int_equal(loop_fd_mod(l, &w.lfd, EPOLLOUT), 0);
	assert_int_equal(w.lfd.events, EPOLLOUT);
	assert_int_equal(loop_run_once(l, 1000), 0);
	assert_int_equal(w.calls, 1);
	assert_int_equal(w.last, EPOLLOUT);
	assert_int_equal(loop_fd_mod(l, &w.lfd, EPOLLIN), 0);
	assert_int_equal(loop_run_once(l, 0), 0);
	assert_int_equal(w.calls, 1);
	/*
	 * Unchanged events make no syscall: with the fd closed behind the
	 * loop's back, only a real epoll_ctl could fail.
	 */
	close(p[1]);
	assert_int_equal(loop_fd_mod(l, &w.lfd, EPOLLIN), 0);
	assert_int_equal(loop_fd_mod(l, &w.lfd, EPOLLOUT), -1);
	loop_fd_del(l, &w.lfd);
	assert_int_equal(loop_fd_mod(l, &w.lfd, EPOLLIN), -1);
	close(p[0]);
	loop_free(l);
}

/* ---- hooks and stop ----------------------------------------------- */

static char	trace[64];
static size_t	ntrace;

static void
hook_cb(void *arg)
{
	trace[ntrace++] = *(const char *)arg;
}

static void
trace_fd_cb(struct loop_fd *lfd, uint32_t revents)
{
	(void)lfd;
	(void)revents;
	trace[ntrace++] = 'F';
}

static void
trace_timer_cb(struct loop_timer *t)
{
	(void)t;
	trace[ntrace++] = 'T';
}

static void
test_hooks_after_fds_and_timers(void **state)
{
	struct loop		*l = loop_new();
	struct loop_fd		 lfd;
	struct loop_timer	 t;
	static const char	 h1 = '1', h2 = '2';
	int			 p[2];

	(void)state;
	ntrace = 0;
	make_pipe(p, true);
	assert_int_equal(loop_on_iteration(l, hook_cb, (void *)(uintptr_t)&h1), 0);
	assert_int_equal(loop_on_iteration(l, hook_cb, (void *)(uintptr_t)&h2), 0);
	assert_int_equal(loop_fd_add(l, &lfd, p[0], EPOLLIN, trace_fd_cb), 0);
	loop_timer_init(&t, trace_timer_cb);
	loop_timer_set(l, &t, 0);
	assert_int_equal(loop_run_once(l, 1000), 0);
	loop_fd_del(l, &lfd);
	assert_int_equal(loop_run_once(l, 0), 0);
	trace[ntrace] = '\0';
	assert_string_equal(trace, "FT1212");
	close_pipe(p);
	loop_free(l);
}

static struct loop	*stop_loop;
static int		 watchdog_fired;

static void
stop_timer_cb(struct loop_timer *t)
{
	(void)t;
	loop_stop(stop_loop);
}

static void
watchdog_cb(struct loop_timer *t)
{
	(void)t;
	watchdog_fired = 1;
	loop_stop(stop_loop);
}

static void
on_alarm(int sig)
{
	(void)sig;
	loop_stop(stop_loop);
}

static void
test_stop(void **state)
{
	struct loop_timer	t, dog;
	struct sigaction	sa;
	struct itimerval	it = { .it_value = { .tv_usec = 20000 } };

	(void)state;
	stop_loop = loop_new();
	loop_timer_init(&t, stop_timer_cb);
	loop_timer_init(&dog, watchdog_cb);
	/* From a callback. */
	loop_timer_set(stop_loop, &t, 5);
	assert_int_equal(loop_run(stop_loop), 0);
	assert_false(loop_timer_armed(&t));
	/* From a signal handler, while blocked in epoll_wait. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	assert_int_equal(sigaction(SIGALRM, &sa, NULL), 0);
	loop_timer_set(stop_loop, &dog, 3000);
	assert_int_equal(setitimer(ITIMER_REAL, &it, NULL), 0);
	assert_int_equal(loop_run(stop_loop), 0);
	assert_int_equal(watchdog_fired, 0);
	assert_true(loop_timer_armed(&dog));
	loop_timer_cancel(stop_loop, &dog);
	signal(SIGALRM, SIG_DFL);
	loop_free(stop_loop);
	loop_free(NULL);
}

static void
test_now(void **state)
{
	struct loop	*l = loop_new();
	uint64_t	 a, b;

	(void)state;
	a = loop_now(l);
	usleep(20000);
	assert_int_equal(loop_now(l), a);	/* cached */
	b = loop_now_refresh(l);
	assert_true(b >= a + 20 && b < a + 2000);
	assert_int_equal(loop_now(l), b);
	assert_int_equal(loop_run_once(l, 15), 0);
	assert_true(loop_now(l) >= b + 15);
	loop_free(l);
}

static long
rss_kb(void)
{
	FILE	*fp = fopen("/proc/self/statm", "r");
	long	 size = 0, rss = 0;

	assert_non_null(fp);
	assert_int_equal(fscanf(fp, "%ld %ld", &size, &rss), 2);
	fclose(fp);
	return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

/*
 * loop_trim_hint: 64 MiB freed in 4 KiB pieces, every 16th kept (so the
 * allocator cannot give it back by shrinking the heap's top itself), stays
 * resident with no hint for longer than the settle time, and is handed
 * back within a second of a hint.
 */
#define TRIM_CHUNK	4096
#define TRIM_N		(64 * 1024 * 1024 / TRIM_CHUNK)

static void
test_trim_hint(void **state)
{
	struct loop	*l;
	char		**p;
	long		 full, idle, trimmed;
	size_t		 i;
	int		 k;

	(void)state;
	if (getenv("TS_SANITIZED") != NULL)
		skip();		/* the sanitizers' allocator is not glibc's */
#ifndef HAVE_MALLOC_TRIM
	skip();
#endif
	assert_non_null(l = loop_new());
	loop_trim_memory(l, 3600 * 1000);
	assert_non_null(p = calloc(TRIM_N, sizeof(*p)));
	for (i = 0; i < TRIM_N; i++) {
		assert_non_null(p[i] = malloc(TRIM_CHUNK));
		memset(p[i], (int)i, TRIM_CHUNK);
	}
	full = rss_kb();
	for (i = 0; i < TRIM_N; i++)
		if (i % 16 != 0) {
			free(p[i]);
			p[i] = NULL;
		}
	for (k = 0; k < 7; k++)
		assert_int_equal(loop_run_once(l, 100), 0);
	idle = rss_kb();
	assert_true(idle > full - 8 * 1024);	/* nothing trimmed it */
	loop_trim_hint(l);
	for (k = 0; k < 20 && rss_kb() > full - 40 * 1024; k++)
		assert_int_equal(loop_run_once(l, 100), 0);
	trimmed = rss_kb();
	print_message("RSS %ld KiB full, %ld freed, %ld after the hint\n",
	    full, idle, trimmed);
	assert_true(trimmed <= full - 40 * 1024);
	for (i = 0; i < TRIM_N; i++)
		free(p[i]);
	free(p);
	loop_free(l);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timers_in_order),
		cmocka_unit_test(test_timer_cancel_rearm),
		cmocka_unit_test(test_timer_rearms_itself),
		cmocka_unit_test(test_timer_heap_stress),
		cmocka_unit_test(test_pipe_readable),
		cmocka_unit_test(test_delete_pending_in_batch),
		cmocka_unit_test(test_delete_readd_in_batch),
		cmocka_unit_test(test_mod_pending_in_batch),
		cmocka_unit_test(test_fd_mod),
		cmocka_unit_test(test_hooks_after_fds_and_timers),
		cmocka_unit_test(test_stop),
		cmocka_unit_test(test_now),
		cmocka_unit_test(test_trim_hint),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
