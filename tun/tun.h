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
};

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

#endif
