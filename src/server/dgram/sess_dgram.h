/*
 * Server side of UDP associations (kind 2) and ICMP echo (kind 3): after
 * the request is authenticated, the session (sess.c) hands its outer
 * stream's traffic to this module, which relays frames (frame.h) to and
 * from datagram sockets.
 *
 * UDP: one unconnected socket per address family, made on first use, so
 * datagrams from any peer reach the client (full cone) framed with their
 * source.  ICMP: one ICMP datagram socket ("ping socket") per family, or
 * a raw socket when net.ipv4.ping_group_range does not include our group
 * (root has CAP_NET_RAW); echo replies go back framed with the responder
 * and the sequence number.  Every destination is checked against the
 * egress policy (egress_allowed_user); denied datagrams are dropped
 * and counted.  A destination that is a domain name is resolved
 * (resolve.h): from the cache at once, or held (bounded) while the name
 * is looked up; it goes to the first of its addresses the policy allows.
 *
 * Bounds: the buffer toward the client holds FRAME_MAX and more; sockets
 * are only read while a largest frame still fits, so a slow client leaves
 * datagrams in the kernel's socket buffer, where they are dropped as UDP
 * is.  Datagrams the kernel will not take at once are dropped too.
 *
 * Memory budget (cfg.mem, the server's max_buffer_memory; NULL: none): the
 * session's own state is charged from its start to its stop, its buffers
 * while they hold data, and datagrams held for names while held.  The
 * session is admitted with sess_dgram_start_size() of room.  A buffer
 * toward the client that the budget refuses drops datagrams (counted in
 * nomem); a buffer from the client that it refuses pauses reading the
 * stream until memory is free, as a relay does.
 *
 * trojan (cfg.trojan, UDP only): the stream carries trojan UDP packets
 * (proto_trojan.h) instead of frames, with no status byte; everything
 * else -- sockets, egress policy, bounds -- is the same.
 *
 * Ownership: the session keeps its outer stream, its registration and its
 * idle timer; this module sets the stream's interest and reports the end
 * through cfg.end.  sess_dgram_stop() closes the sockets (any time, also
 * from within cfg.end); sess_dgram_free() frees the memory and must wait
 * for the end of the loop iteration (an event may still be pending).
 */
#ifndef TUNSPLIT_SESS_DGRAM_H
#define TUNSPLIT_SESS_DGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct conf;
struct conf_egress;
struct limit_mem;
struct loop;
struct loop_fd;
struct outer;
struct resolver;
struct sess_dgram;

struct sess_dgram_cfg {
	struct loop		*loop;
	const struct conf	*conf;
	struct outer		*outer;		/* not owned */
	struct loop_fd		*outer_lfd;	/* registered by the session */
	uint8_t			 kind;		/* PROTO_KIND_UDP or _ICMP */
	bool			 trojan;	/* trojan UDP packets (kind UDP) */
	/* Domain-name destinations (NULL: dropped, counted) and the
	 * user's own egress lists (NULL: the server's only), both kept
	 * alive by the session for the association's lifetime. */
	struct resolver		*resolver;
	const struct conf_egress *egress;
	unsigned long long	 id;		/* the session's, for logs */
	struct limit_mem	*mem;		/* budget; NULL: none */
	/* The association is over (reason static, err an errno or 0).
	 * Called at most once. */
	void			(*end)(void *arg, const char *reason, int err);
	void			*arg;
};

struct sess_dgram_stats {
	uint64_t	 dgrams_up, bytes_up;		/* to targets */
	uint64_t	 dgrams_down, bytes_down;	/* to the client */
	uint64_t	 denied;	/* egress policy */
	uint64_t	 dropped;	/* send failed, unsupported address */
	uint64_t	 nomem;		/* of those, max_buffer_memory */
	uint64_t	 names;		/* to a domain name */
	uint64_t	 unresolved;	/* of those, dropped: no address */
};

/* Budget room a session needs to be admitted: what it may hold at once
 * right after its start. */
size_t sess_dgram_start_size(void);
/* Starts relaying: queues the OK status byte (not for trojan) and keeps
 * early (the bytes that followed the request header) for the first
 * sess_dgram_on_outer().  With early bytes the status waits for the first
 * reply frame, to leave in its record, until sess_dgram_release() (the
 * session's deadline).  NULL on error (logged); the session then answers
 * PROTO_ERR_GENERAL. */
struct sess_dgram *sess_dgram_new(const struct sess_dgram_cfg *cfg,
    const uint8_t *early, size_t early_len);
bool sess_dgram_held(const struct sess_dgram *d);
/* Sends the waiting status alone; may end the session (cfg.end). */
void sess_dgram_release(struct sess_dgram *d);
/* The session's outer stream had an event. */
void sess_dgram_on_outer(struct sess_dgram *d, uint32_t revents);
/* Loop time of the last datagram either way (idle expiry). */
uint64_t sess_dgram_last_io(const struct sess_dgram *d);
const struct sess_dgram_stats *sess_dgram_stats(const struct sess_dgram *d);
void sess_dgram_stop(struct sess_dgram *d);	/* idempotent; accepts NULL */
void sess_dgram_free(struct sess_dgram *d);	/* stops too; accepts NULL */

#endif
