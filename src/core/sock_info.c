/*
 * TCP_INFO counters glibc's struct tcp_info does not carry (segments
 * sent), read with the kernel's struct: a file of its own, since the two
 * headers cannot be included together.
 */
#include "config.h"

#include "core/sock.h"

#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <linux/tcp.h>

int
sock_tcp_retrans(int fd, uint32_t *segs, uint32_t *rtx)
{
	struct tcp_info	 ti;
	socklen_t	 len = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == -1)
		return -1;
	*segs = ti.tcpi_segs_out;
	*rtx = ti.tcpi_total_retrans;
	return 0;
}
