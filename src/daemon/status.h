/*
 * A snapshot of a running daemon and its three renderings: the text that
 * `tunsplit status` prints, JSON (`status --json`) and the Prometheus text
 * exposition format (the metrics endpoint).  The roles fill the snapshot
 * (control.c does it for them); the renderers are pure and only write to a
 * stdio stream, so tests need neither sockets nor a loop.
 */
#ifndef TUNSPLIT_STATUS_H
#define TUNSPLIT_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/addr.h"
#include "client/dgram/assoc.h"
#include "client/dns/dnsfwd.h"
#include "client/dns/fakeip.h"
#include "core/limit.h"
#include "client/dialer.h"
#include "client/pool.h"
#include "server/resolve.h"
#include "core/stats.h"
#include "stack/tsnetif.h"

#define STATUS_NAME_MAX	64
#define STATUS_WORKERS_MAX	64	/* server.workers, at most */
#define STATUS_RULE_MAX	96

/* One of the client's rules and what it decided (since the last reload). */
struct status_rule {
	int		 index;			/* -1: final */
	char		 match[STATUS_RULE_MAX];	/* "dst 10.0.0.0/8, port 22" */
	char		 outbound[STATUS_NAME_MAX];
	uint64_t	 hits;
};

/* One of the client's outbounds and its counters (kept across reloads by
 * name). */
struct status_outbound {
	char		 name[STATUS_NAME_MAX];
	const char	*protocol;		/* conf_proto_name */
	char		 server[ADDR_STRLEN];	/* or the proxy; "" none */
	bool		 final;			/* client.final */
	uint64_t	 opened, failed, active;
	uint64_t	 bytes_up, bytes_down;	/* of ended flows */
	struct stats_hist handshake;
	bool		 has_pool;
	unsigned	 pool_size;
	struct pool_stats pool;
	/* Its dial gate (tunsplit, trojan; client/dialgate.h): outer
	 * connections in their connect and handshake, flows waiting. */
	bool		 has_gate;
	unsigned	 dialling, dial_waiting;
	/* Health from its flows (client/health.h); a group's: its type,
	 * members ("a, b") and the member a new flow takes now ("": none
	 * is up, flows are refused). */
	const char	*state;			/* "up", "down", "trial" */
	uint64_t	 down_ms;		/* not up for so long */
	uint64_t	 downs;			/* times it went down */
	char		 why[STATUS_RULE_MAX];	/* what took it down */
	/* The evidence it is judged by: first-byte time, recent average
	 * and baseline (0: no sample), retransmits per mille likewise. */
	uint32_t	 fb_us, fb_base_us;
	uint32_t	 rtx_pm, rtx_base_pm;
	bool		 degraded;		/* down or on trial for slowness */
	const char	*group;			/* "" or the group's type */
	char		 members[STATUS_RULE_MAX];
	char		 active_member[STATUS_NAME_MAX];	/* balance:
						 * "a, b", those up */
	bool		 balance;
};

struct status_flow {
	uint64_t	 id;
	char		 dst[ADDR_STRLEN];	/* client: target; server: target or "-" */
	char		 peer[ADDR_STRLEN];	/* server: the client; client: "" */
	char		 user[STATUS_NAME_MAX];	/* server only */
	char		 domain[254];		/* client: sniffed, or "" */
	char		 rule[STATUS_RULE_MAX];	/* client: "rule 3 (...)",
						 * "final", or "" */
	char		 outbound[STATUS_NAME_MAX];	/* client: its outbound,
							 * or "" (not chosen yet) */
	const char	*state;
	uint64_t	 age_ms;
	uint64_t	 up, down;		/* payload bytes so far */
	/* TCP_INFO of the outer connection, when it could be read. */
	bool		 has_tcpi;
	uint32_t	 rtt_us, rttvar_us;
	uint32_t	 retrans;		/* segments retransmitted, total */
	uint32_t	 cwnd;			/* segments */
};

/*
 * A snapshot being filled (control.c asks the role): the role writes its
 * counters into st and, when a flow list is wanted, takes one entry per
 * live flow or session from status_flow_add().
 */
struct status_fill {
	struct status		*st;
	struct status_flow	*flows;		/* NULL: totals only */
	size_t			 n, cap;
	uint64_t		 now_ms;
};

/* The next entry of the flow list (zeroed), or NULL: none asked, or full. */
struct status_flow *status_flow_add(struct status_fill *sf);
/* TCP_INFO of the outer socket fd into f, when it can be read. */
void status_flow_tcp_info(struct status_flow *f, int fd);
/* The limits shared by both roles. */
void status_fill_limits(struct status *st, const struct limit_stats *ls,
    const struct limit_mem *m);

struct status {
	const char	*role;			/* "client" or "server" */
	const char	*version;
	long		 pid;
	uint64_t	 uptime_ms;
	bool		 draining;
	uint64_t	 generation;		/* of the configuration */

	/* Client flows or server sessions. */
	uint64_t	 active, total, refused, failed;
	uint64_t	 internal;		/* of failed: our own failure
						 * (memory, lwIP), not a peer's */
	uint64_t	 unused;		/* server: closed by the client
						 * before a request (a warm pool
						 * connection), not failed */
	uint64_t	 waited;		/* server: waited for a turn at
						 * max_preauth_per_source */
	unsigned	 max;			/* max_flows / max_conns */
	uint64_t	 bytes_up, bytes_down;	/* toward the target / back */
	const struct stats_reasons *failures;	/* NULL: none kept */
	const struct stats_hist *handshake;	/* outer TLS handshakes */

	/* Client. */
	char		 server[ADDR_STRLEN];
	/* The last contact with the server (a completed outer handshake or
	 * a reply, by a flow or the warm pool) and the last failure to
	 * reach it: ages in ms and wall-clock times (Unix ms). */
	bool		 contact_kept;		/* a server to contact */
	bool		 has_contact, has_contact_fail;
	uint64_t	 contact_age_ms, contact_unix_ms;
	uint64_t	 contact_fail_age_ms, contact_fail_unix_ms;
	const char	*contact_fail_reason;
	bool		 has_tun;
	struct tsnetif_stats tun;
	/* Warm pool of outer connections (client.pool > 0). */
	bool		 has_pool;
	unsigned	 pool_size;		/* the ceilings, summed */
	uint64_t	 pooled;		/* flows started on one */
	struct pool_stats pool;
	/* The dialer threads' outer handshakes (client.dial_threads > 0). */
	bool		 has_dialer;
	struct dialer_stats dialer;
	/* UDP associations and ICMP echo sessions. */
	bool		 has_udp;
	struct assoc_stats udp;
	/* dns.mode fake-ip: the table. */
	bool		 has_fakeip;
	struct fakeip_stats fakeip;
	/* client.dns real DNS: the answer cache, and the queries each
	 * upstream took (names and addresses from the configuration, alive
	 * while the status is written). */
	bool		 has_dns;
	struct dnsfwd_stats dns_cache;
	const struct conf_dns_upstream *dns_up;
	size_t		 ndns_up;
	const uint64_t	*dns_up_queries;
	const uint64_t	*dns_up_failed;		/* answered SERVFAIL here */

	/* Server. */
	size_t		 users;
	const struct stats_reasons *rejects;	/* failed authentication etc. */
	/* Rejected connections relayed to the cover site (fallback). */
	bool		 has_cover;
	char		 cover[ADDR_STRLEN + 256];	/* "host:port" */
	uint64_t	 cover_relayed, cover_failed;
	/* server: connection reuse (offers, requests on reused ones,
	 * their protocol errors) */
	uint64_t	 reuse_offered, reused, reuse_errors;

	/* Limits: refusals by kind, the buffer memory budget. */
	bool		 has_limits;
	uint64_t	 limit_refused[LIMIT_NKINDS];
	size_t		 mem_used, mem_peak, mem_max;	/* max 0: none */
	uint64_t	 mem_denied;		/* allocations refused: reads paused */
	/* Server: its worker loops and the sessions each accepted.
	 * Client: its worker processes (status_merge fills it) and the
	 * flows each accepted; shown when there are two or more. */
	unsigned	 workers;
	uint64_t	 worker_total[STATUS_WORKERS_MAX];
	uint64_t	 worker_active[STATUS_WORKERS_MAX];
	bool		 has_sources;		/* server */
	size_t		 sources;		/* sources with live connections */
	unsigned	 udp_sessions, udp_max;	/* server datagram sessions */
	/* Server: strangers -- sessions not authenticated yet, those
	 * relayed to the cover site, and the cover relays' budget. */
	unsigned	 preauth, preauth_max, cover_sessions;
	size_t		 cover_mem_used, cover_mem_peak, cover_mem_max;
	uint64_t	 cover_mem_denied;

	/* The server's resolver (domain-name targets). */
	bool		 has_resolver;
	struct resolve_stats resolver;

	/* Client rules: each rule's hits, then final's (index -1); none
	 * without rules. */
	const struct status_rule *rules;
	size_t		 nrules;
	/* Client: the outbounds of the live generation. */
	const struct status_outbound *outbounds;
	size_t		 noutbounds;

	/* Optional per-flow list (status --flows). */
	const struct status_flow *flows;
	size_t		 nflows;
};

/*
 * Snapshots across processes (the client's workers; status_pack.c).
 * Worker 0 serves the control socket: it asks every other worker for its
 * snapshot, which travels as the bytes status_pack makes, and adds each
 * into its own with status_merge before rendering.  The bytes are host
 * order, for the same executable on the same machine; status_unpack
 * still treats them as untrusted: a truncated or corrupt buffer fails,
 * nothing is read past its end.
 */
struct status_blob;

/* st and all it points to (the flow list too) into a malloc'd buffer
 * *buf of *len bytes.  0, or -1 (ENOMEM). */
int  status_pack(const struct status *st, uint8_t **buf, size_t *len);
/* A buffer status_pack made into *out, whose arrays and strings are
 * owned by *blob (free it when done with *out).  0, or -1 (EINVAL:
 * malformed; ENOMEM) with *out zeroed and *blob NULL.  out->dns_up
 * entries hold only name, addr and protocol. */
int  status_unpack(const uint8_t *buf, size_t len, struct status *out,
    struct status_blob **blob);
void status_blob_free(struct status_blob *blob);	/* NULL ok */

/* The longest flow list a merge keeps by default: a flow renders to
 * more than 64 bytes, so more than this would not fit a control answer
 * (CONTROL_OUT_MAX) anyway. */
#define STATUS_FLOWS_MAX	65536

/*
 * What a merged snapshot points to that neither input owns: copies of
 * into's arrays (so worker 0's live counters are never written), the
 * grown flow list, and the strings taken from add (so add and its blob
 * may be freed right after the merge).  One per merged snapshot: zero it
 * before the first merge;
 * flows_max caps the merged flow list (0: STATUS_FLOWS_MAX).  Keep it
 * until the merged snapshot is rendered, then status_merge_mem_free.
 */
struct status_merge_mem {
	size_t			 flows_max;
	/* The rest is status_merge's. */
	struct stats_reasons	 failures, rejects;
	struct stats_hist	 handshake;
	struct status_rule	*rules;
	struct status_outbound	*outbounds;
	struct status_flow	*flows;
	uint64_t		*dns_up_queries, *dns_up_failed;
	char			**strings;
	size_t			 nstrings, strings_cap;
};

/*
 * Adds add into into (status_pack.c has the rule for every field):
 * counters and gauges of live things summed, per-process capacities
 * summed (each worker holds its share), replicated tables and identity
 * taken from into, the newest contact kept, the flow lists joined, and
 * into's per-worker breakdown extended by add's.  Merge the workers in
 * their order, worker 0's snapshot as into.  0, or -1 (ENOMEM: part of
 * add is missing, into is still whole and renders).
 */
int  status_merge(struct status *into, const struct status *add,
    struct status_merge_mem *mem);
void status_merge_mem_free(struct status_merge_mem *mem);	/* NULL ok */
/* b's resolver counters added into a (the server's worker threads too). */
void status_resolver_merge(struct resolve_stats *a,
    const struct resolve_stats *b);

void status_write_text(const struct status *st, FILE *fp);
void status_write_json(const struct status *st, FILE *fp);
void status_write_prometheus(const struct status *st, FILE *fp);

/* JSON string with escapes (also used for flow fields). */
void status_json_str(FILE *fp, const char *s);

#endif
