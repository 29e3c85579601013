/*
 * Server side of UDP and ICMP echo associations (see sess_dgram.h).
 *
 * Toward targets every frame is one datagram, the frames of one read sent
 * with one sendmmsg(); the kernel's socket buffer is the only queue, and a
 * datagram it will not take is dropped.  Toward
 * the client, datagrams are framed straight into the outgoing buffer (UDP:
 * received in place behind room left for the frame header) and written in
 * as few TLS records as they fit.  Datagrams to domain names are looked up
 * and held in sess_dgram_name.c (sess_dgram_int.h is what both share).
 */
#include "config.h"

#include "server/dgram/sess_dgram.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <netinet/in.h>
#include <netinet/icmp6.h>
#include <arpa/inet.h>
#include <stdio.h>

#include <sodium.h>

#include "core/addr.h"
#include "core/buf.h"
#include "conf/conf.h"
#include "wire/frame.h"
#include "core/log.h"
#include "core/loop.h"
#include "tls/outer.h"
#include "wire/pkt.h"
#include "wire/proto.h"
#include "wire/proto_trojan.h"
#include "server/resolve.h"
#include "server/egress.h"
#include "server/dgram/sess_dgram_int.h"
#include "core/stats.h"

#define SD_TX_CAP	(192 * 1024)	/* toward the client */
/* From the client: one frame or trojan packet, the longer. */
#define SD_RX_CAP	(FRAME_MAX > PROTO_TROJAN_UDP_MAX ? FRAME_MAX : \
			    PROTO_TROJAN_UDP_MAX)
#define SD_ICMP_MAX	(60 + 65535)	/* IPv4 header (raw) + message */

/* Linux raw ICMP socket filter (linux/icmp.h, which cannot be included
 * together with net/if.h): a bit set per ICMP type blocks that type. */
#define SD_ICMP_FILTER	1
struct sd_icmp_filter {
	uint32_t	 data;
};

/* ICMP messages are built and received here: the loop is single threaded
 * and nothing keeps a pointer into it across calls. */
static _Thread_local uint8_t sd_icmp_buf[SD_ICMP_MAX];	/* per worker */

static void sd_update(struct sess_dgram *);

const char *
sd_kind(const struct sess_dgram *d)
{
	return d->cfg.kind == PROTO_KIND_ICMP ? "icmp" : "udp";
}

/* An address for the log: ICMP has no ports. */
static const char *
sd_addr(const struct sess_dgram *d, const struct addr *a, char *buf,
    size_t len)
{
	size_t	alen;

	if (d->cfg.kind != PROTO_KIND_ICMP)
		return addr_fmt(a, buf, len);
	if (inet_ntop(addr_family(a), addr_ip(a, &alen), buf,
	    (socklen_t)len) == NULL)
		snprintf(buf, len, "?");
	return buf;
}

/* Reports the end once; the caller returns at once (the session closes
 * and stops us from inside). */
static void
sd_end(struct sess_dgram *d, const char *reason, int err)
{
	if (d->ended)
		return;
	d->ended = true;
	d->cfg.end(d->cfg.arg, reason, err);
}

/* ---- sockets ----------------------------------------------------------- */

static int
sd_icmp_socket(struct sd_sock *s)
{
	int	proto = s->family == AF_INET ? IPPROTO_ICMP : IPPROTO_ICMPV6;
	int	fd;

	fd = socket(s->family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    proto);
	if (fd >= 0)
		return fd;
	/* ping_group_range excludes us: a raw socket, if we may. */
	fd = socket(s->family, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, proto);
	if (fd < 0)
		return -1;
	s->raw = true;
	/* Only echo replies, not every ICMP message the host receives. */
	if (s->family == AF_INET) {
		struct sd_icmp_filter	f = { ~(1u << 0) };	/* echo reply */

		(void)setsockopt(fd, SOL_RAW, SD_ICMP_FILTER, &f, sizeof(f));
	} else {
		struct icmp6_filter	f;

		ICMP6_FILTER_SETBLOCKALL(&f);
		ICMP6_FILTER_SETPASS(ICMP6_ECHO_REPLY, &f);
		(void)setsockopt(fd, IPPROTO_ICMPV6, ICMP6_FILTER, &f,
		    sizeof(f));
	}
	return fd;
}

static void sd_on_sock(struct loop_fd *, uint32_t);

static struct sd_sock *
sd_sock_get(struct sess_dgram *d, int family)
{
	const struct conf	*c = d->cfg.conf;
	struct sd_sock		*s = &d->sock[family == AF_INET ? 0 : 1];
	int			 one = 1;

	if (s->fd >= 0)
		return s;
	s->d = d;
	s->family = family;
	if (d->cfg.kind == PROTO_KIND_ICMP)
		s->fd = sd_icmp_socket(s);
	else
		s->fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, 0);
	if (s->fd < 0) {
		log_warn("sess %llu: %s socket", d->cfg.id, sd_kind(d));
		return NULL;
	}
	if (family == AF_INET6)
		(void)setsockopt(s->fd, IPPROTO_IPV6, IPV6_V6ONLY, &one,
		    sizeof(one));
	if (c->server.mark != 0)
		(void)setsockopt(s->fd, SOL_SOCKET, SO_MARK, &c->server.mark,
		    sizeof(c->server.mark));
	if (loop_fd_add(d->cfg.loop, &s->lfd, s->fd, EPOLLIN, sd_on_sock) < 0) {
		log_warn("sess %llu: epoll", d->cfg.id);
		close(s->fd);
		s->fd = -1;
		return NULL;
	}
	s->events = EPOLLIN;
	log_debug("sess %llu: %s socket for IPv%d%s", d->cfg.id, sd_kind(d),
	    family == AF_INET ? 4 : 6, s->raw ? " (raw)" : "");
	return s;
}

/* ---- toward targets ---------------------------------------------------- */

static void
sd_echo_sent(struct sess_dgram *d, uint16_t seq)
{
	unsigned	i = seq % SD_ECHO_RING;

	d->echo[i].used = true;
	d->echo[i].seq = seq;
	d->echo[i].us = stats_now_us();
}

static ssize_t
sd_send_icmp(struct sess_dgram *d, struct sd_sock *s, const struct addr *to,
    uint16_t seq, const uint8_t *data, size_t len)
{
	uint8_t		*m = sd_icmp_buf;
	uint16_t	 sum;

	if (len > sizeof(sd_icmp_buf) - PKT_ECHO_HDR)
		return -1;
	m[0] = s->family == AF_INET ? 8 : 128;	/* echo request */
	m[1] = 0;
	m[2] = m[3] = 0;
	/* Ping sockets put their own identifier in; raw ones need ours. */
	m[4] = (uint8_t)(d->echo_id >> 8);
	m[5] = (uint8_t)d->echo_id;
	m[6] = (uint8_t)(seq >> 8);
	m[7] = (uint8_t)seq;
	if (len > 0)
		memcpy(m + PKT_ECHO_HDR, data, len);
	/* ICMPv6 checksums are the kernel's (pseudo header). */
	if (s->family == AF_INET) {
		sum = pkt_csum_fold(pkt_csum_add(0, m, PKT_ECHO_HDR + len));
		memcpy(m + 2, &sum, 2);
	}
	sd_echo_sent(d, seq);
	return sendto(s->fd, m, PKT_ECHO_HDR + len, 0, &to->u.sa, to->len);
}

void
sd_nomem(struct sess_dgram *d)
{
	d->st.dropped++;
	d->st.nomem++;
	if (d->nomem_logged)
		return;
	d->nomem_logged = true;
	log_info("sess %llu: %s datagram dropped: max_buffer_memory (further "
	    "ones only counted)", d->cfg.id, sd_kind(d));
}

void
sd_denied(struct sess_dgram *d, const struct addr *to)
{
	char	buf[ADDR_STRLEN];

	d->st.denied++;
	if (d->denied_logged)
		return;
	d->denied_logged = true;
	log_info("sess %llu: %s to %s denied by the egress policy (further "
	    "denials only counted)", d->cfg.id, sd_kind(d),
	    sd_addr(d, to, buf, sizeof(buf)));
}

void
sd_batch_send(struct sess_dgram *d, struct sd_batch *b)
{
	unsigned	i = 0;
	int		n;

	while (i < b->n) {
		n = sendmmsg(b->s->fd, b->msg + i, b->n - i, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK ||
			    errno == ENOBUFS) {
				d->st.dropped += b->n - i;	/* full: all */
				break;
			}
			d->st.dropped++;	/* this one: the next may go */
			i++;
			continue;
		}
		for (; n > 0; n--, i++) {
			d->st.dgrams_up++;
			d->st.bytes_up += b->iov[i].iov_len;
		}
	}
	b->n = 0;
	d->last_io_ms = loop_now(d->cfg.loop);
}

static void
sd_batch_add(struct sess_dgram *d, struct sd_batch *b, struct sd_sock *s,
    const struct addr *to, const uint8_t *data, size_t len)
{
	unsigned	i;

	if (b->n > 0 && (b->s != s || b->n == SD_BATCH))
		sd_batch_send(d, b);
	i = b->n++;
	b->s = s;
	b->to[i] = *to;
	b->iov[i].iov_base = (void *)(uintptr_t)data;
	b->iov[i].iov_len = len;
	memset(&b->msg[i], 0, sizeof(b->msg[i]));
	b->msg[i].msg_hdr.msg_name = &b->to[i].u.sa;
	b->msg[i].msg_hdr.msg_namelen = b->to[i].len;
	b->msg[i].msg_hdr.msg_iov = &b->iov[i];
	b->msg[i].msg_hdr.msg_iovlen = 1;
}

/* To an address: the egress policy, then the socket of its family.  port
 * is the UDP port or the ICMP echo sequence number. */
void
sd_send_to(struct sess_dgram *d, struct sd_batch *b, struct addr *to,
    uint16_t port, const uint8_t *data, size_t len)
{
	struct sd_sock	*s;
	ssize_t		 n;

	/* ICMP has no ports (the frame's is the sequence number). */
	if (d->cfg.kind == PROTO_KIND_ICMP && addr_family(to) == AF_INET)
		to->u.sin.sin_port = 0;
	else if (d->cfg.kind == PROTO_KIND_ICMP)
		to->u.sin6.sin6_port = 0;
	if (!egress_allowed_user(d->cfg.conf, d->cfg.egress, to)) {
		sd_denied(d, to);
		return;
	}
	if ((s = sd_sock_get(d, addr_family(to))) == NULL) {
		d->st.dropped++;
		return;
	}
	if (d->cfg.kind != PROTO_KIND_ICMP) {
		sd_batch_add(d, b, s, to, data, len);
		return;
	}
	n = sd_send_icmp(d, s, to, port, data, len);
	if (n < 0) {
		d->st.dropped++;
		return;
	}
	d->st.dgrams_up++;
	d->st.bytes_up += len;
	d->last_io_ms = loop_now(d->cfg.loop);
}

static void
sd_send(struct sess_dgram *d, struct sd_batch *b,
    const struct proto_dest *dst, const uint8_t *data, size_t len)
{
	struct addr	 to;

	if (dst->atyp == PROTO_ATYP_DOMAIN) {
		sd_send_name(d, b, dst, data, len);
		return;
	}
	if (frame_dest_to_addr(dst, &to) < 0) {
		d->st.dropped++;
		return;
	}
	sd_send_to(d, b, &to, dst->port, data, len);
}

/* ---- toward the client ------------------------------------------------- */

/* Frame (or trojan packet) header length for a source of this family. */
static size_t
sd_hdr_len(const struct sess_dgram *d, int family)
{
	size_t	min = d->cfg.trojan ? PROTO_TROJAN_UDP_HDR_MIN : FRAME_HDR_MIN;

	return family == AF_INET ? min : min + 12;
}

static bool
sd_room(struct sess_dgram *d)
{
	return buf_room(&d->tx) >= sd_hdr_len(d, AF_INET6) + FRAME_PAYLOAD_MAX;
}

static void
sd_queued(struct sess_dgram *d, size_t len)
{
	d->st.dgrams_down++;
	d->st.bytes_down += len;
	d->last_io_ms = loop_now(d->cfg.loop);
}

/* One UDP datagram, received straight into the buffer toward the client,
 * behind the room its frame header needs.  0: got one, -1: no more. */
static int
sd_recv_udp(struct sess_dgram *d, struct sd_sock *s)
{
	struct proto_dest	 src;
	struct addr		 from;
	socklen_t		 fl = sizeof(from.u.ss);
	size_t			 hl = sd_hdr_len(d, s->family), room;
	uint8_t			*tail;
	ssize_t			 n;

	if ((tail = buf_tail(&d->tx, &room)) == NULL && d->tx.denied) {
		/* No memory for the buffer: the datagram is dropped, as a
		 * full socket buffer would drop it. */
		if (recv(s->fd, sd_icmp_buf, sizeof(sd_icmp_buf), 0) < 0)
			return -1;
		sd_nomem(d);
		return 0;
	}
	if (tail == NULL || room < hl)
		return -1;
	/* Without MSG_TRUNC a longer datagram would be cut silently. */
	n = recvfrom(s->fd, tail + hl, room - hl, MSG_TRUNC, &from.u.sa, &fl);
	if (n < 0)
		return -1;
	if ((size_t)n > room - hl || (size_t)n > FRAME_PAYLOAD_MAX) {
		d->st.dropped++;
		return 0;
	}
	from.len = fl;
	frame_dest_from_addr(&src, &from);
	if (d->cfg.trojan)
		(void)proto_trojan_udp_encode_hdr(tail, hl, &src, (size_t)n);
	else
		(void)frame_encode_hdr(tail, hl, &src, (size_t)n);
	buf_commit(&d->tx, hl + (size_t)n);
	sd_queued(d, (size_t)n);
	return 0;
}

static void
sd_echo_rtt(struct sess_dgram *d, const struct addr *from, uint16_t seq)
{
	unsigned	i = seq % SD_ECHO_RING;
	char		buf[ADDR_STRLEN];
	uint64_t	us;

	if (!d->echo[i].used || d->echo[i].seq != seq)
		return;
	d->echo[i].used = false;
	us = stats_now_us() - d->echo[i].us;
	log_debug("sess %llu: echo reply from %s seq %u: rtt %llu.%03llu ms",
	    d->cfg.id, sd_addr(d, from, buf, sizeof(buf)), seq,
	    (unsigned long long)(us / 1000), (unsigned long long)(us % 1000));
}

/* One ICMP message.  0: handled (or ignored), -1: no more. */
static int
sd_recv_icmp(struct sess_dgram *d, struct sd_sock *s)
{
	struct proto_dest	 src;
	struct addr		 from;
	socklen_t		 fl = sizeof(from.u.ss);
	const uint8_t		*m = sd_icmp_buf;
	size_t			 len, ihl;
	ssize_t			 n;
	uint16_t		 seq;
	uint8_t			 hdr[FRAME_HDR_MAX];
	ssize_t			 hl;

	n = recvfrom(s->fd, sd_icmp_buf, sizeof(sd_icmp_buf), 0, &from.u.sa,
	    &fl);
	if (n < 0)
		return -1;
	from.len = fl;
	len = (size_t)n;
	if (s->raw && s->family == AF_INET) {
		/* Raw IPv4 sockets include the IP header. */
		ihl = len > 0 ? (size_t)(m[0] & 0x0f) * 4 : 0;
		if (ihl < 20 || ihl > len)
			return 0;
		m += ihl;
		len -= ihl;
	}
	if (len < PKT_ECHO_HDR ||
	    m[0] != (s->family == AF_INET ? 0 : 129) || m[1] != 0)
		return 0;
	if (s->raw && (uint16_t)(m[4] << 8 | m[5]) != d->echo_id)
		return 0;	/* someone else's ping */
	seq = (uint16_t)(m[6] << 8 | m[7]);
	sd_echo_rtt(d, &from, seq);
	frame_dest_from_addr(&src, &from);
	src.port = seq;
	len -= PKT_ECHO_HDR;
	hl = frame_encode_hdr(hdr, sizeof(hdr), &src, len);
	if (hl < 0 || buf_room(&d->tx) < (size_t)hl + len) {
		d->st.dropped++;
		return 0;
	}
	/* The buffer is empty or has room for it all: only the budget may
	 * refuse the first append. */
	if (buf_append(&d->tx, hdr, (size_t)hl) != (size_t)hl) {
		if (d->tx.denied)
			sd_nomem(d);
		else
			d->st.dropped++;
		return 0;
	}
	buf_append(&d->tx, m + PKT_ECHO_HDR, len);
	sd_queued(d, len);
	return 0;
}

static void
sd_read_sock(struct sess_dgram *d, struct sd_sock *s)
{
	while (sd_room(d)) {
		if (d->cfg.kind == PROTO_KIND_ICMP) {
			if (sd_recv_icmp(d, s) < 0)
				break;
		} else if (sd_recv_udp(d, s) < 0)
			break;
	}
}

/* Writes what is queued toward the client.  -1: ended. */
static int
sd_flush(struct sess_dgram *d)
{
	ssize_t	n;

	d->write_blocked = false;
	/* The status alone waits (sess_dgram_new); a frame behind it
	 * takes it along. */
	if (d->hold && buf_len(&d->tx) <= 1)
		return 0;
	d->hold = false;
	while (buf_len(&d->tx) > 0) {
		n = outer_write(d->cfg.outer, buf_head(&d->tx), buf_len(&d->tx));
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				d->write_blocked = true;
				return 0;
			}
			sd_end(d, "client write failed", errno);
			return -1;
		}
		buf_consume(&d->tx, (size_t)n);
	}
	buf_release_if_empty(&d->tx);
	return 0;
}

static void
sd_on_sock(struct loop_fd *lfd, uint32_t revents)
{
	struct sd_sock		*s = container_of(lfd, struct sd_sock, lfd);
	struct sess_dgram	*d = s->d;

	(void)revents;
	if (d->stopped)
		return;
	sd_read_sock(d, s);
	if (sd_flush(d) < 0)
		return;
	sd_update(d);
}

/* ---- from the client --------------------------------------------------- */

/* Sends every complete frame in rx.  -1: ended. */
static int
sd_frames(struct sess_dgram *d)
{
	static _Thread_local struct sd_batch b;	/* 14 KiB, per worker */
	struct proto_dest	 dst;
	const uint8_t		*p, *head = buf_head(&d->rx);
	size_t			 plen, len = buf_len(&d->rx), off = 0;
	ssize_t			 r;
	int			 rc = 0;

	b.n = 0;
	while (off < len) {
		if (d->cfg.trojan)
			r = proto_trojan_udp_parse(head + off, len - off, &dst,
			    &p, &plen);
		else
			r = frame_parse(head + off, len - off, &dst, &p, &plen);
		if (r < 0) {
			rc = -1;
			break;
		}
		if (r == 0)
			break;
		sd_send(d, &b, &dst, p, plen);
		off += (size_t)r;
	}
	if (b.n > 0)
		sd_batch_send(d, &b);
	buf_consume(&d->rx, off);
	if (rc < 0)
		sd_end(d, d->cfg.trojan ? "malformed trojan packet" :
		    "malformed frame", 0);
	return rc;
}

static int
sd_read_outer(struct sess_dgram *d)
{
	uint8_t	*tail;
	size_t	 room;
	ssize_t	 n;

	/* Frames that came with the request header are in rx already. */
	if (sd_frames(d) < 0)
		return -1;
	for (;;) {
		if ((tail = buf_tail(&d->rx, &room)) == NULL &&
		    d->rx.denied) {
			/* Until the budget has memory again. */
			d->rx_paused = true;
			limit_mem_wait(d->cfg.mem, &d->wait);
			break;
		}
		if (tail == NULL) {
			sd_end(d, "out of memory", ENOMEM);	/* SESS_OOM */
			return -1;
		}
		n = outer_read(d->cfg.outer, tail, room);
		if (n == 0) {
			sd_end(d, "done", 0);
			return -1;
		}
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			sd_end(d, "client error", errno);
			return -1;
		}
		buf_commit(&d->rx, (size_t)n);
		if (sd_frames(d) < 0)
			return -1;
	}
	buf_release_if_empty(&d->rx);
	return 0;
}

static void
sd_update(struct sess_dgram *d)
{
	uint32_t	ev = d->rx_paused ? 0 : EPOLLIN;
	size_t		i;

	if (d->write_blocked)
		ev |= EPOLLOUT | outer_events(d->cfg.outer);
	if (loop_fd_mod(d->cfg.loop, d->cfg.outer_lfd, ev) < 0) {
		sd_end(d, "epoll", errno);
		return;
	}
	/* Sockets are read only while a largest frame fits. */
	ev = sd_room(d) ? EPOLLIN : 0;
	for (i = 0; i < 2; i++) {
		if (d->sock[i].fd < 0 || d->sock[i].events == ev)
			continue;
		if (loop_fd_mod(d->cfg.loop, &d->sock[i].lfd, ev) < 0) {
			sd_end(d, "epoll", errno);
			return;
		}
		d->sock[i].events = ev;
	}
}

void
sess_dgram_on_outer(struct sess_dgram *d, uint32_t revents)
{
	size_t	i;

	if (d->stopped)
		return;
	if (revents & EPOLLERR) {
		sd_end(d, "client reset", 0);
		return;
	}
	d->rx_paused = false;
	if (sd_flush(d) < 0 || sd_read_outer(d) < 0)
		return;
	/* Room made by the flush: what waits in the sockets comes now. */
	for (i = 0; i < 2; i++)
		if (d->sock[i].fd >= 0 && d->sock[i].events == 0)
			sd_read_sock(d, &d->sock[i]);
	if (sd_flush(d) < 0)
		return;
	sd_update(d);
}

/* ---- lifetime ---------------------------------------------------------- */

size_t
sess_dgram_start_size(void)
{
	return sizeof(struct sess_dgram) + SD_TX_CAP + SD_RX_CAP;
}

/* Memory is free again: read the stream from the client. */
static void
sd_on_memory(struct limit_waiter *w)
{
	struct sess_dgram	*d = container_of(w, struct sess_dgram, wait);

	sess_dgram_on_outer(d, 0);
}

struct sess_dgram *
sess_dgram_new(const struct sess_dgram_cfg *cfg, const uint8_t *early,
    size_t early_len)
{
	struct sess_dgram	*d;
	uint8_t			 ok = PROTO_OK;

	if ((d = calloc(1, sizeof(*d))) == NULL) {
		log_warn("sess %llu: %s", cfg->id, "datagram relay");
		return NULL;
	}
	d->cfg = *cfg;
	d->sock[0].fd = d->sock[1].fd = -1;
	d->last_io_ms = loop_now(cfg->loop);
	buf_init(&d->tx, SD_TX_CAP);
	buf_init(&d->rx, SD_RX_CAP);
	d->echo_id = (uint16_t)randombytes_uniform(65536);
	d->wait.fn = sd_on_memory;
	/* trojan has no status: the relay starting is the answer. */
	if ((!cfg->trojan && buf_append(&d->tx, &ok, 1) != 1) ||
	    buf_append(&d->rx, early, early_len) != early_len) {
		sess_dgram_free(d);
		return NULL;
	}
	d->hold = !cfg->trojan && early_len > 0;
	/* Admitted with room for this (sess_dgram_start_size): charged
	 * even past the limit, as a relay's reservation is. */
	if (cfg->mem != NULL) {
		d->charged = sizeof(*d);
		limit_mem_force(cfg->mem, d->charged);
		buf_set_budget(&d->tx, cfg->mem);
		buf_set_budget(&d->rx, cfg->mem);
	}
	return d;
}

bool
sess_dgram_held(const struct sess_dgram *d)
{
	return d->hold;
}

void
sess_dgram_release(struct sess_dgram *d)
{
	if (d->stopped || !d->hold)
		return;
	d->hold = false;
	if (sd_flush(d) < 0)
		return;
	sd_update(d);
}

uint64_t
sess_dgram_last_io(const struct sess_dgram *d)
{
	return d->last_io_ms;
}

const struct sess_dgram_stats *
sess_dgram_stats(const struct sess_dgram *d)
{
	return &d->st;
}

void
sess_dgram_stop(struct sess_dgram *d)
{
	size_t	i;

	if (d == NULL || d->stopped)
		return;
	d->stopped = true;
	d->ended = true;
	for (i = 0; i < SD_NAMES_PENDING; i++)
		sd_name_free(&d->names[i]);	/* no callback after this */
	for (i = 0; i < 2; i++) {
		if (d->sock[i].fd < 0)
			continue;
		loop_fd_del(d->cfg.loop, &d->sock[i].lfd);
		close(d->sock[i].fd);
		d->sock[i].fd = -1;
	}
	buf_free(&d->tx);
	buf_free(&d->rx);
	if (d->cfg.mem != NULL) {
		limit_mem_unwait(d->cfg.mem, &d->wait);
		limit_mem_give(d->cfg.mem, d->charged);
		d->charged = 0;
	}
	log_at(log_flow_level(), "sess %llu: %s: up %llu dgrams %llu bytes, "
	    "down %llu dgrams %llu bytes, %llu denied, %llu dropped (%llu for "
	    "memory); %llu to names, %llu of them unresolved%s",
	    d->cfg.id, sd_kind(d),
	    (unsigned long long)d->st.dgrams_up,
	    (unsigned long long)d->st.bytes_up,
	    (unsigned long long)d->st.dgrams_down,
	    (unsigned long long)d->st.bytes_down,
	    (unsigned long long)d->st.denied,
	    (unsigned long long)d->st.dropped,
	    (unsigned long long)d->st.nomem,
	    (unsigned long long)d->st.names,
	    (unsigned long long)d->st.unresolved,
	    d->cfg.trojan ? " (trojan)" : "");
}

void
sess_dgram_free(struct sess_dgram *d)
{
	if (d == NULL)
		return;
	sess_dgram_stop(d);
	free(d);
}
