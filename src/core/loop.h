/*
 * The only event loop: epoll (level-triggered) for fds, a binary heap of
 * millisecond timers, and per-iteration hooks.  Single-threaded; a loop is
 * owned by the thread that runs it.
 *
 * Registrations are embedded in their owner (struct loop_fd, struct
 * loop_timer) and found back with container_of.  An fd callback may delete
 * any registration, including its own and ones with events still pending in
 * the current batch: deleted registrations get no further callbacks in that
 * batch.  Owners must still not free() a registration that has an event
 * pending in the current batch -- free at the end of the iteration (see
 * loop_defer).
 */
#ifndef TUNSPLIT_LOOP_H
#define TUNSPLIT_LOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

struct loop;

struct loop_fd {
	int		 fd;
	uint32_t	 events;	/* EPOLLIN | EPOLLOUT, as registered */
	void		(*cb)(struct loop_fd *lfd, uint32_t revents);
	uint64_t	 gen;		/* loop internal */
	bool		 active;	/* loop internal */
};

struct loop_timer {
	uint64_t	 when_ms;	/* loop internal */
	size_t		 heap_idx;	/* loop internal; SIZE_MAX when not armed */
	void		(*cb)(struct loop_timer *t);
};

struct loop *loop_new(void);
void loop_free(struct loop *l);

/* Monotonic milliseconds (cached per iteration; loop_now_refresh updates). */
uint64_t loop_now(struct loop *l);
uint64_t loop_now_refresh(struct loop *l);

int  loop_fd_add(struct loop *l, struct loop_fd *lfd, int fd, uint32_t events,
    void (*cb)(struct loop_fd *, uint32_t));
/* No syscall when events are unchanged. */
int  loop_fd_mod(struct loop *l, struct loop_fd *lfd, uint32_t events);
void loop_fd_del(struct loop *l, struct loop_fd *lfd);	/* accepts inactive */
/*
 * Sets the interest of a relayed fd that may hang up.  epoll reports
 * EPOLLHUP whatever the interest, so while its owner cannot take that fd's
 * input the level-triggered hang-up would wake the loop again and again:
 * with ev == 0 after a hang-up the fd is parked (taken out of the loop,
 * *parked set) until there is something to wait for.  0 or -1.
 */
int  loop_fd_watch(struct loop *l, struct loop_fd *lfd, int fd, bool *parked,
    uint32_t ev, uint32_t revents, void (*cb)(struct loop_fd *, uint32_t));

void loop_timer_init(struct loop_timer *t, void (*cb)(struct loop_timer *));
void loop_timer_set(struct loop *l, struct loop_timer *t, uint64_t after_ms);
void loop_timer_cancel(struct loop *l, struct loop_timer *t);	/* idempotent */
bool loop_timer_armed(const struct loop_timer *t);

/* Called once at the end of every iteration, after fds and timers, in
 * registration order (e.g. reap closed flows, flush TUN writes). */
int  loop_on_iteration(struct loop *l, void (*cb)(void *arg), void *arg);
/* Drops the hook (cb, arg): it runs no more, from now on. */
void loop_off_iteration(struct loop *l, void (*cb)(void *arg), void *arg);

/* Every interval_ms, hand freed heap memory back to the kernel
 * (malloc_trim, when there is some worth it): flows come and go in
 * bursts, and the allocator would otherwise keep the high-water mark
 * resident forever. */
void loop_trim_memory(struct loop *l, unsigned interval_ms);
/* Much was just freed (flows reaped): trim once the frees have settled
 * (half a second without another hint), not at the next interval, and
 * again 1, 2, 4 ... s later for what the flows' end still frees, so that
 * a router has its memory back right after a burst.  Nothing if
 * loop_trim_memory was not called. */
void loop_trim_hint(struct loop *l);

/* The calling thread's malloc cache swapped for chunks next to what is
 * live, so that a trim can give back the pages the cached ones kept
 * (loop_trim_memory does it on its loop's thread): for a thread that
 * frees much and runs no loop, once it is idle.  Nothing under a
 * sanitizer. */
void loop_trim_thread_cache(void);

/* Run until loop_stop(); returns 0, or -1 on an epoll failure. */
int  loop_run(struct loop *l);
void loop_stop(struct loop *l);
/* One iteration with at most timeout_ms of waiting (tests). */
int  loop_run_once(struct loop *l, int timeout_ms);

#endif
