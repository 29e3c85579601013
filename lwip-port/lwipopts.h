/*
 * lwIP options for tunsplit: NO_SYS, raw API, one netif (the TUN), TCP sized
 * for throughput on a local, lossless TUN hop.  lwIP is compiled from its
 * unmodified source; everything tunsplit needs is set here or done through
 * the input hooks (see tsnetif.h).
 */
#ifndef TUNSPLIT_LWIPOPTS_H
#define TUNSPLIT_LWIPOPTS_H

#define NO_SYS                      1
#define LWIP_SOCKET                 0
#define LWIP_NETCONN                0
#define LWIP_RAW                    0
#define LWIP_DNS                    0
#define LWIP_DHCP                   0
#define LWIP_AUTOIP                 0
#define LWIP_IGMP                   0
#define LWIP_ARP                    0
#define LWIP_ETHERNET               0
#define LWIP_STATS                  0
#define LWIP_NETIF_STATUS_CALLBACK  0
#define LWIP_NETIF_LINK_CALLBACK    0
#define LWIP_SINGLE_NETIF           1
#define SYS_LIGHTWEIGHT_PROT        0

/* Memory: libc malloc for the heap and the pools.  MTU 65535 needs pbufs
 * larger than MEM_SIZE's 16-bit sizes allow, and malloc'd pools let the
 * flow limit (enforced by tunsplit, not by pool sizes) decide how many
 * pcbs exist.  mem_trim is a no-op here, so packets are copied into
 * right-sized pbufs on input. */
#define MEM_LIBC_MALLOC             1
#define MEMP_MEM_MALLOC             1
#define MEM_ALIGNMENT               8
#define MEMP_NUM_TCP_PCB            65535
#define MEMP_NUM_TCP_PCB_LISTEN     65535
#define MEMP_NUM_TCP_SEG            65535
#define MEMP_NUM_PBUF               65535
#define MEMP_NUM_REASSDATA          64
#define MEMP_NUM_FRAG_PBUF          256
#define IP_REASS_MAX_PBUFS          1024
#define PBUF_POOL_SIZE              0
#define PBUF_POOL_BUFSIZE           512 /* never allocated; keeps the pool descriptor in u16 */

/* IP: both families, reassembly on (bounded above), no forwarding. */
#define LWIP_IPV4                   1
#define LWIP_IPV6                   1
#define LWIP_IPV6_MLD               0
#define LWIP_IPV6_AUTOCONFIG        0
#define LWIP_IPV6_DHCP6             0
#define LWIP_IPV6_SEND_ROUTER_SOLICIT 0
#define LWIP_ND6_QUEUEING           0
#define LWIP_IPV6_DUP_DETECT_ATTEMPTS 0
#define LWIP_IPV6_SCOPES            0
#define IPV6_FRAG_COPYHEADER        1   /* required on 64-bit (ip6_frag.c) */
#define IP_REASSEMBLY               1
#define IP_FRAG                     1
#define IP_DEFAULT_TTL              64
#define LWIP_ICMP                   1
#define LWIP_UDP                    1
#define LWIP_BROADCAST_PING         0
#define LWIP_MULTICAST_PING         0

/* TCP.  The TUN MTU is a local hop (kernel <-> us), so big segments are
 * free: per-packet work in the kernel's TUN path dominates at MTU 1500.
 * lwIP advertises min(TCP_MSS, MTU - 40), so TCP_MSS only caps it. */
#define LWIP_TCP                    1
#define TCP_MSS                     65495
#define LWIP_WND_SCALE              1
#define TCP_RCV_SCALE               4
#define TCP_WND                     (256 * 1024)
#define TCP_SND_BUF                 (256 * 1024)
/* The send queue's limit in pbufs.  TCP_MSS is only a cap: the segments
 * are cut at the MSS the app announced, which on a LAN is 1460 and may be
 * as small as 536 -- so the limit is sized for that, the smallest MSS a
 * host must accept, not for TCP_MSS (sized from TCP_MSS it was 81, and a
 * full send buffer at MSS 1460 needs 180 segments: tcp_write failed).
 * One segment is one pbuf, and each tcp_write may add one more to the
 * last unsent segment, hence the factor 2.  It is a limit, not an
 * allocation: what a flow holds is bounded by TCP_SND_BUF bytes plus
 * ~170 bytes of segment and pbuf overhead per queued pbuf.  Measured by
 * test_flow_tcp with the queue full: the heap peaks ~350 KiB over an
 * idle flow at MSS 536 (~515 pbufs), ~300 KiB at 1460 (~200), ~260 KiB
 * at 8960 (~50).  flow_tcp.c sizes its writes from the pcb's real MSS
 * so that tcp_write never runs into this limit. */
#define TCP_SND_MSS_MIN             536
#define TCP_SND_QUEUELEN            (2 * ((TCP_SND_BUF + TCP_SND_MSS_MIN - 1) / TCP_SND_MSS_MIN) + 64)
#define TCP_SNDLOWAT                (TCP_SND_BUF / 4)
#define TCP_SNDQUEUELOWAT           (TCP_SND_QUEUELEN / 2)
#define TCP_WND_UPDATE_THRESHOLD    (TCP_WND / 8)
/* The TUN does not reorder, but the kernel drops when its queue toward us
 * overflows: keep out-of-order segments (bounded per pcb) and SACK them,
 * so the app's TCP repairs a hole in one RTT instead of timing out. */
#define TCP_QUEUE_OOSEQ             1
#define TCP_OOSEQ_MAX_BYTES         TCP_WND
#define TCP_OOSEQ_MAX_PBUFS         256
#define LWIP_TCP_SACK_OUT           1
#define LWIP_TCP_MAX_SACK_NUM       4
/* Spare room allocated past a tcp_write() for the next one to fill.  Not
 * TCP_MSS (64 KiB here): small writes on many flows would each pin 64 KiB
 * until acknowledged. */
#define TCP_OVERSIZE                4096
#define LWIP_CHECKSUM_ON_COPY       1
#define LWIP_TCP_KEEPALIVE          0
#define TCP_LISTEN_BACKLOG          0
#define SO_REUSE                    1
#define LWIP_CALLBACK_API           1
#define LWIP_DISABLE_TCP_SANITY_CHECKS 1
/* One per pcb: the MSS the app announced, while lwIP is told a larger one
 * so that it builds super-packets for the TUN's offloads (tsnetif.c). */
#define LWIP_TCP_PCB_NUM_EXT_ARGS   1

/* Checksums: packets come from the local kernel's TUN, which always fills
 * valid IP/TCP checksums; verifying them was the dominant CPU cost in
 * measurements.  Generation stays on, with our fast routine. */
#define CHECKSUM_CHECK_IP           0
#define CHECKSUM_CHECK_TCP          0
#define CHECKSUM_CHECK_UDP          0
#define CHECKSUM_CHECK_ICMP         0
#define CHECKSUM_CHECK_ICMP6        0
#define LWIP_CHKSUM                 tsnetif_chksum
/* tcp_write sums the data as it copies it; with offloads the kernel
 * does, and the copy skips the sum (tsnetif.c). */
#define LWIP_CHKSUM_COPY(dst, src, len) tsnetif_chksum_copy((dst), (src), (len))
/* With the TUN's offloads on, the kernel finishes TCP checksums: lwIP's
 * generation is switched off for the netif (tsnetif_offload). */
#define LWIP_CHECKSUM_CTRL_PER_NETIF 1

/* Hooks: accept any destination address and port (tsnetif.c). */
#define LWIP_HOOK_FILENAME          "tsnetif_hooks.h"
#define LWIP_HOOK_IP4_INPUT(p, inp) tsnetif_ip4_input_hook((p), (inp))
#define LWIP_HOOK_IP6_INPUT(p, inp) tsnetif_ip6_input_hook((p), (inp))
/* Every TCP segment once matched to a pcb, reassembled ones included:
 * clamps the MSS option to the TUN MTU (tsnetif.c says why). */
#define LWIP_HOOK_TCP_INPACKET_PCB(pcb, hdr, optlen, opt1len, opt2, p) \
	tsnetif_tcp_inpkt_hook((pcb), (hdr), (optlen), (opt1len), (opt2), (p))
/* Every TCP segment lwIP sends, just before its checksum: with offloads,
 * the MSS it announces and the segment size the kernel cuts at. */
#define LWIP_HOOK_TCP_OUT_ADD_TCPOPTS(p, hdr, pcb, opts) \
	tsnetif_tcp_out_hook((p), (hdr), (pcb), (opts))

#define LWIP_NETIF_API              0
#define LWIP_HAVE_LOOPIF            0
#define LWIP_NETIF_LOOPBACK         0
#define LWIP_TIMERS                 1
/* We use the libc byte-order functions; lwIP must not redefine them. */
#define LWIP_DONT_PROVIDE_BYTEORDER_FUNCTIONS 1

#ifndef LWIP_DEBUG
#define LWIP_NOASSERT               1
#endif

#endif
