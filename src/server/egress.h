/*
 * The server's egress policy (egress.c): whether a session may dial or
 * send to an address.  Used by sessions and datagram sessions; reads the
 * generation of the configuration the session holds.
 */
#ifndef TUNSPLIT_EGRESS_H
#define TUNSPLIT_EGRESS_H

#include <stdbool.h>
#include <stddef.h>

struct addr;
struct conf;
struct conf_egress;

/* True when the server may dial this address.  Default denies loopback,
 * private, link-local, CGNAT, multicast, unspecified and metadata ranges,
 * unless conf lists an allow entry covering it; and the host's own
 * addresses (below) unless an allow entry names exactly that address. */
bool egress_allowed(const struct conf *c, const struct addr *a);
/* The same with a user's own lists (conf_user.egress, NULL: none) first:
 * its deny entries, then its allow entries, then the server's. */
bool egress_allowed_user(const struct conf *c, const struct conf_egress *u,
    const struct addr *a);

/*
 * The host's own addresses, denied by default: the server reads them at
 * start and again whenever the kernel reports an address change
 * (server.c).  egress_local_set() replaces the table (tests);
 * egress_local_refresh() reads the interface list (getifaddrs).  0, or
 * -1 with errno (the previous table stays).
 */
int    egress_local_set(const struct addr *a, size_t n);
int    egress_local_refresh(void);
size_t egress_local_count(void);
void   egress_local_clear(void);

#endif
