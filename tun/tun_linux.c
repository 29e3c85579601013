/*
 * Linux TUN device: /dev/net/tun, then the classic SIOCSIF* ioctls for
 * MTU, addresses and link state (no netlink dependency).  The device is
 * not persistent: closing the fd removes it, which is also our cleanup on
 * any failure after creation.
 */
#include "config.h"

#include "tun.h"
#include "tun_int.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/if_tun.h>
#include <linux/ipv6.h>
#include <net/route.h>

#define TUN_DEV		"/dev/net/tun"
#define TUN_IPV6_MTU_MIN 1280

/* The device's ioctls. */
static const struct tun_why dev_why = { .need = "CAP_NET_ADMIN" };

void
tun_err(char *err, size_t errlen, const struct tun_why *why, int e,
    const char *fmt, ...)
{
	va_list	ap;
	size_t	n;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	n = strlen(err);
	if (e == EPERM || e == EACCES)
		snprintf(err + n, errlen - n, ": permission denied (need %s)",
		    why->need);
	else if (e == ENOSYS && why->nosys != NULL)
		snprintf(err + n, errlen - n, ": %s", why->nosys);
	else if (e != 0)
		snprintf(err + n, errlen - n, ": %s", strerror(e));
}

/* The kernel's rules (dev_valid_name) plus at most one "%d" template. */
static int
tun_check_name(const char *name, char *err, size_t errlen)
{
	const char	*p, *pct;

	if (strlen(name) >= IFNAMSIZ) {
		tun_err(err, errlen, &dev_why, 0,
		    "interface name '%s' is too long "
		    "(max %d)", name, IFNAMSIZ - 1);
		return -1;
	}
	if (*name == '\0' || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		goto bad;
	for (p = name; *p != '\0'; p++)
		if (*p == '/' || *p == ':' || isspace((unsigned char)*p))
			goto bad;
	if ((pct = strchr(name, '%')) != NULL &&
	    (pct[1] != 'd' || strchr(pct + 1, '%') != NULL))
		goto bad;
	return 0;
bad:
	tun_err(err, errlen, &dev_why, 0,
	    "interface name '%s' is invalid", name);
	return -1;
}

static int
tun_check_config(const struct tun_config *tc, const char *name, char *err,
    size_t errlen)
{
	if (tun_check_name(name, err, errlen) == -1)
		return -1;
	if (tc->mtu < TUN_MTU_MIN || tc->mtu > TUN_MTU_MAX) {
		tun_err(err, errlen, &dev_why, 0,
		    "MTU %u out of range (%d..%d)",
		    tc->mtu, TUN_MTU_MIN, TUN_MTU_MAX);
		return -1;
	}
	if (tc->addr4 != NULL && (tc->addr4->family != AF_INET ||
	    tc->addr4->prefix > 32)) {
		tun_err(err, errlen, &dev_why, 0,
		    "IPv4 address is not an IPv4 prefix");
		return -1;
	}
	if (tc->addr6 != NULL && (tc->addr6->family != AF_INET6 ||
	    tc->addr6->prefix > 128)) {
		tun_err(err, errlen, &dev_why, 0,
		    "IPv6 address is not an IPv6 prefix");
		return -1;
	}
	/* Below 1280 the kernel disables IPv6 on the link. */
	if (tc->addr6 != NULL && tc->mtu < TUN_IPV6_MTU_MIN) {
		tun_err(err, errlen, &dev_why, 0,
		    "MTU %u is below the IPv6 minimum %d",
		    tc->mtu, TUN_IPV6_MTU_MIN);
		return -1;
	}
	return 0;
}

/* Checksum offload and TSO: the kernel hands us unchecksummed packets
 * and TCP super-packets (tsnetif validates each header); from Linux 6.2
 * also USO, UDP super-packets of apps that send with UDP_SEGMENT (QUIC),
 * which tsnetif cuts into datagrams again.  Older kernels refuse the USO
 * bits with EINVAL: then without them.  (Debian 12's headers predate
 * them.) */
#ifndef TUN_F_USO4
#define TUN_F_USO4	0x20
#endif
#ifndef TUN_F_USO6
#define TUN_F_USO6	0x40
#endif
#define TUN_OFFLOADS	(TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN)
#define TUN_OFFLOADS_USO (TUN_F_USO4 | TUN_F_USO6)

static int
tun_set_offload(int fd)
{
	int	hdrsz = TUN_VNET_HDR_LEN;

	if (getenv(TUN_ENV_NO_OFFLOAD) != NULL) {
		errno = EINVAL;
		return -1;
	}
	if (ioctl(fd, TUNSETVNETHDRSZ, &hdrsz) == -1)
		return -1;
	if (ioctl(fd, TUNSETOFFLOAD, (unsigned long)(TUN_OFFLOADS |
	    TUN_OFFLOADS_USO)) == 0)
		return 0;
	if (errno != EINVAL ||
	    ioctl(fd, TUNSETOFFLOAD, (unsigned long)TUN_OFFLOADS) == -1)
		return -1;
	return 0;
}

bool
tun_offload(int fd)
{
	struct ifreq	ifr;

	memset(&ifr, 0, sizeof(ifr));
	if (ioctl(fd, TUNGETIFF, &ifr) == -1)
		return false;
	return (ifr.ifr_flags & IFF_VNET_HDR) != 0;
}

static void
tun_ifreq(struct ifreq *ifr, const char *ifname)
{
	memset(ifr, 0, sizeof(*ifr));
	memcpy(ifr->ifr_name, ifname, strnlen(ifname, IFNAMSIZ - 1));
}

/* The flags of every queue.  Once a device has a queue, the kernel
 * ignores a later queue's flags (the device keeps the first's); each
 * passes the same all the same. */
static short
tun_flags(bool offload, bool mq)
{
	return (short)(IFF_TUN | IFF_NO_PI | (offload ? IFF_VNET_HDR : 0) |
	    (mq ? IFF_MULTI_QUEUE : 0));
}

static int
tun_dev_open(char *err, size_t errlen)
{
	int	fd, e;

	if ((fd = open(TUN_DEV, O_RDWR | O_NONBLOCK | O_CLOEXEC)) == -1) {
		e = errno;
		if (e == ENOENT || e == ENODEV || e == ENXIO)
			tun_err(err, errlen, &dev_why, 0,
			    TUN_DEV ": no such device "
			    "(is the tun module loaded?)");
		else
			tun_err(err, errlen, &dev_why, e, TUN_DEV);
	}
	return fd;
}

/* The device's first (or only) queue; mq: with IFF_MULTI_QUEUE. */
static int
tun_create(const char *name, bool offload, bool mq, char ifname[IFNAMSIZ],
    char *err, size_t errlen)
{
	struct ifreq	ifr;
	int		fd, e;

	if ((fd = tun_dev_open(err, errlen)) == -1)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = tun_flags(offload, mq);
	memcpy(ifr.ifr_name, name, strlen(name));
	if (ioctl(fd, TUNSETIFF, &ifr) == -1) {
		e = errno;
		close(fd);
		if (offload && e == EINVAL) {
			/* A kernel without IFF_VNET_HDR: without offloads. */
			return tun_create(name, false, mq, ifname, err, errlen);
		}
		if (mq && e == EINVAL)
			tun_err(err, errlen, &dev_why, 0,
			    "interface '%s': the kernel "
			    "refuses a multi-queue TUN (IFF_MULTI_QUEUE)",
			    name);
		else if (e == EBUSY || e == EINVAL)
			tun_err(err, errlen, &dev_why, 0,
			    "interface '%s' is busy or "
			    "not a tun device", name);
		else
			tun_err(err, errlen, &dev_why, e,
			    "create interface '%s'", name);
		return -1;
	}
	if (offload && tun_set_offload(fd) == -1) {
		/* Not persistent: closing removes it, and the name with it. */
		close(fd);
		return tun_create(name, false, mq, ifname, err, errlen);
	}
	memcpy(ifname, ifr.ifr_name, IFNAMSIZ);
	ifname[IFNAMSIZ - 1] = '\0';
	return fd;
}

/*
 * One more queue on the multi-queue device ifname, with the flags of the
 * first.  The virtio-net header size and the offloads belong to the
 * device, not to the fd: TUNSETVNETHDRSZ and TUNSETOFFLOAD on the first
 * queue did it for all (e2e_tun_steer.sh checks each queue's).
 */
static int
tun_attach(const char *ifname, bool offload, unsigned i, char *err,
    size_t errlen)
{
	struct ifreq	ifr;
	int		fd;

	if ((fd = tun_dev_open(err, errlen)) == -1)
		return -1;
	tun_ifreq(&ifr, ifname);
	ifr.ifr_flags = tun_flags(offload, true);
	if (ioctl(fd, TUNSETIFF, &ifr) == -1) {
		tun_err(err, errlen, &dev_why, errno,
		    "interface %s: attach queue %u",
		    ifname, i);
		close(fd);
		return -1;
	}
	return fd;
}

static int
tun_set_mtu(int ctl, const char *ifname, unsigned mtu, char *err,
    size_t errlen)
{
	struct ifreq	ifr;

	tun_ifreq(&ifr, ifname);
	ifr.ifr_mtu = (int)mtu;
	if (ioctl(ctl, SIOCSIFMTU, &ifr) == -1) {
		tun_err(err, errlen, &dev_why, errno,
		    "set MTU %u on %s", mtu, ifname);
		return -1;
	}
	return 0;
}

/*
 * The kernel queues packets for us on the device's qdisc; with the default
 * 500 a burst from many flows overflows it while we are busy elsewhere in
 * the loop, and every drop becomes a retransmission (often a timeout) in
 * some app.  Failure is not fatal: the default still works.
 */
static void
tun_set_txqlen(int ctl, const char *ifname)
{
	struct ifreq	ifr;

	tun_ifreq(&ifr, ifname);
	ifr.ifr_qlen = TUN_TXQLEN;
	(void)ioctl(ctl, SIOCSIFTXQLEN, &ifr);
}

static const char *
tun_prefix_fmt(const struct tun_prefix *c, char *out, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	if (inet_ntop(c->family, c->bytes, a, sizeof(a)) == NULL)
		snprintf(a, sizeof(a), "?");
	snprintf(out, len, "%s/%u", a, c->prefix);
	return out;
}

static int
tun_set_addr4(int ctl, const char *ifname, const struct tun_prefix *c, char *err,
    size_t errlen)
{
	struct ifreq		 ifr;
	struct sockaddr_in	*sin = (struct sockaddr_in *)(void *)&ifr.ifr_addr;
	char			 cs[INET6_ADDRSTRLEN + 8];
	uint32_t		 mask;

	tun_ifreq(&ifr, ifname);
	sin->sin_family = AF_INET;
	memcpy(&sin->sin_addr, c->bytes, 4);
	if (ioctl(ctl, SIOCSIFADDR, &ifr) == -1)
		goto fail;
	mask = c->prefix == 0 ? 0 : 0xffffffffU << (32 - c->prefix);
	tun_ifreq(&ifr, ifname);
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(mask);
	if (ioctl(ctl, SIOCSIFNETMASK, &ifr) == -1)
		goto fail;
	return 0;
fail:
	tun_err(err, errlen, &dev_why, errno, "set address %s on %s",
	    tun_prefix_fmt(c, cs, sizeof(cs)), ifname);
	return -1;
}

static int
tun_set_addr6(const char *ifname, const struct tun_prefix *c, char *err,
    size_t errlen)
{
	struct in6_ifreq	ifr6;
	char			cs[INET6_ADDRSTRLEN + 8];
	int			ctl, rc = -1;

	tun_prefix_fmt(c, cs, sizeof(cs));
	if ((ctl = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1) {
		tun_err(err, errlen, &dev_why, errno,
		    "set address %s on %s: IPv6 socket",
		    cs, ifname);
		return -1;
	}
	memset(&ifr6, 0, sizeof(ifr6));
	memcpy(&ifr6.ifr6_addr, c->bytes, 16);
	ifr6.ifr6_prefixlen = c->prefix;
	if ((ifr6.ifr6_ifindex = (int)if_nametoindex(ifname)) == 0 ||
	    ioctl(ctl, SIOCSIFADDR, &ifr6) == -1)
		tun_err(err, errlen, &dev_why, errno,
		    "set address %s on %s", cs, ifname);
	else
		rc = 0;
	close(ctl);
	return rc;
}

static int
tun_set_up(int ctl, const char *ifname, char *err, size_t errlen)
{
	struct ifreq	ifr;

	tun_ifreq(&ifr, ifname);
	if (ioctl(ctl, SIOCGIFFLAGS, &ifr) == -1)
		goto fail;
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(ctl, SIOCSIFFLAGS, &ifr) == -1)
		goto fail;
	return 0;
fail:
	tun_err(err, errlen, &dev_why, errno, "bring %s up", ifname);
	return -1;
}

/* MTU, addresses, then up: IPv6 needs the final MTU before an address. */
static int
tun_configure(const struct tun_config *tc, const char *ifname, char *err,
    size_t errlen)
{
	int	ctl, rc = -1;

	if ((ctl = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1) {
		tun_err(err, errlen, &dev_why, errno,
		    "configure %s: socket", ifname);
		return -1;
	}
	if (tun_set_mtu(ctl, ifname, tc->mtu, err, errlen) == -1)
		goto out;
	tun_set_txqlen(ctl, ifname);
	if (tc->addr4 != NULL &&
	    tun_set_addr4(ctl, ifname, tc->addr4, err, errlen) == -1)
		goto out;
	if (tc->addr6 != NULL &&
	    tun_set_addr6(ifname, tc->addr6, err, errlen) == -1)
		goto out;
	if (tun_set_up(ctl, ifname, err, errlen) == -1)
		goto out;
	rc = 0;
out:
	close(ctl);
	return rc;
}

static void
tun_close_all(int *fds, unsigned n)
{
	while (n > 0)
		close(fds[--n]);
}

int
tun_open_queues(const struct tun_config *tc, int *fds, unsigned n,
    char ifname[IFNAMSIZ], char *err, size_t errlen)
{
	const char	*name;
	unsigned	 q, i;
	bool		 mq, offload;

	if (err != NULL && errlen > 0)
		*err = '\0';
	name = tc->name != NULL ? tc->name : "tun%d";
	q = tc->queues > 1 ? tc->queues : 1;
	mq = q > 1;
	if (q > TUN_QUEUES_MAX || n < q) {
		tun_err(err, errlen, &dev_why, 0,
		    "%u queues: %s", q, q > TUN_QUEUES_MAX ?
		    "more than the kernel's 256" : "no room for their fds");
		return -1;
	}
	if (tun_check_config(tc, name, err, errlen) == -1)
		return -1;
	/* Another multi-queue device of that name would take our queues
	 * as its own; a single-queue one would refuse them.  Ours alone. */
	if (mq && strchr(name, '%') == NULL && if_nametoindex(name) != 0) {
		tun_err(err, errlen, &dev_why, 0,
		    "interface '%s' exists already (a "
		    "multi-queue TUN must be tunsplit's own)", name);
		return -1;
	}
	if ((fds[0] = tun_create(name, tc->offload, mq, ifname, err,
	    errlen)) == -1)
		return -1;
	offload = tun_offload(fds[0]);
	for (i = 1; i < q; i++)
		if ((fds[i] = tun_attach(ifname, offload, i, err, errlen)) ==
		    -1)
			goto fail;
	if (mq && tc->steer && tun_steer(fds[0], q, err, errlen) == -1)
		goto fail;
	if (tun_configure(tc, ifname, err, errlen) == -1)
		goto fail;
	return (int)q;
fail:
	/* Non-persistent: closing the last queue removes the device. */
	tun_close_all(fds, i);
	return -1;
}

int
tun_open(const struct tun_config *tc, char ifname[IFNAMSIZ], char *err,
    size_t errlen)
{
	struct tun_config	one = *tc;
	int			fd;

	one.queues = 1;
	if (tun_open_queues(&one, &fd, 1, ifname, err, errlen) == -1)
		return -1;
	return fd;
}

/* The network of p: host bits cleared. */
static void
tun_prefix_net(const struct tun_prefix *p, uint8_t out[16])
{
	unsigned	i, bits;

	for (i = 0; i < 16; i++) {
		bits = i * 8 >= p->prefix ? 0 :
		    (p->prefix - i * 8 >= 8 ? 8 : p->prefix - i * 8);
		out[i] = (uint8_t)(p->bytes[i] & (0xff00 >> bits));
	}
}

int
tun_add_route(const char *ifname, const struct tun_prefix *p, char *err,
    size_t errlen)
{
	struct rtentry		 rt;
	struct in6_rtmsg	 rt6;
	struct sockaddr_in	*sin;
	char			 dev[IFNAMSIZ], cs[INET6_ADDRSTRLEN + 8];
	uint8_t			 net[16];
	int			 ctl, rc;

	tun_prefix_net(p, net);
	if ((ctl = socket(p->family, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1) {
		tun_err(err, errlen, &dev_why, errno,
		    "route %s into %s: socket",
		    tun_prefix_fmt(p, cs, sizeof(cs)), ifname);
		return -1;
	}
	if (p->family == AF_INET) {
		memset(&rt, 0, sizeof(rt));
		sin = (struct sockaddr_in *)(void *)&rt.rt_dst;
		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, net, 4);
		sin = (struct sockaddr_in *)(void *)&rt.rt_genmask;
		sin->sin_family = AF_INET;
		sin->sin_addr.s_addr = htonl(p->prefix == 0 ? 0 :
		    0xffffffffU << (32 - p->prefix));
		rt.rt_flags = RTF_UP;
		snprintf(dev, sizeof(dev), "%s", ifname);
		rt.rt_dev = dev;
		rc = ioctl(ctl, SIOCADDRT, &rt);
	} else {
		memset(&rt6, 0, sizeof(rt6));
		memcpy(&rt6.rtmsg_dst, net, 16);
		rt6.rtmsg_dst_len = p->prefix;
		rt6.rtmsg_flags = RTF_UP;
		rt6.rtmsg_metric = 1;
		rt6.rtmsg_ifindex = (int)if_nametoindex(ifname);
		rc = rt6.rtmsg_ifindex == 0 ? -1 : ioctl(ctl, SIOCADDRT, &rt6);
	}
	if (rc == -1 && errno != EEXIST) {
		tun_err(err, errlen, &dev_why, errno, "route %s into %s",
		    tun_prefix_fmt(p, cs, sizeof(cs)), ifname);
		close(ctl);
		return -1;
	}
	close(ctl);
	return 0;
}
