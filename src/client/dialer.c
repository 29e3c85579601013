/*
 * The dialer threads (see dialer.h).
 *
 * A job is in one place at a time, said by its state under the lock:
 * TODO in its thread's queue, RUNNING in that thread's own epoll (its
 * thread alone touches the stream), DONE in the loop's queue or batch.
 * dialer_cancel frees a TODO job at once, marks a RUNNING one for its
 * thread to abort, and clears a DONE one's callback for the loop to
 * abort.  The loop is woken by one eventfd, each thread by its own.
 */
#include "config.h"

#include "client/dialer.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/queue.h>
#include <sys/sysinfo.h>

#include "core/log.h"
#include "core/loop.h"
#include "core/sock.h"
#include "tls/outer.h"

#define DIALER_BATCH	64	/* epoll events per wait */
#define DIALER_IDLE_MS	2000	/* idle after work: trim the malloc cache */

enum dialer_state { DIALER_TODO, DIALER_RUNNING, DIALER_DONE };

struct dialer_thread;

struct dialer_job {
	TAILQ_ENTRY(dialer_job) entry;	/* a thread's todo, or done */
	LIST_ENTRY(dialer_job) run;	/* its thread's running ones */
	struct dialer_thread *t;
	struct outer	*out;
	dialer_cb	*cb;		/* the loop's; NULL: cancelled */
	void		*arg;
	int		 err;
	enum dialer_state state;	/* under the lock */
	bool		 cancelled;	/* under the lock: RUNNING, owner gone */
	bool		 connected;	/* the thread's */
	bool		 gone;		/* the thread's copy of cancelled */
};

TAILQ_HEAD(dialer_queue, dialer_job);

struct dialer_thread {
	pthread_t	 tid;
	bool		 started;
	int		 ep, efd;
	struct dialer_queue todo;	/* under the lock */
	LIST_HEAD(, dialer_job) run;	/* the thread's own */
	unsigned	 load;		/* TODO and RUNNING, under the lock */
	bool		 stop;		/* under the lock */
};

static struct {
	pthread_mutex_t	 lock;
	struct loop	*loop;
	struct loop_fd	 lfd;
	int		 efd;
	struct dialer_thread *t;
	unsigned	 n;
	unsigned	 njobs;		/* in flight: under the lock */
	struct dialer_queue done;	/* under the lock */
	struct dialer_stats st;		/* the loop's */
} dialer = { .lock = PTHREAD_MUTEX_INITIALIZER, .efd = -1 };

static void
dialer_wake(int efd)
{
	uint64_t one = 1;
	ssize_t n;

	/* Only fails when the counter would overflow: awake anyway. */
	do
		n = write(efd, &one, sizeof(one));
	while (n == -1 && errno == EINTR);
}

static void
dialer_job_free(struct dialer_job *j)
{
	outer_abort(j->out);	/* accepts NULL */
	free(j);
}

/* ---- the threads ---------------------------------------------------- */

/* The thread is done with j: its owner's (DONE), or freed if the owner
 * is gone.  err as dialer_cb's. */
static void
dialer_finish(struct dialer_thread *t, struct dialer_job *j, int err)
{
	bool gone, wake = false;

	(void)epoll_ctl(t->ep, EPOLL_CTL_DEL, outer_fd(j->out), NULL);
	LIST_REMOVE(j, run);
	pthread_mutex_lock(&dialer.lock);
	t->load--;
	if (!(gone = j->cancelled)) {
		j->err = err;
		j->state = DIALER_DONE;
		wake = TAILQ_EMPTY(&dialer.done);
		TAILQ_INSERT_TAIL(&dialer.done, j, entry);
	} else
		dialer.njobs--;
	pthread_mutex_unlock(&dialer.lock);
	/* j is the loop's now unless gone: not touched again. */
	if (gone)
		dialer_job_free(j);
	else if (wake)
		dialer_wake(dialer.efd);
}

/* An event on j's socket: the connect, then the handshake's steps. */
static void
dialer_step(struct dialer_thread *t, struct dialer_job *j)
{
	struct epoll_event ev = { .data.ptr = j };
	int err, rc;

	if (!j->connected) {
		if ((err = sock_connect_error(outer_fd(j->out))) != 0) {
			dialer_finish(t, j, err);
			return;
		}
		j->connected = true;
	}
	if ((rc = outer_handshake(j->out)) != 0) {
		dialer_finish(t, j, rc > 0 ? 0 : -1);
		return;
	}
	if ((ev.events = outer_events(j->out)) == 0)
		ev.events = EPOLLIN;
	if (epoll_ctl(t->ep, EPOLL_CTL_MOD, outer_fd(j->out), &ev) == -1)
		dialer_finish(t, j, errno);
}

/* The thread's eventfd: new jobs, cancellations, the stop. */
static bool
dialer_take(struct dialer_thread *t)
{
	struct dialer_queue mine = TAILQ_HEAD_INITIALIZER(mine);
	struct epoll_event ev = { .events = EPOLLOUT };
	struct dialer_job *j, *next;
	uint64_t cnt;
	bool stop;

	(void)!read(t->efd, &cnt, sizeof(cnt));
	pthread_mutex_lock(&dialer.lock);
	TAILQ_CONCAT(&mine, &t->todo, entry);
	TAILQ_FOREACH(j, &mine, entry)
		j->state = DIALER_RUNNING;
	LIST_FOREACH(j, &t->run, run)
		j->gone = j->cancelled;
	stop = t->stop;
	pthread_mutex_unlock(&dialer.lock);
	for (j = LIST_FIRST(&t->run); j != NULL; j = next) {
		next = LIST_NEXT(j, run);
		if (j->gone || stop)
			dialer_finish(t, j, ECANCELED);
	}
	while ((j = TAILQ_FIRST(&mine)) != NULL) {
		TAILQ_REMOVE(&mine, j, entry);
		LIST_INSERT_HEAD(&t->run, j, run);
		ev.data.ptr = j;
		if (stop || epoll_ctl(t->ep, EPOLL_CTL_ADD, outer_fd(j->out),
		    &ev) == -1)
			dialer_finish(t, j, stop ? ECANCELED : errno);
	}
	return stop;
}

static void *
dialer_main(void *arg)
{
	struct dialer_thread *t = arg;
	struct epoll_event ev[DIALER_BATCH];
	bool woke, stop = false, busy = false;
	int i, n;

	while (!stop) {
		/* Idle for a while after work: this thread's malloc cache
		 * holds what the handshakes freed; let the loop's trims
		 * have it. */
		if ((n = epoll_wait(t->ep, ev, DIALER_BATCH,
		    busy ? DIALER_IDLE_MS : -1)) == -1) {
			if (errno == EINTR)
				continue;
			fatal("dialer: epoll_wait");
		}
		if ((busy = n > 0) == false)
			loop_trim_thread_cache();
		woke = false;
		for (i = 0; i < n; i++) {
			if (ev[i].data.ptr == NULL)
				woke = true;
			else
				dialer_step(t, ev[i].data.ptr);
		}
		if (woke)
			stop = dialer_take(t);
	}
	return NULL;
}

/* ---- the loop's side ------------------------------------------------- */

static void
dialer_on_done(struct loop_fd *lfd, uint32_t revents)
{
	struct dialer_queue ready = TAILQ_HEAD_INITIALIZER(ready);
	struct dialer_job *j;
	struct outer *out;
	uint64_t cnt;

	(void)lfd;
	(void)revents;
	(void)!read(dialer.efd, &cnt, sizeof(cnt));
	pthread_mutex_lock(&dialer.lock);
	TAILQ_CONCAT(&ready, &dialer.done, entry);
	pthread_mutex_unlock(&dialer.lock);
	/* A callback may cancel a job further down (it is DONE: that only
	 * clears its cb) or submit new ones (they go elsewhere). */
	while ((j = TAILQ_FIRST(&ready)) != NULL) {
		TAILQ_REMOVE(&ready, j, entry);
		pthread_mutex_lock(&dialer.lock);
		dialer.njobs--;
		pthread_mutex_unlock(&dialer.lock);
		dialer.st.active--;
		if (j->cb != NULL && j->err == 0) {
			dialer.st.ready++;
			if (outer_session_reused(j->out))
				dialer.st.resumed++;
		}
		else if (j->cb != NULL)
			dialer.st.failed++;
		if (j->cb == NULL || j->err != 0) {
			if (j->cb != NULL)
				j->cb(j->arg, NULL, j->err);
			dialer_job_free(j);
			continue;
		}
		out = j->out;
		j->out = NULL;
		j->cb(j->arg, out, 0);
		free(j);
	}
}

struct dialer_job *
dialer_submit(struct outer *out, dialer_cb *cb, void *arg)
{
	struct dialer_thread *t = NULL;
	struct dialer_job *j;
	unsigned i;
	bool wake;

	if (dialer.n == 0 || (j = calloc(1, sizeof(*j))) == NULL)
		return NULL;
	j->out = out;
	j->cb = cb;
	j->arg = arg;
	pthread_mutex_lock(&dialer.lock);
	if (dialer.njobs >= DIALER_MAX) {
		pthread_mutex_unlock(&dialer.lock);
		free(j);
		dialer.st.declined++;
		return NULL;
	}
	for (i = 0; i < dialer.n; i++)	/* the least busy */
		if (t == NULL || dialer.t[i].load < t->load)
			t = &dialer.t[i];
	j->t = t;
	j->state = DIALER_TODO;
	wake = TAILQ_EMPTY(&t->todo);
	TAILQ_INSERT_TAIL(&t->todo, j, entry);
	t->load++;
	dialer.njobs++;
	pthread_mutex_unlock(&dialer.lock);
	dialer.st.active++;
	if (wake)
		dialer_wake(t->efd);
	return j;
}

void
dialer_cancel(struct dialer_job *j)
{
	bool now = false;

	if (j == NULL)
		return;
	j->cb = NULL;
	dialer.st.cancelled++;
	pthread_mutex_lock(&dialer.lock);
	switch (j->state) {
	case DIALER_TODO:
		TAILQ_REMOVE(&j->t->todo, j, entry);
		j->t->load--;
		dialer.njobs--;
		dialer.st.active--;
		now = true;
		break;
	case DIALER_RUNNING:	/* its thread frees it */
		j->cancelled = true;
		dialer.st.active--;
		dialer_wake(j->t->efd);
		break;
	case DIALER_DONE:	/* the loop frees it (cb NULL) */
		break;
	}
	pthread_mutex_unlock(&dialer.lock);
	if (now)
		dialer_job_free(j);
}

const struct dialer_stats *
dialer_stats(void)
{
	dialer.st.threads = dialer.n;
	return &dialer.st;
}

static int
dialer_thread_open(struct dialer_thread *t)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	sigset_t all, old;
	int rc;

	TAILQ_INIT(&t->todo);
	LIST_INIT(&t->run);
	t->efd = -1;
	if ((t->ep = epoll_create1(EPOLL_CLOEXEC)) == -1 ||
	    (t->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) == -1 ||
	    epoll_ctl(t->ep, EPOLL_CTL_ADD, t->efd, &ev) == -1)
		return -1;
	/* Signals are the loop's (daemon_signals.c). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&t->tid, NULL, dialer_main, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	t->started = true;
	return 0;
}

int
dialer_start(struct loop *l, unsigned threads)
{
	unsigned cpus = (unsigned)(get_nprocs() > 0 ? get_nprocs() : 1);
	unsigned i, n;

	n = threads < cpus ? threads : cpus;
	n = n < DIALER_THREADS_MAX ? n : DIALER_THREADS_MAX;
	if (n == 0 || dialer.t != NULL)
		return 0;
	dialer.loop = l;
	TAILQ_INIT(&dialer.done);
	if ((dialer.t = calloc(n, sizeof(*dialer.t))) == NULL ||
	    (dialer.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) == -1 ||
	    loop_fd_add(l, &dialer.lfd, dialer.efd, EPOLLIN,
	    dialer_on_done) == -1)
		goto fail;
	for (i = 0; i < n; i++) {
		dialer.t[i].ep = -1;
		if (dialer_thread_open(&dialer.t[i]) == -1) {
			dialer.n = i + 1;	/* closes what it opened */
			goto fail;
		}
	}
	dialer.n = n;
	log_debug("dialer: %u threads for the outer handshakes", n);
	return 0;
fail:
	log_warn("dialer: cannot start its threads; handshakes stay on "
	    "the loop");
	dialer_stop();
	return -1;
}

void
dialer_stop(void)
{
	struct dialer_thread *t;
	struct dialer_job *j;
	unsigned i;

	for (i = 0; i < dialer.n; i++) {
		t = &dialer.t[i];
		if (!t->started)
			continue;
		pthread_mutex_lock(&dialer.lock);
		t->stop = true;
		pthread_mutex_unlock(&dialer.lock);
		dialer_wake(t->efd);
		pthread_join(t->tid, NULL);
	}
	for (i = 0; i < dialer.n; i++) {
		t = &dialer.t[i];
		while ((j = TAILQ_FIRST(&t->todo)) != NULL) {
			TAILQ_REMOVE(&t->todo, j, entry);
			dialer_job_free(j);
		}
		if (t->efd != -1)
			close(t->efd);
		if (t->ep != -1)
			close(t->ep);
	}
	while ((j = TAILQ_FIRST(&dialer.done)) != NULL) {
		TAILQ_REMOVE(&dialer.done, j, entry);
		dialer_job_free(j);
	}
	if (dialer.loop != NULL)
		loop_fd_del(dialer.loop, &dialer.lfd);
	if (dialer.efd != -1)
		close(dialer.efd);
	free(dialer.t);
	dialer.t = NULL;
	dialer.n = 0;
	dialer.njobs = 0;
	memset(&dialer.st, 0, sizeof(dialer.st));
	dialer.efd = -1;
	dialer.loop = NULL;
}
