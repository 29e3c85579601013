/* TUN device: open and configure (Linux first). */
#ifndef TUNSPLIT_TUN_H
#define TUNSPLIT_TUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <net/if.h>

#define TUN_MTU_MIN	576
#define TUN_MTU_MAX	65535
#define TUN_TXQLEN	4096	/* packets the kernel queues for us */

/* An interface address and prefix length.  tun/ uses nothing of src/,
 * so it has its own type. */
struct tun_prefix {
	int		 family;	/* AF_INET or AF_INET6 */
	uint8_t		 bytes[16];
	uint8_t		 prefix;
};

struct tun_config {
	const char	*name;		/* requested name ("tun%d" allowed) */
	unsigned	 mtu;
	const struct tun_prefix *addr4;	/* NULL: none */
	const struct tun_prefix *addr6;	/* NULL: none */
	bool		 offload;	/* try IFF_VNET_HDR with TSO (below) */
	unsigned	 queues;	/* 0 or 1: one queue; more: tun_open_queues */
	bool		 steer;		/* with queues > 1: tun_steer() first */
};

#define TUN_QUEUES_MAX	256	/* the kernel's MAX_TAP_QUEUES */

/* The virtio-net header every read and write carries with offloads on
 * (struct virtio_net_hdr, native byte order). */
#define TUN_VNET_HDR_LEN	10

/* Test knob: set in the environment, the kernel's TUNSETOFFLOAD is taken
 * as refused, to exercise the fallback. */
#define TUN_ENV_NO_OFFLOAD	"TUNSPLIT_TUN_NO_OFFLOAD"

/* Creates the device (IFF_TUN | IFF_NO_PI), sets MTU, addresses, up; the
 * fd is non-blocking and close-on-exec.  Returns the fd, or -1 with a
 * clear message in err (no /dev/net/tun, permission, name too long or
 * taken, invalid MTU, ...).  The actual name goes to ifname. */
int tun_open(const struct tun_config *tc, char ifname[IFNAMSIZ],
    char *err, size_t errlen);

/*
 * With tc->queues = N > 1: the device is created with IFF_MULTI_QUEUE and
 * N queue fds are opened on it, fds[0] first (the kernel's queue 0), each
 * with the same flags (and offloads: the device has them, not the fd),
 * non-blocking and close-on-exec; with tc->steer, tun_steer() then, so
 * that the device is steered before it is up (or the kernel's first
 * packets, an IPv6 router solicitation, take any queue); MTU, addresses
 * and up once.  With tc->queues 0 or 1 it is tun_open() into fds[0].  n
 * is the room in fds.  Returns the number of fds opened, or -1 with a
 * message in err (n too small, the kernel refuses IFF_MULTI_QUEUE or the
 * steering, the name exists already -- a multi-queue device is always
 * our own); then no fd is left open and no device behind, and the caller
 * may fall back to one queue by asking again with tc->queues = 1.
 *
 * A queue stays attached while any process holds its fd, and its index
 * is its place in the order of attaching: when one is detached (its last
 * fd closed) the last queue takes its index, and flows move.  So the
 * process that forks the workers keeps every fd for the device's life (a
 * worker that dies leaves its queue in place, for the next one), and each
 * worker closes the fds of the queues not its own.
 */
int tun_open_queues(const struct tun_config *tc, int *fds, unsigned n,
    char ifname[IFNAMSIZ], char *err, size_t errlen);

/*
 * With tc->offload the device is created with IFF_VNET_HDR and asks for
 * checksum offload and TSO for IPv4 and IPv6 (TUNSETOFFLOAD): reads then
 * bring up to 64 KiB of one TCP flow at once, and writes may do the same;
 * from Linux 6.2 also USO (a read may be a UDP super-packet; without USO
 * where the kernel does not know it).
 * Where the kernel refuses, the device is created again without them,
 * silently: tun_offload() tells which one the fd is.
 */
bool tun_offload(int fd);

/* Routes prefix p (its network; host bits ignored) into the device
 * ifname, in the main table: the fake-IP ranges when the device's own
 * prefix does not hold them.  An existing route is fine.  0, or -1 with
 * a message in err. */
int tun_add_route(const char *ifname, const struct tun_prefix *p,
    char *err, size_t errlen);

/*
 * Steering (tun/tun_steer.c): an eBPF program, attached to the device
 * through queue fd fd, chooses each packet's queue (the kernel takes its
 * return value as a u16, modulo the queues attached).  Queue 0 gets
 * every packet that is not IPv4 or IPv6 carrying TCP or UDP directly,
 * unfragmented -- ICMP, IPv4 fragments, IPv6 with any extension header
 * (the fragment header too) -- and every TCP or UDP packet to port 53;
 * the rest is spread by a hash of its addresses and ports and nothing
 * else, so one flow always takes one queue.  0, or -1 with a message in
 * err (no BPF in the kernel, permission, the verifier's refusal with its
 * last line).  queues is the number the caller opened, for the message
 * only: the kernel divides by the queues attached at each packet.
 */
int tun_steer(int fd, unsigned queues, char *err, size_t errlen);

/* Test knob: set in the environment, tun_steer() fails (the caller's
 * one-queue fallback). */
#define TUN_ENV_NO_STEER	"TUNSPLIT_TUN_NO_STEER"

/*
 * What the program answers for packet pkt (starting at its IP header) of
 * len bytes with queues queues attached: the same computation in C, for
 * tests and for a caller that must know where a flow lands.
 */
unsigned tun_steer_queue(const uint8_t *pkt, size_t len, unsigned queues);

#endif
