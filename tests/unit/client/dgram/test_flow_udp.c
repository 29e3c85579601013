/*
 * flow_udp, flow_icmp and assoc against a fake server on loopback: packets
 * in as the TUN would deliver them, what the client writes back to the
 * TUN captured and checked (addresses, ports, checksums, payload), the
 * frames the server receives recorded.  The server is a thread with
 * blocking OpenSSL I/O; the client runs on the loop in the test's thread.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <cmocka.h>

#include <openssl/ssl.h>
#include <sodium.h>

#include "core/addr.h"
#include "client/dgram/assoc.h"
#include "wire/auth.h"
#include "conf/conf.h"
#include "client/dgram/flow_udp.h"
#include "client/outbound.h"
#include "wire/frame.h"
#include "core/loop.h"
#include "tls/outer.h"
#include "wire/pkt.h"
#include "wire/proto.h"
#include "wire/proto_trojan.h"
#include "client/dgram/reass.h"
#include "client/dns/fakeip.h"
#include "wire/dns.h"
#include "tests/unit/testcert.h"

#define K1	"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
#define MTU	1500
#define MAXOUT	64

static const uint8_t APP4[4] = { 198, 18, 0, 1 }, DST4[4] = { 192, 0, 2, 7 };
static const uint8_t APP6[16] = { 0xfd, 0xfe, [15] = 1 };
static const uint8_t DST6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 7 };

static struct testcert	 tc;

/* ---- the fake server ----------------------------------------------------- */

enum srv_mode { SRV_ECHO, SRV_DENY, SRV_TROJAN, SRV_TROJAN_SHUT };

static struct srv {
	int		 lfd;
	uint16_t	 port;
	pthread_t	 thr;
	pthread_mutex_t	 mu;
	enum srv_mode	 mode;
	/* Seen, for the test to check. */
	unsigned	 conns;
	uint8_t		 kind;
	struct proto_dest hdr_dest;	/* request header destination */
	uint8_t		 cmd;		/* trojan command */
	struct proto_dest last_dst;	/* last frame's destination */
	unsigned	 frames;
	char		 err[128];
} srv;

static void
srv_error(const char *what)
{
	pthread_mutex_lock(&srv.mu);
	if (srv.err[0] == '\0')
		snprintf(srv.err, sizeof(srv.err), "%s", what);
	pthread_mutex_unlock(&srv.mu);
}

static int
ssl_read_full(SSL *ssl, uint8_t *buf, size_t len)
{
	size_t	off = 0;
	int	n;

	while (off < len) {
		if ((n = SSL_read(ssl, buf + off, (int)(len - off))) <= 0)
			return -1;
		off += (size_t)n;
	}
	return 0;
}

/*
 * Every packet the client sends (as parse reads them: native frames or
 * trojan UDP packets, named what for an error), its destination recorded,
 * goes back as it came: source = the destination, same payload.  Until the
 * client ends.  The server context allows partial writes.
 */
static void
srv_echo(SSL *ssl, uint8_t *buf, ssize_t (*parse)(const uint8_t *, size_t,
    struct proto_dest *, const uint8_t **, size_t *), const char *what)
{
	struct proto_dest	 d;
	const uint8_t		*p;
	size_t			 len = 0, plen, off;
	ssize_t			 r;
	int			 n;

	for (;;) {
		if ((n = SSL_read(ssl, buf + len, (int)(2 * FRAME_MAX - len)))
		    <= 0)
			return;
		len += (size_t)n;
		while ((r = parse(buf, len, &d, &p, &plen)) > 0) {
			pthread_mutex_lock(&srv.mu);
			srv.last_dst = d;
			srv.frames++;
			pthread_mutex_unlock(&srv.mu);
			for (off = 0; off < (size_t)r; off += (size_t)n)
				if ((n = SSL_write(ssl, buf + off,
				    (int)((size_t)r - off))) <= 0)
					return;
			memmove(buf, buf + r, len - (size_t)r);
			len -= (size_t)r;
		}
		if (r < 0) {
			srv_error(what);
			return;
		}
	}
}

/* trojan: the request (password "pw", UDP ASSOCIATE), then every UDP
 * packet echoed back as it came; no status byte. */
static void
srv_trojan(SSL *ssl, uint8_t *buf)
{
	struct proto_trojan_req	 req;
	char			 hex[PROTO_TROJAN_HEX_LEN + 1];
	size_t			 len = 0;
	ssize_t			 r;

	for (;;) {
		if (ssl_read_full(ssl, buf + len, 1) < 0) {
			srv_error("trojan request read");
			return;
		}
		len++;
		if ((r = proto_trojan_parse(buf, len, &req)) < 0) {
			srv_error("malformed trojan request");
			return;
		}
		if (r > 0)
			break;
	}
	assert_int_equal(proto_trojan_hash("pw", 2, hex), 0);
	if (strcmp(hex, req.hex) != 0)
		srv_error("trojan password");
	pthread_mutex_lock(&srv.mu);
	srv.conns++;
	srv.cmd = req.cmd;
	srv.hdr_dest = req.dest;
	pthread_mutex_unlock(&srv.mu);
	if (srv.mode == SRV_TROJAN_SHUT)
		return;		/* a rejecting server: closes, says nothing */
	srv_echo(ssl, buf, proto_trojan_udp_parse,
	    "malformed trojan UDP packet");
}

/* One connection: header, status, then every frame echoed back with the
 * same address (the "target" answers). */
static void *
srv_conn(void *arg)
{
	int		 fd = (int)(intptr_t)arg;
	SSL		*ssl;
	uint8_t		*buf;
	struct proto_req req;
	size_t		 len = 0;
	ssize_t		 r;
	uint8_t		 st;

	buf = malloc(2 * FRAME_MAX);
	ssl = SSL_new(tc.sctx);
	if (buf == NULL || ssl == NULL || SSL_set_fd(ssl, fd) != 1) {
		srv_error("SSL setup");
		goto out;
	}
	/* A test may end while its client still connects: not an error. */
	if (SSL_accept(ssl) != 1)
		goto out;
	if (srv.mode == SRV_TROJAN || srv.mode == SRV_TROJAN_SHUT) {
		srv_trojan(ssl, buf);
		goto out;
	}
	/* The request header, byte by byte until it parses. */
	for (;;) {
		if (ssl_read_full(ssl, buf + len, 1) < 0) {
			srv_error("header read");
			goto out;
		}
		len++;
		if ((r = proto_req_parse(buf, len, &req)) < 0) {
			srv_error("malformed header");
			goto out;
		}
		if (r > 0)
			break;
	}
	{
		uint8_t	key[32], bind[PROTO_BIND_LEN];
		size_t	kl = 0;

		/* Version 2, bound to this connection. */
		sodium_base642bin(key, sizeof(key), K1, strlen(K1), NULL, &kl,
		    NULL, sodium_base64_VARIANT_ORIGINAL);
		if (buf[0] != PROTO_VERSION ||
		    SSL_export_keying_material(ssl, bind, sizeof(bind),
		    PROTO_BIND_LABEL, strlen(PROTO_BIND_LABEL), NULL, 0,
		    0) != 1 ||
		    proto_req_verify_mac(buf, len, key, bind) != 0)
			srv_error("bad MAC");
	}
	pthread_mutex_lock(&srv.mu);
	srv.conns++;
	srv.kind = req.kind;
	srv.hdr_dest = req.dest;
	pthread_mutex_unlock(&srv.mu);
	st = srv.mode == SRV_DENY ? PROTO_ERR_DENIED : PROTO_OK;
	if (SSL_write(ssl, &st, 1) != 1 || st != PROTO_OK)
		goto out;
	srv_echo(ssl, buf, frame_parse, "malformed frame");
out:
	if (ssl != NULL) {
		SSL_shutdown(ssl);
		SSL_free(ssl);
	}
	close(fd);
	free(buf);
	return NULL;
}

static void *
srv_main(void *arg)
{
	pthread_t	t;
	int		fd;

	(void)arg;
	while ((fd = accept(srv.lfd, NULL, NULL)) >= 0) {
		if (pthread_create(&t, NULL, srv_conn, (void *)(intptr_t)fd)
		    != 0) {
			close(fd);
			continue;
		}
		pthread_detach(t);
	}
	return NULL;
}

static void
srv_start(enum srv_mode mode)
{
	struct sockaddr_in	sin;
	socklen_t		sl = sizeof(sin);

	memset(&srv, 0, sizeof(srv));
	pthread_mutex_init(&srv.mu, NULL);
	srv.mode = mode;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true((srv.lfd = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	assert_int_equal(bind(srv.lfd, (struct sockaddr *)&sin, sizeof(sin)),
	    0);
	assert_int_equal(listen(srv.lfd, 64), 0);
	assert_int_equal(getsockname(srv.lfd, (struct sockaddr *)&sin, &sl), 0);
	srv.port = ntohs(sin.sin_port);
	assert_int_equal(pthread_create(&srv.thr, NULL, srv_main, NULL), 0);
}

static void
srv_stop(void)
{
	shutdown(srv.lfd, SHUT_RDWR);
	close(srv.lfd);
	pthread_join(srv.thr, NULL);
	/* Connection threads end with the client's streams. */
	usleep(50 * 1000);
	assert_string_equal(srv.err, "");
}

/* ---- the client side ------------------------------------------------------- */

static struct {
	size_t	 n;
	uint8_t	*pkt[MAXOUT];
	size_t	 len[MAXOUT];
} out;

static int
capture(const uint8_t *pkt, size_t len)
{
	if (out.n == MAXOUT)
		return -1;
	out.pkt[out.n] = malloc(len);
	memcpy(out.pkt[out.n], pkt, len);
	out.len[out.n++] = len;
	return 0;
}

static void
out_clear(void)
{
	size_t	i;

	for (i = 0; i < out.n; i++)
		free(out.pkt[i]);
	out.n = 0;
}

struct client {
	struct conf	*conf;
	struct loop	*loop;
	struct flow_udp	*u;
	struct addr	 server;
	uint8_t		 user_id[PROTO_USER_ID_LEN];
	struct outbounds *obs;
};

static void
client_start(struct client *c, const char *extra)
{
	struct assoc_cfg	ac;
	char			y[512], err[256];

	memset(c, 0, sizeof(*c));
	snprintf(y, sizeof(y), "tun: {mtu: %d}\nclient:\n  server: "
	    "\"127.0.0.1:%u\"\n  key: " K1 "\n%s", MTU,
	    srv.port, extra != NULL ? extra : "");
	c->conf = conf_load_buf("t.yaml", y, strlen(y), err, sizeof(err));
	if (c->conf == NULL)
		fail_msg("%s", err);
	auth_user_id(conf_final(c->conf)->key, c->user_id);
	assert_non_null(c->loop = loop_new());
	assert_int_equal(addr_from_ip(&c->server, "127.0.0.1", srv.port), 0);
	memset(&ac, 0, sizeof(ac));
	ac.loop = c->loop;
	ac.conf = c->conf;
	assert_non_null(c->obs = outbounds_one(outbound_new(c->conf, 0,
	    tc.cctx, &c->server)));
	ac.obs = c->obs;
	ac.tun_write = capture;
	assert_non_null(c->u = flow_udp_new(&ac));
}

static void
client_stop(struct client *c)
{
	flow_udp_free(c->u);
	outbounds_free(c->obs);
	loop_free(c->loop);
	conf_free(c->conf);
	out_clear();
}

/* Runs the loop until want packets were written to the TUN (or ms). */
static void
run_until(struct client *c, size_t want, int ms)
{
	int	i;

	for (i = 0; i < ms / 10 && out.n < want; i++)
		assert_int_not_equal(loop_run_once(c->loop, 10), -1);
}

static const struct assoc_stats *
astats(struct client *c)
{
	return assoc_stats(flow_udp_assoc(c->u));
}

static bool
input(struct client *c, const uint8_t *pkt, size_t len)
{
	return flow_udp_input(c->u, pkt, len);
}

/* ---- tests --------------------------------------------------------------- */

static uint8_t	pbuf[PKT_MAX], pay[PKT_MAX], frag[PKT_MAX];

static void
check_udp_reply(const uint8_t *pkt, size_t len, int family,
    const uint8_t *src, uint16_t sport, const uint8_t *dst, uint16_t dport,
    const uint8_t *data, size_t dlen)
{
	struct pkt_ip	ip;
	struct pkt_udp	u;
	size_t		al = family == AF_INET ? 4 : 16;

	assert_int_equal(pkt_parse(pkt, len, &ip), PKT_OK);
	assert_int_equal(ip.family, family);
	assert_memory_equal(ip.src, src, al);
	assert_memory_equal(ip.dst, dst, al);
	assert_int_equal(pkt_udp_parse(&ip, &u), PKT_OK);	/* checksums */
	assert_int_equal(u.sport, sport);
	assert_int_equal(u.dport, dport);
	assert_int_equal(u.len, dlen);
	assert_memory_equal(u.data, data, dlen);
}

static void
test_classify(void **state)
{
	struct client	c;
	static const uint8_t mc[4] = { 224, 0, 0, 251 };
	size_t		n;

	(void)state;
	srv_start(SRV_ECHO);
	client_start(&c, NULL);
	/* Garbage and a truncated IPv4 header: malformed. */
	assert_true(input(&c, (const uint8_t *)"\x45\x00", 2));
	n = pkt_build_udp(pbuf, AF_INET, APP4, 5000, DST4, 53, "q", 1, 1);
	assert_true(input(&c, pbuf, n - 1));
	assert_int_equal(flow_udp_stats(c.u)->rx_malformed, 2);
	/* A flipped payload bit: bad checksum. */
	pbuf[n - 1] ^= 1;
	assert_true(input(&c, pbuf, n));
	assert_int_equal(flow_udp_stats(c.u)->rx_badsum, 1);
	/* Multicast (mDNS) and link-local IPv6 are not ours. */
	n = pkt_build_udp(pbuf, AF_INET, APP4, 5353, mc, 5353, "m", 1, 1);
	assert_false(input(&c, pbuf, n));
	{
		uint8_t ll[16] = { 0xfe, 0x80, [15] = 2 };

		n = pkt_build_udp(pbuf, AF_INET6, APP6, 1, ll, 2, "l", 1, 0);
		assert_false(input(&c, pbuf, n));
	}
	/* An ICMP echo reply from the app is not forwarded either. */
	n = pkt_build_echo_reply(pbuf, AF_INET, APP4, DST4, 1, 1, "x", 1, 1);
	assert_false(input(&c, pbuf, n));
	assert_int_equal(astats(&c)->created, 0);
	assert_int_equal(out.n, 0);
	client_stop(&c);
	srv_stop();
}

static void
test_udp_echo(void **state)
{
	struct client	 c;
	struct reass	*r;
	struct pkt_ip	 ip;
	size_t		 n, i;
	int		 rc = 0;

	(void)state;
	srv_start(SRV_ECHO);
	client_start(&c, NULL);
	n = pkt_build_udp(pbuf, AF_INET, APP4, 40000, DST4, 7, "hello", 5, 9);
	assert_true(input(&c, pbuf, n));
	run_until(&c, 1, 5000);
	assert_int_equal(out.n, 1);
	check_udp_reply(out.pkt[0], out.len[0], AF_INET, DST4, 7, APP4, 40000,
	    (const uint8_t *)"hello", 5);
	assert_int_equal(srv.kind, PROTO_KIND_UDP);
	assert_int_equal(srv.hdr_dest.atyp, PROTO_ATYP_IPV4);
	assert_memory_equal(srv.hdr_dest.ip, DST4, 4);
	assert_int_equal(srv.hdr_dest.port, 7);
	out_clear();

	/* IPv6, 20000 bytes: out of the client in fragments of <= MTU. */
	for (i = 0; i < 20000; i++)
		pay[i] = (uint8_t)(i * 7);
	n = pkt_build_udp(pbuf, AF_INET6, APP6, 40001, DST6, 9, pay, 20000, 0);
	assert_true(input(&c, pbuf, n));
	run_until(&c, 17, 5000);
	assert_true(out.n >= 2);
	assert_non_null(r = reass_new());
	for (i = 0; i < out.n; i++) {
		assert_true(out.len[i] <= MTU);
		assert_int_equal(pkt_parse(out.pkt[i], out.len[i], &ip), PKT_OK);
		assert_true(ip.frag);
		rc = reass_add(r, &ip, 0);
		if (rc == 1)
			break;
	}
	assert_int_equal(rc, 1);
	assert_int_equal(pkt_parse_ext6(&ip, ip.proto, ip.l4, ip.l4_len),
	    PKT_OK);
	{
		struct pkt_udp	u;

		assert_int_equal(pkt_udp_parse(&ip, &u), PKT_OK);
		assert_int_equal(u.sport, 9);
		assert_int_equal(u.dport, 40001);
		assert_int_equal(u.len, 20000);
		assert_memory_equal(u.data, pay, 20000);
	}
	reass_free(r);
	assert_int_equal(astats(&c)->created, 2);
	assert_int_equal(astats(&c)->dgrams_down, 2);
	client_stop(&c);
	srv_stop();
}

/* Sets the MTU of the ICMPv6 Packet Too Big in p (len bytes) and its
 * checksum over the pseudo header of its addresses. */
static void
ptb_mtu(uint8_t *p, size_t len, unsigned mtu)
{
	uint8_t		ph[40] = { 0 };
	uint16_t	cs;

	p[44] = (uint8_t)(mtu >> 24), p[45] = (uint8_t)(mtu >> 16);
	p[46] = (uint8_t)(mtu >> 8), p[47] = (uint8_t)mtu;
	memcpy(ph, p + 8, 32);
	ph[34] = (uint8_t)((len - 40) >> 8);
	ph[35] = (uint8_t)(len - 40);
	ph[39] = 58;
	p[42] = p[43] = 0;
	cs = pkt_csum_fold(pkt_csum_add(pkt_csum_add(0, ph, 40), p + 40,
	    len - 40));
	memcpy(p + 42, &cs, 2);
}

/*
 * A router between the client and the app (its LAN link smaller than the
 * TUN) answers an IPv6 reply too big for that link with Packet Too Big
 * (IPv6 routers do not fragment): later replies to that app are
 * fragmented to the MTU it named, at least 1280; other apps keep the
 * TUN's MTU.
 */
static void
test_ptb(void **state)
{
	static const uint8_t	 R6[16] = { 0xfd, 0x88, [15] = 1 };
	static const uint8_t	 APP6B[16] = { 0xfd, 0xfe, [15] = 2 };
	struct client		 c;
	uint8_t			 msg[1280];
	size_t			 n, i, m;

	(void)state;
	srv_start(SRV_ECHO);
	client_start(&c, NULL);
	for (i = 0; i < 1400; i++)
		pay[i] = (uint8_t)(i * 5);
	n = pkt_build_udp(pbuf, AF_INET6, APP6, 40002, DST6, 9, pay, 1400, 0);
	assert_true(input(&c, pbuf, n));
	run_until(&c, 1, 5000);
	assert_int_equal(out.n, 1);	/* 1448 bytes: fits the TUN */
	assert_int_equal(out.len[0], 1448);
	/* The router's answer, quoting it: MTU 1300. */
	m = pkt_build_unreach(msg, AF_INET6, R6, DST6, 0, out.pkt[0],
	    out.len[0], 0);
	msg[40] = 2;
	ptb_mtu(msg, m, 1300);
	assert_true(input(&c, msg, m));
	out_clear();
	assert_true(input(&c, pbuf, n));
	run_until(&c, 2, 5000);
	assert_int_equal(out.n, 2);
	for (i = 0; i < out.n; i++)
		assert_true(out.len[i] <= 1300);
	out_clear();
	/* Another app behind another link: whole. */
	n = pkt_build_udp(pbuf, AF_INET6, APP6B, 40003, DST6, 9, pay, 1400, 0);
	assert_true(input(&c, pbuf, n));
	run_until(&c, 1, 5000);
	assert_int_equal(out.n, 1);
	out_clear();
	/* Below IPv6's minimum MTU: 1280. */
	ptb_mtu(msg, m, 1000);
	assert_true(input(&c, msg, m));
	n = pkt_build_udp(pbuf, AF_INET6, APP6, 40002, DST6, 9, pay, 1400, 0);
	assert_true(input(&c, pbuf, n));
	run_until(&c, 2, 5000);
	assert_int_equal(out.n, 2);
	assert_int_equal(out.len[0], 1280);
	client_stop(&c);
	srv_stop();
}

/* A datagram that arrives from the TUN in fragments goes out as one. */
struct feed {
	struct client	*c;
	size_t		 n;
};

static int
feed_frag(void *arg, const uint8_t *p, size_t len)
{
	struct feed	*f = arg;

	f->n++;
	return input(f->c, p, len) ? 0 : -1;
}

static void
test_fragments_in(void **state)
{
	struct client	c;
	struct feed	f = { &c, 0 };
	size_t		n, i;

	(void)state;
	srv_start(SRV_ECHO);
	client_start(&c, NULL);
	for (i = 0; i < 5000; i++)
		pay[i] = (uint8_t)(i * 3);
	n = pkt_build_udp(pbuf, AF_INET, APP4, 40002, DST4, 7, pay, 5000, 77);
	assert_int_equal(pkt_fragment(pbuf, n, 1280, 0, frag, feed_frag, &f), 0);
	assert_int_equal(f.n, 4);
	run_until(&c, 4, 5000);
	assert_int_equal(srv.frames, 1);
	assert_int_equal(flow_udp_reass_stats(c.u)->completed, 1);
	client_stop(&c);
	srv_stop();
}

static void
test_icmp_echo(void **state)
{
	struct client	c;
	struct pkt_ip	ip;
	struct pkt_echo	e;
	size_t		n;
	uint16_t	s;

	(void)state;
	srv_start(SRV_ECHO);
	client_start(&c, NULL);
	/* An echo request: a reply turned around, checksum fixed. */
	n = pkt_build_echo_reply(pbuf, AF_INET, APP4, DST4, 0x4242, 3,
	    "timestamp", 9, 5);
	pbuf[20] = 8;
	pbuf[22] = pbuf[23] = 0;
	s = pkt_csum_fold(pkt_csum_add(0, pbuf + 20, n - 20));
	memcpy(pbuf + 22, &s, 2);
	assert_true(input(&c, pbuf, n));
	run_until(&c, 1, 5000);
	assert_int_equal(out.n, 1);
	assert_int_equal(srv.kind, PROTO_KIND_ICMP);
	assert_int_equal(srv.last_dst.port, 3);		/* the sequence */
	assert_int_equal(pkt_parse(out.pkt[0], out.len[0], &ip), PKT_OK);
	assert_memory_equal(ip.src, DST4, 4);
	assert_memory_equal(ip.dst, APP4, 4);
	assert_int_equal(pkt_echo_parse(&ip, &e), PKT_OTHER);	/* a reply */
	assert_int_equal(ip.l4[0], 0);
	assert_int_equal(pkt_csum_fold(pkt_csum_add(0, ip.l4, ip.l4_len)), 0);
	assert_int_equal(ip.l4[4] << 8 | ip.l4[5], 0x4242);	/* app's id */
	assert_int_equal(ip.l4[6] << 8 | ip.l4[7], 3);
	assert_memory_equal(ip.l4 + 8, "timestamp", 9);
	client_stop(&c);
	srv_stop();
}

static void
test_dns_pin(void **state)
{
	struct client	c;
	struct addr	a;
	static const uint8_t asked[4] = { 10, 1, 1, 1 }, pin[4] = { 192, 0, 2, 53 };
	uint8_t		q[16] = { 0xbe, 0xef, 1, 0, 0, 1 };
	size_t		n;
	char		buf[ADDR_STRLEN];

	(void)state;
	srv_start(SRV_ECHO);
	client_start(&c, "  dns: 192.0.2.53\n");
	n = pkt_build_udp(pbuf, AF_INET, APP4, 40003, asked, 53, q, sizeof(q),
	    1);
	assert_true(input(&c, pbuf, n));
	run_until(&c, 1, 5000);
	assert_int_equal(out.n, 1);
	/* The server was asked for the pinned resolver ... */
	assert_memory_equal(srv.last_dst.ip, pin, 4);
	assert_memory_equal(srv.hdr_dest.ip, pin, 4);
	/* ... and the app hears back from the address it asked. */
	check_udp_reply(out.pkt[0], out.len[0], AF_INET, asked, 53, APP4,
	    40003, q, sizeof(q));
	assert_int_equal(flow_udp_stats(c.u)->dns_pinned, 1);
	/* TCP: the flow's destination is rewritten the same way. */
	assert_int_equal(addr_parse(&a, "[2001:db8::1]:53"), 0);
	assert_true(flow_udp_dns_pin(c.conf, &a));
	assert_string_equal(addr_fmt(&a, buf, sizeof(buf)), "192.0.2.53:53");
	assert_int_equal(addr_parse(&a, "[2001:db8::1]:443"), 0);
	assert_false(flow_udp_dns_pin(c.conf, &a));
	client_stop(&c);
	srv_stop();
}

static unsigned
srv_frames(void)
{
	unsigned	n;

	pthread_mutex_lock(&srv.mu);
	n = srv.frames;
	pthread_mutex_unlock(&srv.mu);
	return n;
}

/* fake-IP's first address; an A query for Example.COM (fake-IP's), and
 * one for corp (excluded). */
static const uint8_t fake1[4] = { 198, 19, 0, 1 };
static const uint8_t qa[] = { 0xbe, 0xef, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0,
    7, 'E', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0, 0, 1, 0, 1 };
static const uint8_t qx[] = { 0, 7, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0,
    4, 'c', 'o', 'r', 'p', 0, 0, 1, 0, 1 };

/* fake-IP: A/AAAA answered here, datagrams to a fake address sent to its
 * name, one without a name refused with an ICMP error; an excluded name
 * and other types forwarded. */
static void
test_fake_ip(void **state)
{
	struct client	 c;
	struct fakeip	*t;
	struct pkt_ip	 ip;
	struct pkt_udp	 u;
	static const uint8_t asked[4] = { 10, 1, 1, 1 };
	static const uint8_t nobody[4] = { 198, 19, 9, 9 };
	uint8_t		 q[64];
	size_t		 n;
	int		 i;

	(void)state;
	srv_start(SRV_ECHO);
	client_start(&c, "  dns: {mode: fake-ip, fake_ip_file: \"\", "
	    "fake_ip_exclude: [corp]}\n");
	assert_non_null(t = fakeip_open(c.loop, c.conf));
	flow_udp_set_fakeip(c.u, t);
	/* A for Example.COM to any address: answered at once, from there. */
	n = pkt_build_udp(pbuf, AF_INET, APP4, 40004, asked, 53, qa,
	    sizeof(qa), 1);
	assert_true(input(&c, pbuf, n));
	assert_int_equal(out.n, 1);
	assert_int_equal(pkt_parse(out.pkt[0], out.len[0], &ip), PKT_OK);
	assert_memory_equal(ip.src, asked, 4);
	assert_int_equal(pkt_udp_parse(&ip, &u), PKT_OK);
	assert_int_equal(u.sport, 53);
	assert_int_equal(u.dport, 40004);
	assert_int_equal(u.len, sizeof(qa) + 16);
	assert_int_equal(u.data[3] & 0xf, DNS_NOERROR);
	assert_memory_equal(u.data + u.len - 10, "\0\0\0\1\0\4", 6);
	assert_memory_equal(u.data + u.len - 4, fake1, 4);
	assert_int_equal(fakeip_stats(t)->answers, 1);
	assert_int_equal(srv.conns, 0);		/* nothing went out */
	out_clear();
	/* A datagram to it goes to the server by name. */
	n = pkt_build_udp(pbuf, AF_INET, APP4, 40005, fake1, 7, (const uint8_t *)
	    "hello", 5, 2);
	assert_true(input(&c, pbuf, n));
	/* (The echo comes back from the name: undeliverable, so wait for
	 * the server to see it instead.) */
	for (i = 0; i < 500 && srv_frames() < 1; i++)
		assert_int_not_equal(loop_run_once(c.loop, 10), -1);
	pthread_mutex_lock(&srv.mu);
	assert_int_equal(srv.last_dst.atyp, PROTO_ATYP_DOMAIN);
	assert_string_equal(srv.last_dst.domain, "example.com");
	assert_int_equal(srv.last_dst.port, 7);
	pthread_mutex_unlock(&srv.mu);
	assert_int_equal(fakeip_stats(t)->hits, 1);
	out_clear();
	/* One without a name: an ICMP error back, nothing sent. */
	n = pkt_build_udp(pbuf, AF_INET, APP4, 40006, nobody, 7, (const uint8_t *)
	    "x", 1, 3);
	assert_true(input(&c, pbuf, n));
	assert_int_equal(out.n, 1);
	assert_int_equal(pkt_parse(out.pkt[0], out.len[0], &ip), PKT_OK);
	assert_int_equal(ip.proto, PKT_PROTO_ICMP);
	assert_memory_equal(ip.src, nobody, 4);
	assert_int_equal(ip.l4[0], 3);
	assert_int_equal(ip.l4[1], PKT_UNREACH_ADMIN4);
	assert_int_equal(fakeip_stats(t)->misses, 1);
	out_clear();
	/* The excluded name, and a TXT query: forwarded. */
	n = pkt_build_udp(pbuf, AF_INET, APP4, 40007, asked, 53, qx,
	    sizeof(qx), 4);
	assert_true(input(&c, pbuf, n));
	memcpy(q, qa, sizeof(qa));
	q[sizeof(qa) - 3] = 16;		/* TXT */
	n = pkt_build_udp(pbuf, AF_INET, APP4, 40008, asked, 53, q,
	    sizeof(qa), 5);
	assert_true(input(&c, pbuf, n));
	run_until(&c, 2, 5000);
	pthread_mutex_lock(&srv.mu);
	assert_int_equal(srv.last_dst.atyp, PROTO_ATYP_IPV4);
	assert_memory_equal(srv.last_dst.ip, asked, 4);
	pthread_mutex_unlock(&srv.mu);
	assert_int_equal(fakeip_stats(t)->answers, 1);
	client_stop(&c);
	fakeip_close(t);
	srv_stop();
}

/* What flow_udp_dns_ask answered (one query at a time). */
static struct {
	unsigned	 calls;
	bool		 failed;
	size_t		 len;
	uint8_t		 msg[512];
} asked;

static void
on_ask(void *arg, const uint8_t *query, size_t qlen, const uint8_t *reply,
    size_t len)
{
	(void)arg;
	assert_true(qlen >= 2);
	asked.calls++;
	asked.failed = reply == NULL;
	asked.len = reply != NULL && len <= sizeof(asked.msg) ? len : 0;
	if (asked.len > 0) {
		memcpy(asked.msg, reply, len);
		assert_memory_equal(reply, query, 2);	/* the query's id */
	}
}

/* DNS over TCP's queries (flow_dns.c): the fake-IP answer a datagram
 * gets, no records for a fake name's other types, and a forwarded one
 * that cannot be asked fails (SERVFAIL), never written to the TUN. */
static void
test_dns_ask(void **state)
{
	struct client	 c;
	struct fakeip	*t;
	uint8_t		 q[64];
	int		 i;

	(void)state;
	srv_start(SRV_ECHO);
	client_start(&c, "  dns: {mode: fake-ip, server: 127.0.0.1:9, "
	    "fake_ip_file: \"\", fake_ip_exclude: [corp]}\n");
	assert_non_null(t = fakeip_open(c.loop, c.conf));
	flow_udp_set_fakeip(c.u, t);
	memset(&asked, 0, sizeof(asked));
	flow_udp_dns_ask(c.u, qa, sizeof(qa), on_ask, NULL);
	assert_int_equal(asked.calls, 1);
	assert_false(asked.failed);
	assert_int_equal(asked.len, sizeof(qa) + 16);
	assert_int_equal(asked.msg[3] & 0xf, DNS_NOERROR);
	assert_memory_equal(asked.msg + asked.len - 4, fake1, 4);
	/* TXT for it: NOERROR, no records, nothing sent. */
	memcpy(q, qa, sizeof(qa));
	q[sizeof(qa) - 3] = 16;
	flow_udp_dns_ask(c.u, q, sizeof(qa), on_ask, NULL);
	assert_int_equal(asked.calls, 2);
	assert_int_equal(asked.msg[3] & 0xf, DNS_NOERROR);
	assert_int_equal(asked.msg[6] << 8 | asked.msg[7], 0);
	assert_int_equal(srv.conns, 0);
	/* The excluded name goes to dns.server over TCP, through the
	 * tunnel's server here, which cannot reach it: SERVFAIL. */
	flow_udp_dns_ask(c.u, qx, sizeof(qx), on_ask, NULL);
	for (i = 0; i < 700 && asked.calls < 3; i++)
		assert_int_not_equal(loop_run_once(c.loop, 10), -1);
	assert_int_equal(asked.calls, 3);
	assert_true(asked.failed);
	assert_int_equal(out.n, 0);
	assert_int_equal(flow_udp_stats(c.u)->dns_pinned, 1);
	client_stop(&c);
	fakeip_close(t);
	/* The stream request is not a datagram server's: it said so. */
	pthread_mutex_lock(&srv.mu);
	srv.err[0] = '\0';
	pthread_mutex_unlock(&srv.mu);
	srv_stop();
}

/* An error status fails the association; it drops datagrams for a moment,
 * then a new one is made. */
static void
test_hold(void **state)
{
	struct client	c;
	size_t		n;
	int		i;

	(void)state;
	srv_start(SRV_DENY);
	client_start(&c, NULL);
	n = pkt_build_udp(pbuf, AF_INET, APP4, 40004, DST4, 7, "x", 1, 1);
	assert_true(input(&c, pbuf, n));
	for (i = 0; i < 300 && astats(&c)->failed == 0; i++)
		loop_run_once(c.loop, 10);
	assert_int_equal(astats(&c)->failed, 1);
	assert_true(input(&c, pbuf, n));
	assert_int_equal(astats(&c)->drop_hold, 1);
	assert_int_equal(astats(&c)->created, 1);
	for (i = 0; i < 300 && astats(&c)->active != 0; i++)
		loop_run_once(c.loop, 10);
	assert_int_equal(astats(&c)->active, 0);
	assert_true(input(&c, pbuf, n));
	assert_int_equal(astats(&c)->created, 2);
	assert_int_equal(out.n, 0);
	client_stop(&c);
	srv_stop();
}

static void
test_evict(void **state)
{
	struct client	c;
	size_t		n;
	uint16_t	port;

	(void)state;
	srv_start(SRV_ECHO);
	client_start(&c, "  max_udp: 2\n");
	for (port = 1; port <= 3; port++) {
		n = pkt_build_udp(pbuf, AF_INET, APP4, port, DST4, 7, "e", 1, 1);
		assert_true(input(&c, pbuf, n));
		loop_run_once(c.loop, 0);
	}
	assert_int_equal(astats(&c)->created, 3);
	assert_int_equal(astats(&c)->evicted, 1);
	assert_int_equal(astats(&c)->active, 2);
	run_until(&c, 2, 5000);
	assert_int_equal(out.n, 2);
	client_stop(&c);
	srv_stop();
}

/* protocol trojan: one TLS stream with UDP ASSOCIATE carries datagrams to
 * several destinations (full cone), each reply from its own source; ICMP
 * echo has no carrier and is dropped, counted. */
static void
test_trojan(void **state)
{
	struct client	c;
	static const uint8_t other[4] = { 192, 0, 2, 99 };
	size_t		n, i;
	uint16_t	s;

	(void)state;
	srv_start(SRV_TROJAN);
	client_start(&c, "  protocol: trojan\n  password: pw\n");
	for (i = 0; i < 3000; i++)
		pay[i] = (uint8_t)(i * 11);
	n = pkt_build_udp(pbuf, AF_INET, APP4, 41000, DST4, 7, pay, 3000, 1);
	assert_true(input(&c, pbuf, n));
	n = pkt_build_udp(pbuf, AF_INET, APP4, 41000, other, 9, "two", 3, 2);
	assert_true(input(&c, pbuf, n));
	run_until(&c, 4, 5000);
	assert_int_equal(astats(&c)->created, 1);
	assert_int_equal(srv.conns, 1);
	assert_int_equal(srv.cmd, PROTO_TROJAN_CMD_UDP);
	assert_memory_equal(srv.hdr_dest.ip, DST4, 4);
	assert_int_equal(srv.frames, 2);
	/* 3000 bytes come back in fragments of the 1500-byte MTU. */
	{
		struct reass	*r;
		struct pkt_ip	 ip;
		struct pkt_udp	 u;
		int		 rc = 0;
		bool		 two = false;

		assert_non_null(r = reass_new());
		for (i = 0; i < out.n; i++) {
			assert_int_equal(pkt_parse(out.pkt[i], out.len[i],
			    &ip), PKT_OK);
			if (!ip.frag) {
				check_udp_reply(out.pkt[i], out.len[i],
				    AF_INET, other, 9, APP4, 41000,
				    (const uint8_t *)"two", 3);
				two = true;
				continue;
			}
			if ((rc = reass_add(r, &ip, 0)) == 1) {
				assert_int_equal(pkt_udp_parse(&ip, &u),
				    PKT_OK);
				assert_int_equal(u.sport, 7);
				assert_int_equal(u.len, 3000);
				assert_memory_equal(u.data, pay, 3000);
			}
		}
		assert_int_equal(rc, 1);
		assert_true(two);
		reass_free(r);
	}
	out_clear();
	/* An echo request: dropped, no association. */
	n = pkt_build_echo_reply(pbuf, AF_INET, APP4, DST4, 0x4242, 3, "t", 1,
	    5);
	pbuf[20] = 8;
	pbuf[22] = pbuf[23] = 0;
	s = pkt_csum_fold(pkt_csum_add(0, pbuf + 20, n - 20));
	memcpy(pbuf + 22, &s, 2);
	assert_true(input(&c, pbuf, n));
	assert_true(input(&c, pbuf, n));
	assert_int_equal(astats(&c)->drop_proto, 2);
	assert_int_equal(astats(&c)->created, 1);
	run_until(&c, 1, 100);
	assert_int_equal(out.n, 0);
	client_stop(&c);
	srv_stop();
}

/* A trojan server that closes without a word (as a rejecting one may):
 * the association fails and holds down rather than being redialled for
 * every datagram. */
static void
test_trojan_closed(void **state)
{
	struct client	c;
	size_t		n;
	int		i;

	(void)state;
	srv_start(SRV_TROJAN_SHUT);
	client_start(&c, "  protocol: trojan\n  password: pw\n");
	n = pkt_build_udp(pbuf, AF_INET, APP4, 41001, DST4, 7, "x", 1, 1);
	assert_true(input(&c, pbuf, n));
	for (i = 0; i < 300 && astats(&c)->failed == 0; i++)
		loop_run_once(c.loop, 10);
	assert_int_equal(astats(&c)->failed, 1);
	assert_true(input(&c, pbuf, n));
	assert_int_equal(astats(&c)->drop_hold, 1);
	assert_int_equal(astats(&c)->created, 1);
	client_stop(&c);
	srv_stop();
}

/* ---- fixtures --------------------------------------------------------------- */

static int
setup_group(void **state)
{
	(void)state;
	/* The fake server writes with plain OpenSSL socket BIOs. */
	signal(SIGPIPE, SIG_IGN);
	testcert_make(&tc, "test_flow_udp", "udp.test");
	return 0;
}

static int
teardown_group(void **state)
{
	(void)state;
	testcert_remove(&tc);
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_udp_echo),
		cmocka_unit_test(test_ptb),
		cmocka_unit_test(test_fragments_in),
		cmocka_unit_test(test_icmp_echo),
		cmocka_unit_test(test_dns_pin),
		cmocka_unit_test(test_fake_ip),
		cmocka_unit_test(test_dns_ask),
		cmocka_unit_test(test_hold),
		cmocka_unit_test(test_evict),
		cmocka_unit_test(test_trojan),
		cmocka_unit_test(test_trojan_closed),
	};

	return cmocka_run_group_tests(tests, setup_group, teardown_group);
}
