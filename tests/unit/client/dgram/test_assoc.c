/*
 * The socket transports of the client's datagram associations (direct,
 * socks5) and protocol block, on loopback.  Associations are driven
 * through assoc.h with a recording deliver callback (flow_udp would not
 * send to loopback destinations); block goes through flow_udp to check the
 * ICMP error the app gets.  The SOCKS5 proxy is a thread: RFC 1928
 * greeting, optional RFC 1929 authentication, UDP ASSOCIATE, then a relay
 * that echoes each datagram with its header (the reply comes "from" the
 * destination the client named) and, once, a fragment the client must
 * drop.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include <cmocka.h>

#include "core/addr.h"
#include "client/dgram/assoc.h"
#include "client/outbound.h"
#include "conf/conf.h"
#include "client/dgram/flow_udp.h"
#include "wire/frame.h"
#include "core/loop.h"
#include "wire/pkt.h"
#include "wire/proto.h"
#include "wire/socks5.h"

#define MAXGOT	32

static const uint8_t LO4[4] = { 127, 0, 0, 1 };
static const uint8_t APP4[4] = { 198, 18, 0, 1 }, DST4[4] = { 192, 0, 2, 7 };

/* ---- what the associations deliver ----------------------------------------- */

static struct {
	size_t			 n;
	struct proto_dest	 src[MAXGOT];
	uint8_t			*data[MAXGOT];
	size_t			 len[MAXGOT];
} got;

static int
record(void *arg, struct assoc *a, const struct proto_dest *src,
    const uint8_t *data, size_t len)
{
	(void)arg;
	(void)a;
	if (got.n == MAXGOT)
		return -1;
	got.src[got.n] = *src;
	got.data[got.n] = malloc(len + 1);
	memcpy(got.data[got.n], data, len);
	got.len[got.n++] = len;
	return 0;
}

static void
got_clear(void)
{
	size_t	i;

	for (i = 0; i < got.n; i++)
		free(got.data[i]);
	got.n = 0;
}

/* Packets written to the TUN (block's ICMP errors). */
static struct {
	size_t	 n;
	uint8_t	 pkt[4][1500];
	size_t	 len[4];
} tun;

static int
capture(const uint8_t *pkt, size_t len)
{
	if (tun.n == 4 || len > sizeof(tun.pkt[0]))
		return -1;
	memcpy(tun.pkt[tun.n], pkt, len);
	tun.len[tun.n++] = len;
	return 0;
}

/* ---- a client ---------------------------------------------------------------- */

struct client {
	struct conf		*conf;
	struct loop		*loop;
	struct assoc_env	*e;
	struct flow_udp		*u;
	struct addr		 server;
	struct outbounds	*obs;
};

static void
client_start(struct client *c, const char *yaml, uint16_t port, bool flow)
{
	struct assoc_cfg	ac;
	struct assoc_ops	ops;
	char			y[512], err[256];

	memset(c, 0, sizeof(*c));
	got_clear();
	tun.n = 0;
	snprintf(y, sizeof(y), "tun: {mtu: 1500}\nclient:\n%s", yaml);
	c->conf = conf_load_buf("t.yaml", y, strlen(y), err, sizeof(err));
	if (c->conf == NULL)
		fail_msg("%s", err);
	assert_non_null(c->loop = loop_new());
	assert_int_equal(addr_from_ip(&c->server, "127.0.0.1", port), 0);
	memset(&ac, 0, sizeof(ac));
	ac.loop = c->loop;
	ac.conf = c->conf;
	assert_non_null(c->obs = outbounds_one(outbound_new(c->conf, 0, NULL,
	    port != 0 ? &c->server : NULL)));
	ac.obs = c->obs;
	ac.tun_write = capture;
	if (flow) {
		assert_non_null(c->u = flow_udp_new(&ac));
		c->e = flow_udp_assoc(c->u);
		return;
	}
	assert_non_null(c->e = assoc_env_new(&ac));
	memset(&ops, 0, sizeof(ops));
	ops.deliver = record;
	assoc_env_set_ops(c->e, PROTO_KIND_UDP, &ops);
	assoc_env_set_ops(c->e, PROTO_KIND_ICMP, &ops);
}

static void
client_stop(struct client *c)
{
	if (c->u != NULL)
		flow_udp_free(c->u);
	else
		assoc_env_free(c->e);
	outbounds_free(c->obs);
	loop_free(c->loop);
	conf_free(c->conf);
	got_clear();
}

static const struct assoc_stats *
astats(struct client *c)
{
	return assoc_stats(c->e);
}

/* The app endpoint 198.18.0.1:port. */
static struct assoc *
app_get(struct client *c, uint16_t port, const struct proto_dest *dst)
{
	struct assoc_key	k;

	memset(&k, 0, sizeof(k));
	k.kind = PROTO_KIND_UDP;
	k.family = AF_INET;
	k.port = port;
	memcpy(k.addr, APP4, 4);
	return assoc_get(c->e, &k, dst);
}

/* ---- UDP echo targets on loopback ------------------------------------------- */

static int
udp_bound(int family, uint16_t *port)
{
	struct addr	a;
	int		fd;

	if (family == AF_INET)
		assert_int_equal(addr_from_ip(&a, "127.0.0.1", 0), 0);
	else
		assert_int_equal(addr_from_ip(&a, "::1", 0), 0);
	if ((fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK, 0)) < 0)
		return -1;
	if (bind(fd, &a.u.sa, a.len) < 0) {
		close(fd);
		return -1;
	}
	a.len = sizeof(a.u);
	assert_int_equal(getsockname(fd, &a.u.sa, &a.len), 0);
	*port = addr_port(&a);
	return fd;
}

/* Echoes whatever is waiting, prefixed with "re:"; how many. */
static int
udp_echo(int fd)
{
	uint8_t			buf[70000];
	struct sockaddr_storage	from;
	socklen_t		fl;
	ssize_t			n;
	int			k = 0;

	for (;;) {
		fl = sizeof(from);
		n = recvfrom(fd, buf + 3, sizeof(buf) - 3, 0,
		    (struct sockaddr *)&from, &fl);
		if (n < 0)
			return k;
		memcpy(buf, "re:", 3);
		assert_int_equal(sendto(fd, buf, (size_t)n + 3, 0,
		    (struct sockaddr *)&from, fl), n + 3);
		k++;
	}
}

/* ICMP echo with protocol direct: a ping socket to 127.0.0.1; the reply
 * comes back with the sequence number as the port and the data intact.
 * Skipped (with a note) where ping_group_range excludes us. */
static void
direct_ping(struct client *c)
{
	struct assoc_key	 k;
	struct proto_dest	 d;
	struct assoc		*a;
	int			 fd, i;

	fd = socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP);
	if (fd < 0) {
		print_message("direct ping not tested: no ping socket (%s)\n",
		    strerror(errno));
		assert_true(assoc_env_icmp(c->e));
		return;
	}
	close(fd);
	got_clear();
	memset(&k, 0, sizeof(k));
	k.kind = PROTO_KIND_ICMP;
	k.family = AF_INET;
	k.port = 0x4242;
	memcpy(k.addr, APP4, 4);
	frame_dest_from_ip(&d, AF_INET, LO4, 17);	/* seq 17 */
	assert_non_null(a = assoc_get(c->e, &k, &d));
	assert_int_equal(assoc_send(a, &d, (const uint8_t *)"pingdata", 8,
	    true), 0);
	for (i = 0; i < 300 && got.n < 1; i++)
		loop_run_once(c->loop, 10);
	assert_int_equal(got.n, 1);
	assert_memory_equal(got.src[0].ip, LO4, 4);
	assert_int_equal(got.src[0].port, 17);
	assert_int_equal(got.len[0], 8);
	assert_memory_equal(got.data[0], "pingdata", 8);
	got_clear();
}

/* direct sockets need their mark (CAP_NET_ADMIN): unprivileged, every
 * direct association fails at its first socket. */
static void
need_mark(void)
{
	if (geteuid() != 0)
		skip();
}

/* protocol direct: one association, two IPv4 targets and an IPv6 one;
 * each reply comes back from its own source (full cone). */
static void
test_direct(void **state)
{
	struct client		 c;
	struct proto_dest	 d1, d2, d6;
	struct assoc		*a;
	static const uint8_t	 lo6[16] = { [15] = 1 };
	uint8_t			 big[20000];
	uint16_t		 p1, p2, p6;
	int			 t1, t2, t6, i;
	size_t			 k;

	(void)state;
	need_mark();
	assert_true((t1 = udp_bound(AF_INET, &p1)) >= 0);
	assert_true((t2 = udp_bound(AF_INET, &p2)) >= 0);
	t6 = udp_bound(AF_INET6, &p6);	/* -1: no IPv6 here */
	client_start(&c, "  protocol: direct\n  mark: 0x7353\n", 0, false);
	assert_true(assoc_env_icmp(c.e));	/* ping sockets */
	frame_dest_from_ip(&d1, AF_INET, LO4, p1);
	frame_dest_from_ip(&d2, AF_INET, LO4, p2);
	frame_dest_from_ip(&d6, AF_INET6, lo6, p6);
	for (k = 0; k < sizeof(big); k++)
		big[k] = (uint8_t)(k * 13);
	assert_non_null(a = app_get(&c, 5000, &d1));
	assert_int_equal(assoc_send(a, &d1, (const uint8_t *)"one", 3, false),
	    0);
	assert_int_equal(assoc_send(a, &d2, big, sizeof(big), false), 0);
	if (t6 >= 0)
		assert_int_equal(assoc_send(a, &d6, (const uint8_t *)"six", 3,
		    false), 0);
	for (i = 0; i < 300 && got.n < (t6 >= 0 ? 3u : 2u); i++) {
		loop_run_once(c.loop, 10);
		udp_echo(t1);
		udp_echo(t2);
		if (t6 >= 0)
			udp_echo(t6);
	}
	assert_int_equal(got.n, t6 >= 0 ? 3 : 2);
	assert_int_equal(astats(&c)->created, 1);
	for (k = 0; k < got.n; k++) {
		if (got.src[k].atyp == PROTO_ATYP_IPV6) {
			assert_memory_equal(got.src[k].ip, lo6, 16);
			assert_int_equal(got.src[k].port, p6);
			assert_int_equal(got.len[k], 6);
			assert_memory_equal(got.data[k], "re:six", 6);
			continue;
		}
		assert_int_equal(got.src[k].atyp, PROTO_ATYP_IPV4);
		assert_memory_equal(got.src[k].ip, LO4, 4);
		if (got.src[k].port == p1) {
			assert_int_equal(got.len[k], 6);
			assert_memory_equal(got.data[k], "re:one", 6);
		} else {
			assert_int_equal(got.src[k].port, p2);
			assert_int_equal(got.len[k], 3 + sizeof(big));
			assert_memory_equal(got.data[k] + 3, big, sizeof(big));
		}
	}
	assert_int_equal(astats(&c)->drop_send, 0);
	direct_ping(&c);
	/* The queue bound holds for sockets too. */
	for (k = 0; k < 20; k++)
		(void)assoc_send(a, &d1, big, sizeof(big), false);
	assert_true(astats(&c)->drop_queue > 0);
	client_stop(&c);
	close(t1);
	close(t2);
	if (t6 >= 0)
		close(t6);
}

/* direct without a free fd: the association fails and holds down (which
 * paces retries and log lines); the queued datagrams are dropped, the
 * queue accounting stays exact. */
static void
test_direct_no_socket(void **state)
{
	struct client		 c;
	struct proto_dest	 d;
	struct assoc		*a;
	struct rlimit		 old, low;
	int			 fd;

	(void)state;
	client_start(&c, "  protocol: direct\n  mark: 0x7353\n", 0, false);
	frame_dest_from_ip(&d, AF_INET, LO4, 9);
	assert_non_null(a = app_get(&c, 5100, &d));
	assert_int_equal(assoc_send(a, &d, (const uint8_t *)"x", 1, false), 0);
	assert_int_equal(assoc_send(a, &d, (const uint8_t *)"y", 1, false), 0);
	/* No fd at or above the lowest free one. */
	assert_true((fd = dup(0)) >= 0);
	close(fd);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = (rlim_t)fd;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	loop_run_once(c.loop, 0);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(astats(&c)->failed, 1);
	assert_null(app_get(&c, 5100, &d));
	assert_int_equal(astats(&c)->drop_hold, 1);
	client_stop(&c);
}

/* Raises or drops CAP_NET_ADMIN and CAP_NET_RAW (either lets SO_MARK be
 * set) in the effective set; the permitted set keeps them. */
static void
net_caps(bool on)
{
	struct __user_cap_header_struct	h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct	d[2];
	uint32_t			bits;

	bits = 1u << CAP_NET_ADMIN | 1u << CAP_NET_RAW;
	assert_int_equal(syscall(SYS_capget, &h, d), 0);
	if (on)
		d[0].effective |= bits & d[0].permitted;
	else
		d[0].effective &= ~bits;
	assert_int_equal(syscall(SYS_capset, &h, d), 0);
}

/* A direct socket that cannot be marked would be routed into the TUN, and
 * its datagrams back to the client as new ones: the association fails
 * instead of sending unmarked, as sock_connect() refuses for TCP. */
static void
test_direct_unmarked(void **state)
{
	struct client		 c;
	struct proto_dest	 d;
	struct assoc		*a;
	uint8_t			 buf[16];
	uint16_t		 port;
	int			 t;

	(void)state;
	need_mark();
	assert_true((t = udp_bound(AF_INET, &port)) >= 0);
	client_start(&c, "  protocol: direct\n  mark: 0x7353\n", 0, false);
	frame_dest_from_ip(&d, AF_INET, LO4, port);
	assert_non_null(a = app_get(&c, 5300, &d));
	assert_int_equal(assoc_send(a, &d, (const uint8_t *)"x", 1, false), 0);
	net_caps(false);
	loop_run_once(c.loop, 0);
	net_caps(true);
	assert_int_equal(astats(&c)->failed, 1);
	assert_int_equal(recv(t, buf, sizeof(buf), MSG_DONTWAIT), -1);
	assert_null(app_get(&c, 5300, &d));	/* holding down */
	client_stop(&c);
	close(t);
}

/* The DNS timeout holds for the socket transports: an association that
 * only sent DNS expires after dns_timeout, another after udp_timeout. */
static void
test_direct_dns_timeout(void **state)
{
	struct client		 c;
	struct proto_dest	 d;
	struct assoc		*a;
	int			 i;

	(void)state;
	need_mark();
	client_start(&c, "  protocol: direct\n  mark: 0x7353\n"
	    "  dns_timeout: 1s\n  udp_timeout: 30s\n", 0, false);
	frame_dest_from_ip(&d, AF_INET, LO4, 53);
	assert_non_null(a = app_get(&c, 5200, &d));
	assert_int_equal(assoc_send(a, &d, (const uint8_t *)"q", 1, true), 0);
	assert_non_null(a = app_get(&c, 5201, &d));
	assert_int_equal(assoc_send(a, &d, (const uint8_t *)"u", 1, false), 0);
	for (i = 0; i < 300 && astats(&c)->expired == 0; i++)
		loop_run_once(c.loop, 10);
	assert_int_equal(astats(&c)->expired, 1);
	assert_int_equal(astats(&c)->active, 1);
	client_stop(&c);
}

/* ---- a SOCKS5 proxy ------------------------------------------------------------ */

static struct proxy {
	int			 lfd;
	uint16_t		 port;
	pthread_t		 thr;
	const char		*user, *pass;	/* NULL: no authentication */
	bool			 bnd_zero;	/* answer 0.0.0.0 as the relay */
	bool			 close_after;	/* close control after 2 dgrams */
	bool			 sent_frag;
	struct proto_dest	 req;		/* UDP ASSOCIATE's DST */
	unsigned		 dgrams;
	unsigned		 conns;
	bool			 authed;
	char			 err[128];
} px;

static void
px_error(const char *what)
{
	if (px.err[0] == '\0')
		snprintf(px.err, sizeof(px.err), "%s", what);
}

static void
px_write(int fd, const void *p, size_t n)
{
	if (write(fd, p, n) != (ssize_t)n)
		px_error("write");
}

static int
read_n(int fd, uint8_t *p, size_t n)
{
	ssize_t	r;
	size_t	off = 0;

	while (off < n) {
		if ((r = read(fd, p + off, n - off)) <= 0)
			return -1;
		off += (size_t)r;
	}
	return 0;
}

/* The relay: echo with the same header until the control connection
 * ends (or, close_after, after two datagrams). */
static void
px_relay(int cfd, int ufd)
{
	uint8_t			 buf[70000];
	struct sockaddr_storage	 from;
	struct pollfd		 pf[2];
	socklen_t		 fl;
	ssize_t			 n;

	pf[0].fd = cfd;
	pf[0].events = POLLIN;
	pf[1].fd = ufd;
	pf[1].events = POLLIN;
	for (;;) {
		if (poll(pf, 2, 5000) <= 0)
			return;
		if (pf[0].revents)
			return;	/* the client went */
		fl = sizeof(from);
		if ((n = recvfrom(ufd, buf, sizeof(buf), 0,
		    (struct sockaddr *)&from, &fl)) < 10)
			continue;
		if (buf[2] != 0) {
			px_error("client sent a fragment");
			continue;
		}
		px.dgrams++;
		if (!px.sent_frag) {
			/* A fragment first: the client drops it. */
			px.sent_frag = true;
			buf[2] = 1;
			(void)sendto(ufd, buf, (size_t)n, 0,
			    (struct sockaddr *)&from, fl);
			buf[2] = 0;
		}
		(void)sendto(ufd, buf, (size_t)n, 0, (struct sockaddr *)&from,
		    fl);
		if (px.close_after && px.dgrams == 2)
			return;
	}
}

static void
px_conn(int fd)
{
	uint8_t			 b[600], rep[32] = { 5, 0, 0, 1 };
	struct socks5_reply	 r;
	struct sockaddr_in	 sin;
	socklen_t		 sl = sizeof(sin);
	size_t			 len;
	ssize_t			 k;
	int			 ufd = -1;
	uint16_t		 uport;

	if (read_n(fd, b, 2) < 0)
		return;		/* a client that went at once */
	if (b[0] != 5 || read_n(fd, b + 2, b[1]) < 0)
		return px_error("greeting");
	if (px.user != NULL) {
		if (memchr(b + 2, 2, b[1]) == NULL) {
			px_write(fd, "\x05\xff", 2);
			return;
		}
		px_write(fd, "\x05\x02", 2);
		if (read_n(fd, b, 2) < 0 || b[0] != 1 ||
		    read_n(fd, b + 2, (size_t)b[1] + 1) < 0 ||
		    read_n(fd, b + 3 + b[1], b[2 + b[1]]) < 0)
			return px_error("auth");
		px.authed = b[1] == strlen(px.user) &&
		    memcmp(b + 2, px.user, b[1]) == 0 &&
		    b[2 + b[1]] == strlen(px.pass) &&
		    memcmp(b + 3 + b[1], px.pass, b[2 + b[1]]) == 0;
		px_write(fd, px.authed ? "\x01\x00" : "\x01\x01", 2);
		if (!px.authed)
			return;
	} else
		px_write(fd, "\x05\x00", 2);
	/* The request, read field by field with the client codec's reply
	 * parser (same layout, CMD in the REP byte). */
	len = 0;
	for (;;) {
		if ((k = read(fd, b + len, 1)) <= 0)
			return px_error("request");
		len++;
		if ((k = socks5_reply_parse(b, len, &r)) < 0)
			return px_error("malformed request");
		if (k > 0)
			break;
	}
	if (r.rep != SOCKS5_CMD_UDP)
		return px_error("not UDP ASSOCIATE");
	px.req = r.bnd;
	px.conns++;
	if ((ufd = socket(AF_INET, SOCK_DGRAM, 0)) < 0)
		return px_error("relay socket");
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(ufd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    getsockname(ufd, (struct sockaddr *)&sin, &sl) < 0) {
		close(ufd);
		return px_error("relay bind");
	}
	uport = ntohs(sin.sin_port);
	if (!px.bnd_zero)
		memcpy(rep + 4, LO4, 4);
	rep[8] = (uint8_t)(uport >> 8);
	rep[9] = (uint8_t)uport;
	px_write(fd, rep, 10);
	px_relay(fd, ufd);
	close(ufd);
}

static void *
px_main(void *arg)
{
	int	fd;

	(void)arg;
	while ((fd = accept(px.lfd, NULL, NULL)) >= 0) {
		px_conn(fd);
		close(fd);
	}
	return NULL;
}

static void
px_start(const char *user, const char *pass, bool bnd_zero, bool close_after)
{
	struct sockaddr_in	sin;
	socklen_t		sl = sizeof(sin);

	memset(&px, 0, sizeof(px));
	px.user = user;
	px.pass = pass;
	px.bnd_zero = bnd_zero;
	px.close_after = close_after;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true((px.lfd = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	assert_int_equal(bind(px.lfd, (struct sockaddr *)&sin, sizeof(sin)),
	    0);
	assert_int_equal(listen(px.lfd, 8), 0);
	assert_int_equal(getsockname(px.lfd, (struct sockaddr *)&sin, &sl),
	    0);
	px.port = ntohs(sin.sin_port);
	assert_int_equal(pthread_create(&px.thr, NULL, px_main, NULL), 0);
}

static void
px_stop(void)
{
	shutdown(px.lfd, SHUT_RDWR);
	close(px.lfd);
	pthread_join(px.thr, NULL);
	assert_string_equal(px.err, "");
}

/* Two datagrams to two destinations through the relay; replies come back
 * from each (the relay echoes the header), the fragment is dropped. */
static void
socks_roundtrip(struct client *c, struct assoc *a)
{
	struct proto_dest	d1, d2;
	size_t			k;
	int			i;

	frame_dest_from_ip(&d1, AF_INET, DST4, 7);
	frame_dest_from_ip(&d2, AF_INET, LO4, 9);
	assert_int_equal(assoc_send(a, &d1, (const uint8_t *)"alpha", 5,
	    false), 0);
	assert_int_equal(assoc_send(a, &d2, (const uint8_t *)"beta", 4,
	    false), 0);
	for (i = 0; i < 300 && got.n < 2; i++)
		loop_run_once(c->loop, 10);
	assert_int_equal(got.n, 2);
	for (k = 0; k < 2; k++) {
		if (got.src[k].port == 7) {
			assert_memory_equal(got.src[k].ip, DST4, 4);
			assert_int_equal(got.len[k], 5);
			assert_memory_equal(got.data[k], "alpha", 5);
		} else {
			assert_int_equal(got.src[k].port, 9);
			assert_memory_equal(got.src[k].ip, LO4, 4);
			assert_int_equal(got.len[k], 4);
			assert_memory_equal(got.data[k], "beta", 4);
		}
	}
	assert_int_equal(astats(c)->drop_down, 1);	/* the fragment */
}

static void
test_socks5(void **state)
{
	struct client		 c;
	struct proto_dest	 d;
	struct assoc		*a;

	(void)state;
	px_start(NULL, NULL, true, false);
	client_start(&c, "  protocol: socks5\n  server: 127.0.0.1:1\n",
	    px.port, false);
	frame_dest_from_ip(&d, AF_INET, DST4, 7);
	assert_non_null(a = app_get(&c, 6000, &d));
	socks_roundtrip(&c, a);
	assert_int_equal(px.conns, 1);
	/* The request named our UDP socket on the control connection's
	 * address. */
	assert_int_equal(px.req.atyp, PROTO_ATYP_IPV4);
	assert_memory_equal(px.req.ip, LO4, 4);
	assert_int_not_equal(px.req.port, 0);
	assert_int_equal(astats(&c)->created, 1);
	assert_int_equal(astats(&c)->failed, 0);
	client_stop(&c);
	px_stop();
}

static void
test_socks5_auth(void **state)
{
	struct client		 c;
	struct proto_dest	 d;
	struct assoc		*a;
	int			 i;

	(void)state;
	px_start("alice", "s3cret", false, false);
	client_start(&c, "  protocol: socks5\n  server: 127.0.0.1:1\n"
	    "  username: alice\n  password: s3cret\n", px.port, false);
	frame_dest_from_ip(&d, AF_INET, DST4, 7);
	assert_non_null(a = app_get(&c, 6001, &d));
	socks_roundtrip(&c, a);
	assert_true(px.authed);
	client_stop(&c);
	px_stop();

	/* A wrong password fails the association (and holds it down). */
	px_start("alice", "other", false, false);
	client_start(&c, "  protocol: socks5\n  server: 127.0.0.1:1\n"
	    "  username: alice\n  password: s3cret\n", px.port, false);
	assert_non_null(a = app_get(&c, 6002, &d));
	assert_int_equal(assoc_send(a, &d, (const uint8_t *)"x", 1, false), 0);
	for (i = 0; i < 300 && astats(&c)->failed == 0; i++)
		loop_run_once(c.loop, 10);
	assert_int_equal(astats(&c)->failed, 1);
	assert_null(app_get(&c, 6002, &d));
	assert_int_equal(astats(&c)->drop_hold, 1);
	assert_int_equal(got.n, 0);
	client_stop(&c);
	px_stop();

	/* No credentials for a proxy that wants them: fails too. */
	px_start("alice", "s3cret", false, false);
	client_start(&c, "  protocol: socks5\n  server: 127.0.0.1:1\n",
	    px.port, false);
	assert_non_null(a = app_get(&c, 6003, &d));
	for (i = 0; i < 300 && astats(&c)->failed == 0; i++)
		loop_run_once(c.loop, 10);
	assert_int_equal(astats(&c)->failed, 1);
	client_stop(&c);
	px_stop();
}

/* The association lives as long as the control connection. */
static void
test_socks5_control_closes(void **state)
{
	struct client		 c;
	struct proto_dest	 d;
	struct assoc		*a;
	int			 i;

	(void)state;
	px_start(NULL, NULL, false, true);
	client_start(&c, "  protocol: socks5\n  server: 127.0.0.1:1\n",
	    px.port, false);
	frame_dest_from_ip(&d, AF_INET, DST4, 7);
	assert_non_null(a = app_get(&c, 6004, &d));
	socks_roundtrip(&c, a);
	for (i = 0; i < 300 && astats(&c)->active != 0; i++)
		loop_run_once(c.loop, 10);
	assert_int_equal(astats(&c)->active, 0);
	assert_int_equal(astats(&c)->failed, 0);	/* a clean end */
	/* The next datagram makes a new association, which works. */
	got_clear();
	assert_non_null(a = app_get(&c, 6004, &d));
	assert_int_equal(astats(&c)->created, 2);
	socks_roundtrip(&c, a);
	assert_int_equal(px.conns, 2);
	client_stop(&c);
	px_stop();
}

/* A proxy that is not there: the association fails, held down. */
static void
test_socks5_unreachable(void **state)
{
	struct client		 c;
	struct proto_dest	 d;
	uint16_t		 port;
	int			 fd, i;

	(void)state;
	/* A port nobody listens on: bound, never listening. */
	assert_true((fd = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	{
		struct sockaddr_in	sin;
		socklen_t		sl = sizeof(sin);

		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		assert_int_equal(bind(fd, (struct sockaddr *)&sin,
		    sizeof(sin)), 0);
		assert_int_equal(getsockname(fd, (struct sockaddr *)&sin,
		    &sl), 0);
		port = ntohs(sin.sin_port);
	}
	client_start(&c, "  protocol: socks5\n  server: 127.0.0.1:1\n", port,
	    false);
	frame_dest_from_ip(&d, AF_INET, DST4, 7);
	assert_non_null(app_get(&c, 6005, &d));
	for (i = 0; i < 300 && astats(&c)->failed == 0; i++)
		loop_run_once(c.loop, 10);
	assert_int_equal(astats(&c)->failed, 1);
	client_stop(&c);
	close(fd);
}

/* protocol block: no association; the app gets an ICMP "administratively
 * prohibited" from the destination quoting its datagram or echo
 * request. */
static void
test_block(void **state)
{
	struct client	c;
	struct pkt_ip	ip, q;
	struct pkt_udp	u;
	uint8_t		pkt[2000];
	size_t		n;
	uint16_t	s;

	(void)state;
	client_start(&c, "  protocol: block\n", 0, true);
	assert_true(assoc_env_blocked(c.e));
	n = pkt_build_udp(pkt, AF_INET, APP4, 7000, DST4, 53, "query", 5, 9);
	assert_true(flow_udp_input(c.u, pkt, n));
	assert_int_equal(astats(&c)->drop_block, 1);
	assert_int_equal(astats(&c)->created, 0);
	assert_int_equal(tun.n, 1);
	assert_int_equal(pkt_parse(tun.pkt[0], tun.len[0], &ip), PKT_OK);
	assert_int_equal(ip.proto, PKT_PROTO_ICMP);
	assert_memory_equal(ip.src, DST4, 4);
	assert_memory_equal(ip.dst, APP4, 4);
	assert_int_equal(ip.l4[0], 3);
	assert_int_equal(ip.l4[1], PKT_UNREACH_ADMIN4);
	assert_int_equal(pkt_csum_fold(pkt_csum_add(0, ip.l4, ip.l4_len)), 0);
	/* The quote is the app's datagram, whole here. */
	assert_int_equal(pkt_parse(ip.l4 + 8, ip.l4_len - 8, &q), PKT_OK);
	assert_int_equal(pkt_udp_parse(&q, &u), PKT_OK);
	assert_int_equal(u.sport, 7000);
	assert_int_equal(u.dport, 53);
	/* IPv6: ICMPv6 type 1 code 1, checksum over the pseudo header. */
	{
		static const uint8_t a6[16] = { 0xfd, 0xfe, [15] = 1 };
		static const uint8_t d6[16] = { 0x20, 0x01, 0x0d, 0xb8,
		    [15] = 7 };

		n = pkt_build_udp(pkt, AF_INET6, a6, 7001, d6, 443, "x", 1, 0);
		assert_true(flow_udp_input(c.u, pkt, n));
		assert_int_equal(tun.n, 2);
		assert_int_equal(pkt_parse(tun.pkt[1], tun.len[1], &ip),
		    PKT_OK);
		assert_int_equal(ip.proto, PKT_PROTO_ICMP6);
		assert_int_equal(ip.l4[0], 1);
		assert_int_equal(ip.l4[1], PKT_UNREACH_ADMIN6);
		assert_memory_equal(ip.dst, a6, 16);
	}
	/* An echo request is refused too, the same way, quoting it. */
	n = pkt_build_echo_reply(pkt, AF_INET, APP4, DST4, 1, 1, "p", 1, 1);
	pkt[20] = 8;
	pkt[22] = pkt[23] = 0;
	s = pkt_csum_fold(pkt_csum_add(0, pkt + 20, n - 20));
	memcpy(pkt + 22, &s, 2);
	assert_true(flow_udp_input(c.u, pkt, n));
	assert_int_equal(astats(&c)->drop_block, 3);
	assert_int_equal(tun.n, 3);
	assert_int_equal(pkt_parse(tun.pkt[2], tun.len[2], &ip), PKT_OK);
	assert_int_equal(ip.proto, PKT_PROTO_ICMP);
	assert_memory_equal(ip.src, DST4, 4);
	assert_memory_equal(ip.dst, APP4, 4);
	assert_int_equal(ip.l4[0], 3);
	assert_int_equal(ip.l4[1], PKT_UNREACH_ADMIN4);
	assert_int_equal(pkt_csum_fold(pkt_csum_add(0, ip.l4, ip.l4_len)), 0);
	/* The quote: the echo request's own header (type 8, id, seq). */
	assert_int_equal(pkt_parse(ip.l4 + 8, ip.l4_len - 8, &q), PKT_OK);
	assert_int_equal(q.proto, PKT_PROTO_ICMP);
	assert_memory_equal(q.l4, pkt + 20, 8);
	client_stop(&c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_direct),
		cmocka_unit_test(test_direct_no_socket),
		cmocka_unit_test(test_direct_unmarked),
		cmocka_unit_test(test_direct_dns_timeout),
		cmocka_unit_test(test_socks5),
		cmocka_unit_test(test_socks5_auth),
		cmocka_unit_test(test_socks5_control_closes),
		cmocka_unit_test(test_socks5_unreachable),
		cmocka_unit_test(test_block),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
