/*
 * Fuzz target: packets from the TUN through the client's input path --
 * the tsnetif input hooks, lwIP's IPv4/IPv6 input, reassembly and TCP
 * state machines, the non-TCP handler hand-off -- with lwIP's timers
 * driven by a fake clock, and what goes back down to the app: either a
 * fake app on lwIP's API or the client's own TCP flows (flow_tcp.c).
 *
 * Input layout:
 *   byte 0        settings: bits 0-2 MTU choice (576, 1280, 1500, 9000,
 *                 65535; then 1280, 1500, 9000 with offloads: see below),
 *                 bit 3 a limit (fake app:
 *                 SYNs beyond the open pcbs refused; flows: a 256 KiB
 *                 client.max_buffer_memory), bits 4-6 how many accepted
 *                 pcbs stay open (fake app: more are aborted in the accept
 *                 callback; flows: client.max_flows is this plus one),
 *                 bit 7 flows instead of the fake app
 *   then records  [len: 2, big endian][ctl: 1][len bytes of IP packet]
 *                 A short last record is fed truncated.
 *   ctl           bits 0-3: advance the clock by n * 100 ms first (and run
 *                 due timers); bits 4-6: what the app, or with flows the
 *                 server, does after the packet (push 16 KiB or 1 MiB
 *                 down, FIN, close, abort, ...); bit 7: feed the packet as
 *                 is (see below).
 *
 * With offloads (tsnetif_offload) every record's bytes are a virtio-net
 * header (10 bytes) and then the packet, fed as one read
 * (tsnetif_input_vnet): the header may say anything, including GSO
 * super-packets and lies about them.  Every write must then carry a
 * header that fits its packet; super-packets are cut at their gso_size
 * as the kernel would and each segment checked as below (tun_pkt.h).
 *
 * The fake app writes like a client flow: as much as lwIP's send buffer
 * and send queue take at the pcb's real MSS, and on ERR_MEM it waits for
 * the app's acks (the sent callback) -- never a reason to end the
 * connection.  With flows (bit 7), each accepted connection is a real
 * flow (flow_tcp.c, protocol tunsplit) whose outer stream the warm pool
 * hands out: pool_take() below returns one end of a socketpair, and the
 * harness plays the server on the other (connect status OK, then what the
 * input asks for; it reads everything the flow sends).  No network.
 *
 * Acknowledgement numbers of TCP segments are taken relative to the ISN
 * lwIP chose for that connection (seen in its SYN-ACK), because lwIP's ISN
 * depends on its uptime: without this no input could ever complete a
 * handshake reproducibly.  Non-TCP packets go where tsnetif hands them, to
 * the client's UDP and ICMP input (flow_udp_input), with their checksums
 * corrected first (same bit 7).  See tun_pkt.c.
 *
 * Oracles: ASan/UBSan; every packet written to the TUN is checked by
 * tun_pkt_out (well-formed, within the MTU, checksums right, TCP segments
 * within the MSS the app announced, payload the bytes the app or server
 * sent, at their offset); the fake app's tcp_write fails only with
 * ERR_MEM, and then with something queued (or no sent callback would
 * come); lwIP's send queue holds a full send buffer at any MSS from 536
 * up; no flow fails unless the input closed its server side (no flow is
 * reset for lwIP's backpressure); after the flows are gone no buffer
 * memory is charged; after tsnetif_shutdown no pcb is left; the non-TCP
 * handler only ever sees bytes inside the packet.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "lwip/sys.h"
#include "lwip/tcp.h"
#include "lwip/priv/tcp_priv.h"

#include "core/addr.h"
#include "client/dgram/assoc.h"
#include "wire/auth.h"
#include "conf/conf.h"
#include "client/tcp/flow_tcp.h"
#include "client/dgram/flow_udp.h"
#include "core/log.h"
#include "core/loop.h"
#include "tls/outer.h"
#include "wire/pkt.h"
#include "client/outbound.h"
#include "client/pool.h"
#include "stack/tsnetif.h"
#include "stack/vnet.h"
#include "tun_pkt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_MAX_PCBS	16
#define FZ_MAX_SRV	64
#define FZ_OUT_MAX	70000
#define FZ_CHUNK	16384		/* one write, as a flow's (FLOW_STAGE) */
#define FZ_PUSH_SMALL	(16 * 1024)
#define FZ_PUSH_BIG	(1024 * 1024)
#define FZ_MSS_MIN	536		/* the smallest MSS a host must take */
#define FZ_RUN_MAX	64		/* loop passes after each packet */
#define FZ_MEM_LIMIT	(256 * 1024)

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

/* An accepted pcb and which FINs it has seen.  Once both have, the app
 * holds it until action 6 or the next clock advance, as a flow holds its
 * pcb until its next pass -- while more packets come in, such as a new SYN
 * on the same ports that ends the TIME_WAIT (tsnetif then reports the
 * free through the error callback).  Never across an advance: lwIP's
 * timers free a pcb in TIME_WAIT after 2 MSL without any callback. */
struct fz_conn {
	struct tcp_pcb	*pcb;
	uint64_t	 sent, want;	/* pattern bytes written, asked for */
	bool		 rx_fin, tx_fin;
	bool		 blocked;	/* ERR_MEM: waits for the sent callback */
	bool		 sized;		/* the send queue was checked */
};

/* The server end of a flow's outer stream. */
struct fz_srv {
	int		 fd;		/* -1: free */
	uint64_t	 sent, want;	/* pattern bytes after the status */
	bool		 shut, shut_at_end;
};

static int		 fz_sock[2] = { -1, -1 };	/* the TUN */
static struct fz_conn	 fz_conns[FZ_MAX_PCBS];
static unsigned		 fz_keep;		/* pcbs kept open */
static bool		 fz_limit;		/* refuse SYNs beyond fz_keep */
static bool		 fz_flows;		/* flows instead of the fake app */
static bool		 fz_offload;		/* virtio-net headers */
static struct flow_udp	*fz_udp;
static struct assoc_cfg	 fz_ac;
static struct conf	*fz_conf;
static struct addr	 fz_server;
static uint8_t		 fz_uid[PROTO_USER_ID_LEN];
static struct outbounds	*fz_obs;
static struct loop	*fz_floop;		/* the flows' own; runs */
static struct flow_env	 fz_env;
static struct fz_srv	 fz_srvs[FZ_MAX_SRV];
static unsigned		 fz_srv_closed;		/* closes the input asked for */
static uint8_t		 fz_pkt[65536];
static uint8_t		 fz_out[FZ_OUT_MAX];
static uint8_t		 fz_buf[FZ_CHUNK];
static volatile uint32_t fz_sink;

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
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

static err_t
fz_on_sent(void *arg, struct tcp_pcb *pcb, u16_t len)
{
	struct fz_conn *c = arg;

	(void)pcb;
	(void)len;
	c->blocked = false;
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
	memset(c, 0, sizeof(*c));
	c->pcb = pcb;
	tcp_arg(pcb, c);
	tcp_recv(pcb, fz_on_recv);
	tcp_sent(pcb, fz_on_sent);
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
 * lwIP's send queue is sized for the smallest MSS, not the largest: at
 * any MSS from 536 up a full send buffer fits it in whole segments.
 * Sized from TCP_MSS (64 KiB) it held 81 segments, and an app announcing
 * 1460 could use 118 KiB of the 256 KiB buffer before tcp_write failed.
 */
static void
fz_queue_check(struct fz_conn *c)
{
	size_t mss = c->pcb->mss, need;

	if (c->sized || mss < FZ_MSS_MIN)
		return;
	c->sized = true;
	need = (TCP_SND_BUF + mss - 1) / mss;
	if (need > TCP_SND_QUEUELEN)
		tun_fail("send queue of %d segments: a full send buffer "
		    "(%d bytes) at MSS %zu needs %zu", (int)TCP_SND_QUEUELEN,
		    (int)TCP_SND_BUF, mss, need);
}

/* Writes what the app still wants to send, as far as lwIP takes it. */
static void
fz_push(struct fz_conn *c)
{
	struct tcp_pcb *pcb = c->pcb;
	size_t n;
	err_t err;

	if (pcb == NULL || c->tx_fin ||
	    (pcb->state != ESTABLISHED && pcb->state != CLOSE_WAIT))
		return;
	fz_queue_check(c);
	while (!c->blocked && c->sent < c->want) {
		if ((n = tsnetif_tcp_room(pcb)) == 0)
			break;
		if (n > sizeof(fz_buf))
			n = sizeof(fz_buf);
		if (n > c->want - c->sent)
			n = (size_t)(c->want - c->sent);
		tun_pattern_fill(fz_buf, n, c->sent);
		err = tcp_write(pcb, fz_buf, (u16_t)n, TCP_WRITE_FLAG_COPY);
		if (err == ERR_OK) {
			c->sent += n;
			continue;
		}
		if (err != ERR_MEM)
			tun_fail("tcp_write of %zu bytes: error %d in state %d",
			    n, (int)err, (int)pcb->state);
		if (pcb->unsent == NULL && pcb->unacked == NULL)
			tun_fail("tcp_write of %zu bytes: ERR_MEM with nothing "
			    "queued (no sent callback will come)", n);
		c->blocked = true;
	}
	(void)tcp_output(pcb);
}

static void
fz_app(unsigned action)
{
	struct fz_conn *c;
	struct tcp_pcb *pcb;
	unsigned i;

	for (i = 0; i < FZ_MAX_PCBS; i++) {
		c = &fz_conns[i];
		if ((pcb = c->pcb) == NULL)
			continue;
		switch ((action + i) & 7) {
		case 1:
			c->want += FZ_PUSH_SMALL;
			break;
		case 2:
			c->want += FZ_PUSH_BIG;
			break;
		case 3:
			c->want = c->sent;
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

/*
 * The client's own non-TCP path: flow_udp_input parses (bounds, checksums,
 * IPv6 extension headers), reassembles, pins DNS and hands UDP to its
 * association and echo requests to flow_icmp, exactly as client.c wires
 * it.  Associations dial a closed loopback port and their loop never
 * runs, so their datagrams only queue (bounded), and nothing leaves the
 * host.  The handler may read exactly len bytes: ASan catches any lie
 * from tsnetif.
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

/* ---- flows: the pool hands out socketpairs ----------------------------- */

/*
 * These take the place of src/client/pool.c (as sys_now above does of
 * sys_arch.c's), so that flow_new() finds a "warm" outer stream whose
 * other end the harness holds.  fz_env.server stays unset: a flow that got
 * none could not dial anything either (no address family).
 */
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

const struct pool_stats *
pool_stats(const struct pool *p)
{
	static const struct pool_stats none;

	(void)p;
	return &none;
}

int
pool_give(struct pool *p, struct outer *out)
{
	(void)p;
	(void)out;
	return -1;
}

struct outer *
pool_take(struct pool *p)
{
	struct fz_srv *s = NULL;
	struct outer *o;
	uint8_t ok = PROTO_OK;
	unsigned i;
	int sv[2];

	(void)p;
	if (!fz_flows)
		return NULL;
	for (i = 0; i < FZ_MAX_SRV && s == NULL; i++)
		if (fz_srvs[i].fd == -1)
			s = &fz_srvs[i];
	if (s == NULL)
		return NULL;		/* the flow is refused */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
	    sv) < 0)
		tun_fail("socketpair: %s", strerror(errno));
	if ((o = outer_new(NULL, sv[0], true, NULL)) == NULL)
		tun_fail("outer_new failed");
	memset(s, 0, sizeof(*s));
	s->fd = sv[1];
	if (send(s->fd, &ok, 1, MSG_NOSIGNAL) != 1)
		tun_fail("status byte: %s", strerror(errno));
	return o;
}

/* Moves the server's bytes; true when anything moved. */
static bool
fz_srv_pump(struct fz_srv *s)
{
	struct pollfd pfd;
	bool moved = false;
	ssize_t r;
	size_t n;

	while (recv(s->fd, fz_buf, sizeof(fz_buf), MSG_DONTWAIT) > 0)
		moved = true;
	while (!s->shut && s->sent < s->want) {
		n = s->want - s->sent < sizeof(fz_buf) ?
		    (size_t)(s->want - s->sent) : sizeof(fz_buf);
		tun_pattern_fill(fz_buf, n, s->sent);
		if ((r = send(s->fd, fz_buf, n, MSG_DONTWAIT |
		    MSG_NOSIGNAL)) <= 0)
			break;
		s->sent += (size_t)r;
		moved = true;
	}
	if (!s->shut && s->shut_at_end && s->sent == s->want) {
		(void)shutdown(s->fd, SHUT_WR);
		s->shut = moved = true;
	}
	/* Both ways closed: the flow is done with it. */
	pfd.fd = s->fd;
	pfd.events = 0;
	if (poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLHUP) != 0) {
		close(s->fd);
		s->fd = -1;
	}
	return moved;
}

static void
fz_serve(unsigned action)
{
	struct fz_srv *s;
	unsigned i;

	for (i = 0; i < FZ_MAX_SRV; i++) {
		s = &fz_srvs[i];
		if (s->fd == -1)
			continue;
		switch ((action + i) & 7) {
		case 1:
			s->want += FZ_PUSH_SMALL;
			break;
		case 2:
			s->want += FZ_PUSH_BIG;
			break;
		case 3:
			s->want = s->sent;
			s->shut_at_end = true;
			break;
		case 4:
			s->want += FZ_PUSH_SMALL * 4;
			s->shut_at_end = true;
			break;
		case 5:
			/* The server goes away: the flow may fail on it. */
			close(s->fd);
			s->fd = -1;
			fz_srv_closed++;
			break;
		default:
			break;
		}
	}
}

/* No flow failed but for the server closes the input asked for. */
static void
fz_flows_check(void)
{
	const struct stats_reasons *r = &fz_env.stats.failures;
	size_t i;

	if (fz_env.stats.failed <= fz_srv_closed)
		return;
	for (i = 0; i < r->nv; i++)
		fprintf(stderr, "fuzz_tun: flow failure \"%s\": %llu\n",
		    r->v[i].reason, (unsigned long long)r->v[i].n);
	tun_fail("%llu flows failed, the input closed %u servers",
	    (unsigned long long)fz_env.stats.failed, fz_srv_closed);
}

/* ---- the TUN side --------------------------------------------------------- */

/* Reads everything written to the TUN; check: each packet must pass
 * tun_pkt_out.  Returns the number of packets. */
static unsigned
fz_drain(bool check)
{
	unsigned npkt = 0;
	ssize_t n;

	while ((n = recv(fz_sock[1], fz_out, sizeof(fz_out), MSG_DONTWAIT)) > 0) {
		npkt++;
		if (check && fz_offload)
			tun_pkt_out_vnet(fz_out, (size_t)n);
		else if (check)
			tun_pkt_out(fz_out, (size_t)n);
	}
	if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
		abort();
	return npkt;
}

/* After each packet and clock advance: the app writes what it may, or the
 * flows and their servers run until nothing moves. */
static void
fz_run(void)
{
	unsigned i, j;
	bool moved;

	if (!fz_flows) {
		fz_drain(true);
		for (i = 0; i < FZ_MAX_PCBS; i++)
			fz_push(&fz_conns[i]);
		fz_drain(true);
		return;
	}
	for (i = 0; i < FZ_RUN_MAX; i++) {
		moved = false;
		for (j = 0; j < FZ_MAX_SRV; j++)
			if (fz_srvs[j].fd != -1 && fz_srv_pump(&fz_srvs[j]))
				moved = true;
		if (loop_run_once(fz_floop, 0) < 0)
			tun_fail("loop_run_once failed");
		if (fz_drain(true) > 0)
			moved = true;
		fz_flows_check();
		if (!moved)
			break;
	}
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
	fz_run();
}

/* What the fake app splits off from flows: IP fragments of TCP go to
 * lwIP's reassembly. */
static bool
fz_is_tcp_fragment(const uint8_t *p, size_t n)
{
	if (n >= 20 && p[0] >> 4 == 4)
		return p[9] == 6 && (get16(p + 6) & 0x3fff) != 0;
	return n >= 41 && p[0] >> 4 == 6 && p[6] == 44;
}

/* What flow_udp and the flows need from the client: a configuration (DNS
 * pinned, few associations), loops, a TLS context, the server: a closed
 * port on loopback for UDP associations (their loop never runs). */
static const char fz_yaml[] =
    "tun: {name: fz0, mtu: 1500}\n"
    "client:\n"
    "  server: \"127.0.0.1:9\"\n"
    "  key: UR8GBfXkCWILEa357of526YctXNYj5edwp3e59D7Z7I=\n"
    "  insecure: true\n"
    /* The pool's streams are plain socketpairs: no TLS exporter to
     * bind a version 2 header to, and the harness's server ignores
     * the header anyway. */
    "  header_version: 1\n"
    "  max_udp: 8\n"
    "  dns: 10.77.2.53\n";

static int
fz_setup(void)
{
	static const uint8_t lo[4] = { 127, 0, 0, 1 };
	char err[256];
	unsigned i;
	int sz = 1 << 22;

	log_init(LOG_LVL_ERROR, false, "fuzz_tun");
	if ((fz_conf = conf_load_buf("fuzz_tun", fz_yaml, sizeof(fz_yaml) - 1,
	    err, sizeof(err))) == NULL)
		return -1;
	addr_from_raw(&fz_server, AF_INET, lo, 9);
	auth_user_id(conf_final(fz_conf)->key, fz_uid);
	/* Its outbounds: no pool (pool_new above), the server numeric. */
	if ((fz_obs = outbounds_new(NULL, fz_conf, NULL)) == NULL)
		return -1;
	fz_ac.conf = fz_conf;
	fz_ac.obs = fz_obs;
	if ((fz_ac.loop = loop_new()) == NULL ||
	    (fz_floop = loop_new()) == NULL)
		return -1;
	fz_env.loop = fz_floop;
	fz_env.conf = fz_conf;
	fz_env.obs = fz_obs;
	if (flow_env_init(&fz_env) < 0)
		return -1;
	for (i = 0; i < FZ_MAX_SRV; i++)
		fz_srvs[i].fd = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0, fz_sock) < 0)
		return -1;
	/* Room for a full window of 64 KiB segments between drains. */
	(void)setsockopt(fz_sock[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	(void)setsockopt(fz_sock[1], SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	return 0;
}

/* Ends this input's flows and servers; checks the budget came back. */
static void
fz_flows_end(void)
{
	unsigned i;

	flow_close_all(&fz_env);
	for (i = 0; i < FZ_MAX_SRV; i++)
		if (fz_srvs[i].fd != -1) {
			close(fz_srvs[i].fd);
			fz_srvs[i].fd = -1;
		}
	if (fz_env.nflows != 0 || fz_env.mem.used != 0)
		tun_fail("after the flows: %u flows, %zu bytes of buffer "
		    "memory charged", fz_env.nflows, fz_env.mem.used);
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
	size_t len, hl;
	unsigned i, mtu;
	uint8_t ctl;
	bool frags = false;

	if (size < 1)
		return 0;
	if (fz_sock[0] == -1 && fz_setup() < 0)
		abort();
	mtu = mtus[data[0] & 7];
	fz_offload = (data[0] & 7) >= 5;
	fz_keep = (unsigned)(data[0] >> 4) & 7;
	fz_limit = (data[0] & 0x08) != 0;
	fz_flows = (data[0] & 0x80) != 0;
	if (fz_flows) {
		ops.accept = flow_tcp_accept;
		ops.syn_allowed = flow_tcp_syn_allowed;
		ops.arg = &fz_env;
		fz_conf->client.max_flows = fz_keep + 1;
		fz_conf->client.max_buffer_memory = fz_limit ? FZ_MEM_LIMIT :
		    (size_t)64 << 20;
		memset(&fz_env.stats, 0, sizeof(fz_env.stats));
		fz_srv_closed = 0;
	}
	tun_pkt_reset(mtu);
	if (tsnetif_init(fz_sock[0], mtu, &ops) < 0)
		abort();
	tsnetif_offload(fz_offload);
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
		hl = fz_offload && len >= VNET_HDR_LEN ? VNET_HDR_LEN : 0;
		if (fz_is_tcp_fragment(fz_pkt + hl, len - hl))
			frags = true;
		if (!fz_offload) {
			tun_pkt_in(fz_pkt, len, (ctl & 0x80) != 0);
			tsnetif_input(fz_pkt, len);
		} else {
			if (len >= VNET_HDR_LEN)
				tun_pkt_in(fz_pkt + VNET_HDR_LEN,
				    len - VNET_HDR_LEN, (ctl & 0x80) != 0);
			tsnetif_input_vnet(fz_pkt, len);
		}
		data += len;
		size -= len;
		fz_drain(true);
		if (fz_flows)
			fz_serve((ctl >> 4) & 7);
		else
			fz_app((ctl >> 4) & 7);
		fz_run();
	}

	/* Teardown as the client does it: the app's pcbs first, then the
	 * netif (listeners, half-open and closing pcbs). */
	if (fz_flows)
		fz_flows_end();
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
	/* The teardown's RSTs: not for the next input's checks. */
	fz_drain(false);
	if (getenv("FUZZ_TUN_VERBOSE") != NULL) {
		uint64_t bytes, furthest;

		tun_pkt_counts(&bytes, &furthest);
		fprintf(stderr, "fuzz_tun: MTU %u, %s: %llu TCP payload bytes "
		    "down, furthest offset %llu\n", mtu,
		    fz_flows ? "flows" : "fake app", (unsigned long long)bytes,
		    (unsigned long long)furthest);
	}
	flow_udp_free(fz_udp);
	fz_udp = NULL;
	return 0;
}
