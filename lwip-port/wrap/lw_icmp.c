/* Compiles lwIP's unmodified core/ipv4/icmp.c with our lwipopts.h. */
#include "core/ipv4/icmp.c"
