/*
 * The packet side of fuzz_tun: what the harness feeds lwIP is fixed up
 * (ACK numbers relative to lwIP's ISN, checksums), and every packet lwIP
 * or the client writes to the TUN is checked:
 *
 *   - a well-formed IPv4 or IPv6 packet of exactly its stated length, no
 *     larger than the TUN MTU;
 *   - a valid IPv4 header checksum, and valid TCP, UDP, ICMP and ICMPv6
 *     checksums (pseudo header included) of unfragmented packets;
 *   - TCP data segments no larger than the MSS the app announced in the
 *     SYNs the harness fed for that connection (536 without the option,
 *     RFC 9293 3.7.1), clamped by the MTU, options counted (RFC 6691);
 *   - TCP payload bytes equal to tun_pattern() at their offset in the
 *     stream (sequence number relative to lwIP's ISN): the harness's apps
 *     send that pattern, so a byte lost, duplicated or misplaced on the
 *     way down shows.
 *
 * A failed check prints what failed and aborts.
 */
#ifndef TUNSPLIT_FUZZ_TUN_PKT_H
#define TUNSPLIT_FUZZ_TUN_PKT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Forgets every connection (a new input). */
void	tun_pkt_reset(unsigned mtu);
/* An input packet, before it is fed: notes the MSS of a SYN; unless raw,
 * makes its ACK number relative to lwIP's ISN and corrects checksums. */
void	tun_pkt_in(uint8_t *p, size_t n, bool raw);
/* A packet written to the TUN: checked as above. */
void	tun_pkt_out(const uint8_t *p, size_t n);
/* The same for a write with offloads: the virtio-net header must be
 * right for the packet (a TCP checksum finished by the kernel is checked
 * once finished), and a super-packet is cut at its gso_size as the kernel
 * would, each segment checked as above -- against the MTU and the MSS the
 * app announced, too. */
void	tun_pkt_out_vnet(const uint8_t *p, size_t n);
/* TCP payload bytes written since the reset, and the furthest stream
 * offset any connection reached (to see what an input exercised). */
void	tun_pkt_counts(uint64_t *bytes, uint64_t *furthest);
/* The byte at offset off of every stream the harness's apps send. */
uint8_t	tun_pattern(uint64_t off);
void	tun_pattern_fill(uint8_t *b, size_t n, uint64_t off);
/* Prints the failure and aborts. */
void	tun_fail(const char *fmt, ...)
	    __attribute__((format(printf, 1, 2), noreturn));

#endif
