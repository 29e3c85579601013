/*
 * The TUN netif: packets in from the TUN, lwIP output back to it, and the
 * input hooks that make unmodified lwIP terminate TCP for any destination.
 *
 * Hooks run before lwIP validates anything, so they bounds-check first.
 * For TCP they write the packet's destination into the netif's address
 * field in place (ip4_input_accept / ip6_input then accept it; never via
 * netif_set_ipaddr, which would abort pcbs), and on a SYN for a port with
 * no listener they create one before lwIP processes that same SYN.
 */
#include "config.h"

#include "stack/tsnetif.h"
#include "tsnetif_hooks.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/uio.h>

#include "lwip/init.h"
#include "lwip/ip.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/tcp.h"
#include "lwip/sys.h"
#include "lwip/timeouts.h"
#include "lwip/priv/tcp_priv.h"

#include "core/log.h"
#include "stack/vnet.h"

#define TS_RX_MAX	65536
/* A read with offloads: the virtio-net header, then up to 64 KiB of IP
 * packet (a little more over IPv6: its length field excludes the header;
 * tsnetif_input refuses what lwIP's 16-bit sizes cannot hold). */
#define TS_RXV_MAX	(VNET_HDR_LEN + TS_RX_MAX + 64)
/* The MSS lwIP is told an app announced, with offloads: its segments are
 * then super-packets of up to this much payload, which the kernel cuts at
 * the app's real MSS.  Headers included it stays below 64 KiB. */
#define TS_GSO_MSS	65000
#define TS_MSS_DEF4	536	/* RFC 9293 3.7.1: no MSS option */
#define TS_MSS_DEF6	1220
#define TS_IOV_MAX	64
/* IPv4 or IPv6 header and a TCP header with options, at their longest. */
#define TS_CUT_HDR_MAX	120
#define TS_BACKLOG	255	/* SYN_RCVD pcbs per port (u8 in lwIP) */
#define TS_RX_SLACK	8	/* zeroed bytes after each input packet */
#define TS_TW_MAX	64	/* pcbs kept in TIME_WAIT (ts_timewait_trim) */

#define IPPROTO_TCP_	6
#define IPPROTO_FRAG6_	44
#define TH_FIN		0x01
#define TH_SYN		0x02
#define TH_RST		0x04
#define TH_ACK		0x10

static struct netif	 ts_netif;
static int		 ts_fd = -1;
static struct tsnetif_ops ts_ops;
static struct tsnetif_stats ts_stats;
static struct tcp_pcb	*ts_listeners[65536];
static uint8_t		 ts_rx[TS_RXV_MAX];
/* Output linearised for writev: not ts_rx, which may still hold the
 * batch's packet being processed when lwIP answers it. */
static uint8_t		 ts_tx[TS_RX_MAX];
/* One datagram of a UDP super-packet at a time (vnet_rx_uso). */
static uint8_t		 ts_uso[TS_RX_MAX];
/* With offloads, the pbuf the next read goes into (ts_read_vnet); one
 * filled to TS_RXP_KEEP or more is handed to lwIP as it is, so that a
 * queued super-packet holds at most a third more than its bytes. */
#define TS_RXP_SIZE	0xffff
#define TS_RXP_KEEP	(TS_RXP_SIZE / 4 * 3)
static struct pbuf	*ts_rxp;

/*
 * Offloads (tsnetif_offload).  Every packet on the fd then carries a
 * virtio-net header; the netif's MTU is 64 KiB so that lwIP neither caps
 * its segments nor fragments them, while ts_mtu keeps the TUN's own for
 * the MSS lwIP announces and accepts.  Each pcb remembers, in its ext
 * arg, the MSS its app announced (ts_syn_mss, carried from the SYN's input
 * to the pcb lwIP creates for it); the output hook passes it to the write
 * of each segment as the size the kernel cuts it at (ts_tx_mss).
 */
static bool		 ts_vnet;
static unsigned		 ts_mtu;

/*
 * Path MTUs below the TUN's that ICMPv6 Packet Too Big named, per
 * destination (an app behind a router with a smaller link: IPv6 routers
 * do not fragment), for 10 minutes as Linux keeps them (tsnetif_ptb6).
 */
#define TS_PMTU_N	64
#define TS_PMTU_MS	(10u * 60 * 1000)
static struct ts_pmtu {
	uint8_t		 addr[16];
	unsigned	 mtu;		/* 0: free */
	u32_t		 until;
}			 ts_pmtu[TS_PMTU_N];
static unsigned		 ts_pmtu_n;
static void		 ts_pmtu_clamp(struct tcp_pcb *, unsigned);
static unsigned		 ts_mss_follow(struct tcp_pcb *);
static u8_t		 ts_ext_id;
static bool		 ts_syn_seen;
static uint16_t		 ts_syn_mss;
static uint16_t		 ts_tx_mss;

static uint16_t
be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t
be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

/* Internet checksum (non-inverted, in the byte order of the data) for
 * lwIP's output path: eight bytes per step with end-around carry. */
uint16_t
tsnetif_chksum(const void *dataptr, int len)
{
	const uint8_t *p = dataptr;
	uint64_t sum = 0, v;
	uint16_t w;

	while (len >= 8) {
		memcpy(&v, p, 8);
		sum += v;
		if (sum < v)
			sum++;
		p += 8;
		len -= 8;
	}
	sum = (sum & 0xffffffffu) + (sum >> 32);
	while (len >= 2) {
		memcpy(&w, p, 2);
		sum += w;
		p += 2;
		len -= 2;
	}
	if (len > 0) {
		w = 0;
		memcpy(&w, p, 1);
		sum += w;
	}
	sum = (sum & 0xffffffffu) + (sum >> 32);
	sum = (sum & 0xffffffffu) + (sum >> 32);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* The copy of tcp_write's data into its segments, with its checksum for
 * lwIP to put together with the headers' -- none with offloads, where
 * lwIP does not generate TCP checksums (the kernel finishes them): the
 * copy then saves a pass over every byte sent down. */
uint16_t
tsnetif_chksum_copy(void *dst, const void *src, uint16_t len)
{
	memcpy(dst, src, len);
	return ts_vnet ? 0 : tsnetif_chksum(dst, len);
}

/*
 * The virtio-net header for p (offloads on): lwIP left TCP checksums out,
 * the kernel finishes them, and cuts segments larger than the app's MSS.
 * When p's first pbuf does not hold all its headers (not seen from lwIP),
 * p is linearised into ts_tx and *lin says so.
 */
static void
ts_vnet_tx(struct pbuf *p, uint8_t vh[VNET_HDR_LEN], bool *lin)
{
	struct vnet_hdr h;
	int rc;

	*lin = false;
	rc = vnet_tx(&h, p->payload, p->len, p->tot_len, ts_tx_mss);
	if (rc == -1) {
		pbuf_copy_partial(p, ts_tx, p->tot_len, 0);
		*lin = true;
		rc = vnet_tx(&h, ts_tx, p->tot_len, p->tot_len, ts_tx_mss);
	}
	if (rc == 1)
		ts_stats.tx_gso++;
	vnet_hdr_put(&h, vh);
}

static uint16_t
ts_sum_add(uint16_t a, uint16_t b)
{
	uint32_t s = (uint32_t)a + b;

	return (uint16_t)((s & 0xffff) + (s >> 16));
}

static void
ts_put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/*
 * Without offloads, the TCP segment in ts_tx (len bytes) leaves in pieces
 * of at most mss bytes, each with its own headers and checksums, as the
 * kernel would cut it with them.  For segments queued before a Packet Too
 * Big shrank their flow (ts_pmtu_clamp): lwIP never re-cuts a segment it
 * has queued, so each retransmission of one would be too big again and
 * the flow would stall for good.  Returns false, having written nothing,
 * when the packet is not one to cut.
 */
static bool
ts_write_cut(size_t len, unsigned mss)
{
	uint8_t h[TS_CUT_HDR_MAX], ph[40];
	struct iovec iov[2];
	size_t l3, thl, hl, off, n, phl;
	uint32_t seq;
	uint16_t sum;
	bool v6 = ts_tx[0] >> 4 == 6;
	ssize_t w;

	if (v6 && len >= 40 && ts_tx[6] == IP_PROTO_TCP)
		l3 = 40;
	else if (!v6 && len >= 20 && ts_tx[9] == IP_PROTO_TCP &&
	    (be16(ts_tx + 6) & 0x3fff) == 0)
		l3 = (size_t)(ts_tx[0] & 15) * 4;
	else
		return false;
	if (l3 < 20 || l3 + 20 > len)
		return false;
	thl = (size_t)(ts_tx[l3 + 12] >> 4) * 4;
	hl = l3 + thl;
	if (thl < 20 || hl > sizeof(h) || hl > len || len - hl <= mss)
		return false;
	for (off = hl; off < len; off += n) {
		n = len - off < mss ? len - off : mss;
		memcpy(h, ts_tx, hl);
		if (v6) {
			ts_put16(h + 4, (unsigned)(thl + n));
			memcpy(ph, h + 8, 32);
			phl = 40;
			memset(ph + 32, 0, 8);
			ts_put16(ph + 34, (unsigned)(thl + n));
			ph[39] = IP_PROTO_TCP;
		} else {
			ts_put16(h + 2, (unsigned)(hl + n));
			ts_put16(h + 10, 0);
			sum = (uint16_t)~tsnetif_chksum(h, (int)l3);
			memcpy(h + 10, &sum, 2);	/* in the data's order */
			memcpy(ph, h + 12, 8);
			phl = 12;
			ph[8] = 0;
			ph[9] = IP_PROTO_TCP;
			ts_put16(ph + 10, (unsigned)(thl + n));
		}
		seq = be32(ts_tx + l3 + 4) + (uint32_t)(off - hl);
		ts_put16(h + l3 + 4, seq >> 16);
		ts_put16(h + l3 + 6, seq & 0xffff);
		if (off + n < len)	/* FIN and PSH end the last piece */
			h[l3 + 13] &= (uint8_t)~(TCP_FIN | TCP_PSH);
		ts_put16(h + l3 + 16, 0);
		sum = ts_sum_add(tsnetif_chksum(ph, (int)phl),
		    tsnetif_chksum(h + l3, (int)thl));
		sum = ts_sum_add(sum, tsnetif_chksum(ts_tx + off, (int)n));
		sum = (uint16_t)~sum;
		memcpy(h + l3 + 16, &sum, 2);	/* in the data's order */
		iov[0] = (struct iovec){ h, hl };
		iov[1] = (struct iovec){ ts_tx + off, n };
		do
			w = writev(ts_fd, iov, 2);
		while (w < 0 && errno == EINTR);
		if (w < 0) {
			if (ts_stats.tx_errors++ == 0)
				log_warn("tun write");
			continue;	/* lost, as any: retransmitted */
		}
		ts_stats.tx_packets++;
		ts_stats.tx_bytes += (uint64_t)w;
	}
	return true;
}

static err_t
ts_write_pbuf(struct pbuf *p)
{
	struct iovec iov[TS_IOV_MAX];
	uint8_t vh[VNET_HDR_LEN];
	struct pbuf *q;
	ssize_t n;
	int cnt = 0, first;
	bool lin = false;

	if (ts_vnet) {
		ts_vnet_tx(p, vh, &lin);
		iov[cnt].iov_base = vh;
		iov[cnt++].iov_len = sizeof(vh);
	} else if (ts_tx_mss != 0 && p->tot_len > ts_tx_mss + 40u) {
		pbuf_copy_partial(p, ts_tx, p->tot_len, 0);
		lin = true;
		if (ts_write_cut(p->tot_len, ts_tx_mss)) {
			ts_tx_mss = 0;
			return ERR_OK;
		}
	}
	ts_tx_mss = 0;
	first = cnt;
	for (q = p; !lin && q != NULL && cnt < TS_IOV_MAX; q = q->next) {
		iov[cnt].iov_base = q->payload;
		iov[cnt++].iov_len = q->len;
	}
	if (lin || q != NULL) {
		/* Longer chain than iovecs: linearise (rare; tot_len is
		 * 16-bit, so it always fits). */
		if (!lin)
			pbuf_copy_partial(p, ts_tx, p->tot_len, 0);
		iov[first].iov_base = ts_tx;
		iov[first].iov_len = p->tot_len;
		cnt = first + 1;
	}
	do
		n = writev(ts_fd, iov, cnt);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		goto fail;
	ts_stats.tx_packets++;
	ts_stats.tx_bytes += (uint64_t)n - (ts_vnet ? VNET_HDR_LEN : 0);
	return ERR_OK;
fail:
	/* The TUN queue is full or gone: the packet is lost, and lwIP's
	 * retransmission recovers it, as on any lossy link. */
	if (ts_stats.tx_errors++ == 0)
		log_warn("tun write");
	return ERR_OK;
}

static err_t
ts_output4(struct netif *n, struct pbuf *p, const ip4_addr_t *dst)
{
	(void)n;
	(void)dst;
	return ts_write_pbuf(p);
}

static err_t
ts_output6(struct netif *n, struct pbuf *p, const ip6_addr_t *dst)
{
	(void)n;
	(void)dst;
	return ts_write_pbuf(p);
}

static err_t
ts_netif_init(struct netif *n)
{
	n->name[0] = 't';
	n->name[1] = 's';
	n->output = ts_output4;
	n->output_ip6 = ts_output6;
	n->flags = 0;	/* point to point: no broadcast, no ARP */
	return ERR_OK;
}

static bool
ts_listener_ensure(uint16_t port)
{
	struct tcp_pcb *pcb, *lpcb;
	err_t err;

	if (ts_listeners[port] != NULL)
		return true;
	if ((pcb = tcp_new_ip_type(IPADDR_TYPE_ANY)) == NULL)
		return false;
	ip_set_option(pcb, SOF_REUSEADDR);
	if (tcp_bind(pcb, IP_ANY_TYPE, port) != ERR_OK) {
		tcp_close(pcb);
		return false;
	}
	lpcb = tcp_listen_with_backlog_and_err(pcb, TS_BACKLOG, &err);
	if (lpcb == NULL) {
		tcp_close(pcb);
		return false;
	}
	tcp_arg(lpcb, ts_ops.arg);
	tcp_accept(lpcb, ts_ops.accept);
	ts_listeners[port] = lpcb;
	ts_stats.listeners++;
	return true;
}

static bool
ts_pcb_exists(const ip_addr_t *local, const ip_addr_t *remote,
    uint16_t lport, uint16_t rport)
{
	struct tcp_pcb *pcb;

	for (pcb = tcp_active_pcbs; pcb != NULL; pcb = pcb->next)
		if (pcb->local_port == lport && pcb->remote_port == rport &&
		    ip_addr_cmp(&pcb->local_ip, local) &&
		    ip_addr_cmp(&pcb->remote_ip, remote))
			return true;
	return false;
}

/*
 * A new SYN for a connection lwIP still holds in TIME_WAIT.  lwIP gets
 * there when it closed first (the target's side ended before the app's);
 * the app's end is then closed at once, with no TIME_WAIT of its own, and
 * its kernel may pick the same source port for its next connection to the
 * same destination.  lwIP 2.1 answers such a SYN with an ACK of the old
 * connection, the app answers that with a RST, which TIME_WAIT ignores
 * (RFC 1337) -- and the app's connect hangs, its SYN retransmitted with
 * backoff, until the 2 MSL (120 s) run out.  Seen as a new flow taking
 * over 20 s to start (e2e_status under load).  As Linux and the BSDs do
 * (RFC 1122 4.2.2.13), the new SYN ends the TIME_WAIT; here whatever its
 * sequence number, since apps with random ISNs exist and a TUN neither
 * delays nor duplicates the old connection's segments.
 *
 * The pcb's owner may not have let go of it yet (a flow hands its pcb
 * back on its next pass, and the SYN can come in the same TUN batch as
 * the app's FIN): it hears of the free as lwIP tells of a closed pcb it
 * frees, ERR_CLSD through the error callback, after the free.
 */
static void
ts_timewait_free(struct tcp_pcb *pcb)
{
	tcp_err_fn errf = pcb->errf;
	void *arg = pcb->callback_arg;

	tcp_abort(pcb);		/* TIME_WAIT: freed, no RST */
	if (errf != NULL)
		errf(arg, ERR_CLSD);
}

static void
ts_timewait_reuse(const ip_addr_t *local, const ip_addr_t *remote,
    uint16_t lport, uint16_t rport)
{
	struct tcp_pcb *pcb;

	for (pcb = tcp_tw_pcbs; pcb != NULL; pcb = pcb->next) {
		if (pcb->local_port == lport && pcb->remote_port == rport &&
		    ip_addr_cmp(&pcb->local_ip, local) &&
		    ip_addr_cmp(&pcb->remote_ip, remote)) {
			ts_timewait_free(pcb);
			ts_stats.tw_reused++;
			return;
		}
	}
}

/*
 * At most TS_TW_MAX connections in TIME_WAIT: the oldest beyond go.  lwIP
 * keeps them in one list for 2 MSL (120 s) and walks it for every segment
 * no live pcb takes -- each new connection's SYN, twice with
 * ts_timewait_reuse -- so sequential short connections, which end in
 * TIME_WAIT whenever the target's side ends first, made every new flow
 * cost more than the one before: 0.3 ms of the client's CPU per flow
 * after 5,000 flows, 1 ms after 15,000.  Over a TUN nothing delays or
 * duplicates the old segments TIME_WAIT waits out; what it still does is
 * answer the app's FIN again should our last ACK be lost, which only a
 * full TUN queue does.  Without the pcb that FIN gets a RST, which ends
 * the app's closing socket all the same.  The newest are kept: they enter
 * at the list's head.
 */
static void
ts_timewait_trim(void)
{
	struct tcp_pcb *pcb = tcp_tw_pcbs;
	unsigned n;

	for (n = 1; pcb != NULL && n < TS_TW_MAX; n++)
		pcb = pcb->next;
	while (pcb != NULL && pcb->next != NULL)
		ts_timewait_free(pcb->next);
}

/* A TCP segment for `local` from `remote` in the IP packet pkt/len; th
 * points at its TCP header (>= 20 bytes).  Returns true when the hook
 * consumed it. */
static bool
ts_tcp_syn(const ip_addr_t *local, const ip_addr_t *remote,
    const uint8_t *th, const uint8_t *pkt, size_t len)
{
	uint16_t sport, dport;
	uint8_t flags;

	flags = th[13];
	if ((flags & (TH_SYN | TH_ACK | TH_RST)) != TH_SYN)
		return false;
	sport = be16(th);
	dport = be16(th + 2);
	ts_timewait_reuse(local, remote, dport, sport);
	/* A retransmitted SYN of a connection lwIP has is lwIP's to answer;
	 * only a new one is judged (and, refused, counted). */
	if (ts_pcb_exists(local, remote, dport, sport))
		return false;
	if (ts_ops.syn_allowed != NULL && !ts_ops.syn_allowed(ts_ops.arg))
		goto refuse;
	if (ts_ops.syn != NULL) {
		switch (ts_ops.syn(ts_ops.arg, pkt, len, local, remote, dport,
		    sport)) {
		case TSNETIF_SYN_HOLD:
			return true;
		case TSNETIF_SYN_REFUSE:
			goto refuse;
		default:
			break;
		}
	}
	if (!ts_listener_ensure(dport)) {
		log_warnx("tsnetif: cannot create a listener for port %u",
		    dport);
		return true;	/* dropped: the app's SYN will be retried */
	}
	return false;
refuse:
	/* Flow limit: refuse the SYN itself, as a full host would. */
	tcp_rst(NULL, 0, be32(th + 4) + 1, local, remote, dport, sport);
	ts_stats.syn_refused++;
	return true;
}

/* Parses pkt as an IPv4/IPv6 TCP segment: addresses, TCP header. */
static const uint8_t *
ts_parse_tcp(const uint8_t *h, size_t n, ip_addr_t *local, ip_addr_t *remote)
{
	size_t ihl;

	memset(local, 0, sizeof(*local));
	memset(remote, 0, sizeof(*remote));
	if (n >= 40 && h[0] >> 4 == 4) {
		ihl = (size_t)(h[0] & 0x0f) * 4;
		if (ihl < 20 || h[9] != IPPROTO_TCP_ || n < ihl + 20)
			return NULL;
		IP_ADDR4(local, h[16], h[17], h[18], h[19]);
		IP_ADDR4(remote, h[12], h[13], h[14], h[15]);
		return h + ihl;
	}
	if (n >= 60 && h[0] >> 4 == 6 && h[6] == IPPROTO_TCP_) {
		IP_SET_TYPE_VAL(*local, IPADDR_TYPE_V6);
		IP_SET_TYPE_VAL(*remote, IPADDR_TYPE_V6);
		memcpy(ip_2_ip6(local)->addr, h + 24, 16);
		memcpy(ip_2_ip6(remote)->addr, h + 8, 16);
		return h + 40;
	}
	return NULL;
}

int
tsnetif_reset_syn(const uint8_t *pkt, size_t len)
{
	ip_addr_t local, remote;
	const uint8_t *th;

	if ((th = ts_parse_tcp(pkt, len, &local, &remote)) == NULL ||
	    !(th[13] & TH_SYN))
		return -1;
	tcp_rst(NULL, 0, be32(th + 4) + 1, &local, &remote, be16(th + 2),
	    be16(th));
	return 0;
}

static int
ts_other(struct pbuf *p, const uint8_t *pkt, size_t len)
{
	if (ts_ops.other == NULL || !ts_ops.other(ts_ops.arg, pkt, len))
		ts_stats.rx_unsupported++;
	pbuf_free(p);
	return 1;
}

static int
ts_drop(struct pbuf *p)
{
	ts_stats.rx_malformed++;
	pbuf_free(p);
	return 1;
}

int
tsnetif_ip4_input_hook(struct pbuf *p, struct netif *inp)
{
	const uint8_t *h = p->payload;
	size_t n = p->len, ihl, tot;
	ip_addr_t local, remote;

	if (n < 20 || h[0] >> 4 != 4)
		return ts_drop(p);
	ihl = (size_t)(h[0] & 0x0f) * 4;
	tot = be16(h + 2);
	if (ihl < 20 || tot < ihl || tot > n)
		return ts_drop(p);
	if (h[16] == 0 || h[16] >= 224)		/* 0/8, multicast, class E */
		return ts_other(p, h, tot);
	if (h[9] != IPPROTO_TCP_)
		return ts_other(p, h, tot);

	memcpy(&ip_2_ip4(&inp->ip_addr)->addr, h + 16, 4);
	if ((be16(h + 6) & 0x3fff) != 0)
		return 0;	/* fragment: lwIP reassembles */
	if (tot - ihl < 20)
		return ts_drop(p);
	IP_ADDR4(&local, h[16], h[17], h[18], h[19]);
	IP_ADDR4(&remote, h[12], h[13], h[14], h[15]);
	if (ts_tcp_syn(&local, &remote, h + ihl, h, tot)) {
		pbuf_free(p);
		return 1;
	}
	return 0;
}

int
tsnetif_ip6_input_hook(struct pbuf *p, struct netif *inp)
{
	const uint8_t *h = p->payload;
	size_t n = p->len, tot;
	ip_addr_t local, remote;
	uint8_t nh;

	if (n < 40 || h[0] >> 4 != 6)
		return ts_drop(p);
	tot = 40 + (size_t)be16(h + 4);
	if (tot > n)
		return ts_drop(p);
	if (h[24] == 0xff)			/* multicast */
		return ts_other(p, h, tot);
	nh = h[6];
	if (nh == IPPROTO_FRAG6_) {
		/* lwIP reassembles TCP fragments; others go to the handler. */
		if (tot < 48 || h[40] != IPPROTO_TCP_)
			return ts_other(p, h, tot);
	} else if (nh != IPPROTO_TCP_)
		return ts_other(p, h, tot);

	memcpy(ip_2_ip6(&inp->ip6_addr[0])->addr, h + 24, 16);
	if (nh != IPPROTO_TCP_)
		return 0;
	if (tot - 40 < 20)
		return ts_drop(p);
	memset(&local, 0, sizeof(local));
	memset(&remote, 0, sizeof(remote));
	IP_SET_TYPE_VAL(local, IPADDR_TYPE_V6);
	IP_SET_TYPE_VAL(remote, IPADDR_TYPE_V6);
	memcpy(ip_2_ip6(&local)->addr, h + 24, 16);
	memcpy(ip_2_ip6(&remote)->addr, h + 8, 16);
	if (ts_tcp_syn(&local, &remote, h + 40, h, tot)) {
		pbuf_free(p);
		return 1;
	}
	return 0;
}

/*
 * lwIP 2.1 takes the MSS option from every segment (tcp_parseopt runs in
 * every state, not only on a SYN), reads an MSS of 0 as TCP_MSS, and bounds
 * it by the MTU only for a new connection's first SYN.  One later segment
 * from an app -- or from any LAN host in router mode -- could make lwIP
 * send segments larger than the TUN MTU, and fragmenting those over IPv6
 * crashes lwIP 2.1's ip6_frag (found by fuzz_tun).  So the option is
 * clamped to what the MTU allows in every segment before lwIP parses it.
 * In a segment without SYN it is blanked out (four no-ops): the MSS is
 * announced in the SYN only (RFC 9293 3.7.1), and a later segment that
 * carried one made lwIP send segments larger than the app had announced
 * (fuzz_tun, crashes/tun/mss_after_syn).  The options may be split over
 * two pbufs (opt2); checksums are not verified on input, so rewriting in
 * place is safe.
 */
int
tsnetif_tcp_inpkt_hook(struct tcp_pcb *pcb, struct tcp_hdr *hdr,
    u16_t optlen, u16_t opt1len, u8_t *opt2, struct pbuf *p)
{
	uint8_t *o1 = (uint8_t *)hdr + TCP_HLEN, *b[4];
	unsigned max, mss, i = 0, j, len;
	bool syn = (TCPH_FLAGS(hdr) & TCP_SYN) != 0;

	(void)pcb;
	(void)p;
	max = ip_current_is_v6() ? ts_mtu - 60u : ts_mtu - 40u;
	if (syn && ts_vnet)
		ts_syn_seen = true;
#define TS_OPT(k)	((k) < opt1len ? &o1[(k)] : &opt2[(k) - opt1len])
	if (opt2 == NULL && opt1len < optlen)
		optlen = opt1len;	/* not expected: stay inside what exists */
	while (i < optlen) {
		if (*TS_OPT(i) == 0)		/* end of options */
			break;
		if (*TS_OPT(i) == 1) {		/* no-op */
			i++;
			continue;
		}
		if (i + 1 >= optlen || (len = *TS_OPT(i + 1)) < 2 ||
		    i + len > optlen)
			break;			/* malformed: lwIP stops too */
		if (*TS_OPT(i) == 2 && len == 4) {
			for (j = 0; j < 4; j++)
				b[j] = TS_OPT(i + j);
			mss = (unsigned)*b[2] << 8 | *b[3];
			if (!syn) {
				for (j = 0; j < 4; j++)
					*b[j] = 1;
			} else {
				if (mss == 0 || mss > max)
					mss = max;
				if (ts_vnet) {	/* the app's for the kernel */
					ts_syn_mss = (uint16_t)mss;
					mss = TS_GSO_MSS;
				}
				*b[2] = (uint8_t)(mss >> 8);
				*b[3] = (uint8_t)mss;
			}
		}
		i += len;
	}
#undef TS_OPT
	return ERR_OK;
}

/* With offloads: the SYN just input made lwIP create a pcb (at the head
 * of the active list, in SYN_RCVD): it keeps the app's MSS. */
static void
ts_syn_adopt(void)
{
	struct tcp_pcb *pcb = tcp_active_pcbs;
	uintptr_t mss = ts_syn_mss;
	unsigned pmtu;

	ts_syn_seen = false;
	ts_syn_mss = 0;
	if (pcb == NULL || pcb->state != SYN_RCVD ||
	    tcp_ext_arg_get(pcb, ts_ext_id) != NULL)
		return;
	if (mss == 0)
		mss = IP_IS_V6_VAL(pcb->remote_ip) ? TS_MSS_DEF6 : TS_MSS_DEF4;
	tcp_ext_arg_set(pcb, ts_ext_id, (void *)mss);
	if (IP_IS_V6_VAL(pcb->remote_ip) && (pmtu = tsnetif_pmtu6(
	    (const uint8_t *)ip_2_ip6(&pcb->remote_ip)->addr)) != 0)
		ts_pmtu_clamp(pcb, pmtu);
}

/* The learnt path MTU to addr (16 bytes), 0 when none. */
unsigned
tsnetif_pmtu6(const uint8_t *addr)
{
	const struct ts_pmtu *p;
	u32_t now;

	if (ts_pmtu_n == 0)
		return 0;
	now = sys_now();
	for (p = ts_pmtu; p < ts_pmtu + TS_PMTU_N; p++)
		if (p->mtu != 0 && (s32_t)(p->until - now) > 0 &&
		    memcmp(p->addr, addr, 16) == 0)
			return p->mtu;
	return 0;
}

/*
 * Whether lwIP's MSS for pcb may shrink to mss now: only when no segment
 * it holds is larger.  tcp_write fills its last unsent segment up to the
 * MSS and takes what is left as unsigned; and after a timeout the
 * congestion window is one MSS, which a larger segment never fits, so
 * lwIP would send nothing again.
 */
static bool
ts_queue_fits(const struct tcp_pcb *pcb, unsigned mss)
{
	const struct tcp_seg *q[2] = { pcb->unsent, pcb->unacked }, *seg;
	int i;

	for (i = 0; i < 2; i++)
		for (seg = q[i]; seg != NULL; seg = seg->next)
			if (seg->len + (unsigned)LWIP_TCP_OPT_LENGTH(
			    seg->flags) > mss)
				return false;
	return true;
}

/* Without offloads: the size ts_pmtu_clamp set for pcb's segments (0:
 * none), which lwIP's MSS takes once its queue fits it. */
static unsigned
ts_mss_follow(struct tcp_pcb *pcb)
{
	unsigned mss = (unsigned)(uintptr_t)tcp_ext_arg_get(pcb, ts_ext_id);

	if (mss != 0 && mss < pcb->mss && ts_queue_fits(pcb, mss))
		pcb->mss = (u16_t)mss;
	return mss;
}

/*
 * pcb's segments shrink to fit mtu.  With offloads: the size the kernel
 * cuts at, which covers what is queued already.  Without: lwIP's MSS for
 * new segments once no segment it holds is larger (ts_queue_fits: at
 * once, or as they leave in ts_mss_follow), and until then the size each
 * larger one is cut at on its way out (ts_write_cut); kept in the ext
 * arg.
 */
static void
ts_pmtu_clamp(struct tcp_pcb *pcb, unsigned mtu)
{
	uintptr_t mss = mtu - 60, cur;

	cur = (uintptr_t)tcp_ext_arg_get(pcb, ts_ext_id);
	if (!ts_vnet) {
		if (mss >= pcb->mss)
			return;
		if (cur == 0 || mss < cur)
			tcp_ext_arg_set(pcb, ts_ext_id, (void *)mss);
		if (ts_queue_fits(pcb, (unsigned)mss))
			pcb->mss = (u16_t)mss;
		return;
	}
	if (cur != 0 && mss < cur)
		tcp_ext_arg_set(pcb, ts_ext_id, (void *)mss);
}

void
tsnetif_ptb6(const uint8_t *quote, size_t qlen, unsigned mtu)
{
	const uint8_t *dst = quote + 24;
	struct ts_pmtu *p, *slot = NULL;
	struct tcp_pcb *pcb;

	if (qlen < 40)
		return;
	if (mtu < 1280)		/* IPv6's minimum (RFC 8200 section 5) */
		mtu = 1280;
	if (ts_mtu != 0 && mtu >= ts_mtu)
		return;
	for (p = ts_pmtu; p < ts_pmtu + TS_PMTU_N && slot == NULL; p++)
		if (p->mtu != 0 && memcmp(p->addr, dst, 16) == 0)
			slot = p;
	for (p = ts_pmtu; p < ts_pmtu + TS_PMTU_N && slot == NULL; p++)
		if (p->mtu == 0)
			slot = p;
	if (slot == NULL) {	/* the one that expires first */
		slot = ts_pmtu;
		for (p = ts_pmtu; p < ts_pmtu + TS_PMTU_N; p++)
			if ((s32_t)(p->until - slot->until) < 0)
				slot = p;
	}
	if (slot->mtu == 0)
		ts_pmtu_n++;
	memcpy(slot->addr, dst, 16);
	slot->mtu = mtu;
	slot->until = sys_now() + TS_PMTU_MS;
	/* Every flow to it: a router sends few of these (Linux one a
	 * second per destination, and ours all come from the target). */
	for (pcb = tcp_active_pcbs; pcb != NULL; pcb = pcb->next)
		if (IP_IS_V6_VAL(pcb->remote_ip) &&
		    memcmp(ip_2_ip6(&pcb->remote_ip)->addr, dst, 16) == 0)
			ts_pmtu_clamp(pcb, mtu);
}

u32_t *
tsnetif_tcp_out_hook(struct pbuf *p, struct tcp_hdr *hdr,
    const struct tcp_pcb *pcb, u32_t *opts)
{
	uint8_t *o = (uint8_t *)(hdr + 1);
	unsigned mss;

	(void)p;
	ts_tx_mss = 0;
	if (pcb == NULL)
		return opts;
	if (!ts_vnet) {
		if ((TCPH_FLAGS(hdr) & TCP_SYN) &&
		    IP_IS_V6_VAL(pcb->remote_ip) && (mss = tsnetif_pmtu6(
		    (const uint8_t *)ip_2_ip6(&pcb->remote_ip)->addr)) != 0)
			ts_pmtu_clamp((struct tcp_pcb *)(uintptr_t)pcb, mss);
		if (pcb->state != LISTEN)	/* as a segment leaves */
			ts_tx_mss = (uint16_t)ts_mss_follow(
			    (struct tcp_pcb *)(uintptr_t)pcb);
		return opts;
	}
	if (TCPH_FLAGS(hdr) & TCP_SYN) {
		/* lwIP announces what the netif's 64 KiB allow; the app
		 * must hear what the TUN's MTU does. */
		if (TCPH_HDRLEN_BYTES(hdr) >= TCP_HLEN + 4 && o[0] == 2 &&
		    o[1] == 4) {
			mss = IP_IS_V6_VAL(pcb->remote_ip) ? ts_mtu - 60u :
			    ts_mtu - 40u;
			o[2] = (uint8_t)(mss >> 8);
			o[3] = (uint8_t)mss;
		}
		return opts;
	}
	if (pcb->state != LISTEN)
		ts_tx_mss = (uint16_t)(uintptr_t)tcp_ext_arg_get(pcb, ts_ext_id);
	return opts;
}

/* Hands lwIP p, which holds len bytes of packet and TS_RX_SLACK zeroes
 * after them (or fills the 16-bit size). */
static void
ts_input_pbuf(struct pbuf *p, size_t len)
{
	struct tcp_pcb *tw = tcp_tw_pcbs;

	p->len = p->tot_len = (u16_t)len;	/* one pbuf, nothing chained */
	if (ts_netif.input(p, &ts_netif) != ERR_OK)
		pbuf_free(p);
	if (tcp_tw_pcbs != tw)		/* one more in TIME_WAIT, maybe */
		ts_timewait_trim();
	if (ts_syn_seen)
		ts_syn_adopt();
}

void
tsnetif_input(const uint8_t *pkt, size_t len)
{
	struct pbuf *p;
	size_t alloc;

	ts_stats.rx_packets++;
	ts_stats.rx_bytes += len;
	if (len == 0 || len > 0xffff) {
		ts_stats.rx_malformed++;
		return;
	}
	if (ts_rxp != NULL && pkt == ts_rxp->payload && len >= TS_RXP_KEEP &&
	    len + TS_RX_SLACK <= TS_RXP_SIZE) {
		/* Read in place and nearly full: taken as it is. */
		p = ts_rxp;
		ts_rxp = NULL;
		memset((uint8_t *)p->payload + len, 0, TS_RX_SLACK);
		ts_input_pbuf(p, len);
		return;
	}
	/* Right-sized copy: lwIP may keep this pbuf queued for a while, and
	 * mem_trim cannot shrink it later.  A few zeroed bytes of slack
	 * follow the packet: lwIP 2.1's tcp_parseopt reads an option's
	 * length byte before checking that it lies inside the header, one
	 * byte past the end when the last option is cut short (found by
	 * fuzzing).  A zero there ends the parse.  A packet that fills the
	 * 16-bit size cannot end inside its TCP options, so the cap is safe. */
	alloc = len + TS_RX_SLACK > 0xffff ? 0xffff : len + TS_RX_SLACK;
	if ((p = pbuf_alloc(PBUF_RAW, (u16_t)alloc, PBUF_RAM)) == NULL) {
		ts_stats.tx_errors++;
		return;
	}
	memcpy(p->payload, pkt, len);
	memset((uint8_t *)p->payload + len, 0, alloc - len);
	ts_input_pbuf(p, len);
}

static void
ts_uso_emit(void *arg, const uint8_t *dgram, size_t len)
{
	(void)arg;
	tsnetif_input(dgram, len);
}

/* A read with offloads: vh (VNET_HDR_LEN bytes, or NULL when the read
 * was shorter) and the packet pkt/len, fixed up in place.  A UDP
 * super-packet (USO) becomes its datagrams, each input on its own. */
static void
ts_input_vnet(const uint8_t *vh, uint8_t *pkt, size_t len)
{
	struct vnet_hdr h;
	int rc = -1;

	if (vh != NULL) {
		vnet_hdr_get(&h, vh);
		if (h.gso_type == VNET_GSO_UDP_L4) {
			rc = vnet_rx_uso(&h, pkt, len, ts_uso, ts_uso_emit,
			    NULL);
			if (rc > 0) {
				ts_stats.rx_gso++;
				return;
			}
			rc = -1;
		} else
			rc = vnet_rx(&h, pkt, len);
	}
	if (rc == -1) {
		ts_stats.rx_packets++;
		ts_stats.rx_bytes += len + (vh != NULL ? VNET_HDR_LEN : 0);
		ts_stats.rx_vnet_bad++;
		return;
	}
	if (rc == 1)
		ts_stats.rx_gso++;
	tsnetif_input(pkt, len);
}

void
tsnetif_input_vnet(const uint8_t *buf, size_t len)
{
	if (len > sizeof(ts_rx)) {
		ts_stats.rx_packets++;
		ts_stats.rx_vnet_bad++;
		return;
	}
	memcpy(ts_rx, buf, len);
	if (len < VNET_HDR_LEN)
		ts_input_vnet(NULL, ts_rx, len);
	else
		ts_input_vnet(ts_rx, ts_rx + VNET_HDR_LEN, len - VNET_HDR_LEN);
}

/*
 * One read with offloads.  The packet lands in ts_rxp when there is one:
 * a TCP super-packet of a bulk upload (up to 64 KiB) then enters lwIP in
 * the pbuf it was read into instead of being copied into one of its size
 * (tsnetif_input).  What does not fit the pbuf goes on into ts_rx, and is
 * refused as too long.
 */
static ssize_t
ts_read_vnet(void)
{
	struct iovec iov[3];
	ssize_t n;
	size_t pl;

	if (ts_rxp == NULL)
		ts_rxp = pbuf_alloc(PBUF_RAW, TS_RXP_SIZE, PBUF_RAM);
	if (ts_rxp == NULL) {
		if ((n = read(ts_fd, ts_rx, sizeof(ts_rx))) >= 0)
			tsnetif_input_vnet(ts_rx, (size_t)n);
		return n;
	}
	iov[0].iov_base = ts_rx;
	iov[0].iov_len = VNET_HDR_LEN;
	iov[1].iov_base = ts_rxp->payload;
	iov[1].iov_len = TS_RXP_SIZE;
	iov[2].iov_base = ts_rx + VNET_HDR_LEN;
	iov[2].iov_len = sizeof(ts_rx) - VNET_HDR_LEN;
	if ((n = readv(ts_fd, iov, 3)) < 0)
		return n;
	if ((size_t)n < VNET_HDR_LEN) {
		ts_input_vnet(NULL, ts_rx, (size_t)n);
		return n;
	}
	pl = (size_t)n - VNET_HDR_LEN;
	if (pl > TS_RXP_SIZE) {
		ts_stats.rx_packets++;
		ts_stats.rx_bytes += pl;
		ts_stats.rx_malformed++;
		return n;
	}
	ts_input_vnet(ts_rx, ts_rxp->payload, pl);
	return n;
}

int
tsnetif_poll(unsigned max)
{
	unsigned i;
	ssize_t n;

	for (i = 0; i < max; i++) {
		if (ts_vnet)
			n = ts_read_vnet();
		else
			n = read(ts_fd, ts_rx, sizeof(ts_rx));
		if (n < 0) {
			if (errno == EINTR) {
				i--;
				continue;
			}
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			log_warn("tun read");
			return -1;
		}
		if (!ts_vnet)
			tsnetif_input(ts_rx, (size_t)n);
	}
	return (int)i;
}

int
tsnetif_output_raw(const uint8_t *pkt, size_t len)
{
	static const uint8_t vh[VNET_HDR_LEN];	/* checksums complete */
	struct iovec iov[2];
	ssize_t n;
	int cnt = 0;

	if (ts_vnet) {
		iov[cnt].iov_base = (void *)(uintptr_t)vh;
		iov[cnt++].iov_len = sizeof(vh);
	}
	iov[cnt].iov_base = (void *)(uintptr_t)pkt;
	iov[cnt++].iov_len = len;
	do
		n = writev(ts_fd, iov, cnt);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		ts_stats.tx_errors++;
		return -1;
	}
	ts_stats.tx_packets++;
	ts_stats.tx_bytes += len;
	return 0;
}

static size_t
ts_seg_size(const struct tcp_pcb *pcb)
{
	size_t mss = pcb->mss, half = pcb->snd_wnd_max / 2;

	if (half > 0 && half < mss)
		mss = half;
	return mss > 0 ? mss : 1;
}

size_t
tsnetif_tcp_room(struct tcp_pcb *pcb)
{
	size_t room = tcp_sndbuf(pcb), queued = tcp_sndqueuelen(pcb), most;

	if (!ts_vnet)
		(void)ts_mss_follow(pcb);	/* before the write */
	if (queued + TSNETIF_QUEUE_SPARE + 2 > TCP_SND_QUEUELEN)
		return 0;
	most = (TCP_SND_QUEUELEN - TSNETIF_QUEUE_SPARE - queued - 1) *
	    ts_seg_size(pcb);
	return room < most ? room : most;
}

void
tsnetif_ack_defer(struct tcp_pcb *pcb)
{
	if (pcb->flags & TF_ACK_NOW) {
		tcp_clear_flags(pcb, TF_ACK_NOW);
		tcp_set_flags(pcb, TF_ACK_DELAY);
	}
}

bool
tsnetif_ack_owed(struct tcp_pcb *pcb)
{
	return (pcb->flags & (TF_ACK_DELAY | TF_ACK_NOW)) != 0 ||
	    tcp_update_rcv_ann_wnd(pcb) > 0;
}

uint32_t
tsnetif_timers(void)
{
	sys_check_timeouts();
	return sys_timeouts_sleeptime();
}

const struct tsnetif_stats *
tsnetif_stats(void)
{
	return &ts_stats;
}

int
tsnetif_init(int fd, unsigned mtu, const struct tsnetif_ops *ops)
{
	static bool lwip_ready;
	ip4_addr_t addr, mask, gw;

	ts_fd = fd;
	ts_ops = *ops;
	/* Once per process: lwip_init() registers lwIP's cyclic timers each
	 * time it runs, so a second netif (tests, the fuzzer) would stack
	 * duplicate timers without end. */
	if (!lwip_ready) {
		lwip_init();
		ts_ext_id = tcp_ext_arg_alloc_id();
		lwip_ready = true;
	}
	ts_mtu = mtu > 0xffff ? 0xffff : mtu;
	ts_vnet = false;
	memset(ts_pmtu, 0, sizeof(ts_pmtu));
	ts_pmtu_n = 0;
	/* A placeholder address: the hooks overwrite it per packet, and
	 * ip4_route() needs it non-zero for netif_default to be used. */
	IP4_ADDR(&addr, 10, 255, 255, 254);
	IP4_ADDR(&mask, 255, 255, 255, 255);
	ip4_addr_set_zero(&gw);
	if (netif_add(&ts_netif, &addr, &mask, &gw, NULL, ts_netif_init,
	    ip_input) == NULL) {
		log_warnx("tsnetif: netif_add failed");
		return -1;
	}
	ts_netif.mtu = (u16_t)(mtu > 0xffff ? 0xffff : mtu);
	ts_netif.mtu6 = ts_netif.mtu;
	ip_addr_set_zero_ip6(&ts_netif.ip6_addr[0]);
	ts_netif.ip6_addr[0].u_addr.ip6.addr[3] = PP_HTONL(1);
	netif_ip6_addr_set_state(&ts_netif, 0, IP6_ADDR_PREFERRED);
	netif_set_default(&ts_netif);
	netif_set_link_up(&ts_netif);
	netif_set_up(&ts_netif);
	return 0;
}

void
tsnetif_shutdown(void)
{
	unsigned port;

	for (port = 0; port < 65536; port++) {
		if (ts_listeners[port] == NULL)
			continue;
		tcp_close(ts_listeners[port]);
		ts_listeners[port] = NULL;
	}
	ts_stats.listeners = 0;
	/* Whatever lwIP still holds (half-open handshakes, TIME_WAIT, pcbs
	 * finishing a graceful close) goes too. */
	while (tcp_active_pcbs != NULL)
		tcp_abort(tcp_active_pcbs);
	while (tcp_tw_pcbs != NULL)
		tcp_abort(tcp_tw_pcbs);
	if (ts_rxp != NULL)
		pbuf_free(ts_rxp);
	ts_rxp = NULL;
	netif_remove(&ts_netif);
	memset(&ts_netif, 0, sizeof(ts_netif));
	ts_fd = -1;
	ts_vnet = false;
	ts_stats.offload = 0;
}

void
tsnetif_offload(bool on)
{
	u16_t mtu = on ? 0xffff : (u16_t)ts_mtu;

	ts_vnet = on;
	ts_stats.offload = on;
	ts_netif.mtu = mtu;
	ts_netif.mtu6 = mtu;
	NETIF_SET_CHECKSUM_CTRL(&ts_netif, on ? NETIF_CHECKSUM_ENABLE_ALL &
	    ~NETIF_CHECKSUM_GEN_TCP : NETIF_CHECKSUM_ENABLE_ALL);
}
