/*
 * Server datagram sessions: datagrams to a domain name.  The name is
 * answered from the resolver's cache at once (the usual case after the
 * first datagram), or looked up while its datagrams are held, bounded;
 * each goes to the first of the name's addresses that the egress policy
 * allows (sess_dgram.c sends it).  A name that does not resolve, or only
 * to denied addresses, gets its datagrams dropped and counted.
 */
#include "config.h"

#include "server/dgram/sess_dgram.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/addr.h"
#include "core/limit.h"
#include "core/log.h"
#include "wire/proto.h"
#include "server/resolve.h"
#include "server/egress.h"
#include "server/dgram/sess_dgram_int.h"

#define SD_HELD_MAX	(16 * 1024)	/* datagrams held per such name */
#define SD_HELD_HDR	4		/* held: length, port, payload */

static void
sd_unresolved(struct sess_dgram *d, const char *name, const char *why)
{
	char	vis[256];	/* a name has 255 bytes at most */

	d->st.dropped++;
	d->st.unresolved++;
	if (d->unresolved_logged)
		return;
	d->unresolved_logged = true;
	snprintf(vis, sizeof(vis), "%s", name);
	resolve_name_vis(vis);	/* the client's bytes */
	log_info("sess %llu: %s to %s dropped: %s (further ones only counted)",
	    d->cfg.id, sd_kind(d), vis, why);
}

/*
 * A datagram to a name goes to the first of its addresses the egress
 * policy allows; a name with none is an egress denial.
 */
static void
sd_send_resolved(struct sess_dgram *d, struct sd_batch *b, const char *name,
    const struct resolve_result *res, uint16_t port, const uint8_t *data,
    size_t len)
{
	struct addr	to;
	size_t		i;

	if (res->status != RESOLVE_OK) {
		sd_unresolved(d, name, resolve_status_str(res->status));
		return;
	}
	for (i = 0; i < res->n; i++) {
		resolve_ip_to_addr(&res->ip[i], port, &to);
		if (egress_allowed_user(d->cfg.conf, d->cfg.egress, &to))
			break;
	}
	if (i == res->n) {
		resolve_ip_to_addr(&res->ip[0], port, &to);
		sd_denied(d, &to);
		return;
	}
	sd_send_to(d, b, &to, port, data, len);
}

void
sd_name_free(struct sd_name *nm)
{
	resolve_cancel(nm->q);
	nm->q = NULL;
	if (nm->held_cap > 0 && nm->d->cfg.mem != NULL)
		limit_mem_give(nm->d->cfg.mem, nm->held_cap);
	free(nm->held);
	nm->held = NULL;
	nm->held_len = nm->held_cap = 0;
	nm->used = false;
}

/* The lookup is done: the datagrams held for it go now. */
static void
sd_on_resolved(void *arg, const struct resolve_result *res)
{
	static _Thread_local struct sd_batch b;	/* see sd_frames */
	struct sd_name		*nm = arg;
	struct sess_dgram	*d = nm->d;
	size_t			 off = 0, len;
	uint16_t		 port;

	nm->q = NULL;
	b.n = 0;
	while (off + SD_HELD_HDR <= nm->held_len) {
		len = (size_t)nm->held[off] << 8 | nm->held[off + 1];
		port = (uint16_t)(nm->held[off + 2] << 8 | nm->held[off + 3]);
		off += SD_HELD_HDR;
		sd_send_resolved(d, &b, nm->name, res, port, nm->held + off,
		    len);
		off += len;
	}
	if (b.n > 0)
		sd_batch_send(d, &b);
	sd_name_free(nm);
}

/* Keeps a datagram until its name is resolved: the first whatever its
 * size, more up to SD_HELD_MAX bytes per name; beyond that it is dropped,
 * as a full socket buffer would. */
static void
sd_hold(struct sess_dgram *d, struct sd_name *nm, uint16_t port,
    const uint8_t *data, size_t len)
{
	size_t	 need = nm->held_len + SD_HELD_HDR + len, cap;
	uint8_t	*p;

	if (need > SD_HELD_MAX && nm->held_len > 0) {
		sd_unresolved(d, nm->name, "too much held for the name");
		return;
	}
	if (need > nm->held_cap) {
		cap = need < 2048 ? 2048 : need;
		if (d->cfg.mem != NULL &&
		    !limit_mem_take(d->cfg.mem, cap - nm->held_cap)) {
			sd_nomem(d);
			return;
		}
		if ((p = realloc(nm->held, cap)) == NULL) {
			if (d->cfg.mem != NULL)
				limit_mem_give(d->cfg.mem, cap - nm->held_cap);
			d->st.dropped++;
			return;
		}
		nm->held = p;
		nm->held_cap = cap;
	}
	p = nm->held + nm->held_len;
	p[0] = (uint8_t)(len >> 8);
	p[1] = (uint8_t)len;
	p[2] = (uint8_t)(port >> 8);
	p[3] = (uint8_t)port;
	if (len > 0)
		memcpy(p + SD_HELD_HDR, data, len);
	nm->held_len = need;
}

/*
 * A datagram to a domain name: answered at once from the resolver's cache
 * (the usual case after the first one), or held while at most
 * SD_NAMES_PENDING names per association are being looked up.
 */
void
sd_send_name(struct sess_dgram *d, struct sd_batch *b,
    const struct proto_dest *dst, const uint8_t *data, size_t len)
{
	struct resolve_result	 res;
	struct sd_name		*nm, *spare = NULL;
	size_t			 i;

	d->st.names++;
	if (d->cfg.resolver == NULL) {
		sd_unresolved(d, dst->domain, "no resolver");
		return;
	}
	for (i = 0; i < SD_NAMES_PENDING; i++) {
		nm = &d->names[i];
		if (!nm->used) {
			if (spare == NULL)
				spare = nm;
			continue;
		}
		if (strcmp(nm->name, dst->domain) == 0) {
			sd_hold(d, nm, dst->port, data, len);
			return;
		}
	}
	if (spare == NULL) {
		sd_unresolved(d, dst->domain, "too many names being looked up");
		return;
	}
	nm = spare;
	nm->q = resolve_start(d->cfg.resolver, dst->domain, &res,
	    sd_on_resolved, nm);
	if (nm->q == NULL) {
		sd_send_resolved(d, b, dst->domain, &res, dst->port, data,
		    len);
		return;
	}
	nm->used = true;
	nm->d = d;
	snprintf(nm->name, sizeof(nm->name), "%s", dst->domain);
	sd_hold(d, nm, dst->port, data, len);
}
