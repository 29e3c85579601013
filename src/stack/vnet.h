/*
 * The virtio-net header of a TUN opened with offloads (IFF_VNET_HDR): what
 * the kernel says about a packet it hands us (a TCP super-packet to be
 * taken whole, a checksum left for us to finish) and what we say about one
 * we hand it (a segment larger than the app's MSS, for the kernel to cut;
 * a TCP checksum for it to finish).  Pure functions on byte buffers: no
 * lwIP, no fd, so tests and fuzzers call them directly.
 */
#ifndef TUNSPLIT_VNET_H
#define TUNSPLIT_VNET_H

#include <stddef.h>
#include <stdint.h>

#define VNET_HDR_LEN		10	/* struct virtio_net_hdr */

#define VNET_F_NEEDS_CSUM	0x01
#define VNET_F_DATA_VALID	0x02

#define VNET_GSO_NONE		0
#define VNET_GSO_TCPV4		1
#define VNET_GSO_UDP		3
#define VNET_GSO_TCPV6		4
#define VNET_GSO_UDP_L4		5
#define VNET_GSO_ECN		0x80

/* Fields in host order (the legacy header is native-endian). */
struct vnet_hdr {
	uint8_t		 flags;
	uint8_t		 gso_type;
	uint16_t	 hdr_len;	/* bytes of headers (kernel: a hint) */
	uint16_t	 gso_size;	/* payload bytes per segment */
	uint16_t	 csum_start;	/* checksum covers from here ... */
	uint16_t	 csum_offset;	/* ... and goes here past csum_start */
};

void vnet_hdr_get(struct vnet_hdr *h, const uint8_t b[VNET_HDR_LEN]);
void vnet_hdr_put(const struct vnet_hdr *h, uint8_t b[VNET_HDR_LEN]);

/*
 * A packet read from the TUN, pkt/len the IP packet after the header.
 * Checks the header against the packet and readies the packet for a stack
 * that verifies no TCP checksum: a TCP super-packet gets its IP length
 * (and IPv4 header checksum) set to what was read and is taken as one
 * segment; its TCP checksum, left partial by the kernel, is trusted.  A
 * partial checksum of anything else (UDP) is finished here.  Returns 1 for
 * a super-packet, 0 for a plain packet, -1 for a header that does not fit
 * the packet (the caller drops it and counts it).
 */
int vnet_rx(const struct vnet_hdr *h, uint8_t *pkt, size_t len);

/*
 * A UDP super-packet (USO: gso_type VNET_GSO_UDP_L4), which vnet_rx
 * refuses: checked, then cut into datagrams of gso_size payload bytes,
 * each with its own IP and UDP lengths and complete checksums, passed in
 * turn to emit with out (len bytes of room).  Returns the number of
 * datagrams, or -1 for a header that does not fit the packet.
 */
int vnet_rx_uso(const struct vnet_hdr *h, const uint8_t *pkt, size_t len,
    uint8_t *out, void (*emit)(void *, const uint8_t *, size_t), void *arg);

/*
 * The header for an IP packet going to the TUN whose TCP checksum the
 * stack left out: puts the pseudo-header sum into the TCP checksum field
 * and asks the kernel to finish it; a TCP segment with more than mss
 * bytes of payload goes as a super-packet the kernel cuts at mss (0: never).
 * hdrs/hdrs_len: the packet's first bytes, writable, holding at least its
 * IP and TCP headers; len: the whole packet.  Anything but TCP gets an
 * empty header (its checksums are complete).  Returns 1 for a
 * super-packet, 0 otherwise, -1 when the headers are not all in hdrs.
 */
int vnet_tx(struct vnet_hdr *h, uint8_t *hdrs, size_t hdrs_len, size_t len,
    uint16_t mss);

#endif
