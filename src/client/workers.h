/*
 * The client's worker processes (client.workers > 1; the default is 1).
 *
 * lwIP keeps its state in globals, so one process runs one lwIP: a
 * client with N workers is N processes, each today's client (its loop,
 * lwIP, flows, pools, dialer threads) on its own queue of one
 * multi-queue TUN device.  The kernel steers (tun_steer, tun/tun.h):
 * every packet to port 53 and everything that is not plain TCP or UDP
 * to queue 0; the rest by its addresses and ports, so a flow stays on
 * one queue.  Worker 0 is the main process: it alone answers DNS and so
 * issues fake IPs and learns names, serves the control socket, reads
 * the signals, and holds the pid file and the routes.
 *
 * Worker 0 forks the others at start, before anything of its own is
 * made (a loop, threads, lwIP, OpenSSL contexts), and talks to each over
 * one SOCK_SEQPACKET socketpair.  Worker 0 tells them of every name it
 * issues or learns BEFORE the DNS answer leaves (so the news is in the
 * worker's socket before the app can send its first packet to the
 * address), and a worker that finds an address without a name reads its
 * socket before deciding (workers_poll).  Reload, drain, stop and select
 * travel the same way; a status snapshot comes back in chunks.  Health
 * news (group.h: the evidence a flow recorded on a group's member) goes
 * from any worker to all: the others send theirs to worker 0, which
 * takes it in and passes it on, since workers have sockets only to
 * worker 0.
 *
 * A worker that dies while the client is not draining stops the client
 * (exit 1): its queue and its flows are gone, and a supervisor restarts
 * the whole.  A worker whose main process dies drains and ends.
 * Messages to a worker that does not read for WORKERS_SEND_MS are
 * dropped and counted, never queued without bound; health news is never
 * waited for (a full socket drops it at once, counted).
 */
#ifndef TUNSPLIT_WORKERS_H
#define TUNSPLIT_WORKERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WORKERS_MAX	64
#define WORKERS_SEND_MS	100	/* a worker's full socket: wait, then drop */
#define WORKERS_ASK_MS	2000	/* a status snapshot: then without it */

struct loop;
struct workers;

/* What a process does with its peers' messages (all on its loop; the
 * ones marked later run from a loop event, never inside a look-up). */
struct workers_ops {
	/* In workers 1..N-1, from worker 0. */
	void	(*fake)(void *arg, uint32_t slot, const char *name);
	void	(*learn)(void *arg, const uint8_t *msg, size_t len);
	void	(*select)(void *arg, const char *group, const char *member);
	/* An ICMPv6 Packet Too Big's quote (its first 40 bytes) and MTU
	 * (tsnetif_ptb6). later */
	void	(*ptb6)(void *arg, const uint8_t *quote, size_t qlen,
		    unsigned mtu);
	void	(*reload)(void *arg);			/* later */
	void	(*drain)(void *arg);			/* later */
	void	(*stop)(void *arg);			/* later */
	/* The snapshot (status_pack) to send back: 0, or -1. later */
	int	(*status)(void *arg, bool flows, uint8_t **buf, size_t *len);
	/* In every worker: health news (len bytes, untrusted) from worker
	 * from, another than this one. */
	void	(*health)(void *arg, unsigned from, const uint8_t *news,
		    size_t len);
	/* In worker 0: worker i ended (waitpid status, -1 unknown). */
	void	(*ended)(void *arg, unsigned i, int wstatus);
	void	*arg;
};

/*
 * Forks workers 1..n-1 (n <= WORKERS_MAX); fds[i] is the TUN queue of
 * worker i.  Returns the index of the calling process's worker (0 in the
 * main process) with *wp set; workers 1..n-1 keep only their own queue
 * fd (the others are closed and set to -1), worker 0 keeps them all,
 * reading only its own (tun.h: a queue closed renumbers the others);
 * or -1 (logged) when
 * nothing could be forked: no worker runs then, and the fds are as they
 * were.
 */
int  workers_fork(struct workers **wp, int *fds, unsigned n);
/* Starts reading the peers on loop l (after workers_fork, in each). */
int  workers_start(struct workers *w, struct loop *l,
    const struct workers_ops *ops);
unsigned workers_self(const struct workers *w);
unsigned workers_count(const struct workers *w);
/* Another worker: 1 while worker 0 is there, else 0 (worker 0: 0). */
unsigned workers_led(const struct workers *w);
/* Messages worker 0 could not deliver (a worker not reading). */
uint64_t workers_dropped(const struct workers *w);

/* Worker 0: tells every other worker. */
void workers_send_fake(struct workers *w, uint32_t slot, const char *name);
void workers_send_learn(struct workers *w, const uint8_t *msg, size_t len);
void workers_send_select(struct workers *w, const char *group,
    const char *member);
void workers_send_ptb6(struct workers *w, const uint8_t *quote, size_t qlen,
    unsigned mtu);
void workers_send_reload(struct workers *w);
/* Any worker: health news (group.h) to every other. */
void workers_send_health(struct workers *w, const void *news, size_t len);
void workers_send_drain(struct workers *w);
void workers_send_stop(struct workers *w);
/*
 * Worker 0: worker i's snapshot, waited for up to WORKERS_ASK_MS (the
 * loop does not run meanwhile): 0 with a malloc'd *buf, or -1 (ended,
 * not answering, no memory).
 */
int  workers_ask_status(struct workers *w, unsigned i, bool flows,
    uint8_t **buf, size_t *len);

/* Workers 1..N-1: takes in what worker 0 sent so far (fake, learn and
 * select at once; the rest is left for the loop).  True if anything
 * was taken in. */
bool workers_poll(struct workers *w);
/* Any worker: takes in the health news sent to it so far (in worker 0
 * from each other worker's socket, passing it on; elsewhere up to the
 * first message that is no news).  The rest is left for the loop. */
void workers_poll_news(struct workers *w);

/* At the end, in each process: worker 0 tells the others to stop and
 * waits up to wait_ms for them (then kills them); the others just let
 * go.  Frees w. */
void workers_end(struct workers *w, unsigned wait_ms);

#endif
