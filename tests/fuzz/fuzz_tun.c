/*
 * Fuzz target: packets from the TUN through the client's input path --
 * the tsnetif input hooks, lwIP's IPv4/IPv6 input, reassembly and TCP
 * state machines, the non-TCP handler hand-off -- with lwIP's timers
 * driven by a fake clock.
 *
 * Input layout:
 *   byte 0        settings: bits 0-2 MTU choice, bit 3 a flow limit that
 *                 refuses SYNs, bits 4-7 how many accepted pcbs stay open
 *                 (more are aborted in the accept callback)
 *   then records  [len: 2, big endian][ctl: 1][len bytes of IP packet]
 *                 A short last record is fed truncated.
 *   ctl           bits 0-3: advance the clock by n * 100 ms first (and run
 *                 due timers); bits 4-6: what the "app" does with its open
 *                 pcbs after the packet (write, FIN, close, abort, ...);
 *                 bit 7: feed the packet as is (see below).
 *
 * Acknowledgement numbers of TCP segments are taken relative to the ISN
 * lwIP chose for that connection (seen in its SYN-ACK), because lwIP's ISN
 * depends on its uptime: without this no input could ever complete a
 * handshake reproducibly.
 *
 * Non-TCP packets go where tsnetif hands them, to the client's UDP and
 * ICMP input (flow_udp_input), with their checksums corrected first (same
 * bit 7).
 *
 * Oracles: ASan/UBSan; every packet lwIP writes is a well-formed IP packet
 * of exactly its stated length; after tsnetif_shutdown no pcb is left; the
 * non-TCP handler only ever sees bytes inside the packet.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "lwip/sys.h"
#include "lwip/tcp.h"
#include "lwip/priv/tcp_priv.h"

#include "addr.h"
#include "assoc.h"
#include "auth.h"
#include "conf.h"
#include "flow_udp.h"
#include "log.h"
#include "loop.h"
#include "outer.h"
#include "pkt.h"
#include "tsnetif.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_MAX_PCBS	16
#define FZ_MAX_ISN	64
#define FZ_OUT_MAX	70000

/*
 * lwIP's clock.  This definition takes the place of the one in
 * lwip-port/sys_arch.c (an archive member is only linked when something
 * still needs it), so timers run when the input says, not when the wall
 * clock does.
 */
static u32_t	 fz_now = 1000;

u32_t
sys_now(void)
{
	return fz_now;
}

struct fz_isn {
	uint8_t		 local[16], remote[16];	/* IPv4 in the first 4 bytes */
	uint16_t	 lport, rport;
	uint32_t	 isn;
	bool		 used;
};

/* An accepted pcb and which FINs it has seen.  Once both have, the app
 * holds it until action 6 or the next clock advance, as a flow holds its
 * pcb until its next pass -- while more packets come in, such as a new SYN
 * on the same ports that ends the TIME_WAIT (tsnetif then reports the
 * free through the error callback).  Never across an advance: lwIP's
 * timers free a pcb in TIME_WAIT after 2 MSL without any callback. */
struct fz_conn {
	struct tcp_pcb	*pcb;
	bool		 rx_fin, tx_fin;
};

static int		 fz_sock[2] = { -1, -1 };	/* the TUN */
static struct fz_conn	 fz_conns[FZ_MAX_PCBS];
static unsigned		 fz_keep;		/* pcbs kept open */
static bool		 fz_limit;		/* refuse SYNs beyond fz_keep */
static struct flow_udp	*fz_udp;
static struct assoc_cfg	 fz_ac;
static struct addr	 fz_server;
static uint8_t		 fz_uid[PROTO_USER_ID_LEN];
static struct fz_isn	 fz_isns[FZ_MAX_ISN];
static unsigned		 fz_isn_next;
static uint8_t		 fz_pkt[65536];
static uint8_t		 fz_out[FZ_OUT_MAX];
static const uint8_t	 fz_payload[4096];
static volatile uint32_t fz_sink;

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

static void
put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* ---- the fake app on top of lwIP -------------------------------------- */

static unsigned
fz_live(void)
{
	unsigned i, n = 0;

	for (i = 0; i < FZ_MAX_PCBS; i++)
		if (fz_conns[i].pcb != NULL)
			n++;
	return n;
}

/* Hands the pcb back to lwIP: no callback will name it any more.  Returns
 * ERR_ABRT when it had to abort (a callback must then return that). */
static err_t
fz_drop(struct fz_conn *c, bool abort_it)
{
	struct tcp_pcb *pcb = c->pcb;

	c->pcb = NULL;
	tcp_arg(pcb, NULL);
	tcp_recv(pcb, NULL);
	tcp_sent(pcb, NULL);
	tcp_err(pcb, NULL);
	if (!abort_it && tcp_close(pcb) == ERR_OK)
		return ERR_OK;
	tcp_abort(pcb);
	return ERR_ABRT;
}

static err_t
fz_on_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
	struct fz_conn *c = arg;
	struct pbuf *q;
	uint32_t sum = 0;
	uint16_t i;

	if (p == NULL) {
		c->rx_fin = true;
		return ERR_OK;
	}
	if (err != ERR_OK) {
		pbuf_free(p);
		return ERR_OK;
	}
	/* Touch every byte lwIP hands over. */
	for (q = p; q != NULL; q = q->next)
		for (i = 0; i < q->len; i++)
			sum += ((const uint8_t *)q->payload)[i];
	fz_sink += sum;
	tcp_recved(pcb, p->tot_len);
	pbuf_free(p);
	return ERR_OK;
}

static void
fz_on_err(void *arg, err_t err)
{
	struct fz_conn *c = arg;

	(void)err;
	/* lwIP has freed the pcb already. */
	c->pcb = NULL;
}

static err_t
fz_accept(void *arg, struct tcp_pcb *pcb, err_t err)
{
	struct fz_conn *c;
	unsigned i;

	(void)arg;
	if (err != ERR_OK || pcb == NULL)
		return ERR_VAL;
	if (fz_live() >= fz_keep)
		goto refuse;
	for (i = 0; i < FZ_MAX_PCBS; i++)
		if (fz_conns[i].pcb == NULL)
			break;
	if (i == FZ_MAX_PCBS)
		goto refuse;
	c = &fz_conns[i];
	c->pcb = pcb;
	c->rx_fin = c->tx_fin = false;
	tcp_arg(pcb, c);
	tcp_recv(pcb, fz_on_recv);
	tcp_err(pcb, fz_on_err);
	return ERR_OK;
refuse:
	tcp_abort(pcb);
	return ERR_ABRT;
}

static bool
fz_syn_allowed(void *arg)
{
	(void)arg;
	return !fz_limit || fz_live() < fz_keep;
}

/*
 * The client's own non-TCP path: flow_udp_input parses (bounds, checksums,
 * IPv6 extension headers), reassembles, pins DNS and hands UDP to its
 * association and echo requests to flow_icmp, exactly as client.c wires
 * it.  Associations dial a closed loopback port and the loop never runs,
 * so their datagrams only queue (bounded), and nothing leaves the host.
 * The handler may read exactly len bytes: ASan catches any lie from
 * tsnetif.
 */
static bool
fz_other(void *arg, const uint8_t *pkt, size_t len)
{
	uint32_t sum = 0;
	size_t i;

	(void)arg;
	for (i = 0; i < len; i++)
		sum += pkt[i];
	fz_sink += sum;
	/* Made on first use: most inputs are TCP only, and a flow_udp is
	 * not cheap to make. */
	if (fz_udp == NULL && (fz_udp = flow_udp_new(&fz_ac)) == NULL)
		abort();
	return flow_udp_input(fz_udp, pkt, len);
}

static void
fz_app(unsigned action)
{
	struct fz_conn *c;
	struct tcp_pcb *pcb;
	unsigned i;
	u16_t n;

	for (i = 0; i < FZ_MAX_PCBS; i++) {
		c = &fz_conns[i];
		if ((pcb = c->pcb) == NULL)
			continue;
		switch ((action + i) & 7) {
		case 1:
		case 2:
			/* Send what fits (fills windows and queues). */
			n = tcp_sndbuf(pcb);
			if (n > sizeof(fz_payload))
				n = sizeof(fz_payload);
			if (n > 0)
				(void)tcp_write(pcb, fz_payload, n,
				    TCP_WRITE_FLAG_COPY);
			(void)tcp_output(pcb);
			break;
		case 3:
			if (c->rx_fin)
				(void)fz_drop(c, false);
			else if (tcp_shutdown(pcb, 0, 1) == ERR_OK)
				c->tx_fin = true;
			break;
		case 4:
			(void)fz_drop(c, false);
			break;
		case 5:
			(void)fz_drop(c, true);
			break;
		case 6:
			if (c->rx_fin && c->tx_fin)
				(void)fz_drop(c, false);
			break;
		default:
			break;
		}
	}
}

/* ---- ISNs seen in lwIP's output ----------------------------------------- */

/* Finds the TCP header of an IP packet; fills the addresses (16 bytes
 * each, IPv4 zero-padded).  NULL when it is not an unfragmented TCP
 * segment with a whole header. */
static const uint8_t *
fz_tcp(const uint8_t *p, size_t n, uint8_t src[16], uint8_t dst[16])
{
	size_t ihl;

	memset(src, 0, 16);
	memset(dst, 0, 16);
	if (n >= 20 && p[0] >> 4 == 4) {
		ihl = (size_t)(p[0] & 0x0f) * 4;
		if (ihl < 20 || n < ihl + 20 || p[9] != 6 ||
		    (get16(p + 6) & 0x3fff) != 0)
			return NULL;
		memcpy(src, p + 12, 4);
		memcpy(dst, p + 16, 4);
		return p + ihl;
	}
	if (n >= 60 && p[0] >> 4 == 6 && p[6] == 6) {
		memcpy(src, p + 8, 16);
		memcpy(dst, p + 24, 16);
		return p + 40;
	}
	return NULL;
}

static struct fz_isn *
fz_isn_find(const uint8_t local[16], const uint8_t remote[16], uint16_t lport,
    uint16_t rport)
{
	unsigned i;

	for (i = 0; i < FZ_MAX_ISN; i++)
		if (fz_isns[i].used && fz_isns[i].lport == lport &&
		    fz_isns[i].rport == rport &&
		    memcmp(fz_isns[i].local, local, 16) == 0 &&
		    memcmp(fz_isns[i].remote, remote, 16) == 0)
			return &fz_isns[i];
	return NULL;
}

static void
fz_isn_note(const uint8_t *p, size_t n)
{
	const uint8_t *th;
	uint8_t src[16], dst[16];
	struct fz_isn *e;

	if ((th = fz_tcp(p, n, src, dst)) == NULL || (th[13] & 0x12) != 0x12)
		return;
	if ((e = fz_isn_find(src, dst, get16(th), get16(th + 2))) == NULL) {
		e = &fz_isns[fz_isn_next++ % FZ_MAX_ISN];
		memcpy(e->local, src, 16);
		memcpy(e->remote, dst, 16);
		e->lport = get16(th);
		e->rport = get16(th + 2);
		e->used = true;
	}
	e->isn = get32(th + 4);
}

/* Input segment: make its ACK number relative to lwIP's ISN. */
static void
fz_isn_apply(uint8_t *p, size_t n)
{
	uint8_t *th;
	uint8_t src[16], dst[16];
	struct fz_isn *e;

	if ((th = (uint8_t *)(uintptr_t)fz_tcp(p, n, src, dst)) == NULL ||
	    (th[13] & 0x10) == 0)
		return;
	if ((e = fz_isn_find(dst, src, get16(th + 2), get16(th))) == NULL)
		return;
	put32(th + 8, e->isn + get32(th + 8));
}

/* ---- checksums of non-TCP input ------------------------------------------ */

/* Upper-layer checksum with the pseudo header; al: address length. */
static void
fz_l4_sum(const uint8_t *ip, size_t al, uint8_t proto, uint8_t *l4,
    size_t len, size_t off)
{
	uint8_t pseudo[40];
	uint64_t sum;
	uint16_t c;

	if (len < off + 2)
		return;
	memcpy(pseudo, ip, al);
	memcpy(pseudo + al, ip + al, al);
	memset(pseudo + 2 * al, 0, 8);
	if (al == 4) {
		pseudo[9] = proto;
		pseudo[10] = (uint8_t)(len >> 8);
		pseudo[11] = (uint8_t)len;
	} else {
		put32(pseudo + 32, (uint32_t)len);
		pseudo[39] = proto;
	}
	l4[off] = l4[off + 1] = 0;
	sum = pkt_csum_add(0, l4, len);
	if (proto != PKT_PROTO_ICMP)
		sum = pkt_csum_add(sum, pseudo, al == 4 ? 12 : 40);
	c = pkt_csum_fold(sum);
	if (c == 0 && proto == PKT_PROTO_UDP)
		c = 0xffff;
	memcpy(l4 + off, &c, 2);
}

/*
 * Input packet: correct the IPv4 header checksum and the UDP, ICMP and
 * ICMPv6 checksums of unfragmented packets, which the client verifies
 * (lwIP does not check TCP's): the fuzzer explores what lies behind
 * them instead of failing the checksum every time.
 */
static void
fz_sum_fix(uint8_t *p, size_t n)
{
	size_t ihl, tot, ulen;
	uint8_t *l4, proto;
	uint16_t c;

	if (n >= 20 && p[0] >> 4 == 4) {
		ihl = (size_t)(p[0] & 0x0f) * 4;
		tot = get16(p + 2) < n ? get16(p + 2) : n;
		if (ihl < 20 || tot < ihl)
			return;
		p[10] = p[11] = 0;
		c = pkt_csum_fold(pkt_csum_add(0, p, ihl));
		memcpy(p + 10, &c, 2);
		if ((get16(p + 6) & 0x3fff) != 0)
			return;
		l4 = p + ihl;
		tot -= ihl;
		proto = p[9];
		p += 12;	/* the addresses */
		ihl = 4;
	} else if (n >= 40 && p[0] >> 4 == 6) {
		tot = (size_t)get16(p + 4) + 40 < n ? get16(p + 4) : n - 40;
		l4 = p + 40;
		proto = p[6];
		p += 8;
		ihl = 16;
	} else
		return;
	switch (proto) {
	case PKT_PROTO_UDP:
		if (tot < 8)
			return;
		ulen = get16(l4 + 4);
		if (ulen < 8 || ulen > tot)
			ulen = tot;
		fz_l4_sum(p, ihl, proto, l4, ulen, 6);
		break;
	case PKT_PROTO_ICMP:
	case PKT_PROTO_ICMP6:
		fz_l4_sum(p, ihl, proto, l4, tot, 2);
		break;
	default:
		break;
	}
}

/* What tsnetif hands to lwIP's reassembly: TCP fragments. */
static bool
fz_is_tcp_fragment(const uint8_t *p, size_t n)
{
	if (n >= 20 && p[0] >> 4 == 4)
		return p[9] == 6 && (get16(p + 6) & 0x3fff) != 0;
	return n >= 41 && p[0] >> 4 == 6 && p[6] == 44;
}

/* ---- the TUN side --------------------------------------------------------- */

/* Reads everything lwIP wrote; each packet must be sane. */
static void
fz_drain(void)
{
	ssize_t n;
	size_t len;

	while ((n = recv(fz_sock[1], fz_out, sizeof(fz_out), MSG_DONTWAIT)) > 0) {
		len = (size_t)n;
		if (fz_out[0] >> 4 == 4) {
			if (len < 20 || get16(fz_out + 2) != len)
				abort();
		} else if (fz_out[0] >> 4 == 6) {
			if (len < 40 || (size_t)get16(fz_out + 4) + 40 != len)
				abort();
		} else
			abort();
		fz_isn_note(fz_out, len);
	}
	if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
		abort();
}

static void
fz_advance(unsigned ms)
{
	unsigned i;

	for (i = 0; i < FZ_MAX_PCBS; i++)
		if (fz_conns[i].pcb != NULL && fz_conns[i].rx_fin &&
		    fz_conns[i].tx_fin)
			(void)fz_drop(&fz_conns[i], false);
	fz_now += ms;
	(void)tsnetif_timers();
	fz_drain();
}

/* What flow_udp needs from the client: a configuration (DNS pinned, few
 * associations), a loop, a TLS context, the server: a closed port on
 * loopback. */
static const char fz_yaml[] =
    "tun: {name: fz0, mtu: 1500}\n"
    "client:\n"
    "  server: \"127.0.0.1:9\"\n"
    "  key: UR8GBfXkCWILEa357of526YctXNYj5edwp3e59D7Z7I=\n"
    "  insecure: true\n"
    "  max_udp: 8\n"
    "  dns: 10.77.2.53\n";

static int
fz_setup(void)
{
	static const uint8_t lo[4] = { 127, 0, 0, 1 };
	struct conf *c;
	char err[256];
	int sz = 1 << 22;

	log_init(LOG_LVL_ERROR, false, "fuzz_tun");
	if ((c = conf_load_buf("fuzz_tun", fz_yaml, sizeof(fz_yaml) - 1, err,
	    sizeof(err))) == NULL)
		return -1;
	addr_from_raw(&fz_server, AF_INET, lo, 9);
	auth_user_id(c->client.key, fz_uid);
	fz_ac.conf = c;
	fz_ac.server = &fz_server;
	fz_ac.user_id = fz_uid;
	if ((fz_ac.loop = loop_new()) == NULL ||
	    (fz_ac.ssl_ctx = outer_ctx_client(NULL, true)) == NULL)
		return -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0, fz_sock) < 0)
		return -1;
	/* Room for a full window of 64 KiB segments between drains. */
	(void)setsockopt(fz_sock[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	(void)setsockopt(fz_sock[1], SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned mtus[8] = {
		576, 1280, 1500, 9000, 65535, 1280, 1500, 9000,
	};
	struct tsnetif_ops ops = {
		.accept = fz_accept, .syn_allowed = fz_syn_allowed,
		.other = fz_other, .arg = NULL,
	};
	size_t len;
	unsigned i;
	uint8_t ctl;
	bool frags = false;

	if (size < 1)
		return 0;
	if (fz_sock[0] == -1 && fz_setup() < 0)
		abort();
	fz_keep = (unsigned)(data[0] >> 4);
	fz_limit = (data[0] & 0x08) != 0;
	memset(fz_isns, 0, sizeof(fz_isns));
	fz_isn_next = 0;
	if (tsnetif_init(fz_sock[0], mtus[data[0] & 7], &ops) < 0)
		abort();
	data++;
	size--;

	while (size >= 3) {
		len = get16(data);
		ctl = data[2];
		data += 3;
		size -= 3;
		if (len > size)
			len = size;
		if ((ctl & 0x0f) != 0)
			fz_advance((ctl & 0x0f) * 100u);
		memcpy(fz_pkt, data, len);
		if (fz_is_tcp_fragment(fz_pkt, len))
			frags = true;
		if ((ctl & 0x80) == 0) {
			fz_isn_apply(fz_pkt, len);
			fz_sum_fix(fz_pkt, len);
		}
		tsnetif_input(fz_pkt, len);
		data += len;
		size -= len;
		fz_drain();
		fz_app((ctl >> 4) & 7);
		fz_drain();
	}

	/* Teardown as the client does it: the app's pcbs first, then the
	 * netif (listeners, half-open and closing pcbs). */
	for (i = 0; i < FZ_MAX_PCBS; i++)
		if (fz_conns[i].pcb != NULL)
			(void)fz_drop(&fz_conns[i], true);
	tsnetif_shutdown();
	if (tcp_active_pcbs != NULL || tcp_tw_pcbs != NULL ||
	    tcp_listen_pcbs.listen_pcbs != NULL)
		abort();
	/* Let lwIP's reassembly give up on partial TCP datagrams (it counts
	 * timer runs: 60 for IPv6), so nothing of this input survives into
	 * the next. */
	for (i = 0; frags && i < 62; i++) {
		fz_now += 1000;
		(void)tsnetif_timers();
	}
	flow_udp_free(fz_udp);
	fz_udp = NULL;
	return 0;
}
