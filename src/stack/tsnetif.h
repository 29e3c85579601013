/*
 * The TUN netif for lwIP: one netif that accepts TCP for any destination
 * address and port, fed with whole IP packets read from the TUN and writing
 * lwIP's output back to it.  lwIP is unmodified; the input hooks
 * (tsnetif_hooks.h) rewrite the netif's address in place and create
 * listeners on demand (doc/DESIGN.md, "lwIP: unmodified, steered by
 * hooks"; tsnetif.c says what each works around).
 *
 * Non-TCP traffic never reaches lwIP: ICMP echo requests, UDP and anything
 * else are handed to the optional handler below or dropped and counted, so
 * lwIP never answers a ping or sends unreachables from a remote address.
 */
#ifndef TUNSPLIT_TSNETIF_H
#define TUNSPLIT_TSNETIF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lwip/err.h"

struct tcp_pcb;
struct ip_addr;

enum tsnetif_syn {
	TSNETIF_SYN_PASS,	/* lwIP answers it */
	TSNETIF_SYN_HOLD,	/* taken; may come back via tsnetif_input() */
	TSNETIF_SYN_REFUSE,	/* answered with RST, counted as syn_refused */
};

struct tsnetif_stats {
	uint64_t	 rx_packets, rx_bytes;	/* read from the TUN */
	uint64_t	 tx_packets, tx_bytes;	/* written to the TUN */
	uint64_t	 rx_malformed;		/* failed bounds checks */
	uint64_t	 rx_unsupported;	/* not TCP and not taken by a handler */
	uint64_t	 tx_errors;		/* TUN write failures (packet lost) */
	uint64_t	 syn_refused;		/* SYNs answered with RST: flow limit */
	uint64_t	 listeners;		/* ports with an on-demand listener */
	uint64_t	 tw_reused;		/* SYNs that ended a TIME_WAIT */
	uint64_t	 offload;		/* 1: virtio-net headers, TSO */
	uint64_t	 rx_gso, tx_gso;	/* TCP super-packets in, out */
	uint64_t	 rx_vnet_bad;		/* bad virtio-net headers: dropped */
};

struct tsnetif_ops {
	/* lwIP accept callback for every accepted connection. */
	err_t	(*accept)(void *arg, struct tcp_pcb *pcb, err_t err);
	/* false: refuse new SYNs with RST (flow limit reached). */
	bool	(*syn_allowed)(void *arg);
	/* Optional (faithful connect mode): sees each SYN that no pcb owns
	 * yet and syn_allowed let through, before lwIP.  pkt/len is the
	 * whole IP packet.  Returns an enum tsnetif_syn. */
	int	(*syn)(void *arg, const uint8_t *pkt, size_t len,
		    const struct ip_addr *local, const struct ip_addr *remote,
		    uint16_t lport, uint16_t rport);
	/* Non-TCP packets (UDP, ICMP echo): return true if consumed.  pkt
	 * points at the IP header, len is the IP total length (bounds
	 * checked against the read size). NULL: such packets are dropped. */
	bool	(*other)(void *arg, const uint8_t *pkt, size_t len);
	void	*arg;
};

/* Initialises lwIP and the netif.  fd: the TUN (non-blocking), mtu its MTU.
 * Returns 0 or -1 (logged). */
int  tsnetif_init(int fd, unsigned mtu, const struct tsnetif_ops *ops);
void tsnetif_shutdown(void);

/* Reads and processes up to max packets from the TUN.  Returns the number
 * read, 0 when the TUN had nothing (EAGAIN), -1 on a fatal read error. */
int  tsnetif_poll(unsigned max);
/* Feeds one packet (tests and fuzzers: no fd needed). */
void tsnetif_input(const uint8_t *pkt, size_t len);
/*
 * Offloads on the TUN fd (tun_offload): every packet read or written
 * carries a virtio-net header.  Reads may be TCP super-packets, taken by
 * lwIP as one segment; lwIP is let build segments of up to 64 KiB, which
 * leave as one write the kernel cuts at the MSS the app announced (kept
 * per pcb from its SYN; lwIP still announces the TUN's MTU).  Call right
 * after tsnetif_init, before any packet.
 */
void tsnetif_offload(bool on);
/* Feeds one read with offloads: virtio-net header, then the packet. */
void tsnetif_input_vnet(const uint8_t *buf, size_t len);
/* Answers a held SYN (a whole IP packet, as given to ops.syn) with RST:
 * the app sees "connection refused".  0 or -1 (not a TCP SYN). */
int  tsnetif_reset_syn(const uint8_t *pkt, size_t len);
/* Writes a raw IP packet to the TUN (UDP/ICMP replies).  0 or -1. */
int  tsnetif_output_raw(const uint8_t *pkt, size_t len);
/*
 * An ICMPv6 Packet Too Big (MTU mtu) quoting qlen bytes of one of our
 * packets: a router between us and the app cannot forward packets that
 * big to it, and IPv6 routers do not fragment.  Remembered for its
 * destination (tsnetif_pmtu6, at least 1280, 10 minutes); every TCP flow
 * to it, and every new one, sends segments that fit, those queued
 * already and their retransmissions too: with offloads the kernel cuts
 * them at that size; without, the netif does until lwIP's MSS, which
 * shrinks once nothing larger is queued, makes them fit.
 */
void tsnetif_ptb6(const uint8_t *quote, size_t qlen, unsigned mtu);
/* The path MTU learnt to addr (16 bytes), 0 when none. */
unsigned tsnetif_pmtu6(const uint8_t *addr);
/*
 * Bytes tcp_write() takes on pcb now without failing for want of send
 * buffer or send-queue slots.  lwIP cuts a write into segments of the
 * pcb's send MSS (the app's, 536 up to TUN MTU - 40) or half the largest
 * window the app announced if that is smaller, one pbuf each, plus at
 * most one appended to the last unsent segment; TSNETIF_QUEUE_SPARE
 * slots stay free for lwIP's own splits and the FIN.  Sized from the
 * compile-time TCP_MSS instead (64 KiB), a 16 KiB write at MSS 1460 took
 * 12 slots where 1 was counted, the queue filled and writes failed.
 * Called before each write: a smaller MSS a Packet Too Big asked for
 * takes effect here once lwIP's queue fits it (tsnetif_ptb6).
 */
#define TSNETIF_QUEUE_SPARE	8
size_t tsnetif_tcp_room(struct tcp_pcb *pcb);

/*
 * ACKs for the app, one per flow and pass.  From a recv callback, defer
 * lwIP's immediate ACK (every second segment) to the flow's pass later in
 * the same iteration, which must then ACK if tsnetif_ack_owed(): an ACK
 * is owed for data received, or the window would open (lwIP's rule
 * against silly windows).  A TUN batch of n segments then costs one ACK,
 * not n/2 plus window updates.
 */
void tsnetif_ack_defer(struct tcp_pcb *pcb);
bool tsnetif_ack_owed(struct tcp_pcb *pcb);

/* Runs lwIP's timers when due; returns ms until the next one. */
uint32_t tsnetif_timers(void);

const struct tsnetif_stats *tsnetif_stats(void);

#endif
