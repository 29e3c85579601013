/* What the files of tun/ share among themselves (tun.h is what the rest
 * of the daemon sees). */
#ifndef TUNSPLIT_TUN_INT_H
#define TUNSPLIT_TUN_INT_H

#include <stddef.h>

/* How a file of tun/ explains the errors of its system calls. */
struct tun_why {
	const char	*need;		/* for EPERM, EACCES: "CAP_NET_ADMIN" */
	const char	*nosys;		/* for ENOSYS (NULL: strerror's) */
};

/* fmt's text into err (none when err is NULL or errlen 0), then why the
 * call failed with errno e: ": permission denied (need NEED)", ": NOSYS"
 * or ": strerror(e)"; nothing more when e is 0. */
void tun_err(char *err, size_t errlen, const struct tun_why *why, int e,
    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#endif
