/*
 * Association transports over UDP sockets (assoc_int.h).
 *
 *   direct  the datagrams go straight to their destinations from this
 *           host: one unconnected UDP socket per address family (made when
 *           first needed, a->fd IPv4 and a->ufd IPv6), marked with
 *           client.mark so that routing keeps them out of the TUN.  An
 *           unconnected socket takes replies from any source: full cone.
 *           Queue items are native frames (frame.h), parsed back to find
 *           the destination when they leave.  ICMP echo goes through ping
 *           sockets (SOCK_DGRAM, IPPROTO_ICMP[V6]) the same way, the frame
 *           port being the sequence number; they need the process's group
 *           in net.ipv4.ping_group_range (raw sockets, as the server falls
 *           back to, would see every echo reply of the host).
 *
 *   socks5  RFC 1928 UDP ASSOCIATE.  a->fd is the TCP control connection
 *           to the proxy (greeting, RFC 1929 username/password when
 *           configured, the UDP ASSOCIATE request naming our UDP socket's
 *           address), a->ufd a UDP socket connected to the relay the reply
 *           names (the proxy's own address when it answers 0.0.0.0 or ::).
 *           Queue items are whole relay datagrams: the SOCKS UDP header
 *           (RSV FRAG ATYP ADDR PORT) and the payload.  The association
 *           lives as long as the control connection: when the proxy closes
 *           it, the association ends.  Fragments (FRAG != 0) are dropped.
 *
 * A send the socket refuses (no route, EPERM, message too long) drops
 * that datagram only (counted as drop_send); UDP has no other way to say
 * so.  Each wakeup reads at most SOCK_BATCH datagrams per socket, so one
 * busy association cannot starve the rest of the loop.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <sodium.h>

#include "client/dgram/assoc_int.h"
#include "client/outbound.h"
#include "conf/conf.h"
#include "wire/frame.h"
#include "core/log.h"
#include "core/sock.h"
#include "wire/socks5.h"

#define SOCK_BATCH	64
#define SOCKS_CTL_RX	512	/* method, auth and request replies */

enum {
	S_CONNECT,	/* TCP connect to the proxy */
	S_METHOD,	/* greeting sent, waiting for the method */
	S_AUTH,		/* RFC 1929 request sent */
	S_REPLY,	/* UDP ASSOCIATE sent */
	S_RELAY,	/* datagrams flow; the control connection is watched */
};

static void sock_on_fd(struct loop_fd *, uint32_t);
static void sock_on_ufd(struct loop_fd *, uint32_t);

static bool
is_socks(const struct assoc *a)
{
	return a->tp == &assoc_tp_socks5;
}

/* A UDP socket, or with proto IPPROTO_ICMP / IPPROTO_ICMPV6 a ping
 * socket (the kernel sets the echo identifier and checksum, and hands us
 * only the replies to our own requests).  A mark that cannot be set is an
 * error, as in sock_connect(): unmarked, the datagrams would be routed
 * into our own TUN and come back to us as new ones. */
static int
sock_dgram(int family, int proto, uint32_t mark)
{
	int	fd, one = 1, saved;

	fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, proto);
	if (fd < 0)
		return -1;
	/* One socket per family: no IPv4-mapped sources to untangle. */
	if (family == AF_INET6)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one,
		    sizeof(one));
	if (mark != 0 && setsockopt(fd, SOL_SOCKET, SO_MARK, &mark,
	    sizeof(mark)) == -1) {
		saved = errno;
		log_warn("setsockopt SO_MARK %u", mark);
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

/* ---- events ------------------------------------------------------------ */

static void
sock_update_events(struct assoc *a)
{
	struct loop	*l = a->env->loop;
	uint32_t	 out = a->write_blocked ? EPOLLOUT : 0;

	if (a->closing || a->phase == ASSOC_HOLD)
		return;
	if (is_socks(a)) {
		if (a->fd >= 0)
			loop_fd_mod(l, &a->lfd, a->step == S_CONNECT ?
			    EPOLLOUT : EPOLLIN);
		if (a->ufd >= 0)
			loop_fd_mod(l, &a->ulfd, EPOLLIN | out);
		return;
	}
	/* direct: a blocked write waits on both; it is rare. */
	if (a->fd >= 0)
		loop_fd_mod(l, &a->lfd, EPOLLIN | out);
	if (a->ufd >= 0)
		loop_fd_mod(l, &a->ulfd, EPOLLIN | out);
}

/* ---- toward the destinations ------------------------------------------- */

/* The direct socket for dst's family, made when first needed.  -1: no
 * ping socket allowed (the datagram is dropped; logged once per process),
 * or -2: no socket at all (out of fds or memory), which fails the
 * association, so that the hold-down paces retries and log lines. */
static int
direct_fd(struct assoc *a, int family)
{
	int		*fd = family == AF_INET ? &a->fd : &a->ufd;
	struct loop_fd	*lfd = family == AF_INET ? &a->lfd : &a->ulfd;
	static bool	 warned;
	int		 proto = 0;

	if (*fd >= 0)
		return *fd;
	if (a->key.kind == PROTO_KIND_ICMP)
		proto = family == AF_INET ? IPPROTO_ICMP : IPPROTO_ICMPV6;
	if ((*fd = sock_dgram(family, proto, a->env->conf->client.mark)) < 0) {
		if (proto != 0 && errno == EACCES) {
			if (!warned)
				log_warnx("icmp: no ping socket (the group is "
				    "outside net.ipv4.ping_group_range): echo "
				    "requests are dropped, counted");
			warned = true;
			return -1;
		}
		log_warn("%s %llu: IPv%d socket", assoc_kstr(a),
		    (unsigned long long)a->id, family == AF_INET ? 4 : 6);
		assoc_fail(a, "cannot open a socket");
		return -2;
	}
	if (loop_fd_add(a->env->loop, lfd, *fd, EPOLLIN,
	    family == AF_INET ? sock_on_fd : sock_on_ufd) < 0) {
		close(*fd);
		*fd = -1;
		assoc_fail(a, "epoll");
		return -2;
	}
	return *fd;
}

/* One datagram of the direct transport: UDP as it is, ICMP as an echo
 * request whose sequence number is the frame's port. */
static ssize_t
direct_send(struct assoc *a, int fd, struct addr *to,
    const struct proto_dest *dst, const uint8_t *p, size_t plen)
{
	uint8_t		 echo[PKT_ECHO_HDR];
	struct iovec	 iov[2];
	struct msghdr	 m;

	if (a->key.kind != PROTO_KIND_ICMP)
		return sendto(fd, p, plen, 0, &to->u.sa, to->len);
	memset(echo, 0, sizeof(echo));
	echo[0] = addr_family(to) == AF_INET ? 8 : 128;	/* echo request */
	echo[6] = (uint8_t)(dst->port >> 8);
	echo[7] = (uint8_t)dst->port;
	iov[0].iov_base = echo;
	iov[0].iov_len = sizeof(echo);
	iov[1].iov_base = (void *)(uintptr_t)p;
	iov[1].iov_len = plen;
	memset(&m, 0, sizeof(m));
	m.msg_name = &to->u.sa;
	m.msg_namelen = to->len;
	m.msg_iov = iov;
	m.msg_iovlen = 2;
	return sendmsg(fd, &m, 0);
}

/* Sends the front item.  1 sent or dropped, 0 blocked, -1 the association
 * failed (its queue is gone). */
static int
sock_send_one(struct assoc *a, const uint8_t *item, size_t len)
{
	struct proto_dest	 dst;
	struct addr		 to;
	const uint8_t		*p;
	size_t			 plen;
	ssize_t			 w;
	int			 fd;

	if (is_socks(a)) {
		w = send(a->ufd, item, len, 0);
	} else if (frame_parse(item, len, &dst, &p, &plen) <= 0 ||
	    frame_dest_to_addr(&dst, &to) < 0) {
		errno = EINVAL;	/* not from the TUN: never a name */
		w = -1;
	} else if ((fd = direct_fd(a, addr_family(&to))) == -2) {
		return -1;
	} else if (fd < 0) {
		errno = EACCES;
		w = -1;
	} else
		w = direct_send(a, fd, &to, &dst, p, plen);
	if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	if (w < 0) {
		a->env->st.drop_send++;
		a->drops++;
		log_debug("%s %llu: send: %s", assoc_kstr(a),
		    (unsigned long long)a->id, strerror(errno));
	}
	return 1;
}

static void
sock_pump_up(struct assoc *a)
{
	const uint8_t	*item;
	size_t		 len;

	a->write_blocked = false;
	while ((item = dq_front(&a->q, &len)) != NULL) {
		switch (sock_send_one(a, item, len)) {
		case 0:
			a->write_blocked = true;
			return;
		case -1:
			return;
		}
		assoc_q_consume(a, len);
	}
}

/* ---- from the destinations --------------------------------------------- */

static void
sock_pump_down_fd(struct assoc *a, int fd)
{
	uint8_t			*buf = a->env->dgram;
	struct proto_dest	 src;
	struct addr		 from;
	const uint8_t		*p;
	size_t			 plen;
	ssize_t			 r;
	int			 i;

	for (i = 0; i < SOCK_BATCH && !a->closing; i++) {
		from.len = sizeof(from.u);
		r = recvfrom(fd, buf, ASSOC_DGRAM_BUF, MSG_TRUNC, &from.u.sa,
		    &from.len);
		if (r < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			/* A connected socket's ICMP error (the relay's
			 * port closed): the control connection decides. */
			continue;
		}
		if ((size_t)r > ASSOC_DGRAM_BUF) {
			a->env->st.drop_down++;
			a->drops++;
			continue;
		}
		if (is_socks(a)) {
			if (socks5_udp_parse(buf, (size_t)r, &src, &p,
			    &plen) < 0) {
				a->env->st.drop_down++;
				a->drops++;
				continue;
			}
		} else if (a->key.kind == PROTO_KIND_ICMP) {
			/* A ping socket: an echo reply, its sequence number
			 * as the frame's port. */
			if (r < PKT_ECHO_HDR || (buf[0] != 0 && buf[0] != 129)) {
				a->env->st.drop_down++;
				a->drops++;
				continue;
			}
			frame_dest_from_addr(&src, &from);
			src.port = (uint16_t)(buf[6] << 8 | buf[7]);
			p = buf + PKT_ECHO_HDR;
			plen = (size_t)r - PKT_ECHO_HDR;
		} else {
			frame_dest_from_addr(&src, &from);
			p = buf;
			plen = (size_t)r;
		}
		assoc_touch(a);
		assoc_deliver(a, &src, p, plen);
	}
}

static void
sock_work(struct assoc *a)
{
	if (is_socks(a) && a->step != S_RELAY)
		return;
	sock_pump_up(a);
	if (a->fd >= 0 && !is_socks(a))
		sock_pump_down_fd(a, a->fd);
	if (a->ufd >= 0 && !a->closing)
		sock_pump_down_fd(a, a->ufd);
	sock_update_events(a);
}

/* Readable or writable datagram sockets: the pass does the work. */
static void
sock_on_fd(struct loop_fd *lfd, uint32_t revents)
{
	struct assoc	*a = container_of(lfd, struct assoc, lfd);

	(void)revents;
	if (!a->closing && a->phase != ASSOC_HOLD)
		assoc_mark_dirty(a);
}

static void
sock_on_ufd(struct loop_fd *lfd, uint32_t revents)
{
	struct assoc	*a = container_of(lfd, struct assoc, ulfd);

	(void)revents;
	if (!a->closing && a->phase != ASSOC_HOLD)
		assoc_mark_dirty(a);
}

/* ---- the socks5 control connection ------------------------------------- */

/* Control messages are a few hundred bytes on a fresh connection: a
 * short write means the proxy is gone. */
static int
socks_write(struct assoc *a, const uint8_t *p, size_t len)
{
	ssize_t	w;

	w = send(a->fd, p, len, MSG_NOSIGNAL);
	return w == (ssize_t)len ? 0 : -1;
}

/* Our UDP socket, bound to the address the control connection leaves
 * from, so that the proxy sees both from the same host; its address goes
 * into the request (RFC 1928: the address the client will send from). */
static int
socks_udp_socket(struct assoc *a, struct proto_dest *self)
{
	struct addr	local;

	local.len = sizeof(local.u);
	if (getsockname(a->fd, &local.u.sa, &local.len) < 0)
		return -1;
	if ((a->ufd = sock_dgram(addr_family(&local), 0,
	    a->env->conf->client.mark)) < 0)
		return -1;
	if (addr_family(&local) == AF_INET)
		local.u.sin.sin_port = 0;
	else
		local.u.sin6.sin6_port = 0;
	if (bind(a->ufd, &local.u.sa, local.len) < 0)
		return -1;
	local.len = sizeof(local.u);
	if (getsockname(a->ufd, &local.u.sa, &local.len) < 0)
		return -1;
	frame_dest_from_addr(self, &local);
	return 0;
}

static int
socks_send_request(struct assoc *a, const char **why)
{
	struct proto_dest	self;
	uint8_t			buf[SOCKS5_REQ_MAX];
	ssize_t			n;

	if (socks_udp_socket(a, &self) < 0) {
		*why = "UDP socket for the proxy";
		log_warn("%s %llu: %s", assoc_kstr(a),
		    (unsigned long long)a->id, *why);
		return -1;
	}
	if ((n = socks5_request(buf, sizeof(buf), SOCKS5_CMD_UDP,
	    &self)) < 0 || socks_write(a, buf, (size_t)n) < 0) {
		*why = "proxy write failed";
		return -1;
	}
	a->step = S_REPLY;
	return 0;
}

/* The relay named by the reply; unspecified: the proxy's own address. */
static int
socks_relay(struct assoc *a, const struct proto_dest *bnd, const char **why)
{
	static const uint8_t	 zero[16];
	struct addr		 relay;

	if (frame_dest_to_addr(bnd, &relay) < 0) {
		*why = "proxy named its UDP relay by a domain name";
		return -1;
	}
	if (memcmp(bnd->ip, zero, bnd->atyp == PROTO_ATYP_IPV4 ? 4 : 16) ==
	    0) {
		relay = a->ob->server;
		if (addr_family(&relay) == AF_INET)
			relay.u.sin.sin_port = htons(bnd->port);
		else
			relay.u.sin6.sin6_port = htons(bnd->port);
	}
	if (connect(a->ufd, &relay.u.sa, relay.len) < 0) {
		*why = "cannot reach the proxy's UDP relay";
		return -1;
	}
	if (loop_fd_add(a->env->loop, &a->ulfd, a->ufd, EPOLLIN,
	    sock_on_ufd) < 0) {
		*why = "epoll";
		return -1;
	}
	return 0;
}

/* One complete message at the head of rx, by step.  1 handled, 0 more
 * bytes needed, -1 failed (*why set). */
static int
socks_step(struct assoc *a, const char **why)
{
	const uint8_t		*in = buf_head(&a->rx);
	size_t			 len = buf_len(&a->rx);
	struct socks5_reply	 rep;
	uint8_t			 v, buf[SOCKS5_AUTH_MAX];
	ssize_t			 r, n;

	*why = "malformed reply from the proxy";
	switch (a->step) {
	case S_METHOD:
		if ((r = socks5_method_parse(in, len, &v)) <= 0)
			return (int)r;
		buf_consume(&a->rx, (size_t)r);
		if (v == SOCKS5_METHOD_USERPASS && a->ob->co->username[0]) {
			n = socks5_auth_encode(buf, sizeof(buf),
			    a->ob->co->username, a->ob->co->password);
			r = n < 0 ? -1 : socks_write(a, buf, (size_t)n);
			sodium_memzero(buf, sizeof(buf));	/* the password */
			if (r < 0) {
				*why = "proxy write failed";
				return -1;
			}
			a->step = S_AUTH;
			return 1;
		}
		if (v != SOCKS5_METHOD_NONE) {
			*why = a->ob->co->username[0] ? "proxy accepts neither "
			    "no authentication nor username/password" :
			    "proxy requires authentication";
			return -1;
		}
		return socks_send_request(a, why) < 0 ? -1 : 1;
	case S_AUTH:
		if ((r = socks5_auth_parse(in, len, &v)) <= 0)
			return (int)r;
		buf_consume(&a->rx, (size_t)r);
		if (v != 0) {
			*why = "proxy refused the username/password";
			return -1;
		}
		return socks_send_request(a, why) < 0 ? -1 : 1;
	case S_REPLY:
		if ((r = socks5_reply_parse(in, len, &rep)) <= 0)
			return (int)r;
		buf_consume(&a->rx, (size_t)r);
		if (rep.rep != SOCKS5_REP_OK) {
			*why = socks5_rep_str(rep.rep);
			return -1;
		}
		if (socks_relay(a, &rep.bnd, why) < 0)
			return -1;
		a->step = S_RELAY;
		assoc_ready(a);
		assoc_mark_dirty(a);	/* what was queued meanwhile */
		return 1;
	default:
		/* After the reply the proxy has nothing to say. */
		buf_consume(&a->rx, len);
		return 0;
	}
}

static void
sock_on_ctl(struct loop_fd *lfd, uint32_t revents)
{
	struct assoc	*a = container_of(lfd, struct assoc, lfd);
	const char	*why = NULL;
	uint8_t		*tail, greet[SOCKS5_GREETING_MAX];
	size_t		 room;
	ssize_t		 r;
	int		 err, rc;

	(void)revents;
	if (a->closing || a->phase == ASSOC_HOLD)
		return;
	if (a->step == S_CONNECT) {
		if ((err = sock_connect_error(a->fd)) != 0) {
			errno = err;
			log_warn("%s %llu: connect to proxy", assoc_kstr(a),
			    (unsigned long long)a->id);
			assoc_fail(a, "proxy unreachable");
			return;
		}
		r = socks5_greeting(greet, sizeof(greet),
		    a->ob->co->username[0] != '\0');
		if (r < 0 || socks_write(a, greet, (size_t)r) < 0) {
			assoc_fail(a, "proxy write failed");
			return;
		}
		a->step = S_METHOD;
		sock_update_events(a);
		return;
	}
	if ((tail = buf_tail(&a->rx, &room)) == NULL) {
		assoc_fail(a, "malformed reply from the proxy");
		return;
	}
	r = recv(a->fd, tail, room, 0);
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return;
	if (r <= 0) {
		/* What the relay sent before the end still goes to the app. */
		if (a->step == S_RELAY)
			sock_pump_down_fd(a, a->ufd);
		assoc_end(a, r == 0 ? "proxy closed the control connection" :
		    "proxy reset the control connection");
		return;
	}
	buf_commit(&a->rx, (size_t)r);
	while ((rc = socks_step(a, &why)) == 1 && !a->closing &&
	    a->phase != ASSOC_HOLD)
		;
	if (rc < 0) {
		assoc_fail(a, why);
		return;
	}
	buf_release_if_empty(&a->rx);
	sock_update_events(a);
}

/* ---- the transports ------------------------------------------------------ */

static void
sock_open(struct assoc *a)
{
	struct assoc_env	*e = a->env;
	const struct conf	*c = e->conf;

	free(a->first);		/* each datagram names its destination */
	a->first = NULL;
	if (!is_socks(a)) {
		a->step = S_RELAY;
		assoc_ready(a);
		return;
	}
	buf_init(&a->rx, SOCKS_CTL_RX);
	a->step = S_CONNECT;
	if ((a->fd = sock_connect(&a->ob->server, NULL, c->client.mark)) < 0) {
		log_warn("%s %llu: socket to proxy", assoc_kstr(a),
		    (unsigned long long)a->id);
		assoc_fail(a, "proxy unreachable");
		return;
	}
	if (loop_fd_add(e->loop, &a->lfd, a->fd, EPOLLOUT, sock_on_ctl) < 0)
		assoc_fail(a, "epoll");
}

static void
sock_drop(struct assoc *a, bool abort)
{
	struct loop	*l = a->env->loop;

	loop_fd_del(l, &a->lfd);
	loop_fd_del(l, &a->ulfd);
	if (a->fd >= 0) {
		if (abort && is_socks(a))
			sock_close_rst(a->fd);
		else
			close(a->fd);
	}
	if (a->ufd >= 0)
		close(a->ufd);
	a->fd = a->ufd = -1;
}

static const char *
sock_state(const struct assoc *a)
{
	return a->step == S_CONNECT ? "connect" : "socks";
}

static ssize_t
socks_encode_hdr(uint8_t *out, size_t outlen, const struct proto_dest *dst,
    size_t plen)
{
	(void)plen;
	return socks5_udp_encode_hdr(out, outlen, dst);
}

const struct assoc_tp assoc_tp_socks5 = {
	.name = "socks5",
	.sockets = true,
	.open = sock_open,
	.encode_hdr = socks_encode_hdr,
	.work = sock_work,
	.drop = sock_drop,
	.state = sock_state,
};

const struct assoc_tp assoc_tp_direct = {
	.name = "direct",
	.icmp = true,
	.sockets = true,
	.open = sock_open,
	.encode_hdr = frame_encode_hdr,
	.work = sock_work,
	.drop = sock_drop,
	.state = sock_state,
};
