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
};

/* Creates the device (IFF_TUN | IFF_NO_PI), sets MTU, addresses, up; the
 * fd is non-blocking and close-on-exec.  Returns the fd, or -1 with a
 * clear message in err (no /dev/net/tun, permission, name too long or
 * taken, invalid MTU, ...).  The actual name goes to ifname. */
int tun_open(const struct tun_config *tc, char ifname[IFNAMSIZ],
    char *err, size_t errlen);

#endif
