/*
 * Steering a multi-queue TUN: which queue, hence which worker, reads each
 * packet the host sends into the device.  The kernel asks an eBPF program
 * (TUNSETSTEERINGEBPF; tun.c takes its return value as a u16 and divides
 * it by the queues attached), so here is one, written by hand from the
 * eBPF instruction set and loaded with bpf(2): no libbpf, no compiler.
 *
 * Queue 0 (worker 0, the one that answers DNS and holds the control
 * socket) gets port 53 and everything no other worker could take on its
 * own: ICMP, fragments (a datagram's pieces must meet in one reassembly),
 * IPv6 with extension headers, anything not IP.  The rest goes by a hash
 * of addresses and ports only, so that a flow stays on one queue for its
 * life.  tun_steer_queue() is the same computation in C; the test
 * (e2e_tun_steer.sh) holds the kernel's choices against it.
 *
 * The program sees the packet from its IP header on (IFF_NO_PI; the
 * virtio-net header is not in the skb).  It reads with BPF_LD_ABS and
 * BPF_LD_IND, the socket filter's packet loads: they give the value in
 * host order in r0, need the context in r6, clobber r1-r5, and end the
 * program with 0 -- queue 0 -- when the read is past the packet's end.
 */
#include "config.h"

#include "tun.h"
#include "tun_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <linux/bpf.h>
#include <linux/if_tun.h>

#define STEER_INSNS_MAX	128
#define STEER_LOG_LEN	(64 * 1024)

/* The hash: a multiply-xorshift step per 32-bit word, then murmur3's
 * finalizer, so that the low 16 bits the kernel keeps depend on every bit
 * of every word. */
#define STEER_SEED	0x7f4a7c15U
#define STEER_K1	0x9e3779b1U
#define STEER_K2	0x85ebca6bU
#define STEER_K3	0xc2b2ae35U

#define IPPROTO_TCP_	6
#define IPPROTO_UDP_	17
#define PORT_DNS	53

/* ---- the reference, in C ---------------------------------------------- */

static uint32_t
steer_mix(uint32_t h, uint32_t w)
{
	h = (h ^ w) * STEER_K1;
	return h ^ (h >> 15);
}

static uint32_t
steer_fin(uint32_t h)
{
	h ^= h >> 16;
	h *= STEER_K2;
	h ^= h >> 13;
	h *= STEER_K3;
	return h ^ (h >> 16);
}

/* A load as BPF_LD_ABS does it: big-endian, false past the end. */
static bool
steer_ld(const uint8_t *p, size_t len, size_t off, unsigned size,
    uint32_t *v)
{
	unsigned	i;

	if (off > len || size > len - off)
		return false;
	for (*v = 0, i = 0; i < size; i++)
		*v = *v << 8 | p[off + i];
	return true;
}

/* The program's return value; 0 also where it reads past the end. */
static uint32_t
steer_ret(const uint8_t *p, size_t len)
{
	uint32_t	v, h = STEER_SEED;
	size_t		hl, off;

	if (!steer_ld(p, len, 0, 1, &v))
		return 0;
	if (v >> 4 == 6) {
		if (!steer_ld(p, len, 6, 1, &v) ||
		    (v != IPPROTO_TCP_ && v != IPPROTO_UDP_) ||
		    !steer_ld(p, len, 42, 2, &v) || v == PORT_DNS)
			return 0;
		for (off = 8; off <= 40; off += 4) {	/* addresses, ports */
			if (!steer_ld(p, len, off, 4, &v))
				return 0;
			h = steer_mix(h, v);
		}
		return steer_fin(h);
	}
	if (v >> 4 != 4 || (v & 0x0f) < 5)
		return 0;
	hl = (v & 0x0f) * 4;
	if (!steer_ld(p, len, 6, 2, &v) || (v & 0x3fff) != 0 ||
	    !steer_ld(p, len, 9, 1, &v) ||
	    (v != IPPROTO_TCP_ && v != IPPROTO_UDP_) ||
	    !steer_ld(p, len, hl + 2, 2, &v) || v == PORT_DNS)
		return 0;
	if (!steer_ld(p, len, 12, 4, &v))
		return 0;
	h = steer_mix(h, v);
	if (!steer_ld(p, len, 16, 4, &v))
		return 0;
	h = steer_mix(h, v);
	if (!steer_ld(p, len, hl, 4, &v))
		return 0;
	return steer_fin(steer_mix(h, v));
}

unsigned
tun_steer_queue(const uint8_t *pkt, size_t len, unsigned queues)
{
	if (queues <= 1)
		return 0;
	return (uint16_t)steer_ret(pkt, len) % queues;
}

/* ---- the program ------------------------------------------------------ */

/* Registers: r0 each load's value and scratch, r6 the context, r7 the
 * hash, r8 the IPv4 header's length. */
enum { R0, R1, R6 = 6, R7, R8 };

/* Where a forward jump goes, patched when the label is placed. */
enum steer_label { L_V4, L_ZERO, L_HASH, L_V6_L4, L_V4_L4, L_COUNT };

struct steer_prog {
	struct bpf_insn	 insn[STEER_INSNS_MAX];
	unsigned	 n;
	int		 at[L_COUNT];		/* label's index, -1 unplaced */
	struct {
		unsigned	 insn;
		enum steer_label l;
	}		 fix[16];
	unsigned	 nfix;
	bool		 overflow;
};

static void
emit(struct steer_prog *p, uint8_t code, uint8_t dst, uint8_t src,
    int16_t off, int32_t imm)
{
	struct bpf_insn	*i;

	if (p->n == STEER_INSNS_MAX) {
		p->overflow = true;
		return;
	}
	i = &p->insn[p->n++];
	memset(i, 0, sizeof(*i));
	i->code = code;
	i->dst_reg = dst & 0x0f;
	i->src_reg = src & 0x0f;
	i->off = off;
	i->imm = imm;
}

/* A jump to l (op: BPF_JA, or BPF_JEQ, ... comparing r0 with imm). */
static void
emit_jmp(struct steer_prog *p, uint8_t op, int32_t imm, enum steer_label l)
{
	if (p->nfix == sizeof(p->fix) / sizeof(p->fix[0])) {
		p->overflow = true;
		return;
	}
	p->fix[p->nfix].insn = p->n;
	p->fix[p->nfix++].l = l;
	emit(p, BPF_JMP | op | BPF_K, op == BPF_JA ? 0 : R0, 0, 0,
	    op == BPF_JA ? 0 : imm);
}

static void
emit_goto(struct steer_prog *p, enum steer_label l)
{
	emit_jmp(p, BPF_JA, 0, l);
}

static void
place(struct steer_prog *p, enum steer_label l)
{
	p->at[l] = (int)p->n;
}

/* r0 = the packet's size bytes at off (BPF_W, BPF_H, BPF_B). */
static void
emit_ld(struct steer_prog *p, uint8_t size, int32_t off)
{
	emit(p, BPF_LD | BPF_ABS | size, 0, 0, 0, off);
}

/* r7 = steer_mix(r7, r0) */
static void
emit_mix(struct steer_prog *p)
{
	emit(p, BPF_ALU | BPF_XOR | BPF_X, R7, R0, 0, 0);	/* h ^= w */
	emit(p, BPF_ALU | BPF_MUL | BPF_K, R7, 0, 0, (int32_t)STEER_K1);
	emit(p, BPF_ALU | BPF_MOV | BPF_X, R0, R7, 0, 0);	/* h ^= h>>15 */
	emit(p, BPF_ALU | BPF_RSH | BPF_K, R0, 0, 0, 15);
	emit(p, BPF_ALU | BPF_XOR | BPF_X, R7, R0, 0, 0);
}

/* r7 ^= r7 >> shift */
static void
emit_xorshift(struct steer_prog *p, int32_t shift)
{
	emit(p, BPF_ALU | BPF_MOV | BPF_X, R0, R7, 0, 0);
	emit(p, BPF_ALU | BPF_RSH | BPF_K, R0, 0, 0, shift);
	emit(p, BPF_ALU | BPF_XOR | BPF_X, R7, R0, 0, 0);
}

static void
steer_build(struct steer_prog *p)
{
	int32_t		off;
	unsigned	i;

	memset(p, 0, sizeof(*p));
	for (i = 0; i < L_COUNT; i++)
		p->at[i] = -1;

	/* The loads want the skb in r6. */
	emit(p, BPF_ALU64 | BPF_MOV | BPF_X, R6, R1, 0, 0);
	/* The IP version, from the first nibble: 4, 6, or queue 0. */
	emit_ld(p, BPF_B, 0);
	emit(p, BPF_ALU | BPF_RSH | BPF_K, R0, 0, 0, 4);
	emit_jmp(p, BPF_JEQ, 4, L_V4);
	emit_jmp(p, BPF_JNE, 6, L_ZERO);

	/* IPv6.  Next header TCP or UDP, nothing between: an extension
	 * header (the fragment header too), ICMPv6 or other, queue 0. */
	emit_ld(p, BPF_B, 6);
	emit_jmp(p, BPF_JEQ, IPPROTO_TCP_, L_V6_L4);
	emit_jmp(p, BPF_JNE, IPPROTO_UDP_, L_ZERO);
	place(p, L_V6_L4);
	/* Destination port (40 + 2) 53: queue 0. */
	emit_ld(p, BPF_H, 42);
	emit_jmp(p, BPF_JEQ, PORT_DNS, L_ZERO);
	/* Hash the source and destination addresses (8..39) and the
	 * ports (40..43), a word at a time. */
	emit(p, BPF_ALU | BPF_MOV | BPF_K, R7, 0, 0, (int32_t)STEER_SEED);
	for (off = 8; off <= 40; off += 4) {
		emit_ld(p, BPF_W, off);
		emit_mix(p);
	}
	emit_goto(p, L_HASH);

	/* IPv4.  Header length (IHL * 4) into r8; below 5 words, queue 0. */
	place(p, L_V4);
	emit_ld(p, BPF_B, 0);
	emit(p, BPF_ALU | BPF_AND | BPF_K, R0, 0, 0, 0x0f);
	emit_jmp(p, BPF_JLT, 5, L_ZERO);
	emit(p, BPF_ALU | BPF_LSH | BPF_K, R0, 0, 0, 2);
	emit(p, BPF_ALU64 | BPF_MOV | BPF_X, R8, R0, 0, 0);
	/* A fragment (more fragments set, or an offset): queue 0. */
	emit_ld(p, BPF_H, 6);
	emit(p, BPF_ALU | BPF_AND | BPF_K, R0, 0, 0, 0x3fff);
	emit_jmp(p, BPF_JNE, 0, L_ZERO);
	/* Protocol TCP or UDP, or queue 0. */
	emit_ld(p, BPF_B, 9);
	emit_jmp(p, BPF_JEQ, IPPROTO_TCP_, L_V4_L4);
	emit_jmp(p, BPF_JNE, IPPROTO_UDP_, L_ZERO);
	place(p, L_V4_L4);
	/* Destination port (header length + 2) 53: queue 0. */
	emit(p, BPF_LD | BPF_IND | BPF_H, 0, R8, 0, 2);
	emit_jmp(p, BPF_JEQ, PORT_DNS, L_ZERO);
	/* Hash source (12), destination (16), both ports (r8 + 0). */
	emit(p, BPF_ALU | BPF_MOV | BPF_K, R7, 0, 0, (int32_t)STEER_SEED);
	emit_ld(p, BPF_W, 12);
	emit_mix(p);
	emit_ld(p, BPF_W, 16);
	emit_mix(p);
	emit(p, BPF_LD | BPF_IND | BPF_W, 0, R8, 0, 0);
	emit_mix(p);

	/* Both families: murmur3's finalizer on r7, into r0. */
	place(p, L_HASH);
	emit_xorshift(p, 16);
	emit(p, BPF_ALU | BPF_MUL | BPF_K, R7, 0, 0, (int32_t)STEER_K2);
	emit_xorshift(p, 13);
	emit(p, BPF_ALU | BPF_MUL | BPF_K, R7, 0, 0, (int32_t)STEER_K3);
	emit_xorshift(p, 16);
	emit(p, BPF_ALU | BPF_MOV | BPF_X, R0, R7, 0, 0);
	emit(p, BPF_JMP | BPF_EXIT, 0, 0, 0, 0);

	/* Queue 0. */
	place(p, L_ZERO);
	emit(p, BPF_ALU | BPF_MOV | BPF_K, R0, 0, 0, 0);
	emit(p, BPF_JMP | BPF_EXIT, 0, 0, 0, 0);

	/* Forward jumps: off counts from the next instruction. */
	for (i = 0; i < p->nfix; i++)
		p->insn[p->fix[i].insn].off =
		    (int16_t)(p->at[p->fix[i].l] - (int)p->fix[i].insn - 1);
}

/* ---- loading it ------------------------------------------------------- */

/* bpf(2) and the device's steering ioctl. */
static const struct tun_why bpf_why = {
	.need = "CAP_BPF or CAP_SYS_ADMIN, and bpf(2) not filtered",
	.nosys = "no BPF in this kernel",
};

static int
steer_load(const struct steer_prog *p, char *log, size_t loglen)
{
	union bpf_attr	attr;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
	attr.insns = (uint64_t)(uintptr_t)p->insn;
	attr.insn_cnt = p->n;
	/* No GPL-only helper is called: the string is only recorded. */
	attr.license = (uint64_t)(uintptr_t)"tunsplit";
	if (log != NULL) {
		attr.log_buf = (uint64_t)(uintptr_t)log;
		attr.log_size = (uint32_t)loglen;
		attr.log_level = 1;
	}
	return (int)syscall(__NR_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
}

/* The verifier's last non-empty line: why it refused. */
static const char *
steer_last_line(char *log)
{
	char	*end = log + strlen(log), *s;

	while (end > log && (end[-1] == '\n' || end[-1] == ' '))
		*--end = '\0';
	s = end;
	while (s > log && s[-1] != '\n')
		s--;
	return *s != '\0' ? s : "(no verifier log)";
}

/* Loaded again with the verifier's log, only to say why it refused. */
static void
steer_refused(const struct steer_prog *p, int e, char *err, size_t errlen)
{
	char	*log;
	int	 fd;

	if ((log = calloc(1, STEER_LOG_LEN)) == NULL) {
		tun_err(err, errlen, &bpf_why, e,
		    "steering: the kernel refused the "
		    "eBPF program");
		return;
	}
	if ((fd = steer_load(p, log, STEER_LOG_LEN)) != -1)
		close(fd);
	tun_err(err, errlen, &bpf_why, 0,
	    "steering: the kernel's verifier refused "
	    "the eBPF program (%s): %s", strerror(e), steer_last_line(log));
	free(log);
}

int
tun_steer(int fd, unsigned queues, char *err, size_t errlen)
{
	struct steer_prog	p;
	int			prog, e;

	if (err != NULL && errlen > 0)
		*err = '\0';
	if (getenv(TUN_ENV_NO_STEER) != NULL) {
		tun_err(err, errlen, &bpf_why, 0,
		    "steering %u queues: refused for "
		    "the test (" TUN_ENV_NO_STEER " is set)", queues);
		return -1;
	}
	steer_build(&p);
	if (p.overflow) {
		tun_err(err, errlen, &bpf_why, 0,
		    "steering: the eBPF program does "
		    "not fit");
		return -1;
	}
	if ((prog = steer_load(&p, NULL, 0)) == -1) {
		e = errno;
		if (e == EINVAL || e == EACCES)
			steer_refused(&p, e, err, errlen);
		else
			tun_err(err, errlen, &bpf_why, e,
			    "steering: load the eBPF "
			    "program (bpf(2))");
		return -1;
	}
	if (ioctl(fd, TUNSETSTEERINGEBPF, &prog) == -1) {
		e = errno;
		close(prog);
		if (e == EINVAL || e == ENOTTY)
			tun_err(err, errlen, &bpf_why, 0,
			    "steering %u queues: the "
			    "kernel refuses TUNSETSTEERINGEBPF (Linux 4.16 "
			    "has it)", queues);
		else
			tun_err(err, errlen, &bpf_why, e, "steering %u queues: "
			    "TUNSETSTEERINGEBPF", queues);
		return -1;
	}
	/* The device holds the program now. */
	close(prog);
	return 0;
}
