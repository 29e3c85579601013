/*
 * Client ICMP echo (see flow_icmp.h).  The echo data travels unchanged
 * both ways, so a ping that stamps its send time into the data computes
 * the real round trip from the reply.
 */
#include "config.h"

#include "client/dgram/flow_icmp.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "client/dgram/assoc.h"
#include "wire/frame.h"
#include "wire/pkt.h"

static int
flow_icmp_deliver(void *arg, struct assoc *a, const struct proto_dest *src,
    const uint8_t *data, size_t len)
{
	struct assoc_env	*e = arg;
	const struct assoc_key	*k = assoc_key(a);
	uint8_t			*pkt = assoc_pkt_buf(e);
	size_t			 n;

	const uint8_t		*fake = assoc_ext(a);

	if (fake == NULL &&
	    ((k->family == AF_INET && src->atyp != PROTO_ATYP_IPV4) ||
	    (k->family == AF_INET6 && src->atyp != PROTO_ATYP_IPV6)))
		return -1;
	/* fake-IP: the reply comes from the address the app pinged. */
	n = pkt_build_echo_reply(pkt, k->family, fake != NULL ? fake : src->ip,
	    k->addr, k->port, src->port, data, len, assoc_next_ipid(e));
	if (n == 0)
		return -1;
	return assoc_tun_write(e, pkt, n);
}

void
flow_icmp_init(struct assoc_env *e)
{
	struct assoc_ops	ops;

	memset(&ops, 0, sizeof(ops));
	ops.deliver = flow_icmp_deliver;
	ops.ext_free = free;
	ops.arg = e;
	assoc_env_set_ops(e, PROTO_KIND_ICMP, &ops);
}

int
flow_icmp_input(struct assoc_env *e, const struct pkt_ip *ip,
    const char *name, bool *blocked)
{
	struct pkt_echo		 echo;
	struct assoc_key	 key;
	struct proto_dest	 dst;
	struct assoc		*a;
	uint8_t			*fake;
	int			 rc;

	*blocked = false;
	if ((rc = pkt_echo_parse(ip, &echo)) != PKT_OK)
		return rc;
	memset(&key, 0, sizeof(key));
	key.kind = PROTO_KIND_ICMP;
	key.family = (uint8_t)ip->family;
	key.port = echo.id;
	memcpy(key.addr, ip->src, ip->family == AF_INET ? 4 : 16);
	frame_dest_from_ip(&dst, ip->family, ip->dst, echo.seq);
	if (name != NULL) {
		memset(&dst, 0, sizeof(dst));
		dst.atyp = PROTO_ATYP_DOMAIN;
		snprintf(dst.domain, sizeof(dst.domain), "%s", name);
		dst.port = echo.seq;
	}
	if ((a = assoc_get(e, &key, &dst)) == NULL) {
		*blocked = assoc_refusal(e) == ASSOC_REFUSED_BLOCK;
		return PKT_OK;
	}
	if (name != NULL && assoc_ext(a) == NULL &&
	    (fake = calloc(1, 16)) != NULL) {
		memcpy(fake, ip->dst, ip->family == AF_INET ? 4 : 16);
		assoc_set_ext(a, fake);
	}
	(void)assoc_send(a, &dst, echo.data, echo.len, true);
	return PKT_OK;
}
