/*
 * Fuzz target: the client's side of a datagram association's responses --
 * the status byte and the frames a tunsplit server sends back, or the UDP
 * packets of a trojan server, as assoc_stream.c reads them, or the
 * datagrams of a SOCKS5 UDP relay, as assoc_sock.c reads them -- and how
 * assoc.c, flow_udp.c and flow_icmp.c turn them into packets for the app
 * (DNS source rewrite, family check, UDP and echo-reply building,
 * fragmentation to the TUN MTU).
 *
 * The outer stream is a fake defined here (it takes the place of
 * src/tls/outer.c at link time, as fuzz_tun's sys_now does for lwIP's clock):
 * the handshake succeeds at once, writes are taken whole, and reads
 * return the input's bytes.  The association really dials a listening
 * socket of this process on loopback, so the loop, its fds and the
 * association's phases are the real ones; nothing leaves the host.  For
 * socks5 this process is the proxy: it answers the client's control
 * connection itself (no authentication; the relay it names is its own
 * UDP socket on loopback, never an address from the input) and sends the
 * input's datagrams from that socket.
 *
 * Input layout:
 *   byte 0   bits 0-1: the app: 0 UDP/IPv4, 1 UDP/IPv6, 2 ICMP/IPv4,
 *            3 ICMP/IPv6; bit 2: UDP datagrams are DNS queries (port 53,
 *            pinned to client.dns); bits 3-4: TUN MTU; bit 5: protocol
 *            trojan (no status byte, trojan UDP packets; no ICMP: the app
 *            sends UDP), or with bit 1 socks5 (each record one datagram
 *            from the relay); bit 6: client.dns is IPv6; bit 7: the stream
 *            (socks5: the control connection) ends with a reset, not an
 *            EOF
 *   then     records [ctl:1][len:2, big endian][len bytes from the
 *            server]; a short last record is fed truncated.  ctl bit 0:
 *            the app sends datagram number (ctl >> 1) & 7 first; bits
 *            4-7: n > 0 returns the record in reads of at most 7 * n bytes
 *            (else one read).  Between records a read says EAGAIN.
 * The app's first datagram (number 0) makes the association.
 *
 * Oracles besides ASan/UBSan, from doc/PROTOCOL.md rather than frame.c:
 * a reference parser here predicts every packet the app must get (source
 * after the DNS rewrite, payload, in order), which frames are dropped
 * (wrong family, too long for IPv4) and whether the association fails
 * (status not 0, malformed frame or packet, reset, end before the status;
 * trojan: end before any packet) or ends cleanly.  Every packet written to
 * the TUN is checked bit by bit: IP header and checksum, fragments of at
 * most the MTU that reassemble in order, UDP or ICMP header and checksum.  What the client sends is
 * checked too: a request header of the right kind, destination and MAC
 * (trojan: UDP ASSOCIATE with the password's hash), then one frame or
 * packet per datagram the app sent.  A read is never asked for 0
 * bytes, and the stream is always released at the end.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "core/addr.h"
#include "client/dgram/assoc.h"
#include "wire/auth.h"
#include "conf/conf.h"
#include "client/dgram/flow_udp.h"
#include "client/outbound.h"
#include "client/pool.h"
#include "wire/frame.h"
#include "core/log.h"
#include "core/loop.h"
#include "tls/outer.h"
#include "wire/pkt.h"
#include "wire/proto.h"
#include "wire/proto_trojan.h"
#include "core/sock.h"
#include "wire/socks5.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "fuzz_resp: %s:%d: %s\n", __FILE__,	\
		    __LINE__, #cond);					\
		abort();						\
	}								\
} while (0)

#define FZ_NCONF	24	/* 4 MTUs x resolver family x 3 protocols */
#define FZ_DGRAM_MAX	65507		/* the largest datagram on loopback */
#define FZ_MAXEXP	16384		/* frames in 128 KiB */
#define FZ_UP_MAX	65536		/* client->server bytes kept */
#define FZ_APP_PORT	5353
#define FZ_ECHO_ID	0x4242
#define FZ_DNS_MAP	8		/* flow_udp.c remembers 8 queries */
#define FZ_V4_MAX	(65535 - 28)	/* IPv4 UDP payload / echo data */

static const uint8_t fz_app4[4] = { 198, 18, 0, 1 };
static const uint8_t fz_app6[16] = { 0xfd, 0xfe, [15] = 1 };
static const uint8_t fz_res4[4] = { 10, 77, 2, 53 };
static const uint8_t fz_res6[16] = { 0xfd, 0x77, 0, 2, [15] = 0x53 };

/* ---- the fake outer stream --------------------------------------------- */

struct outer {
	int	 fd;
};

/* What the server sends: set per record by the input loop. */
static struct {
	const uint8_t	*p;		/* current record */
	size_t		 n;
	size_t		 piece;		/* 0: all at once */
	bool		 eagain;	/* record consumed: EAGAIN once */
	bool		 end;		/* no more records: EOF or reset */
	bool		 reset;
	bool		 ended;		/* the end was read */
	struct outer	*live;		/* the one stream of this input */
	bool		 released;
	int		 lfd;		/* listener; the server's end: */
	int		 sfd;
	int		 ufd;		/* socks5: the relay's socket */
	struct sockaddr_in client_udp;	/* socks5: the client's */
	unsigned	 up_dgrams;	/* socks5: datagrams at the relay */
	uint8_t		 up[FZ_UP_MAX];	/* what the client wrote */
	size_t		 up_len;
} fz;

struct outer *
outer_new(struct ssl_ctx_st *ctx, int fd, bool client, const char *sni)
{
	struct outer *o;

	(void)ctx;
	(void)sni;
	FZ_CHECK(client && fz.live == NULL);
	if ((o = calloc(1, sizeof(*o))) == NULL)
		abort();
	o->fd = fd;
	fz.live = o;
	return o;
}

int
outer_handshake(struct outer *o)
{
	uint8_t b = 0;

	FZ_CHECK(o == fz.live && fz.sfd == -1);
	/* The client's connect is done: take the server's end, and make
	 * the client's fd readable for good (the fake never reads it), so
	 * that the loop calls the association on every iteration. */
	FZ_CHECK((fz.sfd = accept(fz.lfd, NULL, NULL)) >= 0);
	FZ_CHECK(write(fz.sfd, &b, 1) == 1);
	return 1;
}

ssize_t
outer_read(struct outer *o, void *buf, size_t len)
{
	size_t n;

	FZ_CHECK(o == fz.live && !fz.ended);
	FZ_CHECK(len > 0);	/* 0 bytes back would read as an EOF */
	if (fz.n == 0 && fz.eagain) {
		fz.eagain = false;
		errno = EAGAIN;
		return -1;
	}
	if (fz.n == 0) {
		FZ_CHECK(fz.end);
		fz.ended = true;
		if (!fz.reset)
			return 0;
		errno = ECONNRESET;
		return -1;
	}
	n = fz.n;
	if (fz.piece != 0 && n > fz.piece)
		n = fz.piece;
	if (n > len)
		n = len;
	memcpy(buf, fz.p, n);
	fz.p += n;
	fz.n -= n;
	if (fz.n == 0)
		fz.eagain = true;
	return (ssize_t)n;
}

ssize_t
outer_write(struct outer *o, const void *buf, size_t len)
{
	size_t n;

	FZ_CHECK(o == fz.live && len > 0);
	n = len < FZ_UP_MAX - fz.up_len ? len : FZ_UP_MAX - fz.up_len;
	memcpy(fz.up + fz.up_len, buf, n);
	fz.up_len += n;
	return (ssize_t)len;
}

/* The connection's exporter value: fixed, the label's bytes repeated.
 * The oracle checks the header's MAC against it. */
static void
fz_bind(const char *label, uint8_t *out, size_t len)
{
	size_t i, l = strlen(label);

	for (i = 0; i < len; i++)
		out[i] = (uint8_t)label[i % l];
}

int
outer_export(const struct outer *o, const char *label, uint8_t *out,
    size_t len)
{
	FZ_CHECK(o == fz.live && strcmp(label, PROTO_BIND_LABEL) == 0);
	fz_bind(label, out, len);
	return 0;
}

/* Never framed: these streams carry one request each (no reuse). */
unsigned
outer_flows(const struct outer *o)
{
	(void)o;
	return 0;
}

bool
outer_framed(const struct outer *o)
{
	(void)o;
	return false;
}

int
outer_frame_begin(struct outer *o, size_t raw_out, size_t raw_in,
    const void *early, size_t n)
{
	(void)o;
	(void)raw_out;
	(void)raw_in;
	(void)early;
	(void)n;
	abort();
}

int
outer_export_ctx(const struct outer *o, const char *label,
    const uint8_t *ctx, size_t ctxlen, uint8_t *out, size_t len)
{
	(void)o;
	(void)label;
	(void)ctx;
	(void)ctxlen;
	(void)out;
	(void)len;
	abort();
}

uint32_t
outer_events(const struct outer *o)
{
	(void)o;
	return 0;
}

int
outer_shutdown_write(struct outer *o)
{
	FZ_CHECK(o == fz.live);
	return 0;
}

static void
fz_release(struct outer *o)
{
	if (o == NULL)
		return;
	FZ_CHECK(o == fz.live && !fz.released);
	fz.released = true;
	close(o->fd);
	free(o);
}

void
outer_abort(struct outer *o)
{
	fz_release(o);
}

void
outer_free(struct outer *o)
{
	fz_release(o);
}

/* The outbounds' warm pool (outbound.c) is not part of this: its real
 * one would pull in the real outer streams. */
struct pool *
pool_new(struct loop *l, const struct conf *c,
    const struct conf_outbound *co, struct ssl_ctx_st *ctx,
    const struct addr *server, struct dialgate *gate)
{
	(void)gate;
	(void)l;
	(void)c;
	(void)co;
	(void)ctx;
	(void)server;
	return NULL;
}

void
pool_free(struct pool *p)
{
	(void)p;
}

void
pool_retire(struct pool *p)
{
	(void)p;
}

/* A group's standby members (group.c): nothing to keep warm here. */
void
pool_standby(struct pool *p)
{
	(void)p;
}

/* The DNS stream upstreams' (ostream.c), never asked here. */
struct outer *
pool_take(struct pool *p)
{
	(void)p;
	return NULL;
}

int
outer_fd(const struct outer *o)
{
	(void)o;
	return -1;
}

/* ---- the reference: what the app must get ---------------------------------- */

struct fz_exp {
	uint8_t		 src[16];	/* after the DNS rewrite */
	uint16_t	 port;		/* UDP source port / echo sequence */
	size_t		 off, len;	/* payload in fz_stream */
};

static struct {
	int		 family;	/* the app's */
	bool		 icmp, dns, trojan, socks;
	const struct conf *conf;
	uint8_t		 stream[1 << 17];	/* all the server's bytes */
	size_t		 slen;
	struct fz_exp	 exp[FZ_MAXEXP];
	size_t		 nexp, next;	/* expected, checked so far */
	uint64_t	 drops;		/* frames the app must not get */
	uint64_t	 frames;	/* complete frames */
	bool		 fail;		/* the association must fail */
	/* The DNS queries the app sent, as flow_udp remembers them. */
	struct { bool used; uint8_t k; } map[FZ_DNS_MAP];
	unsigned	 map_next;
	unsigned	 sent;		/* datagrams the app sent */
	uint8_t		 sent_k[256];
} ref;

/* Destination of the app's datagram number k (0..7). */
static void
fz_app_dst(unsigned k, uint8_t ip[16], uint16_t *port)
{
	memset(ip, 0, 16);
	if (ref.family == AF_INET) {
		ip[0] = 192, ip[1] = 0, ip[2] = 2, ip[3] = (uint8_t)(10 + k);
	} else {
		ip[0] = 0x20, ip[1] = 0x01, ip[2] = 0x0d, ip[3] = 0xb8;
		ip[15] = (uint8_t)(10 + k);
	}
	if (ref.icmp)
		*port = (uint16_t)k;		/* echo sequence */
	else
		*port = ref.dns ? 53 : (uint16_t)(4000 + k);
}

static uint16_t
be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* ATYP and address at p (n bytes so far): 1 with *alen, the address's
 * length after ATYP (and a name's length byte), 0 need more, -1
 * malformed. */
static int
fz_ref_addr(const uint8_t *p, size_t n, size_t *alen)
{
	size_t i, L;

	if (n < 1)
		return 0;
	switch (p[0]) {
	case 1:
		*alen = 4;
		return 1;
	case 4:
		*alen = 16;
		return 1;
	case 3:
		if (n < 2)
			return 0;
		if ((L = p[1]) == 0)
			return -1;
		for (i = 2; i < n && i < 2 + L; i++)
			if (p[i] == 0)
				return -1;
		*alen = 1 + L;
		return 1;
	default:
		return -1;
	}
}

/*
 * One trojan UDP packet at p (n bytes so far), by proto_trojan.h:
 * ATYP ADDR PORT LENGTH CRLF PAYLOAD, each field judged once it is there.
 */
static int
fz_ref_trojan(const uint8_t *p, size_t n, size_t *flen, uint8_t *atyp,
    size_t *aoff, size_t *alen, size_t *plen)
{
	size_t o;
	int rc;

	if ((rc = fz_ref_addr(p, n, alen)) <= 0)
		return rc;
	*atyp = p[0];
	*aoff = p[0] == 3 ? 2 : 1;
	if (p[0] == 3)
		(*alen)--;		/* the name, after its length */
	o = *aoff + *alen + 2;		/* the length field */
	if (n >= o + 2 && be16(p + o) > 65527)
		return -1;
	if ((n > o + 2 && p[o + 2] != '\r') || (n > o + 3 && p[o + 3] != '\n'))
		return -1;
	if (n < o + 4)
		return 0;
	*plen = be16(p + o);
	*flen = o + 4 + *plen;
	return n >= *flen ? 1 : 0;
}

/*
 * One frame at p (n bytes so far), by PROTOCOL.md: 1 complete (*flen,
 * address, payload), 0 incomplete, -1 malformed as far as it has arrived.
 */
static int
fz_ref_frame(const uint8_t *p, size_t n, size_t *flen, uint8_t *atyp,
    size_t *aoff, size_t *alen, size_t *plen)
{
	size_t i, L;

	if (ref.trojan)
		return fz_ref_trojan(p, n, flen, atyp, aoff, alen, plen);
	if (n >= 2 && be16(p) > 65527)
		return -1;
	if (n < 3)
		return 0;
	*atyp = p[2];
	*aoff = 3;
	switch (p[2]) {
	case 1:
		*alen = 4;
		break;
	case 4:
		*alen = 16;
		break;
	case 3:
		if (n < 4)
			return 0;
		if ((L = p[3]) == 0)
			return -1;
		for (i = 4; i < n && i < 4 + L; i++)
			if (p[i] == 0)
				return -1;
		*aoff = 4;
		*alen = L;
		break;
	default:
		return -1;
	}
	*plen = be16(p);
	*flen = *aoff + *alen + 2 + *plen;
	return n >= *flen ? 1 : 0;
}

/* The source flow_udp gives a frame from src:port (the DNS rewrite). */
static void
fz_ref_source(uint8_t atyp, const uint8_t *ip, uint16_t port,
    const uint8_t *payload, size_t plen, struct fz_exp *e, int *fam)
{
	const struct addr *res = &ref.conf->client.dns;
	bool res6 = addr_family(res) == AF_INET6;
	unsigned i, k;
	uint16_t txid;

	*fam = atyp == 1 ? AF_INET : atyp == 4 ? AF_INET6 : 0;
	memset(e->src, 0, sizeof(e->src));
	if (*fam != 0)
		memcpy(e->src, ip, *fam == AF_INET ? 4 : 16);
	e->port = port;
	if (ref.icmp || ref.map_next == 0 || port != 53 ||
	    *fam != (res6 ? AF_INET6 : AF_INET) ||
	    memcmp(ip, res6 ? fz_res6 : fz_res4, res6 ? 16 : 4) != 0)
		return;
	/* By transaction id, else the latest query's. */
	k = ref.map[(ref.map_next - 1) % FZ_DNS_MAP].k;
	if (plen >= 2) {
		txid = be16(payload);
		for (i = 0; i < FZ_DNS_MAP; i++)
			if (ref.map[i].used && ref.map[i].k == txid) {
				k = ref.map[i].k;
				break;
			}
	}
	fz_app_dst(k, e->src, &e->port);
	*fam = ref.family;
}

/* A relay datagram, RFC 1928: RSV(2, not checked) FRAG(0) ATYP ADDR
 * PORT DATA; p is at ref.stream + off.  Anything else is dropped. */
static void
fz_ref_socks(const uint8_t *p, size_t n, size_t off)
{
	struct fz_exp *e;
	size_t alen = 0, hl;
	int fam;

	if (n < 3 || p[2] != 0 || fz_ref_addr(p + 3, n - 3, &alen) <= 0 ||
	    n < (hl = 3 + 1 + alen + 2)) {
		ref.drops++;
		return;
	}
	ref.frames++;
	FZ_CHECK(ref.nexp < FZ_MAXEXP);
	e = &ref.exp[ref.nexp];
	e->off = off + hl;
	fz_ref_source(p[3], p + 4, be16(p + 4 + alen), p + hl, n - hl, e,
	    &fam);
	if (fam != ref.family || (ref.family == AF_INET && n - hl > FZ_V4_MAX))
		ref.drops++;
	else {
		e->len = n - hl;
		ref.nexp++;
	}
}

/* Consumes the complete frames of stream[*pos, slen); false once the
 * stream is broken. */
static bool
fz_ref_frames(size_t *pos)
{
	struct fz_exp *e;
	const uint8_t *p;
	size_t flen = 0, aoff = 0, alen = 0, plen = 0;
	uint8_t atyp = 0;
	int rc, fam;

	for (;;) {
		p = ref.stream + *pos;
		rc = fz_ref_frame(p, ref.slen - *pos, &flen, &atyp, &aoff,
		    &alen, &plen);
		if (rc < 0) {
			ref.fail = true;
			return false;
		}
		if (rc == 0)
			return true;
		ref.frames++;
		FZ_CHECK(ref.nexp < FZ_MAXEXP);
		e = &ref.exp[ref.nexp];
		/* The payload: after the port (and trojan's length and CRLF). */
		e->off = *pos + flen - plen;
		fz_ref_source(atyp, p + aoff, be16(p + aoff + alen),
		    ref.stream + e->off, plen, e, &fam);
		if (fam != ref.family ||
		    (ref.family == AF_INET && plen > FZ_V4_MAX)) {
			ref.drops++;
		} else {
			e->len = plen;
			ref.nexp++;
		}
		*pos += flen;
	}
}

/* ---- the TUN: what the app gets -------------------------------------------- */

static struct {
	uint8_t		 pkt[PKT_MAX + 64];	/* reassembled */
	size_t		 have;		/* payload bytes after the IP header */
	uint32_t	 id;
	bool		 partial;
	uint8_t		 hdr[40];	/* the first fragment's IP header */
	uint8_t		 nh;		/* IPv6: its next header */
} tun;

static uint16_t
fz_sum(const uint8_t *p, size_t n, uint32_t sum)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		sum += be16(p + i);
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* Checksum over an upper-layer message with the pseudo header (not for
 * ICMPv4); 0xffff when it verifies. */
static uint16_t
fz_l4_sum(int family, const uint8_t *src, const uint8_t *dst, uint8_t proto,
    const uint8_t *l4, size_t len)
{
	uint32_t sum = 0;
	size_t al = family == AF_INET ? 4 : 16;

	if (!(family == AF_INET && proto == 1)) {
		sum = fz_sum(src, al, 0);
		sum = fz_sum(dst, al, sum);
		sum += proto;
		sum += (uint32_t)(len >> 16) + (uint32_t)(len & 0xffff);
	}
	return fz_sum(l4, len, sum);
}

/* A whole packet (reassembled): the next one expected, bit by bit. */
static void
fz_check_packet(const uint8_t *p, size_t len)
{
	const struct fz_exp *e;
	const uint8_t *src, *dst, *l4, *app;
	size_t hl, l4len;
	uint8_t proto;

	FZ_CHECK(ref.next < ref.nexp);
	e = &ref.exp[ref.next++];
	hl = ref.family == AF_INET ? 20 : 40;
	FZ_CHECK(len >= hl + 8);
	if (ref.family == AF_INET) {
		FZ_CHECK(p[0] == 0x45 && be16(p + 2) == len && p[8] > 0);
		FZ_CHECK(fz_sum(p, 20, 0) == 0xffff);
		proto = p[9];
		src = p + 12;
		dst = p + 16;
		app = fz_app4;
	} else {
		FZ_CHECK(p[0] >> 4 == 6 && be16(p + 4) + 40u == len &&
		    p[7] > 0);
		proto = p[6];
		src = p + 8;
		dst = p + 24;
		app = fz_app6;
	}
	FZ_CHECK(memcmp(src, e->src, hl == 20 ? 4 : 16) == 0);
	FZ_CHECK(memcmp(dst, app, hl == 20 ? 4 : 16) == 0);
	l4 = p + hl;
	l4len = len - hl;
	FZ_CHECK(l4len == 8 + e->len);
	FZ_CHECK(memcmp(l4 + 8, ref.stream + e->off, e->len) == 0);
	if (!ref.icmp) {
		FZ_CHECK(proto == 17);
		FZ_CHECK(be16(l4) == e->port && be16(l4 + 2) == FZ_APP_PORT);
		FZ_CHECK(be16(l4 + 4) == l4len);
		FZ_CHECK(be16(l4 + 6) != 0);
	} else {
		FZ_CHECK(proto == (ref.family == AF_INET ? 1 : 58));
		FZ_CHECK(l4[0] == (ref.family == AF_INET ? 0 : 129) &&
		    l4[1] == 0);
		FZ_CHECK(be16(l4 + 4) == FZ_ECHO_ID && be16(l4 + 6) == e->port);
	}
	FZ_CHECK(fz_l4_sum(ref.family, src, dst, proto, l4, l4len) == 0xffff);
}

/* assoc_cfg.tun_write: a packet or one fragment of it. */
static int
fz_tun_write(const uint8_t *p, size_t len)
{
	unsigned mtu = ref.conf->tun.mtu;
	size_t off, flen, hl;
	uint32_t id;
	bool more;

	FZ_CHECK(len <= mtu && len >= 20);
	if (ref.family == AF_INET) {
		FZ_CHECK(p[0] == 0x45 && be16(p + 2) == len);
		FZ_CHECK(fz_sum(p, 20, 0) == 0xffff);
		off = (size_t)(be16(p + 6) & 0x1fff) * 8;
		more = (be16(p + 6) & 0x2000) != 0;
		id = be16(p + 4);
		hl = 20;
		if (off == 0 && !more) {
			FZ_CHECK(!tun.partial);
			fz_check_packet(p, len);
			return 0;
		}
	} else {
		FZ_CHECK(len >= 40 && p[0] >> 4 == 6 &&
		    be16(p + 4) + 40u == len);
		if (p[6] != 44) {
			FZ_CHECK(!tun.partial);
			fz_check_packet(p, len);
			return 0;
		}
		FZ_CHECK(len >= 48);
		off = be16(p + 42) & 0xfff8;
		more = (p[43] & 1) != 0;
		id = (uint32_t)be16(p + 44) << 16 | be16(p + 46);
		hl = 48;
	}
	flen = len - hl;
	/* Fragments: in order, back to back, all but the last a multiple
	 * of 8 bytes. */
	if (more)
		FZ_CHECK(flen % 8 == 0 && flen > 0);
	if (off == 0) {
		FZ_CHECK(!tun.partial && more);
		tun.partial = true;
		tun.have = 0;
		tun.id = id;
		memcpy(tun.hdr, p, hl == 20 ? 20 : 40);
		tun.nh = hl == 20 ? p[9] : p[40];
	} else {
		/* Same addresses and protocol as the first. */
		FZ_CHECK(tun.partial && tun.id == id && off == tun.have);
		if (hl == 20)
			FZ_CHECK(memcmp(tun.hdr + 12, p + 12, 8) == 0 &&
			    p[9] == tun.nh);
		else
			FZ_CHECK(memcmp(tun.hdr + 8, p + 8, 32) == 0 &&
			    p[40] == tun.nh);
	}
	FZ_CHECK(tun.have + flen <= PKT_MAX);
	memcpy(tun.pkt + (hl == 20 ? 20 : 40) + tun.have, p + hl, flen);
	tun.have += flen;
	if (more)
		return 0;
	/* The whole packet, with the header it would have had. */
	tun.partial = false;
	memcpy(tun.pkt, tun.hdr, hl == 20 ? 20 : 40);
	if (hl == 20) {
		tun.pkt[2] = (uint8_t)((20 + tun.have) >> 8);
		tun.pkt[3] = (uint8_t)(20 + tun.have);
		tun.pkt[6] = tun.pkt[7] = 0;
		tun.pkt[10] = tun.pkt[11] = 0;
		FZ_CHECK(20 + tun.have <= 65535);
		id = (uint32_t)(0xffff - fz_sum(tun.pkt, 20, 0));
		tun.pkt[10] = (uint8_t)(id >> 8);
		tun.pkt[11] = (uint8_t)id;
		fz_check_packet(tun.pkt, 20 + tun.have);
	} else {
		tun.pkt[6] = tun.nh;
		FZ_CHECK(tun.have <= 65535);
		tun.pkt[4] = (uint8_t)(tun.have >> 8);
		tun.pkt[5] = (uint8_t)tun.have;
		fz_check_packet(tun.pkt, 40 + tun.have);
	}
	return 0;
}

/* ---- the app: its datagrams in -------------------------------------------- */

/* The model's side of the app's datagram number k. */
static void
fz_ref_send(unsigned k)
{
	ref.sent_k[ref.sent++] = (uint8_t)k;
	if (ref.dns) {
		ref.map[ref.map_next % FZ_DNS_MAP].used = true;
		ref.map[ref.map_next % FZ_DNS_MAP].k = (uint8_t)k;
		ref.map_next++;
	}
}

/* The app sends datagram number k: 16 bytes, the second one k (DNS:
 * transaction id k). */
static void
fz_app_send(struct flow_udp *u, unsigned k)
{
	uint8_t pkt[128], dst[16], data[16], *l4;
	const uint8_t *app = ref.family == AF_INET ? fz_app4 : fz_app6;
	size_t hl = ref.family == AF_INET ? 20 : 40, n;
	uint16_t port, c;

	fz_app_dst(k, dst, &port);
	memset(data, 0, sizeof(data));
	data[1] = (uint8_t)k;
	if (!ref.icmp) {
		n = pkt_build_udp(pkt, ref.family, app, FZ_APP_PORT, dst, port,
		    data, sizeof(data), 1);
	} else {
		/* An echo request: the reply's builder, then the type. */
		n = pkt_build_echo_reply(pkt, ref.family, app, dst,
		    FZ_ECHO_ID, port, data, sizeof(data), 1);
		FZ_CHECK(n == hl + 8 + sizeof(data));
		l4 = pkt + hl;
		l4[0] = ref.family == AF_INET ? 8 : 128;
		l4[2] = l4[3] = 0;
		c = (uint16_t)~fz_l4_sum(ref.family, app, dst,
		    ref.family == AF_INET ? 1 : 58, l4, n - hl);
		l4[2] = (uint8_t)(c >> 8);
		l4[3] = (uint8_t)c;
	}
	FZ_CHECK(n > 0);
	FZ_CHECK(flow_udp_input(u, pkt, n));
}

/* Where datagram k goes through the tunnel: DNS to the resolver. */
static void
fz_tunnel_dst(unsigned k, struct proto_dest *d)
{
	uint8_t ip[16];
	uint16_t port;

	if (ref.dns) {
		frame_dest_from_addr(d, &ref.conf->client.dns);
		return;
	}
	fz_app_dst(k, ip, &port);
	frame_dest_from_ip(d, ref.family, ip, port);
}

static bool
fz_dest_eq(const struct proto_dest *a, const struct proto_dest *b)
{
	return a->atyp == b->atyp && a->port == b->port &&
	    memcmp(a->ip, b->ip, a->atyp == PROTO_ATYP_IPV4 ? 4 : 16) == 0;
}

/* socks5: the client's datagrams at the relay, each one the app sent, in
 * order, with the SOCKS UDP header naming its destination; !check: thrown
 * away. */
static void
fz_socks_drain(bool check)
{
	static uint8_t buf[FZ_DGRAM_MAX + 1];
	struct proto_dest d, want;
	struct sockaddr_in from;
	socklen_t fl;
	const uint8_t *pl;
	size_t plen;
	ssize_t n;

	for (;;) {
		fl = sizeof(from);
		n = recvfrom(fz.ufd, buf, sizeof(buf), MSG_DONTWAIT,
		    (struct sockaddr *)&from, &fl);
		if (n < 0) {
			FZ_CHECK(errno == EAGAIN || errno == EWOULDBLOCK);
			return;
		}
		if (!check)
			continue;
		FZ_CHECK(from.sin_port == fz.client_udp.sin_port);
		FZ_CHECK(buf[0] == 0 && buf[1] == 0 && buf[2] == 0);
		FZ_CHECK(socks5_udp_parse(buf, (size_t)n, &d, &pl, &plen) > 0);
		FZ_CHECK(fz.up_dgrams < ref.sent && plen == 16);
		fz_tunnel_dst(ref.sent_k[fz.up_dgrams], &want);
		FZ_CHECK(fz_dest_eq(&d, &want) &&
		    pl[1] == ref.sent_k[fz.up_dgrams]);
		fz.up_dgrams++;
	}
}

/* What the client sent: the header, then one frame per datagram. */
static void
fz_check_up(void)
{
	struct proto_req r;
	struct proto_trojan_req t;
	struct proto_dest d, want;
	uint8_t bind[PROTO_BIND_LEN];
	const uint8_t *pl;
	size_t off, plen, i;
	ssize_t n;

	if (ref.socks) {
		fz_socks_drain(true);
		FZ_CHECK(fz.up_dgrams == ref.sent);
		return;
	}
	FZ_CHECK(fz.up_len < FZ_UP_MAX);
	fz_tunnel_dst(0, &want);
	if (ref.trojan) {
		n = proto_trojan_parse(fz.up, fz.up_len, &t);
		FZ_CHECK(n > 0 && t.cmd == PROTO_TROJAN_CMD_UDP);
		FZ_CHECK(memcmp(t.hex, conf_final(ref.conf)->trojan_hex,
		    PROTO_TROJAN_HEX_LEN) == 0);
		FZ_CHECK(fz_dest_eq(&t.dest, &want));
	} else {
		n = proto_req_parse(fz.up, fz.up_len, &r);
		FZ_CHECK(n > 0);
		/* Version 2, bound to the stream's exporter value. */
		fz_bind(PROTO_BIND_LABEL, bind, sizeof(bind));
		FZ_CHECK(r.version == PROTO_VERSION);
		FZ_CHECK(proto_req_verify_mac(fz.up, (size_t)n,
		    conf_final(ref.conf)->key, bind) == 0);
		FZ_CHECK(r.kind == (ref.icmp ? PROTO_KIND_ICMP :
		    PROTO_KIND_UDP));
		FZ_CHECK(fz_dest_eq(&r.dest, &want));
	}
	for (off = (size_t)n, i = 0; off < fz.up_len; i++) {
		if (ref.trojan)
			n = proto_trojan_udp_parse(fz.up + off,
			    fz.up_len - off, &d, &pl, &plen);
		else
			n = frame_parse(fz.up + off, fz.up_len - off, &d, &pl,
			    &plen);
		FZ_CHECK(n > 0 && i < ref.sent && plen == 16);
		fz_tunnel_dst(ref.sent_k[i], &want);
		FZ_CHECK(fz_dest_eq(&d, &want) && pl[1] == ref.sent_k[i]);
		off += (size_t)n;
	}
	FZ_CHECK(i == ref.sent);
}

/* ---- setup and one input ------------------------------------------------ */

static struct conf	*fz_confs[FZ_NCONF];
static struct addr	 fz_srv;
static struct ssl_ctx_st *fz_ctx;
static struct sockaddr_in fz_relay;
static uint8_t		 fz_uid[PROTO_USER_ID_LEN];

static void
fz_init(void)
{
	static const uint8_t lo[4] = { 127, 0, 0, 1 };
	static const unsigned mtus[4] = { 576, 1280, 1500, 65535 };
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);
	char yaml[512], err[256];
	int i, n;

	log_init(LOG_LVL_ERROR, false, "fuzz_resp");
	static const char *const proto[3] = {
		"key: UR8GBfXkCWILEa357of526YctXNYj5edwp3e59D7Z7I=",
		"protocol: trojan\n  password: fuzz",
		"protocol: socks5",
	};

	/* Index: protocol * 8 + resolver IPv6 * 4 + MTU. */
	for (i = 0; i < FZ_NCONF; i++) {
		n = snprintf(yaml, sizeof(yaml),
		    "tun: {name: fz0, mtu: %u}\n"
		    "client:\n"
		    "  server: \"127.0.0.1:9\"\n"
		    "  %s\n"
		    "  insecure: true\n"
		    "  congestion: cubic\n"
		    "  max_udp: 8\n"
		    "  dns: \"%s\"\n", mtus[i % 4],
		    proto[i / 8], i % 8 < 4 ? "10.77.2.53" : "[fd77:2::53]:53");
		FZ_CHECK(n > 0 && (size_t)n < sizeof(yaml));
		fz_confs[i] = conf_load_buf("fuzz_resp", yaml, (size_t)n, err,
		    sizeof(err));
		if (fz_confs[i] == NULL) {
			fprintf(stderr, "fuzz_resp: %s\n", err);
			abort();
		}
	}
	auth_user_id(conf_final(fz_confs[0])->key, fz_uid);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	memcpy(&sin.sin_addr, lo, 4);
	fz.lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	FZ_CHECK(fz.lfd >= 0);
	FZ_CHECK(bind(fz.lfd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
	FZ_CHECK(listen(fz.lfd, 16) == 0);
	FZ_CHECK(getsockname(fz.lfd, (struct sockaddr *)&sin, &sl) == 0);
	addr_from_raw(&fz_srv, AF_INET, lo, ntohs(sin.sin_port));
	fz.sfd = -1;
	/* The socks5 relay, on loopback like the proxy. */
	sin.sin_port = 0;
	fz.ufd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	FZ_CHECK(fz.ufd >= 0);
	FZ_CHECK(bind(fz.ufd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
	sl = sizeof(fz_relay);
	FZ_CHECK(getsockname(fz.ufd, (struct sockaddr *)&fz_relay, &sl) == 0);
}

/* Records: [ctl][len:2][bytes]; the callback gets each, truncated at the
 * end of the input. */
static void
fz_records(const uint8_t *data, size_t size,
    bool (*cb)(void *, uint8_t, const uint8_t *, size_t), void *arg)
{
	size_t len;
	uint8_t ctl;

	while (size >= 3) {
		ctl = data[0];
		len = be16(data + 1);
		data += 3;
		size -= 3;
		if (len > size)
			len = size;
		if (!cb(arg, ctl, data, len))
			return;
		data += len;
		size -= len;
	}
}

/* The model, record by record: the app's datagram, then the bytes. */
struct fz_model {
	size_t	 pos;		/* next frame in ref.stream */
	bool	 status, broken;
};

static bool
fz_model_record(void *arg, uint8_t ctl, const uint8_t *p, size_t n)
{
	struct fz_model *m = arg;

	if (ref.socks && n > FZ_DGRAM_MAX)
		return true;		/* cannot be sent: skipped */
	if ((ctl & 1) && ref.sent < sizeof(ref.sent_k))
		fz_ref_send((ctl >> 1) & 7);
	FZ_CHECK(ref.slen + n <= sizeof(ref.stream));
	memcpy(ref.stream + ref.slen, p, n);
	ref.slen += n;
	if (ref.socks) {
		fz_ref_socks(p, n, ref.slen - n);
		return true;
	}
	if (!m->status && ref.slen > 0) {
		m->status = true;
		m->pos = 1;
		if (ref.stream[0] != PROTO_OK) {
			ref.fail = true;
			m->broken = true;
			return false;
		}
	}
	if (m->status && !fz_ref_frames(&m->pos)) {
		m->broken = true;
		return false;
	}
	return true;
}

/* Runs the loop until the current record is read (or the stream is
 * gone).  A client that stops reading a live stream is a bug. */
static void
fz_run(struct loop *l)
{
	unsigned i;

	for (i = 0; !fz.released && (fz.n > 0 || fz.eagain || fz.end); i++) {
		FZ_CHECK(i < 100);
		FZ_CHECK(loop_run_once(l, 100) == 0);
	}
}

struct fz_live {
	struct loop	*loop;
	struct outbounds *obs;
	struct flow_udp	*u;
	unsigned	 sent;
};

/* socks5: n bytes from the client's control connection. */
static void
fz_ctl_read(struct loop *l, uint8_t *buf, size_t n)
{
	size_t got = 0;
	ssize_t r;
	unsigned i;

	for (i = 0; got < n; i++) {
		if ((r = recv(fz.sfd, buf + got, n - got, MSG_DONTWAIT)) > 0) {
			got += (size_t)r;
			continue;
		}
		FZ_CHECK(r < 0 && errno == EAGAIN && i < 100);
		FZ_CHECK(loop_run_once(l, 20) == 0);
	}
}

/* socks5: the proxy's side of the dialog, the client's first datagram
 * at the relay. */
static void
fz_socks_dialog(struct loop *l)
{
	static const uint8_t method[2] = { 5, 0 };
	uint8_t buf[10], reply[10] = { 5, 0, 0, 1, 0, 0, 0, 0 };
	unsigned i;

	for (i = 0; (fz.sfd = accept4(fz.lfd, NULL, NULL, SOCK_CLOEXEC)) < 0;
	    i++) {
		FZ_CHECK(errno == EAGAIN && i < 100);
		FZ_CHECK(loop_run_once(l, 20) == 0);
	}
	fz_ctl_read(l, buf, 3);
	FZ_CHECK(buf[0] == 5 && buf[1] == 1 && buf[2] == 0);
	FZ_CHECK(write(fz.sfd, method, 2) == 2);
	/* UDP ASSOCIATE naming the client's UDP socket (on loopback, as
	 * its control connection). */
	fz_ctl_read(l, buf, 10);
	FZ_CHECK(buf[0] == 5 && buf[1] == SOCKS5_CMD_UDP && buf[2] == 0 &&
	    buf[3] == 1 && buf[4] == 127 && buf[7] == 1);
	memset(&fz.client_udp, 0, sizeof(fz.client_udp));
	fz.client_udp.sin_family = AF_INET;
	memcpy(&fz.client_udp.sin_addr, buf + 4, 4);
	memcpy(&fz.client_udp.sin_port, buf + 8, 2);
	/* The relay: 0.0.0.0 means the proxy's own address. */
	memcpy(reply + 8, &fz_relay.sin_port, 2);
	FZ_CHECK(write(fz.sfd, reply, sizeof(reply)) == sizeof(reply));
	for (i = 0; fz.up_dgrams == 0; i++) {
		FZ_CHECK(i < 100);
		FZ_CHECK(loop_run_once(l, 20) == 0);
		fz_socks_drain(true);
	}
}

/* socks5: one datagram from the relay; the client must have taken it
 * (delivered or dropped) before the next. */
static void
fz_socks_record(struct fz_live *lv, const uint8_t *p, size_t n)
{
	const struct assoc_stats *st = assoc_stats(flow_udp_assoc(lv->u));
	uint64_t seen = st->dgrams_down + st->drop_down;
	unsigned i;

	FZ_CHECK(sendto(fz.ufd, p, n, 0, (struct sockaddr *)&fz.client_udp,
	    sizeof(fz.client_udp)) == (ssize_t)n);
	for (i = 0; st->dgrams_down + st->drop_down == seen; i++) {
		FZ_CHECK(i < 100);
		FZ_CHECK(loop_run_once(lv->loop, 20) == 0);
	}
	fz_socks_drain(true);
}

/* socks5: the proxy ends the control connection; the association ends
 * with it. */
static void
fz_socks_end(struct fz_live *lv)
{
	const struct assoc_stats *st = assoc_stats(flow_udp_assoc(lv->u));
	unsigned i;

	if (fz.reset)
		sock_close_rst(fz.sfd);
	else
		close(fz.sfd);
	fz.sfd = -1;
	for (i = 0; st->active > 0; i++) {
		FZ_CHECK(i < 100);
		FZ_CHECK(loop_run_once(lv->loop, 20) == 0);
	}
}

static bool
fz_live_record(void *arg, uint8_t ctl, const uint8_t *p, size_t n)
{
	struct fz_live *lv = arg;

	if (fz.released || (ref.socks && n > FZ_DGRAM_MAX))
		return !fz.released;
	if ((ctl & 1) && lv->sent < sizeof(ref.sent_k)) {
		fz_app_send(lv->u, (ctl >> 1) & 7);
		lv->sent++;
	}
	if (ref.socks) {
		fz_socks_record(lv, p, n);
		return true;
	}
	fz.p = p;
	fz.n = n;
	fz.eagain = n == 0;
	fz.piece = (size_t)(ctl >> 4) * 7;
	fz_run(lv->loop);
	return true;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct assoc_stats *st;
	struct assoc_cfg ac;
	struct fz_model m;
	struct fz_live lv;
	uint8_t s;

	if (size < 1 || size - 1 > sizeof(ref.stream))
		return 0;
	if (fz_confs[0] == NULL)
		fz_init();
	s = data[0];
	ref.slen = ref.nexp = ref.next = ref.sent = ref.map_next = 0;
	ref.drops = ref.frames = 0;
	ref.fail = false;
	memset(ref.map, 0, sizeof(ref.map));
	ref.family = (s & 1) ? AF_INET6 : AF_INET;
	ref.trojan = (s & 0x22) == 0x20;
	ref.socks = (s & 0x22) == 0x22;
	ref.icmp = (s & 0x22) == 0x02;
	ref.dns = !ref.icmp && (s & 4) != 0;
	ref.conf = fz_confs[(ref.trojan ? 8 : ref.socks ? 16 : 0) +
	    (s >> 6 & 1) * 4 + (s >> 3 & 3)];
	tun.partial = false;

	/* The prediction first. */
	memset(&m, 0, sizeof(m));
	m.status = ref.trojan;		/* none: ready once TLS is up */
	fz_ref_send(0);
	fz_records(data + 1, size - 1, fz_model_record, &m);
	/* socks5 is ready at the proxy's reply, and only its end follows.
	 * A trojan server that ends before any packet came back fails the
	 * association too (assoc_stream.c: it may be a rejecting one). */
	if (!ref.socks && !m.broken && ((s & 0x80) || !m.status ||
	    (ref.trojan && ref.frames == 0)))
		ref.fail = true;

	/* Then the client. */
	fz.live = NULL;
	fz.released = fz.end = fz.ended = fz.eagain = false;
	fz.n = 0;
	fz.reset = (s & 0x80) != 0;
	fz.up_len = 0;
	fz.up_dgrams = 0;
	fz_socks_drain(false);		/* nothing left from before */
	memset(&ac, 0, sizeof(ac));
	memset(&lv, 0, sizeof(lv));
	FZ_CHECK((lv.loop = loop_new()) != NULL);
	ac.loop = lv.loop;
	ac.conf = ref.conf;
	/* The streams are this file's (outer_new above): the context is
	 * never used, only carried. */
	if (fz_ctx == NULL)
		FZ_CHECK((fz_ctx = outer_ctx_client(NULL, true)) != NULL);
	FZ_CHECK((lv.obs = outbounds_one(outbound_new(ref.conf, 0, fz_ctx,
	    &fz_srv))) != NULL);
	ac.obs = lv.obs;
	ac.tun_write = fz_tun_write;
	FZ_CHECK((lv.u = flow_udp_new(&ac)) != NULL);
	fz_app_send(lv.u, 0);
	lv.sent = 1;
	if (ref.socks)
		fz_socks_dialog(lv.loop);
	fz_records(data + 1, size - 1, fz_live_record, &lv);
	if (ref.socks) {
		fz_socks_end(&lv);
	} else {
		fz.end = true;
		fz_run(lv.loop);
		FZ_CHECK(fz.live != NULL && fz.released);
	}

	/* The verdict. */
	FZ_CHECK(!tun.partial && ref.next == ref.nexp);
	st = assoc_stats(flow_udp_assoc(lv.u));
	FZ_CHECK(st->failed == (ref.fail ? 1u : 0u));
	FZ_CHECK(st->dgrams_down == ref.frames);
	FZ_CHECK(st->drop_down == ref.drops);
	FZ_CHECK(st->tun_errors == 0);
	FZ_CHECK(lv.sent == ref.sent);
	fz_check_up();

	flow_udp_free(lv.u);
	outbounds_free(lv.obs);
	loop_free(lv.loop);
	if (fz.sfd >= 0)
		close(fz.sfd);
	fz.sfd = -1;
	return 0;
}
