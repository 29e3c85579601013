/* Declarations lwIP's core sees through LWIP_HOOK_FILENAME. */
#ifndef TUNSPLIT_TSNETIF_HOOKS_H
#define TUNSPLIT_TSNETIF_HOOKS_H

#include "lwip/arch.h"

struct pbuf;
struct netif;
struct tcp_hdr;
struct tcp_pcb;

int tsnetif_ip4_input_hook(struct pbuf *p, struct netif *inp);
int tsnetif_ip6_input_hook(struct pbuf *p, struct netif *inp);
/* 0 (ERR_OK): lwIP goes on with the segment. */
int tsnetif_tcp_inpkt_hook(struct tcp_pcb *pcb, struct tcp_hdr *hdr,
    u16_t optlen, u16_t opt1len, u8_t *opt2, struct pbuf *p);
/* Returns opts: it adds no option. */
u32_t *tsnetif_tcp_out_hook(struct pbuf *p, struct tcp_hdr *hdr,
    const struct tcp_pcb *pcb, u32_t *opts);

#endif
