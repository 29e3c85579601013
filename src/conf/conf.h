/*
 * Configuration: YAML to struct conf, fully validated, then read-only.
 * Errors are reported as "file:line:col: key: message"; unknown keys are
 * errors.  Exactly one role section, `client:` or `server:`, per file.
 */
#ifndef TUNSPLIT_CONF_H
#define TUNSPLIT_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <net/if.h>

#include "core/addr.h"

#define CONF_KEY_LEN	32
#define CONF_MAX_LISTEN	8
#define CONF_NAME_MAX	64
#define CONF_CC_MAX	16
#define CONF_SOCK_MAX	108		/* sun_path */
#define CONF_CONTROL_DEFAULT	"/run/tunsplit/tunsplit.sock"
#define CONF_DRAIN_DEFAULT_MS	5000
#define CONF_TROJAN_HEX_LEN	56		/* hex of SHA-224 */
#define CONF_MAX_TROJAN		1024

#define CONF_SOCKS_MAX	255		/* RFC 1929 user name, password */
#define CONF_MAX_UIDS	32		/* route_uid_exclude/include ranges */
#define CONF_OB_NAME_MAX	32		/* an outbound's name */
#define CONF_MAX_OUTBOUNDS	64
#define CONF_WEIGHT_MIN		1	/* a balance member's weight: */
#define CONF_WEIGHT_MAX		100

struct rules;

enum conf_role { CONF_ROLE_CLIENT = 1, CONF_ROLE_SERVER = 2 };

/* client.protocol: what a TCP flow's outbound speaks. */
enum conf_proto {
	CONF_PROTO_TUNSPLIT = 0,	/* native header over TLS (default) */
	CONF_PROTO_TROJAN,		/* trojan request over TLS */
	CONF_PROTO_SOCKS5,		/* a SOCKS5 proxy (RFC 1928), no TLS */
	CONF_PROTO_DIRECT,		/* straight to the target, SO_MARK */
	CONF_PROTO_BLOCK,		/* every flow refused */
};

/*
 * One user's own egress lists (server.users[].egress_allow/egress_deny,
 * or a trojan_passwords entry's), checked before the server-wide ones.
 * Reference counted (atomic: any worker): a session keeps the lists it
 * authenticated with (conf_egress_ref) across a reload that frees the
 * table.
 */
struct conf_egress {
	_Atomic unsigned refs;
	struct cidr	*allow;
	size_t		 nallow;
	struct cidr	*deny;
	size_t		 ndeny;
};

struct conf_egress *conf_egress_ref(struct conf_egress *e);	/* NULL ok */
void conf_egress_unref(struct conf_egress *e);			/* NULL ok */

/* A trojan password's own limits; 0: the server's per-user defaults. */
struct conf_limits {
	unsigned max_conns;
	unsigned max_udp;
};

struct conf_user {
	struct conf_egress *egress;	/* NULL: the server-wide lists only */
	char	 name[CONF_NAME_MAX];
	uint8_t	 key[CONF_KEY_LEN];
	char	*key_file;	/* where key came from, or NULL */
	unsigned max_conns;	/* 0: server.max_conns_per_user */
	unsigned max_udp;	/* 0: server.max_udp_per_user */
};

/* An outbound that is a group of others (client/group.h decides). */
enum conf_group {
	CONF_GROUP_NONE = 0,	/* an outbound of its own */
	CONF_GROUP_FAILOVER,	/* the first member that is up */
	CONF_GROUP_SELECT,	/* the one chosen (tunsplit select) */
	CONF_GROUP_BALANCE,	/* by a hash of the destination */
	CONF_GROUP_FASTEST,	/* the lowest recent cost, with hysteresis */
};

/*
 * One way out of the client (client.outbounds[], or the single form's
 * "default"): a protocol and its own settings.  Which keys a protocol
 * takes is conf_client.c's check_outbound.
 */
/* client.dns.upstreams: one resolver and the names it answers. */
/* How an upstream is asked (client/dns/dnsup.h for the streams). */
enum conf_dns_proto {
	CONF_DNS_UDP, CONF_DNS_TCP, CONF_DNS_TLS, CONF_DNS_HTTPS
};

struct conf_dns_upstream {
	char		 name[CONF_OB_NAME_MAX + 1];	/* unique */
	struct addr	 addr;		/* numeric; port by protocol default:
					 * 53, 53, 853, 443 */
	bool		 has_port;
	int		 protocol;	/* enum conf_dns_proto */
	char		 tls_name[254];	/* tls, https: verified, SNI, Host;
					 * default: the address */
	char		*path;		/* https: default /dns-query */
	char		*ca_file;	/* tls, https: NULL: system store */
	char		**domains;	/* lower case; each also its subdomains */
	size_t		 ndomains;
};

struct conf_outbound {
	char		 name[CONF_OB_NAME_MAX + 1];	/* [a-z0-9_-], unique */
	enum conf_proto	 protocol;
	char		*server_host;		/* host name or numeric;
						 * NULL for direct, block */
	uint16_t	 server_port;
	char		*sni;			/* default: server_host */
	char		*ca_file;		/* NULL: system store */
	bool		 insecure;		/* skip verification (loudly) */
	bool		 fp_browser;		/* fingerprint: browser (default curl) */
	bool		 has_pin;
	uint8_t		 pin_sha256[32];	/* SHA-256 of the server's SPKI */
	uint8_t		 key[CONF_KEY_LEN];
	char		*key_file;		/* where key came from */
	char		 trojan_hex[CONF_TROJAN_HEX_LEN + 1]; /* hex(SHA224(password)) */
	unsigned	 header_version;	/* tunsplit: 2, or 1 for old servers */
	/* socks5: RFC 1929 credentials, "" = none.  The password is kept in
	 * plain (the proxy needs it); never logged or dumped, wiped by
	 * conf_unref. */
	char		 username[CONF_SOCKS_MAX + 1];
	char		 password[CONF_SOCKS_MAX + 1];
	char		 congestion[CONF_CC_MAX];	/* default: client's */
	unsigned	 connect_timeout_ms;	/* default: client's */
	unsigned	 padding;		/* padded records per stream, default 8 */
	/* The warm pool follows demand between pool_min and pool while
	 * flows arrive, and holds nothing pool_idle_ms after the last one
	 * (0: keeps pool_min forever). */
	unsigned	 pool;			/* ceiling, default 8; 0: no pool */
	unsigned	 pool_min;		/* floor while active, default 1 */
	unsigned	 pool_idle_ms;		/* default 60000 */
	unsigned	 pool_lifetime_ms;	/* default 8000 (< server handshake_timeout) */
	/* Connection reuse (native protocol): flows per outer connection
	 * at most, 1 = one flow each; a connection older than reuse_age_ms
	 * takes no new flow. */
	unsigned	 reuse;			/* default 100 */
	unsigned	 reuse_age_ms;		/* default 60000 */
	/* A group (type:): its members, indexes into client.outbounds in
	 * the order given; protocol is then block, what a group whose
	 * members are all down does with a flow. */
	enum conf_group	 group;
	size_t		*members;
	size_t		 nmembers;
	uint8_t		 weights[CONF_MAX_OUTBOUNDS];	/* balance: 1..100 */
	bool		 per_flow;	/* balance strategy: flow */
};

/*
 * A loaded configuration: immutable once loaded, and reference counted
 * (loop thread only).  A reload loads a new generation, validates it whole
 * and swaps it in; the old one lives on, untouched, for as long as a flow,
 * session or association that started under it still holds a reference.
 */
/* client.sniff: when a new TCP flow waits for the app's first bytes
 * (or a UDP/443 association for its first datagram) to learn the domain
 * before choosing its outbound. */
enum conf_sniff {
	CONF_SNIFF_AUTO,	/* when a rule can match a domain */
	CONF_SNIFF_ALWAYS,	/* always (the domain is logged, shown) */
	CONF_SNIFF_NEVER,
};

struct conf {
	_Atomic unsigned refs;	/* conf_ref / conf_unref, any thread */
	uint64_t	 generation;	/* 1 at start, +1 per reload */
	char		*path;		/* file it was loaded from, or NULL */
	enum conf_role	 role;
	int		 log_level;	/* enum log_level */
	bool		 log_syslog;
	bool		 log_syslog_set;	/* log.syslog given: run -d keeps it */
	bool		 log_flows;	/* per-flow summaries at info */

	/* Process: control socket, metrics, pid file, privileges, drain. */
	char		 control[CONF_SOCK_MAX];	/* "" = off */
	bool		 has_metrics;
	struct addr	 metrics;		/* default port 9353 on loopback */
	char		*pidfile;		/* NULL: none */
	char		 user[CONF_NAME_MAX];	/* "" = keep running as is */
	char		 group[CONF_NAME_MAX];	/* "" = the user's group */
	unsigned	 drain_timeout_ms;	/* default 5000 */

	struct {
		char		 name[IFNAMSIZ];	/* default "tun0" */
		unsigned	 mtu;			/* 576..65535, default 9000 */
		bool		 offload;		/* TSO/checksum offload, default on */
		bool		 has_addr4, has_addr6;
		struct cidr	 addr4, addr6;		/* addresses of the TUN itself */
	} tun;

	struct {
		/* Where flows go: the outbounds, in the order given (the
		 * single form, server: protocol: ... under client:, is one
		 * named "default"), and the one flows take when no rule
		 * matches (client.final). */
		struct conf_outbound *outbounds;
		size_t		 noutbounds;	/* >= 1 once loaded */
		size_t		 final;		/* index into outbounds */
		/* Defaults of the outbounds that do not set their own. */
		char		 congestion[CONF_CC_MAX]; /* default "bbr" */
		unsigned	 connect_timeout_ms;	/* default 10000 */
		uint32_t	 mark;			/* SO_MARK on outer sockets, 0 = none */
		unsigned	 max_flows;		/* default 4096 */
		unsigned	 dial_threads;		/* outer handshakes off the
							 * loop; 0: on it, default 1 */
		unsigned	 workers;		/* processes, one TUN queue
							 * each; 0: online CPUs */
		unsigned	 idle_timeout_ms;	/* default 300000 */
		bool		 faithful;		/* connect_mode: faithful (default fast) */
		int		 sniff;			/* CONF_SNIFF_*, default auto */
		unsigned	 sniff_timeout_ms;	/* default 50 */
		unsigned	 max_udp;		/* UDP/ICMP associations, default 1024 */
		size_t		 max_buffer_memory;	/* bytes, 0 = none; default 64M */
		unsigned	 udp_timeout_ms;	/* default 60000 */
		unsigned	 dns_timeout_ms;	/* port 53 and ICMP, default 10000 */
		bool		 has_dns;
		struct addr	 dns;			/* pin port-53 queries here */
		/* dns: as a mapping (conf_dns.c); the scalar form sets
		 * has_dns and dns alone. */
		bool		 dns_map;		/* that form was used */
		bool		 dns_fakeip;		/* mode: fake-ip */
		struct cidr	 fake_ip_range4;	/* default: a /16 of
							 * 198.18.0.0/15 without
							 * the TUN's address */
		struct cidr	 fake_ip_range6;	/* default fdfe:dcba:9876:fa4e::/64 */
		bool		 has_fake_ip_range6;	/* not without a TUN IPv6 */
		unsigned	 fake_ip_size;		/* names, default 65536 */
		char		*fake_ip_file;		/* NULL: not kept */
		char		**fake_ip_exclude;	/* names; ".x" suffixes */
		size_t		 nfake_ip_exclude;
		/* dns.upstreams: the names each one answers (the first
		 * whose domains match; else server), and dns.cache_size. */
		struct conf_dns_upstream *dns_upstreams;
		size_t		 ndns_upstreams;
		unsigned	 dns_cache_size;	/* answers, default 1024, 0 = off */
		bool		 route_auto;		/* run tunsplit-route up/down */
		bool		 ipv6_bypass;		/* ipv6: bypass (default block),
							 * for a TUN without IPv6 */
		struct cidr	*route_exclude;		/* --exclude for it */
		size_t		 nroute_exclude;
		/* route_uid_exclude / route_uid_include: users whose traffic
		 * stays out of the TUN (--uid-exclude), or the only users
		 * whose traffic enters it (--uid-include). */
		struct { uint32_t lo, hi; } route_uids[CONF_MAX_UIDS];
		size_t		 nroute_uids;
		bool		 route_uids_include;
		/* rules and rule_sets (rules/rules.h), NULL: none.  Read-only
		 * but for its hit counters (loop thread). */
		struct rules	*rules;
	} client;

	struct {
		struct addr	 listen[CONF_MAX_LISTEN];
		size_t		 nlisten;
		char		*cert_file;
		char		*cert_key_file;
		struct conf_user *users;
		size_t		 nusers;
		char		(*trojan_hex)[CONF_TROJAN_HEX_LEN + 1]; /* trojan_passwords, hashed */
		size_t		 ntrojan;
		struct conf_egress **trojan_egress;	/* per password; NULL entries */
		struct conf_limits *trojan_limits;	/* per password */
		char		 congestion[CONF_CC_MAX];
		uint32_t	 mark;
		unsigned	 max_conns;		/* default 8192 */
		unsigned	 max_conns_per_source;	/* default 4096, 0 = none */
		unsigned	 max_conns_per_user;	/* default 0 = none */
		unsigned	 max_udp;		/* datagram sessions, default 4096 */
		unsigned	 max_udp_per_user;	/* default 0 = none */
		size_t		 max_buffer_memory;	/* relay buffers, bytes; default 256M */
		size_t		 cover_buffer_memory;	/* cover relays'; default max_buffer_memory/8 */
		unsigned	 max_cover_per_source;	/* cover sessions, default 32, 0 = none */
		unsigned	 max_preauth;		/* before authentication, default 512 */
		unsigned	 max_preauth_per_source; /* default 256, 0 = none */
		unsigned	 padding;		/* padded records per stream, default 8 */
		unsigned	 connect_timeout_ms;	/* default 10000 */
		unsigned	 idle_timeout_ms;	/* default 300000 */
		unsigned	 handshake_timeout_ms;	/* default 60000 */
		unsigned	 reuse;			/* flows per connection, default 100; 1 = no reuse */
		unsigned	 reuse_age_ms;		/* no offer after, default 120000 */
		unsigned	 time_window_s;		/* header timestamp skew, default 120 */
		bool		 accept_v1;		/* unbound version 1 headers, default off */
		struct cidr	*egress_allow;		/* overrides the default deny list */
		size_t		 negress_allow;
		struct cidr	*egress_deny;		/* extra denies */
		size_t		 negress_deny;
		unsigned	 workers;		/* loops; 0: online CPUs */
		/* resolver: domain-name targets (resolve.h). */
		unsigned	 resolve_workers;	/* threads, default 4 */
		unsigned	 resolve_queue;		/* waiting, default 256 */
		unsigned	 resolve_timeout_ms;	/* default 5000 */
		unsigned	 resolve_cache;		/* names, default 1024; 0 = off */
		unsigned	 resolve_ttl_ms;	/* default 60000 */
		unsigned	 resolve_negative_ttl_ms; /* default 10000 */
		char		*fallback_host;		/* cover site, NULL: none */
		uint16_t	 fallback_port;
		bool		 fallback_tls;		/* cover site speaks TLS */
		/* Where bytes that are not TLS go, raw; NULL: closed. */
		char		*fallback_plain_host;
		uint16_t	 fallback_plain_port;
	} server;
};

/* Parse from a file or a buffer.  On failure returns NULL and writes a
 * one-line message ("file:line:col: key: message") into err. */
struct conf *conf_load_file(const char *path, char *err, size_t errlen);
struct conf *conf_load_buf(const char *name, const char *buf, size_t len,
    char *err, size_t errlen);
void conf_free(struct conf *c);		/* = conf_unref of the loader's */
/* One more holder of c (returned); the last conf_unref frees it, keys
 * wiped.  Both accept NULL. */
struct conf *conf_ref(const struct conf *c);
void conf_unref(const struct conf *c);
/*
 * Effective configuration as YAML (check), every key and default, file
 * names absolute.  A key read from a key_file is shown as that key_file;
 * other secrets (key, trojan and SOCKS5 passwords) as CONF_REDACTED,
 * which the loader refuses with a message saying so.  conf_dump_secrets
 * shows them instead (trojan passwords as their SHA-224), so that what
 * it prints loads back as the same configuration.
 */
#define CONF_REDACTED	"(redacted)"
void conf_dump(const struct conf *c, FILE *fp);
void conf_dump_secrets(const struct conf *c, FILE *fp);

/* The index of the outbound called name in c->client.outbounds, or -1. */
int conf_outbound_index(const struct conf *c, const char *name);
/* The outbound flows take when no rule matches (client.final). */
const struct conf_outbound *conf_final(const struct conf *c);
/* "failover", "select", "balance", "fastest", or "" (not a group). */
const char *conf_group_name(enum conf_group g);

/* "tunsplit", "trojan", "socks5", "direct", "block". */
const char *conf_proto_name(enum conf_proto p);

/* "30s" "250ms" "5m" "1h" or bare seconds -> ms; -1 when invalid. */
long long conf_parse_duration_ms(const char *s);

#endif
