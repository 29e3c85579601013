/*
 * A bidirectional byte relay between an outer stream and a plain stream
 * socket, with one bounded buffer per direction (allocated on first use,
 * released whenever it drains, so an idle relay holds no buffers).
 *
 * Pure I/O, no loop: the owner keeps both fds registered, calls relay_run()
 * on any event of either fd (with the events) and then sets the interest
 * of each fd to relay_outer_events() / relay_fd_events().  A side whose
 * last read would have blocked is read again only once an event of its
 * fd says so (level-triggered: what is unread is reported again).  A side is read only while the
 * buffer toward the other side has room, so memory stays bounded however
 * slow either peer is.
 *
 * Half-close: end of stream on one side becomes shutdown of the other
 * side's write direction once the buffer toward it is flushed.  The relay
 * is done when both directions have finished and flushed.
 */
#ifndef TUNSPLIT_RELAY_H
#define TUNSPLIT_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "tls/outer.h"

struct httpframe;
struct limit_mem;
struct outer;

/* 64 KiB less 8 bytes: a full buffer is exactly one outer_write of
 * OUTER_WRITE_CHUNKS full chunks (or four records unframed), not that
 * and a chunk of 8 bytes in a record and a send of their own. */
#define RELAY_BUF_SIZE	(OUTER_WRITE_CHUNKS * OUTER_CHUNK_MAX)

enum relay_state {
	RELAY_RUNNING = 0,	/* waiting for events */
	RELAY_DONE,		/* both directions finished and flushed */
	RELAY_OUTER_FAILED,	/* outer reset or error (errno in err) */
	RELAY_FD_FAILED,	/* fd reset or error (errno in err) */
};

struct relay {
	struct outer	*outer;		/* not owned */
	int		 fd;		/* not owned; -1: no fd side */
	struct buf	 to_fd;		/* outer -> fd */
	struct buf	 to_outer;	/* fd -> outer */
	uint64_t	 bytes_to_fd;
	uint64_t	 bytes_to_outer;
	uint32_t	 outer_rd_ev;	/* what a blocked outer read waits for */
	uint32_t	 outer_wr_ev;	/* what a blocked outer write waits for */
	int		 err;
	bool		 outer_eof;	/* outer read side finished */
	bool		 fd_eof;	/* fd read side finished */
	bool		 outer_shut;	/* outer write side shut */
	bool		 fd_shut;	/* fd write side shut */
	bool		 outer_rd_idle;	/* its last read would block: wait */
	bool		 fd_rd_idle;	/* for an event before the next */
	/* nginx's close (the cover site): when the fd side ends before it
	 * sent a byte (a timeout), after the outer side ended, or (frame)
	 * amid a request, the relay is done without close_notify; the
	 * owner then closes. */
	bool		 quiet;
	bool		 hold_outer;	/* to_outer waits (relay_hold_outer) */
	struct httpframe *frame;	/* records end as nginx's (or NULL) */
	bool		 frame_held;	/* to_outer waits for the rest */
};

/* Buffers only (nothing allocated yet): before relay_start the owner may
 * queue bytes, e.g. a status byte in to_outer or early data in to_fd. */
void relay_init(struct relay *r, size_t bufsz);
/* Starts relaying.  fd -1: there is no fd side -- outer input is read and
 * discarded, and the outer write side is shut once to_outer is flushed
 * (answer, then close gracefully). */
void relay_start(struct relay *r, struct outer *o, int fd);
/* Moves bytes both ways until every side would block.  oev, fev: the
 * events that woke the owner on each fd (0: none). */
enum relay_state relay_run(struct relay *r, uint32_t oev, uint32_t fev);
uint32_t relay_outer_events(const struct relay *r);
uint32_t relay_fd_events(const struct relay *r);
void relay_free(struct relay *r);	/* buffers; counters stay readable */
/*
 * Holds what is queued toward the outer side (the status byte) until the
 * fd side's first bytes or its end of stream join it, so that both leave
 * in one TLS record, or until relay_release_outer().  Bytes read from the
 * fd are never held: they release what waits.
 */
void relay_hold_outer(struct relay *r);
void relay_release_outer(struct relay *r);
bool relay_outer_held(const struct relay *r);
/*
 * Charges both buffers to a memory budget.  A side whose buffer the budget
 * refuses is not read (no data is lost: it waits in the socket or in TLS)
 * and relay_starved() says so; the owner queues a waiter and runs the
 * relay again when memory is free.
 */
void relay_set_budget(struct relay *r, struct limit_mem *m);
bool relay_starved(const struct relay *r);
/*
 * The cover site's relay: TLS records toward the outer side end where
 * nginx's would (httpframe.h), the fd side being an HTTP/1.x server.
 * -1: out of memory (the relay writes what it reads, as without).
 */
int relay_frame_http(struct relay *r);

#endif
