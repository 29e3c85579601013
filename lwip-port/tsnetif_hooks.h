/* Declarations lwIP's core sees through LWIP_HOOK_FILENAME. */
#ifndef TUNSPLIT_TSNETIF_HOOKS_H
#define TUNSPLIT_TSNETIF_HOOKS_H

#include "lwip/arch.h"

struct pbuf;
struct netif;

int tsnetif_ip4_input_hook(struct pbuf *p, struct netif *inp);
int tsnetif_ip6_input_hook(struct pbuf *p, struct netif *inp);

#endif
