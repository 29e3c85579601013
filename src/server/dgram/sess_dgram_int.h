/*
 * Private to the server's datagram sessions: sess_dgram.c (sockets,
 * datagrams to addresses, datagrams back to the client, the stream from
 * the client, lifetime) and sess_dgram_name.c (datagrams to domain names:
 * looked up, held while they are, sent to an allowed address).  See
 * sess_dgram.h for the rules.
 */
#ifndef TUNSPLIT_SESS_DGRAM_INT_H
#define TUNSPLIT_SESS_DGRAM_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "core/addr.h"
#include "core/buf.h"
#include "core/limit.h"
#include "core/loop.h"
#include "server/dgram/sess_dgram.h"

#define SD_ECHO_RING	64		/* echo send times kept, for the log */
#define SD_BATCH	64		/* UDP datagrams per sendmmsg() */
#define SD_NAMES_PENDING 4		/* names being looked up at once */

struct proto_dest;
struct resolve_query;

struct sd_sock {
	struct sess_dgram	*d;
	int			 fd;
	int			 family;
	bool			 raw;		/* ICMP over a raw socket */
	uint32_t		 events;
	struct loop_fd		 lfd;
};

/* A name being looked up, and the datagrams waiting for it. */
struct sd_name {
	struct sess_dgram	*d;
	bool			 used;
	struct resolve_query	*q;
	char			 name[256];
	uint8_t			*held;
	size_t			 held_len, held_cap;
};

struct sess_dgram {
	struct sess_dgram_cfg	 cfg;
	struct sd_sock		 sock[2];	/* IPv4, IPv6; fd -1 until used */
	struct buf		 tx;
	struct buf		 rx;
	bool			 stopped;
	bool			 ended;
	bool			 write_blocked;
	bool			 hold;		/* status waits for a reply */
	bool			 denied_logged;
	bool			 unresolved_logged;
	bool			 nomem_logged;
	bool			 rx_paused;	/* waits for budget memory */
	struct limit_waiter	 wait;
	size_t			 charged;	/* the state, to cfg.mem */
	struct sd_name		 names[SD_NAMES_PENDING];
	uint16_t		 echo_id;	/* ours, on raw ICMP sockets */
	struct {
		bool		 used;
		uint16_t	 seq;
		uint64_t	 us;
	}			 echo[SD_ECHO_RING];
	uint64_t		 last_io_ms;
	struct sess_dgram_stats	 st;
};

/* UDP datagrams toward targets, sent together: one system call for the
 * many small frames a TLS record can hold.  The payloads stay in rx until
 * the batch is sent. */
struct sd_batch {
	struct sd_sock	*s;
	unsigned	 n;
	struct mmsghdr	 msg[SD_BATCH];
	struct iovec	 iov[SD_BATCH];
	struct addr	 to[SD_BATCH];
};

/* sess_dgram.c */
const char *sd_kind(const struct sess_dgram *d);
/* Counts a datagram dropped for max_buffer_memory (logged once). */
void sd_nomem(struct sess_dgram *d);
/* Counts a datagram the egress policy denied (logged once). */
void sd_denied(struct sess_dgram *d, const struct addr *to);
/* To an address: the egress policy, then the socket of its family.  port
 * is the UDP port or the ICMP echo sequence number. */
void sd_send_to(struct sess_dgram *d, struct sd_batch *b, struct addr *to,
    uint16_t port, const uint8_t *data, size_t len);
void sd_batch_send(struct sess_dgram *d, struct sd_batch *b);

/* sess_dgram_name.c */
/* A datagram to dst, a domain name. */
void sd_send_name(struct sess_dgram *d, struct sd_batch *b,
    const struct proto_dest *dst, const uint8_t *data, size_t len);
/* Cancels the name's lookup (its callback never runs) and drops what it
 * held; the slot is free again. */
void sd_name_free(struct sd_name *nm);

#endif
