/*
 * The event loop: level-triggered epoll for fds, a binary min-heap of
 * timers keyed by their deadline, and hooks run at the end of every
 * iteration.
 *
 * Registrations deleted or re-added while a batch of epoll events is being
 * dispatched must not see the batch's stale events.  Each registration is
 * stamped with a per-loop generation number when added; a batch only
 * dispatches to registrations that are still active and were added before
 * the batch was fetched.
 */
#include "config.h"

#include "core/loop.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <malloc.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>

#include "core/log.h"

#define LOOP_MAX_EVENTS		256
#define LOOP_HEAP_INITIAL	16

struct loop_hook {
	void	(*cb)(void *arg);
	void	 *arg;
};

struct loop {
	int			 epfd;
	uint64_t		 now_ms;
	uint64_t		 gen;		/* last generation handed out */
	volatile sig_atomic_t	 stop;

	struct loop_timer	**heap;
	size_t			 nheap, heapcap;

	struct loop_hook	 *hooks;
	size_t			 nhooks;
	bool			 hooks_blank;	/* some were dropped */

	struct loop_timer	 trim;
	unsigned		 trim_ms;
	unsigned		 trim_next_ms;	/* after the next trim */
	bool			 trim_hinted;	/* since the last trim */
	uint64_t		 trim_first;	/* when the first hint came */
};

struct loop *
loop_new(void)
{
	struct loop	*l;

	if ((l = calloc(1, sizeof(*l))) == NULL)
		return NULL;
	if ((l->epfd = epoll_create1(EPOLL_CLOEXEC)) == -1) {
		free(l);
		return NULL;
	}
	loop_now_refresh(l);
	return l;
}

/* Worth a trim: heap memory that is free but still ours. */
#define LOOP_TRIM_MIN		(256 * 1024)
/* After a hint: trim once nothing was freed for this long. */
#define LOOP_TRIM_SETTLE_MS	500

/* glibc's per-thread cache: up to 7 freed chunks of each of the 64
 * smallest sizes (24, 40 ... 1032 bytes asked), which malloc_trim cannot
 * give back.  After a burst they are the burst's last frees, scattered
 * over a heap that is otherwise free: one chunk keeps its whole page
 * resident, a few hundred pages in all.  Swap them for chunks malloc
 * finds now, once the heap is consolidated: those sit next to what is
 * still live, on pages resident anyway, and the old ones go back to the
 * heap for the trim that follows. */
#define LOOP_TCACHE_BINS	64
#define LOOP_TCACHE_COUNT	7

void
loop_trim_thread_cache(void)
{
#if defined(HAVE_MALLOC_TRIM) && !defined(__SANITIZE_ADDRESS__)
	void	*old[LOOP_TCACHE_COUNT], *fresh[LOOP_TCACHE_COUNT];
	size_t	 b, i, len;

	for (b = 0; b < LOOP_TCACHE_BINS; b++) {
		len = 24 + 16 * b;
		for (i = 0; i < LOOP_TCACHE_COUNT; i++)
			old[i] = malloc(len);	/* the cache's, first */
		for (i = 0; i < LOOP_TCACHE_COUNT; i++)
			fresh[i] = malloc(len);
		for (i = 0; i < LOOP_TCACHE_COUNT; i++)
			free(fresh[i]);		/* fill the cache */
		for (i = 0; i < LOOP_TCACHE_COUNT; i++)
			free(old[i]);		/* cache full: to the heap */
	}
#endif
}

static void
loop_on_trim(struct loop_timer *t)
{
	struct loop	*l = container_of(t, struct loop, trim);

	l->trim_hinted = false;
	/* Under AddressSanitizer malloc is not glibc's, whose allocator
	 * is then first set up by mallinfo2() itself -- by two server
	 * workers at once, a race that read through a NULL top chunk
	 * (SEGV).  Nothing of glibc's to trim then anyway. */
#if defined(HAVE_MALLOC_TRIM) && !defined(__SANITIZE_ADDRESS__)
#ifdef HAVE_MALLINFO2
	if (mallinfo2().fordblks >= LOOP_TRIM_MIN)
#endif
	{
		malloc_trim(0);
		loop_trim_thread_cache();
		malloc_trim(0);
	}
#endif
	/* What the flows' end set off (lwIP's last segments and timers,
	 * TLS teardown) is freed over the next seconds: trim again after
	 * 1, 2, 4 ... s, back to the interval. */
	loop_timer_set(l, t, l->trim_next_ms);
	l->trim_next_ms = l->trim_next_ms * 2 < l->trim_ms ?
	    l->trim_next_ms * 2 : l->trim_ms;
}

void
loop_trim_memory(struct loop *l, unsigned interval_ms)
{
	l->trim_ms = l->trim_next_ms = interval_ms;
	loop_timer_init(&l->trim, loop_on_trim);
	loop_timer_set(l, &l->trim, interval_ms);
}

void
loop_trim_hint(struct loop *l)
{
	uint64_t at;

	if (l->trim_ms == 0)
		return;
	l->trim_next_ms = l->trim_ms < 1000 ? l->trim_ms : 1000;
	if (!l->trim_hinted) {
		l->trim_hinted = true;
		l->trim_first = l->now_ms;
	}
	/* Settled, or at the latest one interval after the first hint: a
	 * steady churn still gets its memory back now and then. */
	at = l->now_ms + LOOP_TRIM_SETTLE_MS;
	if (at > l->trim_first + l->trim_ms)
		at = l->trim_first + l->trim_ms;
	loop_timer_set(l, &l->trim, at > l->now_ms ? at - l->now_ms : 0);
}

int
loop_fd_watch(struct loop *l, struct loop_fd *lfd, int fd, bool *parked,
    uint32_t ev, uint32_t revents, void (*cb)(struct loop_fd *, uint32_t))
{
	if (*parked) {
		if (ev == 0)
			return 0;
		if (loop_fd_add(l, lfd, fd, ev, cb) == -1)
			return -1;
		*parked = false;
		return 0;
	}
	if ((revents & EPOLLHUP) && ev == 0) {
		loop_fd_del(l, lfd);
		*parked = true;
		return 0;
	}
	return loop_fd_mod(l, lfd, ev);
}

/* Registrations still pointing at l belong to their owners: untouched. */
void
loop_free(struct loop *l)
{
	if (l == NULL)
		return;
	close(l->epfd);
	free(l->heap);
	free(l->hooks);
	free(l);
}

uint64_t
loop_now(struct loop *l)
{
	return l->now_ms;
}

uint64_t
loop_now_refresh(struct loop *l)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	l->now_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	return l->now_ms;
}

/* ---- fds ---------------------------------------------------------- */

int
loop_fd_add(struct loop *l, struct loop_fd *lfd, int fd, uint32_t events,
    void (*cb)(struct loop_fd *, uint32_t))
{
	struct epoll_event	ev = { .events = events, .data.ptr = lfd };

	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) == -1)
		return -1;
	lfd->fd = fd;
	lfd->events = events;
	lfd->cb = cb;
	lfd->gen = ++l->gen;
	lfd->active = true;
	return 0;
}

int
loop_fd_mod(struct loop *l, struct loop_fd *lfd, uint32_t events)
{
	struct epoll_event	ev = { .events = events, .data.ptr = lfd };

	if (!lfd->active) {
		errno = EINVAL;
		return -1;
	}
	if (events == lfd->events)
		return 0;
	if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, lfd->fd, &ev) == -1)
		return -1;
	lfd->events = events;
	return 0;
}

void
loop_fd_del(struct loop *l, struct loop_fd *lfd)
{
	if (!lfd->active)
		return;
	lfd->active = false;
	/* EBADF: the owner closed the fd first, which already removed it. */
	if (epoll_ctl(l->epfd, EPOLL_CTL_DEL, lfd->fd, NULL) == -1 &&
	    errno != EBADF && errno != ENOENT)
		log_warn("epoll_ctl DEL fd %d", lfd->fd);
}

/* ---- timers ------------------------------------------------------- */

static void
heap_place(struct loop *l, size_t i, struct loop_timer *t)
{
	l->heap[i] = t;
	t->heap_idx = i;
}

static void
heap_sift_up(struct loop *l, size_t i)
{
	struct loop_timer	*t = l->heap[i];
	size_t			 parent;

	while (i > 0) {
		parent = (i - 1) / 2;
		if (l->heap[parent]->when_ms <= t->when_ms)
			break;
		heap_place(l, i, l->heap[parent]);
		i = parent;
	}
	heap_place(l, i, t);
}

static void
heap_sift_down(struct loop *l, size_t i)
{
	struct loop_timer	*t = l->heap[i];
	size_t			 child;

	for (;;) {
		child = 2 * i + 1;
		if (child >= l->nheap)
			break;
		if (child + 1 < l->nheap &&
		    l->heap[child + 1]->when_ms < l->heap[child]->when_ms)
			child++;
		if (t->when_ms <= l->heap[child]->when_ms)
			break;
		heap_place(l, i, l->heap[child]);
		i = child;
	}
	heap_place(l, i, t);
}

static void
heap_remove(struct loop *l, struct loop_timer *t)
{
	size_t			 i = t->heap_idx;
	struct loop_timer	*last;

	if (i >= l->nheap || l->heap[i] != t)
		fatalx("loop: timer %p is not armed on this loop", (void *)t);
	last = l->heap[--l->nheap];
	t->heap_idx = SIZE_MAX;
	if (i == l->nheap)
		return;
	heap_place(l, i, last);
	heap_sift_down(l, i);
	heap_sift_up(l, last->heap_idx);
}

/*
 * Out of memory here is fatal: the API has no way to fail, and a timer
 * that silently never fires would leak whatever it guards.
 */
static void
heap_push(struct loop *l, struct loop_timer *t)
{
	struct loop_timer	**nh;
	size_t			  ncap;

	if (l->nheap == l->heapcap) {
		ncap = l->heapcap ? l->heapcap * 2 : LOOP_HEAP_INITIAL;
		if ((nh = reallocarray(l->heap, ncap, sizeof(*nh))) == NULL)
			fatal("loop: timer heap of %zu", ncap);
		l->heap = nh;
		l->heapcap = ncap;
	}
	heap_place(l, l->nheap++, t);
	heap_sift_up(l, t->heap_idx);
}

void
loop_timer_init(struct loop_timer *t, void (*cb)(struct loop_timer *))
{
	t->when_ms = 0;
	t->heap_idx = SIZE_MAX;
	t->cb = cb;
}

void
loop_timer_set(struct loop *l, struct loop_timer *t, uint64_t after_ms)
{
	uint64_t	old = t->when_ms;

	t->when_ms = loop_now(l) + after_ms;
	if (!loop_timer_armed(t)) {
		heap_push(l, t);
		return;
	}
	if (t->when_ms < old)
		heap_sift_up(l, t->heap_idx);
	else
		heap_sift_down(l, t->heap_idx);
}

void
loop_timer_cancel(struct loop *l, struct loop_timer *t)
{
	if (loop_timer_armed(t))
		heap_remove(l, t);
}

bool
loop_timer_armed(const struct loop_timer *t)
{
	return t->heap_idx != SIZE_MAX;
}

/* epoll_wait timeout until the earliest deadline, capped by max_ms. */
static int
loop_wait_ms(struct loop *l, int max_ms)
{
	uint64_t	when, wait;

	if (l->nheap == 0)
		return max_ms;
	when = l->heap[0]->when_ms;
	wait = when > l->now_ms ? when - l->now_ms : 0;
	if (wait > INT_MAX)
		wait = INT_MAX;
	if (max_ms >= 0 && (uint64_t)max_ms < wait)
		return max_ms;
	return (int)wait;
}

/*
 * Fires the timers that were due when the phase began, at most as many as
 * were armed then: a callback re-arming with 0 ms runs again next
 * iteration instead of spinning here.
 */
static void
loop_fire_timers(struct loop *l)
{
	struct loop_timer	*t;
	size_t			 budget = l->nheap;
	uint64_t		 now = l->now_ms;

	while (budget-- > 0 && l->nheap > 0) {
		t = l->heap[0];
		if (t->when_ms > now)
			break;
		heap_remove(l, t);
		t->cb(t);
	}
}

/* ---- iteration ---------------------------------------------------- */

int
loop_on_iteration(struct loop *l, void (*cb)(void *arg), void *arg)
{
	struct loop_hook	*nh;

	nh = reallocarray(l->hooks, l->nhooks + 1, sizeof(*nh));
	if (nh == NULL)
		return -1;
	l->hooks = nh;
	l->hooks[l->nhooks].cb = cb;
	l->hooks[l->nhooks].arg = arg;
	l->nhooks++;
	return 0;
}

void
loop_off_iteration(struct loop *l, void (*cb)(void *arg), void *arg)
{
	size_t	i;

	/* Only blanked here: the hooks may be running (by index); the run
	 * drops blank ones once it is done. */
	for (i = 0; l != NULL && i < l->nhooks; i++)
		if (l->hooks[i].cb == cb && l->hooks[i].arg == arg) {
			l->hooks[i].cb = NULL;
			l->hooks_blank = true;
		}
}

static void
loop_dispatch(struct loop *l, struct epoll_event *evs, int n)
{
	struct loop_fd	*lfd;
	uint64_t	 batch_gen = l->gen;
	uint32_t	 revents;
	int		 i;

	for (i = 0; i < n; i++) {
		lfd = evs[i].data.ptr;
		if (!lfd->active || lfd->gen > batch_gen)
			continue;
		/* Interest dropped earlier in this batch is not reported. */
		revents = evs[i].events &
		    (lfd->events | EPOLLERR | EPOLLHUP);
		if (revents != 0)
			lfd->cb(lfd, revents);
	}
}

int
loop_run_once(struct loop *l, int timeout_ms)
{
	struct epoll_event	evs[LOOP_MAX_EVENTS];
	size_t			i, j;
	int			n;

	/* Callbacks and hooks may have taken a while since the last read. */
	loop_now_refresh(l);
	n = epoll_wait(l->epfd, evs, LOOP_MAX_EVENTS, loop_wait_ms(l, timeout_ms));
	loop_now_refresh(l);
	if (n == -1) {
		if (errno != EINTR) {
			log_warn("epoll_wait");
			return -1;
		}
		n = 0;
	}
	loop_dispatch(l, evs, n);
	loop_fire_timers(l);
	/* By index: a hook may register another hook, or drop one. */
	for (i = 0; i < l->nhooks; i++)
		if (l->hooks[i].cb != NULL)
			l->hooks[i].cb(l->hooks[i].arg);
	if (l->hooks_blank) {
		for (i = j = 0; i < l->nhooks; i++)
			if (l->hooks[i].cb != NULL)
				l->hooks[j++] = l->hooks[i];
		l->nhooks = j;
		l->hooks_blank = false;
	}
	return 0;
}

int
loop_run(struct loop *l)
{
	int	rc = 0;

	while (!l->stop) {
		if ((rc = loop_run_once(l, -1)) == -1)
			break;
	}
	l->stop = 0;
	return rc;
}

/* Async-signal-safe: a single store to a sig_atomic_t.  A blocked
 * epoll_wait returns EINTR when the handler runs. */
void
loop_stop(struct loop *l)
{
	l->stop = 1;
}
