/*
 * The dialer threads: the outer TLS connections' TCP connect and TLS
 * handshake, off the TUN loop.  A handshake costs the client an X25519
 * exchange and, when it is not resumed, the certificate's verification:
 * done on the loop, a burst of new connections waits on them one after
 * another while lwIP, the relay and every other flow wait too.
 *
 * The loop makes the socket (so an immediate refusal is still known at
 * once) and the stream (outer_new), and hands it over with
 * dialer_submit(); a dialer thread waits for the connect, runs the
 * handshake in its own epoll, and hands the stream back, ready, through
 * the loop's eventfd: the owner's callback then runs on the loop, in an
 * fd event like any other.  No thread but the loop ever sees the owner.
 *
 * One dialer per process, the client's (client.dial_threads threads, at
 * most the online CPUs), started before the first flow and stopped after
 * the last owner is gone.  Until then, and when DIALER_MAX dials are in
 * flight, dialer_submit() declines and the owner handshakes on its loop
 * as before.  Every queue is bounded by DIALER_MAX.
 *
 * Cancellation: an owner that ends before its callback (a flow reset or
 * timed out, a pool closed by a reload or the shutdown) calls
 * dialer_cancel(); the stream is then aborted and freed by whichever side
 * holds it, and the callback never runs.  The TLS session cache the
 * handshakes resume from is the context's, locked (outer_ctx.c).
 */
#ifndef TUNSPLIT_DIALER_H
#define TUNSPLIT_DIALER_H

#include <stdbool.h>
#include <stdint.h>

struct loop;
struct outer;
struct dialer_job;

#define DIALER_MAX	1024	/* dials in flight, all threads */
#define DIALER_THREADS_MAX 16

/*
 * The end of a dial, on the loop: out is the stream, handshake done (the
 * owner's from now on), or NULL: err > 0 the TCP connect failed with
 * that errno, err < 0 the TLS handshake failed.  The job is gone once
 * the callback runs: the owner forgets it first.
 */
typedef void dialer_cb(void *arg, struct outer *out, int err);

/* threads dialer threads (0: none, everything stays on the loop; capped
 * at the online CPUs and DIALER_THREADS_MAX) answering on l.  0, or -1
 * (logged; the client dials on its loop). */
int  dialer_start(struct loop *l, unsigned threads);
/* Joins the threads and frees what is left, callbacks not run.  After
 * every owner has cancelled its dials. */
void dialer_stop(void);

/* The loop's counts (status): dials handed back ready (resumed: of
 * those, on a session ticket) or failed, cancelled by their owner,
 * declined (full: done on the loop). */
struct dialer_stats {
	unsigned	 threads;
	unsigned	 active;
	uint64_t	 ready, resumed, failed, cancelled, declined;
};
const struct dialer_stats *dialer_stats(void);
/* Hands out (a client TLS stream on a socket connecting or connected,
 * handshake not started) to a thread: the job, or NULL when the dialer is
 * not running or full (out is still the caller's). */
struct dialer_job *dialer_submit(struct outer *out, dialer_cb *cb,
    void *arg);
/* The owner is gone: the stream is aborted, the callback never runs.
 * NULL ok. */
void dialer_cancel(struct dialer_job *j);

#endif
