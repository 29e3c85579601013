/*
 * The server's workers as threads: each runs its own loop; the main
 * thread (which runs worker 0) reaches the others only through
 * server_worker_call(), a synchronous call run on the worker's thread
 * between two of its events -- for the rare things: a reload, the drain,
 * a status snapshot, the stop.  Nothing on the data path crosses threads
 * but the shared counts of core/limit.h.
 */
#include "config.h"

#include "server/server_int.h"

#include <sys/eventfd.h>
#include <sys/epoll.h>

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"

#define SERVER_POLL_MS		20	/* while waiting on another worker */

/* At the end of each iteration: the counts the other workers judge
 * max_conns with and the drain its end with, and the poll while this
 * worker waits for something another one may free. */
static void
server_worker_publish(void *arg)
{
	struct worker	*w = arg;
	struct server	*srv = w->srv;
	bool		 poll;

	atomic_store_explicit(&w->live, w->env.nlive + w->nwaiting,
	    memory_order_relaxed);
	poll = w->nwaiting > 0 || limit_mem_waiting(&srv->lim.mem) ||
	    limit_mem_waiting(&srv->lim.cover_mem) ||
	    (w->idx == 0 && srv->draining && srv->nworkers > 1);
	if (poll && !loop_timer_armed(&w->poll_timer))
		loop_timer_set(w->loop, &w->poll_timer, SERVER_POLL_MS);
}

size_t
server_live_all(const struct server *srv)
{
	size_t		 n = 0;
	unsigned	 i;

	for (i = 0; i < srv->nworkers; i++)
		n += atomic_load_explicit(&srv->w[i].live,
		    memory_order_relaxed);
	return n;
}

static void
server_worker_on_call(struct loop_fd *lfd, uint32_t revents)
{
	struct worker	*w = container_of(lfd, struct worker, call_lfd);
	void		(*fn)(struct worker *, void *);
	void		*arg;
	uint64_t	 v;

	(void)revents;
	if (read(lfd->fd, &v, sizeof(v)) == -1 && errno != EAGAIN)
		log_warn("worker %u: eventfd", w->idx);
	pthread_mutex_lock(&w->call_lock);
	fn = w->call_fn;
	arg = w->call_arg;
	pthread_mutex_unlock(&w->call_lock);
	if (fn == NULL)
		return;
	fn(w, arg);
	pthread_mutex_lock(&w->call_lock);
	w->call_fn = NULL;
	w->call_done = true;
	pthread_cond_signal(&w->call_cond);
	pthread_mutex_unlock(&w->call_lock);
}

int
server_worker_init(struct worker *w)
{
	int	 fd;

	pthread_mutex_init(&w->call_lock, NULL);
	pthread_cond_init(&w->call_cond, NULL);
	if ((fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) == -1 ||
	    loop_fd_add(w->loop, &w->call_lfd, fd, EPOLLIN,
	    server_worker_on_call) == -1) {
		log_warn("worker %u: eventfd", w->idx);
		if (fd != -1)
			close(fd);
		return -1;
	}
	if (loop_on_iteration(w->loop, server_worker_publish, w) == -1) {
		log_warnx("worker %u: cannot register the publisher", w->idx);
		return -1;
	}
	return 0;
}

void
server_worker_fini(struct worker *w)
{
	if (w->call_lfd.active) {
		loop_fd_del(w->loop, &w->call_lfd);
		close(w->call_lfd.fd);
		pthread_mutex_destroy(&w->call_lock);
		pthread_cond_destroy(&w->call_cond);
	}
	loop_timer_cancel(w->loop, &w->poll_timer);
}

static void *
server_worker_main(void *arg)
{
	struct worker	*w = arg;

	limit_set_slot(w->idx);
	if (loop_run(w->loop) == -1) {
		/* Its listeners would fill with connections nobody takes:
		 * the whole server drains instead. */
		log_warn("worker %u: event loop (draining the server)", w->idx);
		(void)kill(getpid(), SIGTERM);
	}
	/* From here on its objects are the main thread's: a call runs
	 * there (server_worker_call). */
	pthread_mutex_lock(&w->call_lock);
	w->call_dead = true;
	pthread_cond_signal(&w->call_cond);
	pthread_mutex_unlock(&w->call_lock);
	return NULL;
}

int
server_worker_start(struct worker *w)
{
	int	 err;

	if ((err = pthread_create(&w->thread, NULL, server_worker_main,
	    w)) != 0) {
		errno = err;
		log_warn("worker %u: thread", w->idx);
		return -1;
	}
	w->threaded = true;
	return 0;
}

void
server_worker_call(struct worker *w, void (*fn)(struct worker *, void *),
    void *arg)
{
	uint64_t	 one = 1;

	if (!w->threaded) {
		fn(w, arg);
		return;
	}
	pthread_mutex_lock(&w->call_lock);
	w->call_fn = fn;
	w->call_arg = arg;
	w->call_done = false;
	pthread_mutex_unlock(&w->call_lock);
	if (write(w->call_lfd.fd, &one, sizeof(one)) == -1)
		log_warn("worker %u: eventfd", w->idx);
	pthread_mutex_lock(&w->call_lock);
	while (!w->call_done && !w->call_dead)
		pthread_cond_wait(&w->call_cond, &w->call_lock);
	if (!w->call_done) {		/* its loop ended: not taken */
		w->call_fn = NULL;
		pthread_mutex_unlock(&w->call_lock);
		fn(w, arg);
		return;
	}
	pthread_mutex_unlock(&w->call_lock);
}

static void
server_worker_stop(struct worker *w, void *arg)
{
	(void)arg;
	loop_stop(w->loop);
}

void
server_worker_join(struct worker *w)
{
	if (!w->threaded)
		return;
	server_worker_call(w, server_worker_stop, NULL);
	pthread_join(w->thread, NULL);
	w->threaded = false;
}
