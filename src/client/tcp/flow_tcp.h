/*
 * Client TCP flows: one lwIP pcb (the app's connection, terminated
 * locally) relayed to one outer stream: TLS to the server (protocol
 * tunsplit, trojan), or plain TCP to a SOCKS5 proxy or to the target
 * itself (socks5, direct).
 *
 * Ownership: the flow owns its pcb, its outer stream and the pbufs it has
 * taken from lwIP but not yet written out.  lwIP callbacks only queue data
 * and mark the flow dirty; all I/O happens in flow_env's per-iteration
 * pass, so no callback ever tears a flow down under lwIP's feet.
 *
 * Backpressure: bytes from the app are acknowledged to lwIP (tcp_recved,
 * which reopens the app's window) only once the outer stream accepted
 * them; the outer stream is read only while lwIP has send-buffer room.
 * Per flow at most TCP_WND bytes wait in the queue and TCP_SND_BUF in
 * lwIP: nothing is unbounded.
 */
#ifndef TUNSPLIT_FLOW_TCP_H
#define TUNSPLIT_FLOW_TCP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "core/addr.h"
#include "core/limit.h"
#include "wire/proto.h"
#include "core/stats.h"
#include "lwip/err.h"

struct conf;
struct loop;
struct tcp_pcb;
struct flow;
struct flow_held;
struct flow_udp;
struct outbounds;

#define FLOW_STAGE	16384	/* one TLS record */
#define FLOW_UP_ROOM	8	/* bytes in front of env->up (flow_tcp.c) */
#define FLOW_UP_MAX	65528	/* the upload's gather: four full chunks */

LIST_HEAD(flow_list, flow);
SLIST_HEAD(flow_work_list, flow);

struct flow_stats {
	uint64_t	 accepted;	/* flows created */
	uint64_t	 refused;	/* over the limit or out of resources */
	uint64_t	 blocked;	/* protocol block: SYNs reset */
	uint64_t	 failed;	/* server or target failure -> RST */
	uint64_t	 internal;	/* of the failed: our own (memory,
					 * lwIP), logged at warn */
	uint64_t	 pooled;	/* started on a warm pool connection */
	uint64_t	 bytes_up, bytes_down;	/* of closed flows */
	struct stats_reasons failures;	/* the failed ones, by reason */
	struct stats_hist handshake;	/* outer connect start to TLS done */
	struct stats_contact contact;	/* with the server or proxy */
};

struct flow_env {
	struct loop		*loop;
	const struct conf	*conf;
	/* The generation's outbounds (outbound.h): client_route() picks
	 * one per new flow, which keeps it.  The client replaces the set
	 * on a reload. */
	struct outbounds	*obs;
	struct fakeip		*fakeip;	/* dns.mode fake-ip, or NULL */
	struct flow_udp		*udp;		/* DNS over TCP asks it */
	unsigned		 nflows;
	uint64_t		 next_id;
	struct flow_stats	 stats;
	bool			 draining;	/* SIGTERM: RST new SYNs */
	uint64_t		 limit_log_ms;	/* last refusal message */
	uint64_t		 limit_hits;	/* refusals since then */
	/* client.max_buffer_memory: bytes held for flows -- the app's
	 * queued upload and the download lwIP holds until the app acks. */
	struct limit_mem	 mem;
	struct limit_stats	 lst;
	struct flow_list	 all;	/* live flows */
	struct flow_work_list	 dirty;	/* flows with work for this iteration */
	struct flow_list	 reap;	/* closed, freed at iteration end */
	struct flow_held	*held;	/* faithful: held flows by 4-tuple */
	/* Worker processes (client.workers): max_flows counts the flows of
	 * all (a count in memory they share, NULL with one worker); each
	 * takes its share of max_buffer_memory (0 or 1: all). */
	_Atomic unsigned	*all_flows;
	unsigned		 share;
	unsigned		 id_back;	/* share - 1 - worker index */
	uint8_t			 stage[FLOW_STAGE];
	/* The upload's bytes gathered from small pbufs, with FLOW_UP_ROOM
	 * bytes in front of them (up_mem's first), which its write may
	 * change (outer_write_inplace): FLOW_UP_MAX at most. */
	uint8_t			 up_mem[FLOW_UP_ROOM + FLOW_UP_MAX];
};

/* Whether max_flows leaves room for one more flow (of all workers'). */
bool     flow_room(const struct flow_env *env);
/* This process's memory budget (0: none). */
size_t   flow_max_memory(const struct flow_env *env);

/* Registers the per-iteration pass on env->loop.  0 or -1. */
int  flow_env_init(struct flow_env *env);
/* tsnetif_ops callbacks (arg is the flow_env). */
err_t flow_tcp_accept(void *arg, struct tcp_pcb *pcb, err_t err);
bool flow_tcp_syn_allowed(void *arg);
/* tsnetif_ops.syn: holds SYNs in connect_mode faithful (see flow_tcp.c). */
struct ip_addr;
int  flow_tcp_syn(void *arg, const uint8_t *pkt, size_t len,
    const struct ip_addr *local, const struct ip_addr *remote,
    uint16_t lport, uint16_t rport);
/* Resets every flow (shutdown) and frees what env holds for them. */
void flow_close_all(struct flow_env *env);

/* One live flow as the control socket shows it. */
struct flow_info {
	uint64_t		 id;
	const struct addr	*dst;
	const char		*state;		/* "sniff" "connect" "tls"
						 * "socks5" "relay" */
	uint64_t		 start_ms;	/* loop time */
	uint64_t		 up, down;	/* payload bytes so far */
	int			 fd;		/* outer socket (TCP_INFO), or -1 */
	const char		*domain;	/* sniffed, or "" */
	const char		*outbound;	/* its name, NULL: not chosen yet */
	int			 rule;		/* index that chose it, -1: final */
	const struct outbound	*obr;		/* the outbound, or NULL */
};
void flow_tcp_foreach(struct flow_env *env,
    void (*cb)(void *arg, const struct flow_info *), void *arg);

#endif
