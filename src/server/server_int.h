/*
 * Private to src/server/: the server and its workers, shared by
 * server.c (listeners, accepting, reload), server_worker.c (the threads
 * and the main thread's calls into them) and server_status.c.
 *
 * Threading model (doc/DESIGN.md, "One loop per core on the server"):
 * server.workers loops, each a struct worker with its own SO_REUSEPORT
 * listeners, sessions, cover bridges and resolver.  Worker 0 runs on the
 * main thread, which also owns the signals, the control socket, the
 * host's address list and the drain; the others run on threads of their
 * own.  What all share is in struct server: the limits (atomic counts,
 * core/limit.h), the user table and replay cache (locked, users.c), the
 * TLS context (one SSL_CTX: its ticket keys resume on any worker) and the
 * configuration generations (reference counts are atomic).
 */
#ifndef TUNSPLIT_SERVER_INT_H
#define TUNSPLIT_SERVER_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include "conf/conf.h"
#include "core/limit.h"
#include "core/loop.h"
#include "daemon/daemon.h"
#include "server/resolve.h"
#include "server/sess/sess.h"

#define SERVER_WORKERS_MAX	LIMIT_SLOTS

struct status_fill;
struct worker;
struct waiting;
TAILQ_HEAD(waiting_queue, waiting);

struct listener {
	struct worker		*w;
	struct loop_fd		 lfd;
};

struct worker {
	struct server		*srv;
	unsigned		 idx;
	const struct conf	*conf;		/* the generation it admits with */
	struct loop		*loop;
	struct sess_env		 env;
	struct listener		 listeners[CONF_MAX_LISTEN];
	size_t			 nlisteners;
	struct loop_timer	 accept_timer;
	uint64_t		 emfile_log_ms;
	struct cover		*cover;		/* cover site for probes */
	struct waiting_queue	 waiting;	/* oldest first */
	size_t			 nwaiting;
	uint64_t		 waiting_seen;	/* env.preauth_ended then */
	struct loop_timer	 waiting_timer;	/* the oldest one's deadline */
	/* Another worker may free what this one waits for (memory, a
	 * source's preauth turn) without waking this loop: polled. */
	struct loop_timer	 poll_timer;
	_Atomic size_t		 live;		/* env.nlive + nwaiting, as of
						 * the end of its last iteration */
	size_t			 held;		/* its counts in lim.conns */
	/* The main thread's calls (server_worker.c). */
	pthread_t		 thread;
	bool			 threaded;	/* runs on a thread of its own */
	struct loop_fd		 call_lfd;	/* eventfd */
	pthread_mutex_t		 call_lock;
	pthread_cond_t		 call_cond;
	void			(*call_fn)(struct worker *, void *);
	void			*call_arg;
	bool			 call_done;
	bool			 call_dead;	/* its loop ended */
};

struct server {
	const struct conf	*conf;		/* main thread: the live one */
	struct worker		*w;		/* w[0]: the main thread's */
	unsigned		 nworkers;
	struct ssl_ctx_st	*ctx;		/* the live TLS context */
	struct users		*auth;		/* users, replay cache */
	struct limit_server	 lim;		/* per source, per user, memory */
	struct control		*ctl;		/* status socket, metrics */
	struct daemon_drain	 drain;		/* SIGTERM */
	struct daemon_signals	 sig;		/* SIGHUP, SIGINT, SIGTERM */
	struct loop_fd		 ifaddr_lfd;	/* address changes (netlink) */
	struct loop_timer	 ifaddr_timer;	/* or a poll without it */
	bool			 draining;
	/* The workers' counters summed for one status (main thread). */
	struct sess_stats	 agg;
	struct resolve_stats	 agg_res;
};

/* server.workers resolved: 0 is the number of online CPUs. */
unsigned server_workers_count(const struct conf *c);
/* Sets up w's event fd and iteration hooks (before its loop runs). */
int  server_worker_init(struct worker *w);
void server_worker_fini(struct worker *w);
/* Runs w's loop on a thread of its own. */
int  server_worker_start(struct worker *w);
/* Stops a started worker's loop and joins its thread. */
void server_worker_join(struct worker *w);
/* Runs fn(w, arg) on w's thread and returns once it ran (at once for
 * worker 0 or a worker not started).  Main thread only. */
void server_worker_call(struct worker *w,
    void (*fn)(struct worker *, void *), void *arg);
/* Live sessions and waiting connections of every worker (published). */
size_t server_live_all(const struct server *srv);

/* The server's part of a snapshot (control_role.fill), all workers. */
void server_status_fill(struct server *srv, struct status_fill *sf);

#endif
